"""Text from data and URLs is shown as text (issue 30, item 5): the one Markdown escape of the app,
and the pages that show entity names, run edits and URL values through it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from kgbias_app.escape import md, md_format
from kgbias_app.texts import LINK_UNKNOWN
from kgbias_core.embeddings.store import save_model
from tests.conftest import dashboard, page, use_store

#: The issue's payloads: an image that makes the viewer's browser fetch a URL, bold, colour, KaTeX.
PAYLOADS = ("![p](http://host/x.png)", "**bold**", ":red[x]", "$x^2$")
PAYLOAD = " ".join(PAYLOADS)
#: Each payload's syntax as it must never reach Streamlit: unescaped (escaped, a backslash splits each).
RAW = re.compile(r"!\[p|\*\*bold|:red\[x|\$x\^2")


def _shown(app) -> str:
    """Every Markdown source the page handed to Streamlit (headings, captions, alerts, markdown)."""
    elements = [*app.header, *app.subheader, *app.caption, *app.markdown, *app.warning, *app.info, *app.error,
                *app.success, *app.title]
    return "\n".join(str(e.value) for e in elements)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_escapes_each_payload_and_keeps_its_characters(payload: str) -> None:
    escaped = md(payload)
    assert not RAW.search(escaped)
    assert re.sub(r"\\(.)", r"\1", escaped) == payload  # CommonMark's unescape gives the text back
    assert md("a\n# heading") == r"a \# heading" and md("- item") == r"\- item" and md("tiny-transe") == "tiny-transe"


def test_md_format_escapes_strings_only() -> None:
    assert md_format("{name} has {n:.1f}", name="**x**", n=2.25) == r"\*\*x\*\* has 2.2"


@pytest.fixture
def payload_store(tiny_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store whose model names the occupation nurse with the payloads (as a user graph's names file could)."""
    names = list(tiny_model.entity_names)
    names[tiny_model.entity_labels.index("nurse")] = PAYLOAD
    store = tmp_path / "store"
    save_model(replace(tiny_model, entity_names=tuple(names)), store)
    return use_store(store, monkeypatch, tmp_path)


def test_an_entity_name_of_markdown_is_shown_as_text_on_the_explorer(payload_store: Path) -> None:
    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    assert not app.exception
    assert app.header[0].value == md(PAYLOAD)
    assert not RAW.search(_shown(app)), _shown(app)


def test_an_entity_name_of_markdown_is_shown_as_text_on_the_lab(payload_store: Path) -> None:
    app = page("debiasing_lab").run()
    app.selectbox(key="lab_occupation").set_value("nurse").run()
    assert not app.exception
    assert md(PAYLOAD) in _shown(app)
    assert not RAW.search(_shown(app)), _shown(app)


@pytest.mark.parametrize(("page_name", "key"), [
    ("occupation_explorer", "occupation"), ("occupation_explorer", "view"), ("model_comparison", "compare_models"),
    ("attributes", "attribute"), ("debiasing_lab", "lab_strategy"),
])
def test_a_url_value_of_markdown_is_shown_as_text(writable_store: Path, page_name: str, key: str) -> None:
    """The issue's crafted link `?occupation=![p](http://host/x.png)` inserted an <img>: now its warning shows
    the value as text."""
    app = dashboard()
    app.query_params[key] = PAYLOAD
    app.switch_page(f"app_pages/{page_name}.py").run()
    assert not app.exception
    shown = _shown(app)
    assert not RAW.search(shown), shown
    assert any(md(PAYLOAD) in str(w.value) and LINK_UNKNOWN.split("{")[0] in str(w.value) for w in app.warning), shown


@pytest.mark.parametrize("page_name", ["overview", "influential_triples", "attributes", "model_comparison",
                                       "validation", "findings"])
def test_an_entity_name_of_markdown_is_text_on_every_other_page(payload_store: Path, page_name: str) -> None:
    app = dashboard()
    app.query_params["occupation"] = "nurse"
    app.switch_page(f"app_pages/{page_name}.py").run()
    assert not app.exception
    assert not RAW.search(_shown(app)), _shown(app)
    if page_name == "influential_triples":  # its heading names the occupation: the payload, escaped
        assert md(PAYLOAD) in _shown(app)
