"""The dashboard's widgets, each in one version: error display, downloads, pickers, the occupation
section, the removal basket and the controls of the lab, the comparison and the validation.

Values that several pages share (the occupation, the removal basket) live in the session; the
defaults of the controls (k, minimum counts) are stated here, next to the widget that offers them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from kgbias_app import cache, charts, jobs_ui, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md, md_format
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.datasets import dataset_title, has_dataset, resolve_data_dir
from kgbias_core.data.schema import Schema
from kgbias_core.embeddings.config import MODELS
from kgbias_core.embeddings.store import StoredModel, default_store
from kgbias_core.errors import KGBiasError
from kgbias_core.evaluation.link_prediction import before_after, load_link_prediction
from kgbias_core.influence.calibration import leave_one_out
from kgbias_core.influence.retraining_check import default_ks
from kgbias_core.jobs import FINISHED_STATES, Priority, default_registry
from kgbias_core.measures.fisher import most_moved
from kgbias_core.measures.prediction_fairness import DEGENERATE_SHARE, FairnessReport, default_min_count
from kgbias_core.measures.relation_audit import (
    audit_params,
    default_min_persons,
    relation_values,
    value_table,
)
from kgbias_core.static_images import IMAGE_FORMATS, figure_image, slide_figure
from kgbias_core.tables import (
    MIN_GROUP_SIZE,
    Intersections,
    entity_name,
    filter_triples,
    relation_words,
    split_small,
    triples_in_words,
)
from kgbias_core.whatif.edits import MAX_DUMMIES, Edit, make_edit
from kgbias_core.whatif.runs import AFTER_GROUPS_CHOICE


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


def download(frame: pd.DataFrame, file_name: str, *, key: str, label: str = "Download the data (CSV)") -> None:
    # A callable: the CSV is written on the click, not on every rerun (240k persons of a 20M-triple graph's
    # largest occupation took ~1 s per rerun as bytes).
    st.download_button(label, partial(_csv_bytes, frame), file_name=file_name, mime="text/csv", key=key)


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
               occupation: str | None = None) -> None:
    """A chart, the caption saying how to read it, a download of the data behind it, and the chart as
    PNG and SVG for slides: titled with what it shows, the graph, the model and ``occupation`` (a readable
    name), laid out so that its labels fit (:func:`~kgbias_core.static_images.slide_figure`)."""
    st.plotly_chart(fig, key=key, config={"displaylogo": False})
    st.caption(caption)
    slide = slide_figure(fig, title=chart_title(key, caption, occupation=occupation))
    columns = st.columns(1 + len(IMAGE_FORMATS))
    with columns[0]:
        download(data, file_name, key=f"{key}:csv")
    for column, (image_format, mime) in zip(columns[1:], IMAGE_FORMATS.items(), strict=True):
        # A callable: Chromium draws the image (seconds) only when the button is clicked, never on a rerun.
        column.download_button(f"Save the chart ({image_format.upper()})",
                               partial(figure_image, slide, image_format=image_format),
                               file_name=file_name.removesuffix(".csv") + f".{image_format}", mime=mime,
                               key=f"{key}:{image_format}", help=texts.IMAGE_HELP)


def report_download(model: ModelRef, occupation: str, *, run: ModelRef | None = None) -> None:
    """"Download report": one HTML file of the occupation (or of the what-if ``run``), built on the click."""
    st.download_button("Download report", partial(cache.report, model, occupation, run), key="report",
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


def _largest(measures: pd.DataFrame, n: int) -> list[str]:
    """The ``n`` occupations with the most persons of binary gender."""
    return measures.assign(size=measures["n_male"] + measures["n_female"]).nlargest(n, "size")["occupation"].tolist()


def occupation_picker(measures: pd.DataFrame, *, key: str = "occupation") -> str:
    """Searchable occupation by name or label, kept for the session (the pages share it); -> its label.

    It starts on the occupation with the most persons.
    """
    titles = occupation_titles(measures)
    options = list(titles)
    current = st.session_state.get(key)
    default = options.index(current if current in options else _largest(measures, 1)[0])
    return links.selectbox("Occupation", options, index=default, format_func=titles.__getitem__, key=key,
                           what="occupation", persist_state="session", help="Type to search by name or label.")


def occupations_to_compare(measures: pd.DataFrame, *, current: str, key: str = "compare") -> list[str]:
    """2-6 occupations; by default the current one and the largest ones (four in all)."""
    titles = occupation_titles(measures)
    default = list(dict.fromkeys([current, *_largest(measures, 4)]))[:4]
    # A switch of the page's occupation starts the comparison anew from it (else it kept comparing the old ones).
    follows = f"{key}:current"
    if st.session_state.get(follows, current) != current:
        st.session_state.pop(key, None)
    st.session_state[follows] = current
    return links.multiselect("Occupations to compare (2 to 6)", list(titles), default=default, what="occupation",
                             format_func=titles.__getitem__, max_selections=6, key=key)


@st.fragment
def compare_occupations(model: ModelRef, measures: pd.DataFrame, *, current: str, every_point: bool) -> None:
    """Du's Fig 2 for the occupations picked to compare. A fragment: changing the pick reruns this
    section only, not the explorer above it."""
    chosen = occupations_to_compare(measures, current=current)
    links.publish_fragment()
    if len(chosen) < 2:
        st.info(texts.COMPARE_TWO)
        return
    several = tuple(chosen)
    show_chart(cache.persons_figure(model, several, "compare", every_point), cache.persons_of(model, several),
               caption=texts.COMPARE_DISTRIBUTIONS, file_name=csv_name(model.name, "compare"),
               key="compare_distributions")


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


def headline(row: pd.Series) -> None:
    """The occupation's headline figures, each with its plain-language sentence, after one line on
    whether the measures agree in direction and why they can differ."""
    line = texts.agreement(row)
    st.markdown(line)
    if line.startswith(texts.MEASURES_DISAGREE.split("{")[0]):
        st.markdown(texts.DISAGREE_ONE_LINE)  # said where the surprise is, in one line
    st.caption(texts.WHY_THEY_DIFFER)
    half_width = (row["group_bias_high"] - row["group_bias_low"]) / 2
    b_gr = texts.fmt(row["group_bias"]) + (f" ± {half_width:.3f}" if texts.is_defined(half_width) else "")
    figures = [
        ("B_gr (group bias, 95% CI)", b_gr, "group_bias"),
        ("B_wo (projection)", texts.fmt(row["projection_bias"]), "projection_bias"),
        ("Fisher b_p", texts.fmt(row["fisher_bp"], 4), "fisher_bp"),
        ("B_in vanilla", texts.fmt(row["individual_bias_vanilla"]), "individual_bias_vanilla"),
        ("B_in weighted", texts.fmt(row["individual_bias_weighted"]), "individual_bias_weighted"),
    ]
    columns = st.columns(3)
    with columns[0]:
        st.metric("Persons (men / women)", f"{row['n_male']} / {row['n_female']}")
        extra = int(row["n_other_gender"]) + int(row["n_unknown_gender"])
        st.caption(texts.OTHER_GENDERS_LEFT_OUT.format(n=extra) if extra else texts.ALL_BINARY)
    for i, (label, value, measure) in enumerate(figures, start=1):
        interval = (row[f"{measure}_low"], row[f"{measure}_high"]) if f"{measure}_low" in row else (None, None)
        with columns[i % 3]:
            st.metric(label, value, help=texts.SIGN)
            st.caption(texts.sentence(measure, row[measure], *interval))


# --- occupation explorer: within subpopulations (intersectional) ----------------------------------
#: The figures of an intersection table, in reading order.
SUBPOPULATION_FIGURES = ["group_bias", "group_bias_low", "group_bias_high", "individual_bias_vanilla",
                         "individual_bias_weighted", "fisher_bp"]


def subpopulation_attribute(schema: Schema, *, key: str = "subpopulation_attribute") -> str | None:
    """The schema's attribute whose values split the occupation's persons; None, said in words, when it has none."""
    names = [attribute.name for attribute in schema.attributes]
    if not names:
        st.info(texts.NO_ATTRIBUTES)
        return None
    return links.selectbox("Attribute that defines the subpopulations", names, key=key, what="attribute")


def too_few_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """An intersection table's figures as text: numbers where the subpopulation has enough persons; for one
    that has too few, its note ("too few persons (n = …)") in the B_gr column and blanks beside it, so that
    no cell of it reads as a number."""
    small = (frame["note"] != "").tolist()
    shown = frame.copy()
    for column in SUBPOPULATION_FIGURES:
        digits = texts.DIGITS.get(column, 3)
        shown[column] = [(note if column == "group_bias" else "") if too_few else texts.number(value, digits)
                         for value, note, too_few in zip(frame[column], frame["note"], small, strict=True)]
    return shown


def subpopulations(found: Intersections, *, file_name: str) -> None:
    """One occupation within the subpopulations of an attribute: the table (too-small ones in words), its
    download, the chart of B_gr per value with intervals, and the permutation test in a sentence."""
    table(too_few_as_text(found.table), ["name", "n_male", "n_female", *SUBPOPULATION_FIGURES], ids=["value"],
          names={"name": found.attribute, "value": "id"})
    st.caption(md_format(texts.INTERSECTIONS_TABLE, attribute=found.attribute, name=found.name, sign=texts.SIGN,
                                                minimum=MIN_GROUP_SIZE))
    download(found.table, file_name, key="subpopulations:csv", label="Download the table (CSV)")
    drawn = found.table[found.table["group_bias"].notna()]
    if drawn.empty:
        st.info(texts.NO_INTERSECTION_BARS.format(minimum=MIN_GROUP_SIZE))
    else:
        show_chart(charts.subpopulation_bars(drawn, attribute=found.attribute), drawn, caption=texts.INTERSECTION_BARS,
                   file_name=file_name.replace(".csv", "-chart.csv"), key="subpopulation_bars")
    st.markdown(texts.comparison_sentence(md(found.name), md(found.attribute), found.comparison, escape=md))


# --- influential triples and the removal basket -------------------------------------------------
#: Session state: training-triple indices to remove, per model name.
BASKET_KEY = "removal_basket"
#: Default number of triples listed per direction.
TOP_TRIPLES = 20
GENDERS = ["male", "female", "other", "unknown", "none"]


def triple_filters(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a triples table whose relation and person's gender are picked (none picked = all)."""
    left, right = st.columns(2)
    relations = links.multiselect("Relations (none = all)", sorted(frame["relation"].unique()), key="relations",
                                  what="relation", format_func=lambda r: f"{relation_words(r)} ({r})", container=left)
    genders = links.multiselect("Person's gender (none = all)", GENDERS, key="genders", what="gender", container=right)
    return filter_triples(frame, relations=relations, genders=genders)


#: The columns of a triples table, in reading order; the relation's label and the triple's index are ids.
TRIPLE_COLUMNS = ["in words", "person_name", "person_gender", "person_degree", PERSON_LINK]
TRIPLE_IDS = ["relation", "triple"]
TRIPLE_NAMES = {"relation": "relation id"}


def selected_triples(extremes: pd.DataFrame) -> list[int]:
    """Each direction's triples as a table with selectable rows; -> the selected triples' indices."""
    selected: list[int] = []
    for direction, title in texts.DIRECTIONS.items():
        st.subheader(title)
        part = with_person_links(extremes[extremes["direction"] == direction])
        event = table(part, ["in words", "influence", "person_name", "person_gender", "person_degree", PERSON_LINK],
                      ids=TRIPLE_IDS,
                      names=TRIPLE_NAMES, digits=4, on_select="rerun", selection_mode="multi-row",
                      key=f"triples:{direction}")
        selected += part["triple"].iloc[event.selection.rows].tolist()
    return selected


def basket(model_name: str) -> list[int]:
    return list(st.session_state.get(BASKET_KEY, {}).get(model_name, []))


def add_to_basket(model_name: str, indices: list[int]) -> None:
    baskets = st.session_state.setdefault(BASKET_KEY, {})
    baskets[model_name] = sorted(set(baskets.get(model_name, [])) | {int(i) for i in indices})


def negatives_badge(model: ModelRef, occupation: str) -> None:
    """Where influence rests on re-drawn negatives (an imported model): the approximate label, visibly, and
    the occupation's top-1% stability across 3 negative seeds. Nothing for a model with frozen negatives."""
    negatives = cache.analysis(model).negatives
    if negatives.exact:
        return
    badge, number = st.columns([3, 1])
    badge.warning(texts.APPROXIMATE_INFLUENCE.format(label=negatives.label), icon="⚠️")
    stability = cache.redraw_stability(model, occupation)
    number.metric(texts.STABILITY_METRIC, f"ρ ≥ {texts.number(stability.spearman_min, 2)}")
    st.caption(texts.STABILITY_CAPTION.format(
        n=stability.n_union, seeds=", ".join(map(str, stability.seeds)), low=f"{stability.spearman_min:.2f}",
        mean=f"{stability.spearman_mean:.2f}", overlap=f"{stability.overlap_min:.0%}"))


def removal_basket(model: ModelRef, occupation: str, row: pd.Series) -> None:
    """The basket's triples in words, its predicted change of the occupation's B_gr, download and Empty."""
    chosen = basket(model.name)
    if not chosen:
        st.info(texts.EMPTY_BASKET_HERE)
        return
    frame = with_person_links(triples_in_words(cache.triples_frame(model, tuple(chosen))))
    table(frame, TRIPLE_COLUMNS, ids=TRIPLE_IDS, names=TRIPLE_NAMES)
    change = cache.predicted_removal(model, occupation, chosen)
    st.metric(texts.PREDICTED_CHANGE, texts.predicted_value(change),
              help="Sum of δ_z B_gr over the basket, times the calibrated scale (METHODS §4).")
    if change.calibrated:
        st.caption(texts.BASKET_CHANGE.format(n=len(chosen), name=md(row["name"]), before=texts.fmt(row["group_bias"]),
                                              change=texts.fmt(change.point), sign=texts.SIGN))
    st.caption(texts.predicted_range(change))
    negatives = cache.analysis(model).negatives
    if not negatives.exact:
        st.caption(texts.APPROXIMATE_CHANGE.format(label=negatives.label))
    download(frame, csv_name(model.name, "basket"), key="basket:csv", label="Download the basket (CSV)")
    if st.button("Empty the basket"):
        st.session_state.setdefault(BASKET_KEY, {}).pop(model.name, None)
        st.rerun()


# --- attributes (Fisher et al.) -----------------------------------------------------------------
#: The "value b" that stands for every other value of the relation (one vs rest).
REST = "__rest__"
#: Default minimum of a- plus b-persons per profession.
MIN_PERSONS = 20
#: Professions listed on each side.
TOP_PROFESSIONS = 20


def attribute_options(schema: Schema, relation_labels: tuple[str, ...]) -> dict[str, str]:
    """Attribute relations to offer: gender, the schema's attributes, then every other relation."""
    options = {"gender": f"gender ({schema.gender_relation})"}
    options |= {a.name: f"{a.name} ({a.relation})" for a in schema.attributes}
    named = {schema.gender_relation, schema.occupation_relation} | {a.relation for a in schema.attributes}
    options |= {r: f"relation {r}" for r in relation_labels if r not in named}
    return options


def value_titles(values: pd.DataFrame) -> dict[str, str]:
    """Attribute value label -> "name (n persons)" (a frame of :func:`kgbias_core.tables.attribute_values`)."""
    return {label: f"{name} ({n:,} persons)"
            for label, name, n in zip(values["label"], values["name"], values["n_persons"], strict=True)}


@dataclass(frozen=True)
class AttributeChoice:
    """What the Attributes page compares."""

    relation: str  # schema attribute name or relation label
    value_a: str  # label of value a
    value_b: str | None  # label of value b; None = every other value (one vs rest)
    a_name: str  # readable names, for captions and headings
    b_name: str
    min_count: int  # minimum a- plus b-persons per profession


def attribute_choice(model: ModelRef) -> AttributeChoice:
    """Relation, values a and b (gender: male vs female by default, else the commonest vs the rest), minimum count."""
    stored: StoredModel = cache.analysis(model).model
    options = attribute_options(stored.schema, stored.relation_labels)
    relation = links.selectbox("Attribute relation", list(options), format_func=options.__getitem__, key="attribute",
                               what="attribute relation")
    values = cache.attribute_values(model, relation)
    titles, names = value_titles(values), dict(zip(values["label"], values["name"], strict=True))
    labels, gender = list(titles), relation == "gender"
    left, middle, right = st.columns(3)
    value_a = links.selectbox(
        "Value a", labels, format_func=titles.__getitem__, key="value_a", what="value", container=left,
        index=labels.index(stored.schema.male) if gender and stored.schema.male in labels else 0,
    )
    others = [REST] + [v for v in labels if v != value_a]
    value_b = links.selectbox(
        "Value b", others, key="value_b", what="value", container=middle,
        format_func=lambda v: texts.ONE_VS_REST if v == REST else titles[v],
        index=others.index(stored.schema.female) if gender and stored.schema.female in others else 0,
    )
    min_count = links.number(right.slider, "Minimum a- plus b-persons per profession", 0, 500, MIN_PERSONS,
                             key="min_count", what="minimum count")
    return AttributeChoice(relation=relation, value_a=value_a, value_b=None if value_b == REST else value_b,
                           a_name=names[value_a], b_name=texts.REST_NAME if value_b == REST else names[value_b],
                           min_count=min_count)


def fisher_names(a: str, b: str) -> dict[str, str]:
    """Display names of a Fisher table's columns for values named ``a`` and ``b``."""
    return {"name": "profession", "bias": "b_p", "n_a": f"# {a}", "n_b": f"# {b}"}


def associated_tables(top_a: pd.DataFrame, top_b: pd.DataFrame, *, fallback: str | None, a: str, b: str) -> None:
    """The two sides of ``associated_sides`` beside each other; a side without any associated
    profession says so, and lists the professions the step moves least (a shared offset)."""
    for column, side, frame in zip(st.columns(2), ("a", "b"), (top_a, top_b), strict=True):
        value, other = (a, b) if side == "a" else (b, a)
        with column:
            if side == fallback:
                st.subheader(f"Least associated with {md(other)}")
                missing = texts.NO_PROFESSION_FOR_A if side == "a" else texts.NO_PROFESSION_FOR_B
                st.info(missing.format(a=md(a), b=md(b)))
            else:
                st.subheader(f"Most associated with {md(value)}")
            if not frame.empty:
                table(frame, ["name", "bias", "n_a", "n_b"], ids=["label"], names=fisher_names(a, b), digits=4)


# --- debiasing lab ------------------------------------------------------------------------------
#: The lab's defaults: k triples to remove, c dummies per missing person.
LAB_K, LAB_C = 20, 0.5
#: k values offered for the removal curve, and the default ones.
CURVE_KS, CURVE_DEFAULT = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], [5, 20, 50]


@dataclass(frozen=True)
class EditChoice:
    """The edit the lab's controls describe (before it is built on a model)."""

    strategy: str  # a key of texts.STRATEGIES
    k: int  # triples to remove (if, random)
    c: float  # dummies per missing person (add)
    cap: int  # at most this many dummies (add)


def edit_choice() -> EditChoice:
    # persist_state: coming back from another page finds the edit as it was left (Streamlit would reset it).
    strategy = links.radio("Edit", list(texts.STRATEGIES), format_func=texts.STRATEGIES.__getitem__, key="lab_strategy",
                           what="edit", persist_state="session")
    left, right = st.columns(2)
    k, c, cap = 0, LAB_C, MAX_DUMMIES
    if strategy == "add":
        c = links.number(left.slider, "c: dummies per missing person, c·(|M| − |F|)", 0.0, 2.0, LAB_C, step=0.1,
                         key="lab_c", what="c", kind=float, persist_state="session")
        cap = int(links.number(right.number_input, "At most this many dummies", 1, 1_000_000, MAX_DUMMIES,
                               key="lab_cap", what="cap", persist_state="session"))
    elif strategy != "basket":
        k = int(links.number(left.number_input, "k: triples to remove", 1, 10**9, LAB_K, key="lab_k", what="k",
                             persist_state="session"))
    return EditChoice(strategy=strategy, k=k, c=c, cap=cap)


def build_edit(analysis: ModelAnalysis, choice: EditChoice, *, occupation: str) -> Edit | None:
    """The chosen edit, with a warning where k was capped; None (and a hint) for an empty basket.

    An impossible edit raises :class:`~kgbias_core.errors.MeasureError` (shown by :func:`errors_shown`).
    """
    model_name, n = analysis.model.name, analysis.model.triples.shape[0]
    chosen = basket(model_name) if choice.strategy == "basket" else []
    if choice.strategy == "basket" and not chosen:
        st.info(texts.EMPTY_BASKET.format(model=model_name))
        return None
    edit = make_edit(analysis, occupation, strategy=choice.strategy, k=min(choice.k, n), c=choice.c, cap=choice.cap,
                     indices=chosen)
    if choice.strategy == "if" and len(edit.removed) < choice.k:
        name = analysis.groups.names[analysis.groups.index(occupation)]
        st.warning(texts.IF_REMOVE_FEWER.format(n=len(edit.removed), name=md(name), k=choice.k))
    if choice.strategy == "random" and choice.k > n:
        st.warning(texts.RANDOM_CAPPED.format(k=choice.k, n=n))
    return edit


def predicted_edit(model: ModelRef, edit: Edit, *, row: pd.Series) -> None:
    """B_gr now, the edit's predicted change and B_gr after (removals only: influence predicts no Add)."""
    membership = cache.edit_membership(model, edit.occupation, edit.kind, tuple(edit.removed),
                                       len(edit.added_entities))
    if edit.kind == "add":
        st.info(texts.ADD_NOT_PREDICTED)
        st.caption(texts.ADD_EDIT.format(strategy=md(edit.strategy), n=len(edit.added_triples)))
        st.caption(texts.membership_sentence(membership, name=md(row["name"])))
        return
    sentence = texts.membership_sentence(membership, name=md(row["name"]))
    (st.warning if membership.changes_groups else st.caption)(sentence)
    before = row["group_bias"]
    change = cache.predicted_removal(model, edit.occupation, edit.removed)
    columns = st.columns(3)
    columns[0].metric("B_gr now", texts.fmt(before), help=texts.SIGN)
    columns[1].metric(texts.PREDICTED_CHANGE, texts.predicted_value(change),
                      help=texts.PREDICTED_HELP.format(n=len(edit.removed)))
    if change.calibrated:
        columns[2].metric("Predicted B_gr after", texts.fmt(before + change.point))
    st.caption(texts.predicted_range(change, before=before if change.calibrated else None))


def run_figures(target: pd.Series, *, spread: float | None, baseline: tuple[int, float] | None) -> None:
    """The edited occupation's B_gr before and after a what-if (a row of ``bias_change``), read against
    the noise band's ``spread`` and the Random-REMOVE ``baseline`` (``random_baseline``)."""
    columns = st.columns(4)
    columns[0].metric(f"B_gr of {target['name']} before", texts.fmt(target["group_bias_before"]), help=texts.SIGN)
    columns[1].metric("after", texts.fmt(target["group_bias_after"]), help=AFTER_GROUPS_CHOICE)
    columns[2].metric("change", texts.fmt(target["change"]))
    columns[3].metric("after, original persons", texts.fmt(target["group_bias_after_original"]),
                      delta=texts.fmt(target["change_original"]), delta_color="off", help=AFTER_GROUPS_CHOICE)
    st.caption(AFTER_GROUPS_CHOICE)
    st.caption(texts.noise_sentence(target["change"], spread))
    if baseline is not None:
        st.caption(texts.random_baseline_sentence(*baseline))


def link_prediction_before_after(base: ModelRef, run: ModelRef) -> None:
    """MRR and Hits@10 of a base model and its what-if, or a button computing them as a lab job."""
    base_links, run_links = load_link_prediction(base.path), load_link_prediction(run.path)
    links = tasks.link_prediction_task([run.path, base.path])
    if base_links is not None and run_links is not None:
        st.dataframe(before_after(base_links, run_links), hide_index=True)
        st.caption(texts.LINK_BEFORE_AFTER)
    elif not jobs_ui.is_running(links) and st.button("Compute link prediction"):
        jobs_ui.submit(f"{run.name}: link prediction", links, group="lab")
        st.rerun()


def run_picker(runs: list[ModelRef]) -> ModelRef:
    """One of a model's what-if runs; the one retrained last in this session, else the last one."""
    names = [run.name for run in runs]
    last = st.session_state.get("lab_last_run")
    name = links.selectbox("Run", names, index=names.index(last) if last in names else len(names) - 1, key="run",
                           what="what-if run")
    return runs[names.index(name)]


# --- model comparison ---------------------------------------------------------------------------
def models_to_compare(models: list[ModelRef], *, current: str) -> list[ModelRef]:
    """Models to compare: all of the graph's by default (the sidebar's one first if there are many).

    A model trained meanwhile joins the comparison by itself.
    """
    names = [m.name for m in models]
    state, seen = st.session_state, st.session_state.get("compare_seen")
    if "compare_models" in state and seen is not None:
        kept = [n for n in state["compare_models"] if n in names]
        state["compare_models"] = kept + [n for n in names if n not in seen]
    elif "compare_models" not in state:
        state["compare_models"] = list(dict.fromkeys([current, *names]))[:6] if current in names else names[:6]
    state["compare_seen"] = names
    chosen = links.multiselect("Models to compare", names, key="compare_models", what="model")
    return [m for m in models if m.name in chosen]


def training_panel(dataset: str, models: list[ModelRef], pending: list[tasks.Task[Any]]) -> None:
    """Which of the four model kinds the graph has; train the missing ones (their tasks appended to ``pending``)."""
    registry, store, data_dir = default_registry(), default_store(), resolve_data_dir()
    present = {m.name for m in models}
    rows, missing, trainings = [], [], {}
    for kind in MODELS:
        name = tasks.model_name(dataset, kind)
        trainings[kind] = tasks.train_task(dataset, out=store / name, data_dir=data_dir, overrides={"model": kind})
        status = registry.latest(trainings[kind].key)  # any session's: one training per model
        state = status.state if status else None
        if name in present:
            rows.append((kind, name, "cached"))
        elif state is not None and state not in FINISHED_STATES:
            rows.append((kind, name, f"training ({state})"))
            pending.append(trainings[kind])
        else:
            rows.append((kind, name, "not trained" if state is None else f"not trained (last job {state})"))
            missing.append(kind)
    others = [m.name for m in models if m.name not in {tasks.model_name(dataset, k) for k in MODELS}]
    st.dataframe(pd.DataFrame(rows, columns=["model", "name in the store", "status"]), hide_index=True)
    if others:
        st.caption(texts.ALSO_IN_STORE.format(names=md(", ".join(others))))
    if not missing:
        return
    if not has_dataset(dataset, data_dir):  # only a built-in graph can be loaded again to train on
        st.caption(texts.TRAIN_ONLY_BUILT_IN)
        return
    chosen = st.multiselect("Models to train", missing, default=missing, key="train_kinds")
    if st.button("Train in the background", disabled=not chosen, key="train_models", help=texts.TRAIN_MODELS_HELP):
        for kind in chosen:
            # again: the model is missing, so a finished training of it is out of date.
            jobs_ui.submit(tasks.model_name(dataset, kind), trainings[kind], again=True,
                           estimate=tasks.training_seconds(dataset, data_dir, overrides={"model": kind}))
            pending.append(trainings[kind])


#: Professions listed per model for one tail value.
TOP_MOVED = 5


def audit_controls(n_triples: int) -> dict[str, Any]:
    """Classifier, k and minimum persons of Keidar et al.'s audit -> its cache parameters."""
    left, middle, right = st.columns(3)
    kind = links.selectbox("Occupation classifier", list(texts.CLASSIFIERS), format_func=texts.CLASSIFIERS.__getitem__,
                           key="audit_classifier", what="classifier", container=left)
    k = links.number(middle.slider, "k most common professions (+ OTHER)", 2, 20, 5, key="audit_k", what="k")
    min_persons = links.number(right.number_input, "Skip tail values with fewer persons than", 1, 1000,
                               default_min_persons(n_triples), key="audit_min_persons", what="minimum")
    return audit_params(k=k, kind=kind, min_persons=int(min_persons))


def relation_drill_down(audits: dict[str, pd.DataFrame], models: list[ModelRef], *, relations: list[str],
                        dataset: str) -> None:
    """One relation's tail values in each model's audit (table and chart), and the professions that
    one value moves most in each model (Keidar Table 3)."""
    relation = links.selectbox("Relation", relations, key="audit_relation", format_func=relation_words, what="relation")
    values = value_table(audits, relation)
    table(values, list(values.columns), ids=["value"])
    st.caption(texts.VALUE_TABLE.format(relation=md(relation)))
    rows = relation_values(audits, relation)
    show_chart(charts.value_chart(rows, relation), rows, caption=texts.VALUE_CHART,
               file_name=csv_name(dataset, relation, "values"), key="value_chart")
    labels = dict(zip(values["value"], values["value_name"], strict=True))
    value = links.selectbox("Most biased professions for the value (TLB, Keidar Table 3)", list(labels),
                            format_func=labels.__getitem__, key="audit_value", what="value")
    small = pd.DataFrame()
    for column, model in zip(st.columns(len(models)), models, strict=True):
        every = cache.fisher_table(model, relation, value, None, 0)
        kept, small = split_small(every, size=every["n_a"] + every["n_b"], minimum=MIN_PERSONS)
        with column:
            st.markdown(f"**{md(model.name)}**")
            table(most_moved(kept, k=TOP_MOVED), ["name", "bias", "n_a", "n_b"], ids=["label"], digits=4,
                  names=fisher_names(labels[value], texts.REST_NAME))
    st.caption(texts.TOP_PROFESSIONS.format(value=md(labels[value]), minimum=MIN_PERSONS))
    # The counts are the graph's, the same under every model: one list of the small professions.
    too_few(small, ["name", "n_a", "n_b"], ids=["label"], names=fisher_names(labels[value], texts.REST_NAME),
            rule=texts.TOO_FEW_PROFESSIONS.format(minimum=MIN_PERSONS, a=labels[value], b=texts.REST_NAME))


def audit_table(wide: pd.DataFrame) -> None:
    """The relation audit, one row per relation in words, its label in the last column."""
    shown = wide.assign(relation_words=wide["relation"].map(relation_words))
    table(shown, ["relation_words", *wide.columns.drop("relation")], ids=["relation"],
          names={"relation": "relation id"})


def degenerate_warnings(reports: Mapping[str, FairnessReport], models: list[ModelRef]) -> None:
    """A warning per model whose top-1 predictions are one answer for most facts (``FairnessReport.degenerate``)."""
    for model in models:
        report = reports[model.name]
        if report.degenerate:
            st.warning(texts.DEGENERATE_PREDICTOR.format(
                model=model.name, name=entity_name(cache.analysis(model), report.top_prediction),
                share=report.top_prediction_share, n=report.n_facts, threshold=DEGENERATE_SHARE))


def fairness_min_count(n_facts: int) -> int:
    """Test facts an occupation needs to be a class of its own (the default scales with the test set)."""
    default = default_min_count(n_facts)
    min_count = links.number(st.slider, "Minimum test facts for an occupation to be a class of its own", 1, 500,
                             default, key="min_count", what="minimum count")
    st.caption(texts.MIN_COUNT_DEFAULT.format(default=default, n_facts=n_facts))
    return min_count


# --- validation ---------------------------------------------------------------------------------
def removal_ks(analysis: ModelAnalysis, *, occupation: str, name: str) -> list[int]:
    """Removal sizes k for the influence check, typed comma-separated (anything else is ignored); by
    default a small, a medium and a large share of the triples that move the occupation's B_gr at all."""
    n_moving = int((analysis.influence(occupation) != 0).sum())
    text = st.text_input("k values (comma-separated)", ", ".join(map(str, default_ks(n_moving))),
                         key=f"val_ks:{occupation}", help=texts.KS_HELP.format(n=n_moving, name=name))
    return sorted({int(v) for v in text.replace(",", " ").split() if v.isdigit() and int(v) > 0})


def census_table(correlations: pd.DataFrame) -> None:
    """Pearson r and p of each measure against the census, measures by their display names."""
    named = correlations.assign(measure=correlations["measure"].map(texts.measure_name))
    table(named, ["measure", "r", "p_value", "n"], names={"p_value": "p", "n": "paired occupations"})


# --- validation: calibration --------------------------------------------------------------------
def calibration_section(model: ModelRef) -> None:
    """The stored calibration (scale, range, occupations), its leave-one-out check, and (re)calibrate."""
    stored = cache.analysis(model).model
    if stored.config.model != "transe":
        st.info(texts.CALIBRATION_TRANSE_ONLY.format(kind=stored.config.model))
        return
    calibration = stored.calibration
    if calibration is None:
        st.info(texts.NOT_CALIBRATED_YET if stored.influence_scale is None
                else texts.SINGLE_SCALE.format(scale=stored.influence_scale))
    else:
        columns = st.columns(3)
        columns[0].metric("Calibrated scale", f"{calibration.scale:.3g}")
        columns[1].metric("Range over occupations", f"{calibration.low:.3g} – {calibration.high:.3g}")
        columns[2].metric("Occupations", len(calibration.occupations))
        runs = tasks.saved_calibration_runs(model.path)
        if runs is not None:
            held = leave_one_out(runs)
            st.caption(texts.LEAVE_ONE_OUT.format(inside=int(held["inside"].sum()), n=len(held),
                                                  share=held["inside"].mean()))
            table = held.assign(scale=held["occupation"].map(
                dict(zip(calibration.occupations, calibration.per_occupation, strict=True))))
            shown = table[["name", "kind", "k", "predicted", "actual", "low", "high", "inside", "scale",
                           "occupation"]].rename(columns=texts.CALIBRATION_COLUMNS)
            st.dataframe(shown, hide_index=True)
            download(table, csv_name(model.name, "calibration"), key="calibration:csv",
                     label="Download the calibration runs (CSV)")
    task = tasks.calibration_task(model.path)
    if jobs_ui.is_running(task):
        st.caption(texts.CALIBRATION_RUNNING)
    elif st.button(texts.with_estimate(texts.CALIBRATE_BUTTON if calibration is None else texts.RECALIBRATE_BUTTON,
                                       seconds := tasks.calibration_seconds(model.path)), key="calibrate"):
        jobs_ui.submit(f"{model.name}: calibration", task, group="validation", priority=Priority.BACKGROUND,
                       estimate=seconds)
        st.rerun()


def by_magnitude(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """``frame`` sorted by |``column``|, largest first (the persons who lean most, either way, on top)."""
    return frame.sort_values(column, key=lambda values: -values.abs(), kind="stable").reset_index(drop=True)


def open_a_person(persons: pd.DataFrame, *, key: str) -> None:
    """Below a chart of persons: pick one of them (largest |B_in| first) and open the person view."""
    ordered = by_magnitude(persons, "individual_bias")
    titles = dict(zip(ordered["person"], ordered["name"], strict=True))
    left, right = st.columns([3, 1])
    chosen = left.selectbox(texts.OPEN_A_PERSON, list(titles), format_func=titles.__getitem__, key=key)
    if chosen is not None:
        right.link_button(texts.PERSON_LINK_TEXT, person_url(chosen))


def accuracy_disparity(model: ModelRef, pending: list) -> None:
    """MRR against mean |B_gr| for every model of the graph (base and what-if runs); a button computes the
    missing link predictions as jobs."""
    from kgbias_core.evaluation.link_prediction import load_link_prediction

    everyone = cache.graph_models(model.dataset)
    minimum = MIN_GROUP_SIZE
    missing = [m for m in everyone if load_link_prediction(m.path) is None]
    frame = cache.accuracy_disparity(tuple(everyone), minimum, tuple(m.name for m in everyone if m not in missing))
    note = texts.ACCURACY_MISSING.format(n=len(missing), names=", ".join(m.name for m in missing)) if missing else ""
    show_chart(charts.accuracy_disparity_scatter(frame), frame, key="accuracy_disparity",
               caption=texts.ACCURACY_DISPARITY.format(minimum=minimum, missing=note),
               file_name=csv_name(model.dataset, "accuracy-disparity"))
    if missing:
        jobs = [tasks.link_prediction_task([m.path]) for m in missing]
        running = [job for job in jobs if jobs_ui.is_running(job)]
        # The page's own link-prediction section may list the same job: one progress row (and Cancel key) each.
        listed = {job.key for job in pending}
        pending.extend(job for job in running if job.key not in listed)
        if not running and st.button(texts.ACCURACY_COMPUTE.format(n=len(missing))):
            for m, job in zip(missing, jobs, strict=True):
                jobs_ui.submit(f"Link prediction of {m.name}", job)
            st.rerun()


def several_report_download(model: ModelRef, ranked: pd.DataFrame, measures: pd.DataFrame) -> None:
    """Pick occupations (by default the 3 most male- and 3 most female-leaning ranked ones) and download one HTML
    report of them: a summary table first, then a section each."""
    titles = occupation_titles(measures)
    default = list(dict.fromkeys([*ranked["occupation"].head(3), *ranked["occupation"].tail(3)]))
    chosen = links.multiselect(texts.SEVERAL_REPORT_PICK, list(titles), default=default, key="report_occupations",
                               what="occupation", format_func=titles.__getitem__)
    st.download_button(texts.SEVERAL_REPORT_BUTTON.format(n=len(chosen)), partial(cache.occupations_report, model,
                                                                                   tuple(chosen)),
                       file_name=csv_name(model.name, f"{len(chosen)}-occupations", "report", suffix=".html"),
                       mime="text/html", key="several_report", disabled=not chosen, help=texts.REPORT_HELP)
