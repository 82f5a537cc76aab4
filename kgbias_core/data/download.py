"""Fetch the public originals of the data for users with a network.

Layout written under ``data_dir`` (the one the rest of kgbias reads)::

    fb15k237/train.txt, valid.txt, test.txt   from the official FB15K-237.2 zip (Release/)
    fb15k237/entity_names.tsv                  KG-BERT's entity2text.txt   (MID<TAB>name)
    fb15k237/relation_names.tsv                KG-BERT's relation2text.txt (relation<TAB>text)
    census/occupation_gender_ipums.csv         Garg et al. (2018), occupation_percentages_gender_occ1950.csv
    fb13/train.txt, valid.txt, test.txt        OpenKE's benchmarks/FB13 ({train,valid,test}2id.txt), ids mapped
                                               back to slugs through entity2id.txt / relation2id.txt
    fb13/entity_names.tsv, relation_names.tsv  display names derived from the slugs

Every file is downloaded to a temporary file in its target directory and moved into place with
``os.replace``, so an interrupted download never leaves a half-written file under the real name.
"""

from __future__ import annotations

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

from kgbias_core.errors import (
    DATA_DIR_NOT_A_DIRECTORY,
    DATA_DIR_UNWRITABLE,
    DOWNLOAD_BAD_ARCHIVE,
    DOWNLOAD_BAD_OPENKE,
    DOWNLOAD_CENSUS_FAILED,
    DOWNLOAD_FAILED,
    DOWNLOAD_FB13_FAILED,
    DataError,
)

#: The official Microsoft release, the same URL as PyKEEN's ``pykeen.datasets.FB15k237``.
FB15K237_URL = "https://download.microsoft.com/download/8/7/0/8700516A-AB3D-4850-B4BB-805C515AECE1/FB15K-237.2.zip"
#: KG-BERT's copy of the FB15k-237 names (HEAD: the default branch, whatever its name).
KG_BERT_URL = "https://raw.githubusercontent.com/yao8839836/kg-bert/HEAD/data/FB15k-237/"
#: Garg, Schiebinger, Jurafsky & Zou (PNAS 2018), data of github.com/nikhgarg/EmbeddingDynamicStereotypes.
CENSUS_URL = (
    "https://raw.githubusercontent.com/nikhgarg/EmbeddingDynamicStereotypes/HEAD/data/"
    "occupation_percentages_gender_occ1950.csv"
)
#: OpenKE's copy of FB13 (Socher et al. 2013): id files with a count line (PROVENANCE.md).
OPENKE_FB13_URL = "https://raw.githubusercontent.com/thunlp/OpenKE/HEAD/benchmarks/FB13/"
SPLITS = ("train", "valid", "test")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Sources:
    """Where each file comes from; :meth:`under` points all of them at one mirror."""

    fb15k237_zip: str = FB15K237_URL  # zip holding Release/{train,valid,test}.txt
    entity_names: str = KG_BERT_URL + "entity2text.txt"  # MID<TAB>name
    relation_names: str = KG_BERT_URL + "relation2text.txt"  # relation<TAB>text
    census: str = CENSUS_URL  # Census year,Occupation,Total Weight,Female,Male
    fb13: str = OPENKE_FB13_URL  # folder with entity2id.txt, relation2id.txt, {train,valid,test}2id.txt

    @classmethod
    def under(cls, base_url: str) -> Sources:
        """All files under one base URL, by their original file names (a mirror, or a test server)."""
        base = base_url.rstrip("/") + "/"
        return cls(
            fb15k237_zip=base + "FB15K-237.2.zip",
            entity_names=base + "entity2text.txt",
            relation_names=base + "relation2text.txt",
            census=base + "occupation_percentages_gender_occ1950.csv",
            fb13=base + "FB13/",
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


def _data_folder(data_dir: Path, name: str) -> Path:
    """``data_dir/name``, created; a data directory that is a file or cannot be written is a DataError."""
    folder = data_dir / name
    for path in (data_dir, folder):
        if path.exists() and not path.is_dir():
            raise DataError(DATA_DIR_NOT_A_DIRECTORY.format(path=path))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(DATA_DIR_UNWRITABLE.format(path=folder, reason=exc.strerror or exc)) from None
    return folder


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
    folder = _data_folder(data_dir, "fb15k237")
    written: list[Path] = []

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


def slug_display_name(slug: str) -> str:
    """``thomas_harrison_1740`` -> ``Thomas Harrison (1740)``: words capitalised, a trailing year in brackets."""
    words = [w for w in slug.split("_") if w]
    year = ""
    if len(words) > 1 and len(words[-1]) == 4 and words[-1].isdigit():
        year = f" ({words.pop()})"
    return " ".join(w[:1].upper() + w[1:] for w in words) + year


def _openke_rows(text: str, *, url: str, columns: int, data_dir: Path) -> list[list[str]]:
    """The rows of an OpenKE file after its count line; the count and the width are checked."""
    lines = [line for line in text.splitlines() if line.strip()]

    def bad(line: int, problem: str) -> DataError:
        return DataError(DOWNLOAD_BAD_OPENKE.format(url=url, line=line, problem=problem, path=data_dir))

    if not lines or not lines[0].strip().isdigit():
        raise bad(1, "the first line is not a count")
    rows = [line.split() for line in lines[1:]]
    for number, row in enumerate(rows, start=2):
        if len(row) != columns:
            raise bad(number, f"expected {columns} columns, found {len(row)}")
    if len(rows) != int(lines[0]):
        raise bad(1, f"the count says {int(lines[0])} rows, the file has {len(rows)}")
    return rows


def _write_text(target: Path, text: str) -> Path:
    with _atomic_target(target) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return target


def download_fb13(data_dir: Path, *, timeout: float = 30, sources: Sources | None = None) -> list[Path]:
    """Download OpenKE's FB13 into ``data_dir/fb13`` as head<TAB>relation<TAB>tail slugs, with names.

    OpenKE stores ids (``h t r`` per line after a count line) and the slug of each id in
    ``entity2id.txt`` / ``relation2id.txt``; they are mapped back to slugs so that the files are the
    same layout as FB15k-237's. Every file is checked (count line, width, ids in range) and written
    atomically. Returns the paths written.
    """
    data_dir, sources = Path(data_dir), sources or Sources()
    folder = _data_folder(data_dir, "fb13")

    def fetch(name: str) -> tuple[str, str]:
        url = sources.fb13 + name
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
        os.close(handle)
        try:
            _download(url, Path(temporary), timeout=timeout, message=DOWNLOAD_FB13_FAILED, data_dir=data_dir)
            return url, Path(temporary).read_text(encoding="utf-8")
        finally:
            Path(temporary).unlink(missing_ok=True)

    labels = {}
    for kind in ("entity", "relation"):
        url, text = fetch(f"{kind}2id.txt")
        rows = _openke_rows(text, url=url, columns=2, data_dir=data_dir)
        labels[kind] = {int(i): slug for slug, i in rows}
    written = []
    for split in SPLITS:
        url, text = fetch(f"{split}2id.txt")
        lines = []
        for number, (head, tail, relation) in enumerate(_openke_rows(text, url=url, columns=3, data_dir=data_dir), 2):
            try:
                lines.append(f"{labels['entity'][int(head)]}\t{labels['relation'][int(relation)]}\t"
                             f"{labels['entity'][int(tail)]}\n")
            except (KeyError, ValueError) as exc:
                problem = f"id {exc.args[0]} is not in entity2id.txt / relation2id.txt"
                raise DataError(DOWNLOAD_BAD_OPENKE.format(url=url, line=number, problem=problem,
                                                           path=data_dir)) from exc
        written.append(_write_text(folder / f"{split}.txt", "".join(lines)))
    names = "".join(f"{slug}\t{slug_display_name(slug)}\n" for slug in labels["entity"].values())
    relations = "".join(f"{slug}\t{slug.replace('_', ' ')}\n" for slug in labels["relation"].values())
    written.append(_write_text(folder / "entity_names.tsv", names))
    written.append(_write_text(folder / "relation_names.tsv", relations))
    return written
