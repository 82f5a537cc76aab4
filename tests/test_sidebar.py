"""The sidebar: which graph and model a page opens on (never a what-if run), and the model's config."""

from __future__ import annotations

from pathlib import Path

from kgbias_app.cache import ModelRef
from kgbias_app.sidebar import default_graph, default_model
from tests.conftest import page, texts


def ref(name: str, dataset: str = "synthetic", base: str | None = None) -> ModelRef:
    return ModelRef(name=name, path=f"/store/{name}", version=1, dataset=dataset, kind="transe", base=base)


def test_the_default_model_is_the_graphs_default_else_its_first_base_model() -> None:
    run, base, other = ref("a--if-remove-nurse", base="b"), ref("b"), ref("c")
    assert default_model("synthetic", [run, base, other]) == 1
    assert default_model("synthetic", [run, base, ref("synthetic-transe")]) == 2
    assert default_model("synthetic", [run]) == 0  # only runs: the page still opens


def test_the_default_graph_has_its_default_model_cached() -> None:
    graphs = ["synthetic", "fb15k237", "mine"]
    assert default_graph(graphs, [ref("x", "mine"), ref("fb15k237-transe", "fb15k237")]) == 1
    assert default_graph(graphs, [ref("x", "mine")]) == 2
    assert default_graph(graphs, []) == 0


def test_a_page_opens_on_the_base_model_even_when_a_run_sorts_first(store_with_a_run_first: Path) -> None:
    app = page("overview").run()
    assert not app.exception
    assert app.selectbox(key="model").options == ["a-run", "tiny-transe"]
    assert app.selectbox(key="model").value == "tiny-transe"
    assert "Model **tiny-transe**" in texts(app.caption)
    app.selectbox(key="model").set_value("a-run").run()  # a run can still be picked by hand
    assert not app.exception
    assert "Model **a-run**" in texts(app.caption)
    assert "What-if edit:" in texts(app.sidebar.caption)
