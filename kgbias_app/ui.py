"""Shared widgets, charts and explanation sentences of the dashboard's pages.

Every chart here has axis titles with the unit or sign convention (positive = male-leaning, as in
METHODS.md); :func:`show_chart` adds the caption on how to read it and a download of its data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from kgbias_core.data.schema import Schema
from kgbias_core.errors import KGBiasError
from kgbias_core.measures.fisher import top_associated

GENDER_COLORS = {"male": "#2c7bb6", "female": "#d7191c", "other": "#7f7f7f", "unknown": "#bdbdbd", "": "#bdbdbd"}
LEAN_COLORS = {"male-leaning": GENDER_COLORS["male"], "female-leaning": GENDER_COLORS["female"]}
#: Axis-title suffix for every bias axis.
SIGN = "> 0 = male-leaning"

#: One plain-language sentence per measure and sign: (positive, negative).
SENTENCES: dict[str, tuple[str, str]] = {
    "group_bias": (
        "Persons of this occupation who are women are linked to it with a larger TransE error than "
        "its men: the embedding leans male.",
        "Persons of this occupation who are men are linked to it with a larger TransE error than "
        "its women: the embedding leans female.",
    ),
    "projection_bias": (
        "The occupation's vector points more towards 'male' than towards 'female' "
        "(word-embedding-style projection): male-leaning.",
        "The occupation's vector points more towards 'female' than towards 'male' "
        "(word-embedding-style projection): female-leaning.",
    ),
    "fisher_bp": (
        "Nudging persons' embeddings towards 'male' makes this occupation more plausible for them: "
        "male-leaning.",
        "Nudging persons' embeddings towards 'female' makes this occupation more plausible for them: "
        "female-leaning.",
    ),
    "individual_bias_vanilla": (
        "Averaged over all its persons, a counterfactual gender flip (Du §3.2) says their link to "
        "this occupation rests on the male direction: male-leaning.",
        "Averaged over all its persons, a counterfactual gender flip (Du §3.2) says their link to "
        "this occupation rests on the female direction: female-leaning.",
    ),
    "individual_bias_weighted": (
        "With women and men weighted equally (mean over women + mean over men), the per-person "
        "bias is male-leaning.",
        "With women and men weighted equally (mean over women + mean over men), the per-person "
        "bias is female-leaning.",
    ),
}
UNDEFINED_SENTENCE = "Undefined: this measure needs at least one man and one woman in the occupation."


@contextmanager
def errors_shown() -> Iterator[None]:
    """Show a :class:`KGBiasError` as ``st.error`` (its message names the problem), never a traceback."""
    try:
        yield
    except KGBiasError as exc:
        st.error(str(exc))


def is_defined(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def fmt(value: float | None, digits: int = 3) -> str:
    return f"{value:+.{digits}f}" if is_defined(value) else "undefined"


def sentence(measure: str, value: float | None) -> str:
    """The plain-language reading of one measure's value."""
    if not is_defined(value):
        return UNDEFINED_SENTENCE
    if value == 0:
        return "Exactly 0: no lean either way."
    positive, negative = SENTENCES[measure]
    return positive if value > 0 else negative


# --- widgets ------------------------------------------------------------------------------------
def occupation_title(row: pd.Series) -> str:
    return row["name"] if row["name"] == row["occupation"] else f"{row['name']} ({row['occupation']})"


def occupation_titles(measures: pd.DataFrame) -> dict[str, str]:
    """Occupation label -> "Name (label)", ordered by name."""
    ordered = measures.sort_values("name", key=lambda s: s.str.lower())
    return dict(zip(ordered["occupation"], ordered.apply(occupation_title, axis=1), strict=True))


def occupation_picker(measures: pd.DataFrame, *, key: str = "occupation", label: str = "Occupation") -> str:
    """Searchable selectbox over occupation names (with their label); returns the label.

    Its value is kept for the whole session, so the explorer and the triples page share it.
    """
    titles = occupation_titles(measures)
    options = list(titles)
    current = st.session_state.get(key)
    if current not in options:  # start on the occupation with the most persons
        current = measures.loc[(measures["n_male"] + measures["n_female"]).idxmax(), "occupation"]
    default = options.index(current)
    return st.selectbox(
        label, options, index=default, format_func=titles.__getitem__, key=key, persist_state="session",
        help="Type to search by name or label.",
    )


def occupations_to_compare(measures: pd.DataFrame, *, current: str, key: str = "compare") -> list[str]:
    """Pick 2-6 occupations; the default is the current one and the three with the most persons."""
    titles = occupation_titles(measures)
    largest = measures.assign(n=measures["n_male"] + measures["n_female"]).nlargest(4, "n")["occupation"]
    default = list(dict.fromkeys([current, *largest]))[:4]
    return st.multiselect(
        "Occupations to compare (2 to 6)", list(titles), default=default, format_func=titles.__getitem__,
        max_selections=6, key=key,
    )


def filter_triples(frame: pd.DataFrame, *, relations: list[str], genders: list[str]) -> pd.DataFrame:
    """Rows whose relation and person's gender are among the chosen ones (an empty choice keeps all)."""
    keep = pd.Series(True, index=frame.index)
    if relations:
        keep &= frame["relation"].isin(relations)
    if genders:
        keep &= frame["person_gender"].isin(genders)
    return frame[keep]


# --- the removal basket: training-triple indices per model name, kept for the session ---------
BASKET_KEY = "removal_basket"


def basket(model_name: str) -> list[int]:
    return list(st.session_state.get(BASKET_KEY, {}).get(model_name, []))


def add_to_basket(model_name: str, indices: list[int]) -> None:
    baskets = st.session_state.setdefault(BASKET_KEY, {})
    baskets[model_name] = sorted(set(baskets.get(model_name, [])) | {int(i) for i in indices})


def clear_basket(model_name: str) -> None:
    st.session_state.setdefault(BASKET_KEY, {}).pop(model_name, None)


def removal_label(influence_scale: float | None) -> str:
    if influence_scale is None:
        return "Predicted change of B_gr (ranking only / uncalibrated)"
    return f"Predicted change of B_gr (calibrated: × {influence_scale:.3g})"


def attribute_options(schema: Schema, relation_labels: tuple[str, ...]) -> dict[str, str]:
    """Attribute relations to offer: gender, the schema's attributes, then every other relation."""
    options = {"gender": f"gender ({schema.gender_relation})"}
    options |= {a.name: f"{a.name} ({a.relation})" for a in schema.attributes}
    named = {schema.gender_relation, schema.occupation_relation} | {a.relation for a in schema.attributes}
    options |= {r: f"relation {r}" for r in relation_labels if r not in named}
    return options


def fisher_sides(table: pd.DataFrame, *, k: int = 20) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """The k most a- and k most b-associated professions of a fisher_table (Fisher's Tables 1-4).

    When no profession has b_p < 0 (a shared offset: moving towards a raises every profession), the
    b side falls back to the k least a-associated professions; the flag says so.
    """
    top_a, top_b = top_associated(table, k=k, toward="a"), top_associated(table, k=k, toward="b")
    if top_b.empty and not table.empty:
        return top_a, table.sort_values("bias").head(k), True
    return top_a, top_b, False


def value_titles(values: pd.DataFrame) -> dict[str, str]:
    """Attribute value label -> "name (n persons)" for a frame of ModelAnalysis.attribute_values."""
    return {
        label: f"{name} ({n:,} persons)"
        for label, name, n in zip(values["label"], values["name"], values["n_persons"], strict=True)
    }


def measures_row(measures: pd.DataFrame, occupation: str) -> pd.Series:
    return measures.set_index("occupation").loc[occupation].rename(occupation)


def group_warning(row: pd.Series) -> bool:
    """Show the occupation's note (small or one-gender group) as a warning; True if B_gr is defined."""
    if row["note"]:
        st.warning(f"{row['name']}: {row['note']} ({row['n_male']} men, {row['n_female']} women).")
    return row["n_male"] > 0 and row["n_female"] > 0


def occupation_section(measures: pd.DataFrame, *, header: bool = True) -> tuple[str, pd.Series, bool]:
    """The shared top of an occupation page: picker, heading, group warning.

    -> (occupation label, its row of measures, whether B_gr is defined: both genders present).
    """
    occupation = occupation_picker(measures)
    row = measures_row(measures, occupation)
    if header:
        st.header(row["name"])
    return occupation, row, group_warning(row)


def _diverging_bars_layout(fig: go.Figure, *, n_rows: int, xaxis_title: str, yaxis_title: str) -> go.Figure:
    """Horizontal bars around 0: one row per bar, a zero line, the axis titles given."""
    fig.update_layout(
        height=max(300, 18 * n_rows + 120),
        xaxis_title=xaxis_title,
        yaxis_title=yaxis_title,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    fig.add_vline(x=0, line_color="black", line_width=1)
    return fig


def download(frame: pd.DataFrame, file_name: str, *, key: str, label: str = "Download the data (CSV)") -> None:
    st.download_button(label, frame.to_csv(index=False).encode("utf-8"), file_name=file_name,
                       mime="text/csv", key=key)


def show_chart(fig: go.Figure, data: pd.DataFrame, *, caption: str, file_name: str, key: str) -> None:
    """A chart, the caption saying how to read it, and a download of the data behind it."""
    st.plotly_chart(fig, key=key, config={"displaylogo": False})
    st.caption(caption)
    download(data, file_name, key=f"{key}:csv")


def headline(row: pd.Series) -> None:
    """The occupation's headline figures, each with one plain-language sentence."""
    half_width = (row["group_bias_high"] - row["group_bias_low"]) / 2
    b_gr = fmt(row["group_bias"]) + (f" ± {half_width:.3f}" if is_defined(half_width) else "")
    figures = [
        ("B_gr (group bias, 95% CI)", b_gr, "group_bias", row["group_bias"]),
        ("B_wo (projection)", fmt(row["projection_bias"]), "projection_bias", row["projection_bias"]),
        ("Fisher b_p", fmt(row["fisher_bp"], 4), "fisher_bp", row["fisher_bp"]),
        ("B_in vanilla", fmt(row["individual_bias_vanilla"]), "individual_bias_vanilla",
         row["individual_bias_vanilla"]),
        ("B_in weighted", fmt(row["individual_bias_weighted"]), "individual_bias_weighted",
         row["individual_bias_weighted"]),
    ]
    columns = st.columns(3)
    with columns[0]:
        st.metric("Persons (men / women)", f"{row['n_male']} / {row['n_female']}")
        extra = int(row["n_other_gender"]) + int(row["n_unknown_gender"])
        st.caption(f"{extra} more with another or no gender value are left out." if extra else
                   "Every person of this occupation has a binary gender value.")
    for i, (label, value, measure, raw) in enumerate(figures, start=1):
        with columns[i % 3]:
            st.metric(label, value, help=SIGN)
            st.caption(sentence(measure, raw))


def triples_in_words(frame: pd.DataFrame) -> pd.DataFrame:
    """Add a readable ``in words`` column: head name —relation→ tail name."""
    words = frame["head_name"] + "  —" + frame["relation"] + "→  " + frame["tail_name"]
    gender = frame["person_gender"].replace("", "unknown")  # e.g. a person reached only via a negative
    return frame.assign(**{"in words": words, "person_gender": gender})


# --- charts -------------------------------------------------------------------------------------
def _lean(values: pd.Series) -> pd.Series:
    return np.where(values > 0, "male-leaning", "female-leaning")


def group_bias_bars(measures: pd.DataFrame) -> go.Figure:
    """All occupations ranked by B_gr with bootstrap 95% intervals (diverging horizontal bars)."""
    frame = measures[measures["group_bias"].notna()].sort_values("group_bias")
    fig = go.Figure(
        go.Bar(
            x=frame["group_bias"],
            y=frame["name"],
            orientation="h",
            marker_color=[LEAN_COLORS[lean] for lean in _lean(frame["group_bias"])],
            error_x={
                "type": "data",
                "array": frame["group_bias_high"] - frame["group_bias"],
                "arrayminus": frame["group_bias"] - frame["group_bias_low"],
                "thickness": 1,
            },
            customdata=frame[["n_male", "n_female"]],
            hovertemplate="%{y}: B_gr %{x:.3f}<br>%{customdata[0]} men, %{customdata[1]} women<extra></extra>",
        )
    )
    return _diverging_bars_layout(
        fig, n_rows=len(frame), yaxis_title="occupation",
        xaxis_title=f"B_gr = mean ψ(women) − mean ψ(men), squared TransE distance ({SIGN})",
    )


def ratio_scatter(measures: pd.DataFrame) -> tuple[go.Figure, pd.DataFrame]:
    """B_gr against log(#men / #women) over occupations with both genders (Du et al.'s observation)."""
    frame = measures[(measures["n_male"] > 0) & (measures["n_female"] > 0)].copy()
    frame["log_gender_ratio"] = np.log(frame["n_male"] / frame["n_female"])
    frame["n_persons"] = frame["n_male"] + frame["n_female"]
    fig = px.scatter(
        frame, x="log_gender_ratio", y="group_bias", size="n_persons", hover_name="name",
        hover_data={"n_male": True, "n_female": True, "n_persons": False},
        color=_lean(frame["group_bias"]), color_discrete_map=LEAN_COLORS,
        labels={
            "log_gender_ratio": "log(#men / #women) in the training graph (natural log; > 0 = more men)",
            "group_bias": f"B_gr ({SIGN})",
            "color": "B_gr",
        },
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.add_vline(x=0, line_color="grey", line_width=1, line_dash="dot")
    return fig, frame[["occupation", "name", "n_male", "n_female", "log_gender_ratio", "group_bias"]]


def individual_distribution(persons: pd.DataFrame) -> go.Figure:
    """B_in per gender: violin with box and every person as a point (hover: name, degree)."""
    fig = px.violin(
        persons, x="gender", y="individual_bias", color="gender", box=True, points="all",
        hover_name="name", hover_data={"degree": True, "fisher_individual": ":.3f", "gender": False},
        color_discrete_map=GENDER_COLORS, category_orders={"gender": ["male", "female"]},
        labels={"individual_bias": f"B_in per person (influence-based; {SIGN})", "gender": "gender",
                "fisher_individual": "B'_in", "degree": "degree"},
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


def individual_scatter(persons: pd.DataFrame) -> go.Figure:
    """B_in against B'_in, one point per person (Du Fig 3)."""
    fig = px.scatter(
        persons, x="fisher_individual", y="individual_bias", color="gender", hover_name="name",
        hover_data={"degree": True}, color_discrete_map=GENDER_COLORS,
        category_orders={"gender": ["male", "female"]},
        labels={
            "fisher_individual": f"B'_in (Fisher's one-step update, up to a positive constant; {SIGN})",
            "individual_bias": f"B_in (influence of a gender flip; {SIGN})",
        },
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.add_vline(x=0, line_color="black", line_width=1)
    return fig


def compare_distributions(persons: pd.DataFrame) -> go.Figure:
    """B_in per gender for several occupations side by side (Du Fig 2)."""
    fig = px.box(
        persons, x="occupation_name", y="individual_bias", color="gender", points="all",
        hover_name="name", hover_data={"degree": True}, color_discrete_map=GENDER_COLORS,
        category_orders={"gender": ["male", "female"]},
        labels={"occupation_name": "occupation", "individual_bias": f"B_in per person ({SIGN})"},
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


def influence_degree_scatter(table: pd.DataFrame) -> go.Figure:
    """Influence of each triple against the degree of its person, coloured by gender (Du Fig 1)."""
    fig = px.scatter(
        table, x="person_degree", y="influence", color="person_gender", log_x=True,
        hover_name="head_name", hover_data={"relation": True, "tail_name": True},
        color_discrete_map=GENDER_COLORS, render_mode="webgl",
        labels={
            "person_degree": "degree of the triple's person (training triples it is in; log scale)",
            "influence": "δ_z B_gr (> 0: removing the triple raises B_gr, more male-leaning)",
            "person_gender": "person's gender",
        },
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


def fisher_bars(top_a: pd.DataFrame, top_b: pd.DataFrame, *, a_name: str, b_name: str) -> go.Figure:
    """b_p of the most a- and most b-associated professions as horizontal bars (a to the right)."""
    frame = pd.concat([top_a, top_b]).sort_values("bias")
    fig = go.Figure(
        go.Bar(
            x=frame["bias"], y=frame["name"], orientation="h",
            marker_color=np.where(frame["bias"] > 0, GENDER_COLORS["male"], GENDER_COLORS["female"]),
            customdata=frame[["n_a", "n_b"]],
            hovertemplate="%{y}: b_p %{x:.4f}<br>%{customdata[0]} " + a_name + ", %{customdata[1]} "
            + b_name + "<extra></extra>",
        )
    )
    return _diverging_bars_layout(
        fig, n_rows=len(frame), yaxis_title="profession",
        xaxis_title=f"Fisher's b_p (change of plausibility; > 0 = associated with {a_name}, < 0 with {b_name})",
    )
