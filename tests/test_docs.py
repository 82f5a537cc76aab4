"""The results documents (docs/results/*.md) are generated from the result files, and every figure names its
machine: docs/generate.py run today reproduces them byte for byte, every table and result log is followed
by a provenance line naming a machine class of docs/machines.toml, and every result file has provenance."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import load_script

REPO = Path(__file__).resolve().parents[1]
RESULTS_DOCS = REPO / "docs" / "results"
RESULT_FOLDERS = [REPO / "bench" / "results", *sorted((REPO / "experiments").glob("*/results"))]


def _generator():
    return load_script("docs/generate.py", "docs_generate")


def _machine_names() -> set[str]:
    machines = tomllib.loads((REPO / "docs" / "machines.toml").read_text(encoding="utf-8"))
    return {entry["name"] for entry in machines.values()}


def test_results_documents_equal_what_the_generator_writes_today(tmp_path):
    completed = subprocess.run([sys.executable, str(REPO / "docs" / "generate.py"), "--out", str(tmp_path)],
                               capture_output=True, text=True, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    fresh = {path.name: path.read_bytes() for path in tmp_path.glob("*.md")}
    committed = {path.name: path.read_bytes() for path in RESULTS_DOCS.glob("*.md")}
    templates = {path.name for path in (REPO / "docs" / "templates").glob("*.md")}
    assert set(fresh) == templates  # one document per template, none left over from a removed one
    assert set(committed) == set(fresh), "docs/results differs in files: run python docs/generate.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"docs/results out of date ({stale}): run python docs/generate.py"


def _blocks(text: str):
    """(kind, the first line after the block) for every Markdown table and fenced block of a document."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            kind = "table"
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
        elif lines[i].startswith("```"):
            kind = "text"
            i += 1
            while not lines[i].startswith("```"):
                i += 1
            i += 1
        else:
            i += 1
            continue
        following = next((line for line in lines[i:] if line.strip()), "")
        yield kind, following


def test_every_table_and_result_log_names_its_machine():
    names = _machine_names()
    seen = 0
    for document in sorted(RESULTS_DOCS.glob("*.md")):
        for kind, following in _blocks(document.read_text(encoding="utf-8")):
            seen += 1
            assert following.startswith("*Machine: "), f"{document.name}: a {kind} without its provenance"
            machines = following.removeprefix("*Machine: ").split(".")[0]
            assert machines and all(name in names for name in machines.split(" and ")), (document.name, machines)
    assert seen >= 30  # the documents hold the results tables, not an empty shell


def test_every_result_file_has_provenance_with_a_known_machine():
    generator = _generator()
    files = [path for folder in RESULT_FOLDERS for path in sorted(folder.iterdir())
             if path.is_file() and path.name != "provenance.toml"]
    assert len(files) >= 40
    for path in files:
        entry = generator.provenance(path)
        assert entry["machine_names"] and entry["command"] and entry["date"], path


def test_a_result_file_without_provenance_or_with_an_unknown_machine_is_refused(tmp_path):
    generator = _generator()
    generator.ROOT = tmp_path  # the generator names files relative to the repository; here, the temporary one
    stray = tmp_path / "stray.csv"
    stray.write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "provenance.toml").write_text('["other.csv"]\nmachine = "cpu-2core"\n', encoding="utf-8")
    with pytest.raises(generator.DocsError, match="stray.csv: no entry in provenance.toml"):
        generator.provenance(stray)
    (tmp_path / "provenance.toml").write_text('["stray.csv"]\nmachine = "laptop"\n', encoding="utf-8")
    with pytest.raises(generator.DocsError, match="'laptop' is not in docs/machines.toml"):
        generator.provenance(stray)
