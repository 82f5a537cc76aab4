"""Who is writing which model: the exclusive claim on a model name and the scratch directories of a save.

:func:`kgbias_core.embeddings.store.save_model` writes into a hidden scratch sibling and renames it into
place under a :class:`Claim`; :func:`kgbias_core.embeddings.store.clean_orphans` reads the scratch names
(:func:`scratch_parts`) to find, and recover from, the saves of writers that died.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from kgbias_core.errors import MODEL_BEING_WRITTEN, ModelStoreError

#: Files are world-readable like the rest of a checkout (safetensors writes 0600 on its own).
FILE_MODE = 0o644


def scratch_dir(store: Path, kind: str, name: str) -> Path:
    """A hidden sibling for an atomic write; the pid lets :func:`clean_orphans` spot dead writers."""
    return store / f".{kind}-{name}-{os.getpid()}-{uuid.uuid4().hex}"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's live process
        return True
    return True


class Claim:
    """An exclusive claim on one model name of a store, held while its save (or recovery) runs.

    ``store/.lock-<name>`` is locked with ``flock``, which the kernel releases when its process dies
    (kill -9 included): a dead writer's claim is recovered by the next claimant, never blocks forever.
    After locking, the file's inode is compared with the path's: a claim whose file a finishing writer
    just removed is retried, so two processes never both hold one name. The file holds the pid for the
    refusal message and is removed on release.
    """

    def __init__(self, store: Path, name: str) -> None:
        self.path = store / f".lock-{name}"
        self.name = name
        self.fd: int | None = None

    def acquire(self) -> bool:
        import fcntl

        for _ in range(20):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                self.fd = fd
                return True
            os.close(fd)  # removed by the writer that held it: claim the new file
        return False

    def holder(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8").strip() or "?"
        except OSError:
            return "?"

    def release(self) -> None:
        if self.fd is None:
            return
        # Unlinked while still locked: a process waiting on this inode re-checks it and retries.
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> Claim:
        if not self.acquire():
            raise ModelStoreError(MODEL_BEING_WRITTEN.format(path=self.path.parent / self.name, pid=self.holder()))
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def scratch_parts(entry: Path) -> tuple[str, str, int] | None:
    """(kind, model name, pid) of a scratch directory ``.{tmp,old}-<name>-<pid>-<hex>``, else None."""
    if not entry.name.startswith((".tmp-", ".old-")):
        return None
    parts = entry.name.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[0][5:]:
        return None
    return parts[0][1:4], parts[0][5:], int(parts[1])
