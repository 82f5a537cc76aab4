"""The embedding space page's body: every person and occupation on the gender axis, the selection as CSV."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kgbias_app import cache, charts, widgets
from kgbias_app.cache import ModelRef

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
SPACE_CAPTION = (
    "{n:,} points: {persons:,} persons (an entity with a gender or occupation fact) coloured by gender, and "
    "{occupations:,} occupations (diamonds). x: each embedding's projection on the learned gender direction, the "
    "mean man minus the mean woman, normalised (> 0 = towards the men). y: the first principal component of what "
    "is left after removing that direction. Hover a point for its name; drag a box (or pick the lasso) to select."
)
SPACE_ALL = " Every point is drawn (WebGL)."
SPACE_SAMPLED = " A seeded sample of {n:,} of the {total:,} points is drawn (WebGL); every occupation is among them."
SPACE_DOWNLOAD_ALL = "Download the {n:,} shown points (CSV)"
SPACE_DOWNLOAD_SELECTED = "Download the {n:,} selected points (CSV)"
SPACE_SELECT_HINT = "Select points with a box or a lasso to download them alone."

#: Beyond this many points the chart draws a seeded sample (WebGL draws a million, the browser's memory less).
MAX_POINTS = 200_000


def shown_points(points: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """All the points, or a seeded sample of :data:`MAX_POINTS` (every occupation kept); -> (points, sampled)."""
    if len(points) <= MAX_POINTS:
        return points, False
    occupations = points[points["kind"] == "occupation"]
    persons = points[points["kind"] != "occupation"].sample(n=max(0, MAX_POINTS - len(occupations)), random_state=0)
    return pd.concat([persons, occupations]).sort_index(), True


def selected(event: object, rows: list[pd.Index]) -> list[int]:
    """The index labels of the points selected in the chart (box or lasso)."""
    points = (getattr(event, "selection", None) or {}).get("points", [])
    return [rows[p["curve_number"]][p["point_index"]] for p in points
            if p.get("curve_number") is not None and p["curve_number"] < len(rows)]


def embedding_space(model: ModelRef) -> None:
    points, explained = cache.embedding_space(model)
    shown, sampled = shown_points(points)
    kinds = shown["kind"].value_counts()
    st.caption(SPACE_CAPTION.format(
        n=len(shown), persons=int(len(shown) - kinds.get("occupation", 0)), occupations=int(kinds.get("occupation", 0)))
        + (SPACE_SAMPLED.format(n=len(shown), total=len(points)) if sampled else SPACE_ALL))
    fig, rows = charts.embedding_space_scatter(shown, explained=explained)
    event = st.plotly_chart(fig, key="embedding_space", on_select="rerun", selection_mode=("box", "lasso"),
                            config={"displaylogo": False})
    chosen = shown.loc[selected(event, rows)]
    columns = ["label", "name", "kind", "gender_axis", "second_axis"]
    left, right = st.columns(2)
    with left:
        widgets.download(shown[columns], widgets.csv_name(model.name, "embedding-space"), key="space:all",
                         label=SPACE_DOWNLOAD_ALL.format(n=len(shown)))
    with right:
        if chosen.empty:
            st.caption(SPACE_SELECT_HINT)
        else:
            widgets.download(chosen[columns], widgets.csv_name(model.name, "embedding-space", "selection"),
                             key="space:selection", label=SPACE_DOWNLOAD_SELECTED.format(n=len(chosen)))
    if not chosen.empty:
        widgets.table(chosen, ["name", "kind", "gender_axis", "second_axis"], ids=["label"], key="space:table")
