"""The dashboard's widgets, each in one version: error display, downloads, pickers, the occupation
section, the removal basket and the controls of the lab, the comparison and the validation.

Values that several pages share (the occupation, the removal basket) live in the session; the
defaults of the controls (k, minimum counts) are stated here, next to the widget that offers them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from kgbias_app import cache, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md, md_format
from kgbias_core import tasks
from kgbias_core.data.datasets import dataset_title
from kgbias_core.errors import KGBiasError
from kgbias_core.influence.prediction import WhatIfPrediction
from kgbias_core.static_images import IMAGE_FORMATS, figure_image, slide_figure
from kgbias_core.tables import (
    MIN_GROUP_SIZE,
)
from kgbias_core.whatif.edits import Edit


@contextmanager
def errors_shown(*, stop: bool = False) -> Iterator[None]:
    """Show a :class:`KGBiasError` as ``st.error`` (its message names the problem), never a traceback;
    ``stop``: end the page there, for a block the rest of the page needs (a non-TransE model on a page of
    Du's measures only)."""
    try:
        yield
    except KGBiasError as exc:
        st.error(str(exc))
        if stop:
            st.stop()


# --- tables, charts and their downloads ---------------------------------------------------------
def styled(frame: pd.DataFrame, digits: int = 3) -> Any:
    """Numbers with ``digits`` decimals (never "-0.000") and missing values written "undefined";
    sorting still uses the numbers."""
    floats = [c for c in frame.select_dtypes("number").columns if frame[c].dtype.kind == "f"]
    return frame.style.format({c: lambda v: texts.number(v, digits) for c in floats}, na_rep=texts.UNDEFINED)


def table(frame: pd.DataFrame, columns: Sequence[str], *, ids: Sequence[str] = (),
          names: Mapping[str, str] | None = None, digits: int = 3, **kwargs: Any) -> Any:
    """A table as the analyst reads it: ``columns`` under their display names (``names``, else
    :data:`texts.COLUMNS`), the ``ids`` in the last columns, numbers by :func:`styled`. A column named
    :data:`PERSON_LINK` (:func:`with_person_links`) shows as a link to the person view.

    ``kwargs`` go to ``st.dataframe`` (a selection, a key); -> what it returns.
    """
    shown = frame[[*[c for c in columns if c not in ids], *ids]]
    shown = shown.rename(columns={c: (names or {}).get(c, texts.COLUMNS.get(c, c)) for c in shown.columns})
    linked = {c: st.column_config.LinkColumn(c, display_text=texts.PERSON_LINK_TEXT) for c in shown.columns
              if c == PERSON_LINK}
    if shown.isna().to_numpy().any():  # the grid would write "None": the Styler writes "undefined"
        return st.dataframe(styled(shown, digits), hide_index=True, column_config=linked, **kwargs)
    # Without missing values the grid formats the numbers itself: a Styler renders every cell on the
    # server (~120 ms for the 1,874 persons of Actor). A value that rounds to zero is stored as 0.0,
    # so that "%.3f" never prints "-0.000".
    floats = [c for c in shown.columns if shown[c].dtype.kind == "f"]
    shown = shown.assign(**{c: shown[c].where(shown[c].round(digits) != 0, 0.0) for c in floats})
    config = {c: st.column_config.NumberColumn(format=f"%.{digits}f") for c in floats} | linked
    return st.dataframe(shown, hide_index=True, column_config=config, **kwargs)


#: The column of a table that links each row's person to the person view (``?person=<label>``).
PERSON_LINK = "person view"
#: The person view's URL path (``dashboard.py``).
PERSON_PAGE = "person"


def person_url(label: str) -> str:
    """The person view of ``label``, relative to the app's root (a link in a table opens it)."""
    from urllib.parse import quote

    return f"{PERSON_PAGE}?person={quote(label, safe='')}"


def with_person_links(frame: pd.DataFrame, *, column: str = "person") -> pd.DataFrame:
    """``frame`` with a :data:`PERSON_LINK` column: the person view of each row's ``column`` ("" where none)."""
    return frame.assign(**{PERSON_LINK: [person_url(p) if p else None for p in frame[column]]})


def too_few(small: pd.DataFrame, columns: Sequence[str], *, rule: str, ids: Sequence[str] = (),
            names: Mapping[str, str] | None = None) -> None:
    """The groups a ranking leaves out for their size, listed apart (collapsed) and named by ``rule``."""
    if small.empty:
        return
    with st.expander(texts.TOO_FEW.format(rule=rule, n=len(small))):
        table(small, columns, ids=ids, names=names)


def csv_name(*parts: str, suffix: str = ".csv") -> str:
    """A download's file name from its parts: "a-b-c.csv", no slashes or spaces (labels may hold both)."""
    return "-".join(parts).replace("/", "_").replace(" ", "_") + suffix


def download_button(label: str, data: Callable[[], bytes | str], **options: Any) -> None:
    """``st.download_button`` with ``data`` made on the click, and the click rerunning nothing.

    A callable is a deferred download: the browser asks the server for the file after the click. Streamlit's
    default click also reruns the whole script, and that rerun drops the id the browser is asking for; when the
    rerun ends first, the download fails with nothing saved. Nothing on these pages reads the click, so it
    reruns nothing (and a download no longer redraws a slow page)."""
    st.download_button(label, data, on_click="ignore", **options)


def download(frame: pd.DataFrame, file_name: str, *, key: str, label: str = "Download the data (CSV)") -> None:
    # A callable: the CSV is written on the click, not on every rerun (240k persons of a 20M-triple graph's
    # largest occupation took ~1 s per rerun as bytes).
    download_button(label, partial(_csv_bytes, frame), file_name=file_name, mime="text/csv", key=key)


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


#: Session state: the model the page shows, for the titles of exported charts (set by the sidebar).
CHART_MODEL_KEY = "chart_model"


def chart_title(key: str, caption: str, *, occupation: str | None = None) -> str:
    """An exported chart's title: what it shows (:data:`texts.CHART_TITLES`, else the caption's first sentence),
    then the graph, the model and, where it is about one, the occupation's name."""
    what = texts.CHART_TITLES.get(key) or caption.replace("**", "").split(". ")[0].rstrip(".")[:90]
    model: ModelRef | None = st.session_state.get(CHART_MODEL_KEY)
    parts = [what]
    if model is not None:
        parts.append(f"{dataset_title(model.dataset)} · {model.name}")
    if occupation:
        parts.append(occupation)
    return " — ".join(parts)


def occupation_name(model: ModelRef, occupation: str) -> str:
    """The readable name of an occupation label ("Screenwriter" for /m/02hrh1q), the label where it has none."""
    try:
        names = cache.measures(model).set_index("occupation")["name"]
    except KGBiasError:
        return occupation
    return str(names.get(occupation, occupation))


def readable_name(*parts: str, suffix: str = ".csv") -> str:
    """A download's file name from readable parts, slugged: "synthetic-transe-screenwriter-curve.png"."""
    return "-".join(tasks.slug(p) for p in parts if p) + suffix


def show_chart(fig: go.Figure, data: pd.DataFrame, *, caption: str, file_name: str, key: str,
               occupation: str | None = None, **selection: Any) -> Any:
    """A chart, the caption saying how to read it, a download of the data behind it, and the chart as
    PNG and SVG for slides: titled with what it shows, the graph, the model and ``occupation`` (a readable
    name), laid out so that its labels fit (:func:`~kgbias_core.static_images.slide_figure`).

    ``selection``: ``on_select`` and ``selection_mode`` of ``st.plotly_chart``, for a chart whose points can be
    clicked; -> what ``st.plotly_chart`` returns (the selection event where ``on_select`` is set)."""
    event = st.plotly_chart(fig, key=key, config={"displaylogo": False}, **selection)
    st.caption(caption)
    slide = slide_figure(fig, title=chart_title(key, caption, occupation=occupation))
    columns = st.columns(1 + len(IMAGE_FORMATS))
    with columns[0]:
        download(data, file_name, key=f"{key}:csv")
    for column, (image_format, mime) in zip(columns[1:], IMAGE_FORMATS.items(), strict=True):
        # A callable: Chromium draws the image (seconds) only when the button is clicked, never on a rerun.
        with column:
            download_button(f"Save the chart ({image_format.upper()})",
                            partial(figure_image, slide, image_format=image_format),
                            file_name=file_name.removesuffix(".csv") + f".{image_format}", mime=mime,
                            key=f"{key}:{image_format}", help=texts.IMAGE_HELP)
    return event


def report_download(model: ModelRef, occupation: str, *, run: ModelRef | None = None) -> None:
    """"Download report": one HTML file of the occupation (or of the what-if ``run``), built on the click."""
    download_button("Download report", partial(cache.report, model, occupation, run), key="report",
                    file_name=readable_name(run.name if run else model.name, occupation_name(model, occupation),
                                            "report", suffix=".html"),
                    mime="text/html", help=texts.REPORT_HELP)


# --- occupations --------------------------------------------------------------------------------
def occupation_titles(measures: pd.DataFrame) -> dict[str, str]:
    """Occupation label -> its name, "Name (label)" only where two occupations share the name; ordered by name.

    Links still accept the "Name (label)" form (:func:`kgbias_app.links.selectbox`)."""
    ordered = measures.sort_values("name", key=lambda s: s.str.lower())
    shared = ordered["name"].str.casefold().duplicated(keep=False)
    return {label: f"{name} ({label})" if twice and name != label else name
            for label, name, twice in zip(ordered["occupation"], ordered["name"], shared, strict=True)}


def largest_occupations(measures: pd.DataFrame, n: int) -> list[str]:
    """The ``n`` occupations with the most persons of binary gender."""
    return measures.assign(size=measures["n_male"] + measures["n_female"]).nlargest(n, "size")["occupation"].tolist()


def occupation_picker(measures: pd.DataFrame, *, key: str = "occupation") -> str:
    """Searchable occupation by name or label, kept for the session (the pages share it); -> its label.

    It starts on the occupation with the most persons.
    """
    titles = occupation_titles(measures)
    options = list(titles)
    current = st.session_state.get(key)
    default = options.index(current if current in options else largest_occupations(measures, 1)[0])
    return links.selectbox("Occupation", options, index=default, format_func=titles.__getitem__, key=key,
                           what="occupation", persist_state="session", help="Type to search by name or label.")


def occupation_section(measures: pd.DataFrame, *, header: bool = True,
                       key: str = "occupation") -> tuple[str, pd.Series, bool]:
    """The top of an occupation page: picker, heading, the note on a small or one-gender group.

    ``key``: the picker's session key; pages that share one follow each other's occupation (the lab has its own).
    -> (occupation label, its row of measures, whether B_gr is defined: both genders present).
    """
    occupation = occupation_picker(measures, key=key)
    row = measures.set_index("occupation").loc[occupation].rename(occupation)
    if header:
        st.header(md(row["name"]))
    if row["note"]:
        st.warning(md_format(texts.GROUP_NOTE, name=row["name"], note=row["note"], n_male=row["n_male"],
                                           n_female=row["n_female"]))
    return occupation, row, bool(row["n_male"] > 0 and row["n_female"] > 0)


def min_group_size(*, key: str = "min_group_size") -> int:
    """The minimum men and women an occupation needs to be ranked (the rest are listed apart)."""
    return int(links.number(st.number_input, "Minimum men and women per ranked occupation", 1, 1000, MIN_GROUP_SIZE,
                            key=key, what="minimum", help=texts.MIN_GROUP_HELP))


# --- influential triples and the removal basket -------------------------------------------------
#: Session state: training-triple indices to remove, per model name.
BASKET_KEY = "removal_basket"


def unaudited_caption(model: ModelRef) -> None:
    """Under a removal's prediction (the lab and the basket) while no retrain of the model has been compared with a
    prediction: the step is shown as computed (an L1 import's at its prior scale), and what kgbias's retrains say of
    its size on models of this kind (:func:`~kgbias_core.readings.unaudited_sentence`)."""
    if cache.step_ratio(model) is not None:
        return
    st.caption(texts.model_unaudited_sentence(cache.analysis(model).model))  # our words


#: A removal's step estimated longer than this (seconds) is offered with its estimate, not run on every change of the
#: edit (FB13 with L1: 45-340 s; L2 on FB15k-237: about a minute until 2026-12-07, 8 s since; kgbias_core.influence.
#: step_cost). ``KGBIAS_SLOW_PREDICTION_S`` sets another (0: every prediction is offered).
LONG_PREDICTION_S = 30.0
SLOW_PREDICTION_ENV = "KGBIAS_SLOW_PREDICTION_S"
PREDICT_BUTTON = "Predict the change (one Newton step)"
PREDICTION_OFFERED = (
    "On this model a prediction takes {duration}: {products} products of its curvature at {product} s each on "
    "this machine, typical of its {distance} distance, and building it {build} s. It runs when you ask, so that "
    "changing the edit does not wait for it each time; asked once, an edit's prediction is kept.")
#: Session state: the (model, version, edit) whose slow prediction was asked for.
PREDICTIONS_ASKED = "predictions_asked"


def slow_prediction_seconds() -> float:
    """The threshold above which a prediction is offered (:data:`SLOW_PREDICTION_ENV`, else
    :data:`LONG_PREDICTION_S`); a value that is not a number falls back to the default."""
    try:
        return float(os.environ.get(SLOW_PREDICTION_ENV, LONG_PREDICTION_S))
    except ValueError:
        return LONG_PREDICTION_S


def offered_prediction(model: ModelRef, edit: Edit, *, key: str) -> WhatIfPrediction | None:
    """The edit's prediction (:func:`cache.prediction`, with the occupation's noise band and the model's calibration;
    raises MeasureError where the model cannot have one). A removal whose step is estimated above
    :func:`slow_prediction_seconds` (:func:`cache.step_cost`) is predicted only once asked for in this session: until
    then its estimate and a button are shown, and None is returned."""
    asked = st.session_state.setdefault(PREDICTIONS_ASKED, set())
    ident = (model.path, model.version, edit)
    if edit.kind == "remove" and ident not in asked:
        cost = cache.step_cost(model)
        if cost.seconds > slow_prediction_seconds():
            st.caption(PREDICTION_OFFERED.format(
                duration=texts.duration(cost.seconds), products=cost.products, product=texts.number(cost.product_s, 2),
                distance=texts.distance_name(cache.analysis(model).model.config.distance),
                build=texts.number(cost.build_s, 1)))  # our words and numbers
            if not st.button(texts.with_estimate(PREDICT_BUTTON, cost.seconds), key=key):
                return None
            asked.add(ident)
    return cache.prediction(model, edit, cache.occupation_spread(model, edit.occupation),
                            *cache.edit_calibration(model, edit.kind))


def basket(model_name: str) -> list[int]:
    return list(st.session_state.get(BASKET_KEY, {}).get(model_name, []))


#: Default minimum of a- plus b-persons per profession.
MIN_PERSONS = 20
#: Professions listed on each side.
TOP_PROFESSIONS = 20


def fisher_names(a: str, b: str) -> dict[str, str]:
    """Display names of a Fisher table's columns for values named ``a`` and ``b``."""
    return {"name": "profession", "bias": "b_p", "n_a": f"# {a}", "n_b": f"# {b}"}


