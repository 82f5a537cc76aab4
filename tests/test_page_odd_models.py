"""Pages over odd model directories (issue 30, item 9): a model whose files disagree is refused at load,
and every page shows the reason as st.error, never a traceback (st.exception) or silently wrong figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

from tests.conftest import page, texts, use_store


def _tensors(path: Path, **changes) -> None:
    weights = load_file(path / "model.safetensors")
    save_file({**weights, **{k: change(weights[k]) for k, change in changes.items()}}, path / "model.safetensors")


def _config(path: Path, **changes) -> None:
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **changes}))


def _linked_config(path: Path) -> None:
    other = path.parent.parent / "elsewhere" / "config.json"
    other.parent.mkdir()
    other.write_text(json.dumps({**json.loads((path / "config.json").read_text()), "seed": 99}))
    (path / "config.json").unlink()
    (path / "config.json").symlink_to(other)


def _duplicate(path: Path) -> None:
    lines = (path / "entities.tsv").read_text().splitlines()
    lines[2] = "\t".join([lines[2].split("\t")[0], lines[1].split("\t")[1], lines[2].split("\t")[2]])
    (path / "entities.tsv").write_text("\n".join(lines) + "\n")


#: name -> (damage, words of the reason st.error must show)
ODD = {
    "dims-differ": (lambda p: _tensors(p, relation_embeddings=lambda t: t[:, :-1].contiguous()),
                    "entity vectors have dimension 16, relation vectors 15"),
    "dims-differ-entities": (lambda p: _tensors(p, entity_embeddings=lambda t: t[:, :-1].contiguous()),
                             "entity vectors have dimension 15, relation vectors 16"),
    "weights-other-dim": (lambda p: _tensors(p, entity_embeddings=lambda t: t[:, :8].contiguous(),
                                             relation_embeddings=lambda t: t[:, :8].contiguous()),
                          "holds 8-dimensional vectors, config.json says dim 16"),
    "config-symlinked": (_linked_config, "config.json is a symbolic link"),
    "duplicate-label": (_duplicate, "appears twice in entities.tsv"),
    "negative-dim": (lambda p: _config(p, dim=-5), "'dim' must be >= 1, found -5"),
}


def _odd_store(tiny_store: Path, tmp_path: Path, name: str) -> Path:
    model = tmp_path / "store" / "odd"
    shutil.copytree(tiny_store / "tiny-transe", model)
    ODD[name][0](model)
    return model.parent


@pytest.mark.parametrize("name", list(ODD))
def test_an_odd_model_directory_is_an_error_on_the_overview(
    name: str, tiny_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_store(_odd_store(tiny_store, tmp_path, name), monkeypatch, tmp_path)
    app = page("overview").run()
    assert not app.exception
    assert ODD[name][1] in texts(app.error), texts(app.error)
    assert not app.metric  # no figures from the disagreeing files


@pytest.mark.parametrize("page_name", ["occupation_explorer", "influential_triples", "debiasing_lab", "attributes",
                                       "model_comparison", "validation", "findings"])
def test_a_model_whose_files_disagree_is_an_error_on_every_page(
    page_name: str, tiny_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_store(_odd_store(tiny_store, tmp_path, "dims-differ"), monkeypatch, tmp_path)
    app = page(page_name).run()
    assert not app.exception
    assert "the model's files disagree" in texts(app.error), texts(app.error)
