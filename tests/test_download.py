"""Downloads: a clear error without a network, and the expected layout from a local server."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgbias_core.data.download import FB15K237_URL, Sources, download_fb15k237
from kgbias_core.errors import DataError

TRIPLES = {
    "train": "/m/a\t/people/person/gender\t/m/male\n/m/a\t/people/person/profession\t/m/actor\n",
    "valid": "/m/b\t/people/person/gender\t/m/female\n",
    "test": "/m/b\t/people/person/profession\t/m/actor\n",
}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A static HTTP server on 127.0.0.1 serving a fresh directory; yields (base URL, directory)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", root
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # free once closed: connecting is refused at once


def test_default_source_is_pykeens_url() -> None:
    # Read pykeen's source rather than import it: the import alone takes seconds.
    spec = importlib.util.find_spec("pykeen.datasets.freebase")
    assert spec is not None and spec.origin is not None
    assert f'url="{FB15K237_URL}"' in Path(spec.origin).read_text()


def test_offline_fails_fast_with_clear_message(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/"
    start = time.monotonic()
    with pytest.raises(DataError) as info:
        download_fb15k237(tmp_path, timeout=2, sources=Sources.under(base))
    assert time.monotonic() - start < 5
    message = str(info.value)
    url = base + "FB15K-237.2.zip"
    assert message.startswith(f"could not download {url}: ")
    assert "refused" in message.lower()
    assert f"Without a network, copy the files into {tmp_path} by hand" in message
    assert list((tmp_path / "fb15k237").iterdir()) == []  # no half-written files left behind


def _serve_release(root: Path, *, census: bool = True) -> None:
    with zipfile.ZipFile(root / "FB15K-237.2.zip", "w") as zipped:
        zipped.writestr("Release/README.txt", "readme")
        zipped.writestr("Release/text_cvsc.txt", "not triples")
        for split, text in TRIPLES.items():
            zipped.writestr(f"Release/{split}.txt", text)
    (root / "entity2text.txt").write_text("/m/a\tAnne\n/m/actor\tActor-GB\n")
    (root / "relation2text.txt").write_text("/people/person/gender\tpeople person gender\n")
    if census:
        (root / "occupation_percentages_gender_occ1950.csv").write_text(
            "Census year,Occupation,Total Weight,Female,Male\n2015,judge,10.0,0.4,0.6\n"
        )


def test_download_from_local_server(tmp_path: Path, server: tuple[str, Path]) -> None:
    base, root = server
    _serve_release(root)
    data_dir = tmp_path / "data"
    written = download_fb15k237(data_dir, timeout=5, sources=Sources.under(base))
    fb = data_dir / "fb15k237"
    expected = [fb / f"{s}.txt" for s in ("train", "valid", "test")]
    expected += [
        fb / "entity_names.tsv",
        fb / "relation_names.tsv",
        data_dir / "census" / "occupation_gender_ipums.csv",
    ]
    assert written == expected
    for split, text in TRIPLES.items():
        assert (fb / f"{split}.txt").read_text() == text
    assert (fb / "entity_names.tsv").read_text() == (root / "entity2text.txt").read_text()
    assert (fb / "relation_names.tsv").read_text() == (root / "relation2text.txt").read_text()
    assert (data_dir / "census" / "occupation_gender_ipums.csv").read_text().startswith("Census year,")
    # Only the final files: no zip, no temporary parts.
    assert sorted(p.name for p in fb.iterdir()) == sorted(p.name for p in expected[:5])


def test_missing_file_on_server_names_url(tmp_path: Path, server: tuple[str, Path]) -> None:
    base, root = server
    _serve_release(root, census=False)
    with pytest.raises(DataError) as info:
        download_fb15k237(tmp_path, timeout=5, sources=Sources.under(base))
    url = base + "occupation_percentages_gender_occ1950.csv"
    assert str(info.value).startswith(f"could not download {url}: HTTP 404")
    assert "copy the census file by hand" in str(info.value)
    assert not (tmp_path / "census" / "occupation_gender_ipums.csv").exists()
    assert (tmp_path / "fb15k237" / "train.txt").exists()  # what succeeded stays


def test_not_a_zip(tmp_path: Path, server: tuple[str, Path]) -> None:
    base, root = server
    (root / "FB15K-237.2.zip").write_text("<html>moved</html>")
    with pytest.raises(DataError, match="not the expected FB15k-237 zip"):
        download_fb15k237(tmp_path, timeout=5, sources=Sources.under(base))
    assert list((tmp_path / "fb15k237").iterdir()) == []


def _serve_openke_fb13(root: Path, triples: dict[str, list[tuple[str, str, str]]]) -> None:
    """OpenKE's FB13 layout: a count line, then 'slug<TAB>id' or 'h<TAB>t<TAB>r' ids."""
    folder = root / "FB13"
    folder.mkdir()
    every = [t for rows in triples.values() for t in rows]
    entities = sorted({e for h, _, t in every for e in (h, t)})
    relations = sorted({r for _, r, _ in every})
    entity_id, relation_id = ({x: i for i, x in enumerate(xs)} for xs in (entities, relations))
    for name, ids in (("entity2id.txt", entity_id), ("relation2id.txt", relation_id)):
        (folder / name).write_text(f"{len(ids)}\n" + "".join(f"{x}\t{i}\n" for x, i in ids.items()))
    for split, rows in triples.items():
        body = "".join(f"{entity_id[h]}\t{entity_id[t]}\t{relation_id[r]}\n" for h, r, t in rows)
        (folder / f"{split}2id.txt").write_text(f"{len(rows)}\n{body}")


def test_fb13_download_converts_openke_ids_back_to_the_shared_layout(tmp_path: Path, server) -> None:
    """Round trip on a slice of the real FB13: ids -> slugs gives the same lines and names as shared/data."""
    from kgbias_core.data.datasets import load_dataset
    from kgbias_core.data.download import download_fb13

    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "fb13"
    base, root = server
    splits = {s: [tuple(line.split("\t")) for line in (shared / f"{s}.txt").read_text().splitlines()[:400]]
              for s in ("train", "valid", "test")}
    _serve_openke_fb13(root, splits)
    data_dir = tmp_path / "data"
    written = download_fb13(data_dir, timeout=5, sources=Sources.under(base))
    folder = data_dir / "fb13"
    assert [p.name for p in written] == ["train.txt", "valid.txt", "test.txt", "entity_names.tsv",
                                         "relation_names.tsv"]
    for split, rows in splits.items():
        assert (folder / f"{split}.txt").read_text() == "".join("\t".join(r) + "\n" for r in rows)
    shared_names = dict(line.split("\t") for line in (shared / "entity_names.tsv").read_text().splitlines())
    for line in (folder / "entity_names.tsv").read_text().splitlines():
        slug, name = line.split("\t")
        assert shared_names[slug] == name
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in written)  # no partial files
    assert "profession" in load_dataset("fb13", data_dir=data_dir).relation_to_id


def test_fb13_download_names_the_bad_line(tmp_path: Path, server) -> None:
    from kgbias_core.data.download import download_fb13

    base, root = server
    _serve_openke_fb13(root, {"train": [("a", "gender", "male")], "valid": [], "test": []})
    (root / "FB13" / "train2id.txt").write_text("2\n0\t1\t0\n0\t1\n")
    with pytest.raises(DataError) as info:
        download_fb13(tmp_path, timeout=5, sources=Sources.under(base))
    assert str(info.value).startswith(f"{base}FB13/train2id.txt, line 3: expected 3 columns, found 2")
    assert not (tmp_path / "fb13" / "train.txt").exists()


def test_fb13_offline_says_where_to_put_the_files(tmp_path: Path) -> None:
    from kgbias_core.data.download import download_fb13

    base = f"http://127.0.0.1:{_closed_port()}/"
    with pytest.raises(DataError) as info:
        download_fb13(tmp_path, timeout=2, sources=Sources.under(base))
    assert str(info.value).startswith(f"could not download {base}FB13/entity2id.txt: ")
    assert f"copy FB13 into {tmp_path}/fb13/ by hand" in str(info.value)
    assert not list((tmp_path / "fb13").iterdir())  # no partial file left behind
