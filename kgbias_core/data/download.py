"""Fetch the public originals of the data for users with a network.

Layout written under ``data_dir`` (the one the rest of kgbias reads)::

    fb15k237/train.txt, valid.txt, test.txt   from the official FB15K-237.2 zip (Release/)
    fb15k237/entity_names.tsv                  KG-BERT's entity2text.txt   (MID<TAB>name)
    fb15k237/relation_names.tsv                KG-BERT's relation2text.txt (relation<TAB>text)
    census/occupation_gender_ipums.csv         Garg et al. (2018), occupation_percentages_gender_occ1950.csv

Every file is downloaded to a temporary file in its target directory and moved into place with
``os.replace``, so an interrupted download never leaves a half-written file under the real name.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kgbias_core.errors import DOWNLOAD_BAD_ARCHIVE, DOWNLOAD_CENSUS_FAILED, DOWNLOAD_FAILED, DataError

#: The official Microsoft release, the same URL as PyKEEN's ``pykeen.datasets.FB15k237``.
FB15K237_URL = "https://download.microsoft.com/download/8/7/0/8700516A-AB3D-4850-B4BB-805C515AECE1/FB15K-237.2.zip"
#: KG-BERT's copy of the FB15k-237 names (HEAD: the default branch, whatever its name).
KG_BERT_URL = "https://raw.githubusercontent.com/yao8839836/kg-bert/HEAD/data/FB15k-237/"
#: Garg, Schiebinger, Jurafsky & Zou (PNAS 2018), data of github.com/nikhgarg/EmbeddingDynamicStereotypes.
CENSUS_URL = (
    "https://raw.githubusercontent.com/nikhgarg/EmbeddingDynamicStereotypes/HEAD/data/"
    "occupation_percentages_gender_occ1950.csv"
)
SPLITS = ("train", "valid", "test")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Sources:
    """Where each file comes from; :meth:`under` points all of them at one mirror."""

    fb15k237_zip: str = FB15K237_URL  # zip holding Release/{train,valid,test}.txt
    entity_names: str = KG_BERT_URL + "entity2text.txt"  # MID<TAB>name
    relation_names: str = KG_BERT_URL + "relation2text.txt"  # relation<TAB>text
    census: str = CENSUS_URL  # Census year,Occupation,Total Weight,Female,Male

    @classmethod
    def under(cls, base_url: str) -> Sources:
        """All files under one base URL, by their original file names (a mirror, or a test server)."""
        base = base_url.rstrip("/") + "/"
        return cls(
            fb15k237_zip=base + "FB15K-237.2.zip",
            entity_names=base + "entity2text.txt",
            relation_names=base + "relation2text.txt",
            census=base + "occupation_percentages_gender_occ1950.csv",
        )


@contextmanager
def _atomic_target(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target``; moved onto it on success, removed on failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, target)  # same directory: atomic on POSIX and Windows
    finally:
        temporary.unlink(missing_ok=True)


def _fetch(url: str, destination: Path, *, timeout: float) -> None:
    """Stream ``url`` into ``destination``; raise OSError-like errors for the caller to explain."""
    with urllib.request.urlopen(url, timeout=timeout) as response, destination.open("wb") as out:
        expected = response.headers.get("Content-Length")
        shutil.copyfileobj(response, out, _CHUNK)
        if expected is not None and out.tell() != int(expected):
            raise http.client.IncompleteRead(b"", int(expected) - out.tell())


def _reason(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _download(url: str, target: Path, *, timeout: float, message: str, data_dir: Path) -> Path:
    try:
        with _atomic_target(target) as temporary:
            _fetch(url, temporary, timeout=timeout)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError, timeouts, bad URLs
        raise DataError(message.format(url=url, reason=_reason(exc), path=data_dir)) from exc
    return target


def _extract_splits(archive: Path, *, url: str, folder: Path, data_dir: Path) -> list[Path]:
    """Copy Release/{train,valid,test}.txt out of the zip (by name: no extractall, no zip-slip)."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.namelist()
            written = []
            for split in SPLITS:
                found = [m for m in members if PurePosixPath(m).name == f"{split}.txt"]
                # The release also ships text_*.txt files; prefer the KB triples under Release/.
                found.sort(key=lambda m: "Release" not in PurePosixPath(m).parts)
                if not found:
                    raise KeyError(f"no {split}.txt in the archive")
                target = folder / f"{split}.txt"
                with _atomic_target(target) as temporary, zipped.open(found[0]) as src:
                    with temporary.open("wb") as out:
                        shutil.copyfileobj(src, out, _CHUNK)
                written.append(target)
            return written
    except (zipfile.BadZipFile, KeyError) as exc:
        problem = str(exc.args[0]) if exc.args else type(exc).__name__
        raise DataError(DOWNLOAD_BAD_ARCHIVE.format(url=url, problem=problem, path=data_dir)) from exc


def download_fb15k237(
    data_dir: Path, *, timeout: float = 30, sources: Sources | None = None, census: bool = True
) -> list[Path]:
    """Download FB15k-237, its names and (unless ``census=False``) the census file into ``data_dir``.

    Returns the paths written. On any network failure raises :class:`DataError` naming the URL,
    the reason and the files to copy by hand when offline; files already fetched stay in place.
    """
    data_dir = Path(data_dir)
    sources = sources or Sources()
    folder = data_dir / "fb15k237"
    written: list[Path] = []

    folder.mkdir(parents=True, exist_ok=True)
    # The zip is only a vehicle: fetched to a temporary file, emptied, then removed.
    handle, name = tempfile.mkstemp(dir=folder, prefix=".FB15K-237.2.", suffix=".zip.part")
    os.close(handle)
    archive = Path(name)
    try:
        _download(sources.fb15k237_zip, archive, timeout=timeout, message=DOWNLOAD_FAILED, data_dir=data_dir)
        written += _extract_splits(archive, url=sources.fb15k237_zip, folder=folder, data_dir=data_dir)
    finally:
        archive.unlink(missing_ok=True)

    for url, file_name in (
        (sources.entity_names, "entity_names.tsv"),
        (sources.relation_names, "relation_names.tsv"),
    ):
        written.append(_download(url, folder / file_name, timeout=timeout, message=DOWNLOAD_FAILED, data_dir=data_dir))
    if census:
        target = data_dir / "census" / "occupation_gender_ipums.csv"
        written.append(
            _download(sources.census, target, timeout=timeout, message=DOWNLOAD_CENSUS_FAILED, data_dir=data_dir)
        )
    return written


def main(argv: list[str] | None = None) -> int:
    """``download --data-dir DIR [--timeout S] [--no-census]``: for a ``python -m`` entry point."""
    parser = argparse.ArgumentParser(prog="kgbias_core download", description=download_fb15k237.__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--no-census", action="store_true")
    args = parser.parse_args(argv)
    try:
        paths = download_fb15k237(args.data_dir, timeout=args.timeout, census=not args.no_census)
    except DataError as exc:
        parser.exit(1, f"error: {exc}\n")
    for path in paths:
        print(path)
    return 0
