"""Every figure of the dashboard (Plotly), built from the core's tables; no Streamlit here.

Every axis title names its unit or sign convention (positive = male-leaning, METHODS.md). Ranked
biases share one diverging-bar layout (:func:`diverging_bars`); pages draw a figure with
:func:`kgbias_app.widgets.show_chart`, which adds how to read it and a download of its data.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from kgbias_app.texts import SIGN, UNDEFINED, measure_name
from kgbias_core.measures.prediction_fairness import GAP_NAMES
from kgbias_core.measures.relation_audit import AUDIT_MEASURES
from kgbias_core.palette import EFFECT, GENDER_COLORS, HIGHLIGHT, LEAN_COLORS, MUTED, SPACE_COLORS

#: Triples drawn in the influence-against-degree scatter (the largest |δ_z B_gr|).
SCATTER_TRIPLES = 5000
_MARGIN = {"l": 10, "r": 10, "t": 30, "b": 10}


def _lean(values: pd.Series) -> np.ndarray:
    return np.where(values > 0, "male-leaning", "female-leaning")


def lean_colors(values: pd.Series) -> list[str]:
    """Blue for a positive (male-leaning) value, red otherwise."""
    return [LEAN_COLORS[lean] for lean in _lean(values)]


def bar_titles(names: pd.Series, labels: pd.Series) -> list[str]:
    """One axis title per bar: its name, with the label where names repeat (Plotly stacks bars of one title)."""
    repeated = names.duplicated(keep=False)
    return [f"{name} ({label})" if twice else name for name, label, twice in zip(names, labels, repeated, strict=True)]


def diverging_bars(
    *, x: pd.Series, y: Sequence[str], colors: Sequence[str], xaxis_title: str, yaxis_title: str,
    hovertemplate: str, customdata: pd.DataFrame | None = None, error_x: dict | None = None,
) -> go.Figure:
    """Horizontal bars around 0, one row per bar, a zero line: the layout of every ranked bias."""
    fig = go.Figure(go.Bar(x=x, y=list(y), orientation="h", marker_color=list(colors), customdata=customdata,
                           error_x=error_x, hovertemplate=hovertemplate))
    fig.update_layout(height=max(300, 18 * len(y) + 120), xaxis_title=xaxis_title, yaxis_title=yaxis_title,
                      margin=_MARGIN)
    fig.add_vline(x=0, line_color="black", line_width=1)
    return fig


# --- overview -----------------------------------------------------------------------------------
#: ψ in words, per TransE distance (``config.distance``): an imported model keeps its engine's.
DISTANCE_WORDS = {"squared_l2": "squared TransE distance", "l2": "TransE L2 distance", "l1": "TransE L1 distance",
                  "pseudo_huber": "TransE pseudo-Huber distance"}


def group_bias_bars(measures: pd.DataFrame, *, distance: str = "squared_l2") -> go.Figure:
    """All occupations with a B_gr, ranked, with their bootstrap 95% intervals; ``distance`` names ψ."""
    return _interval_bars(measures, label="occupation", yaxis_title="occupation",
                          xaxis_title=f"B_gr = mean ψ(women) − mean ψ(men), {DISTANCE_WORDS[distance]} ({SIGN})")


def _interval_bars(table: pd.DataFrame, *, label: str, yaxis_title: str, xaxis_title: str) -> go.Figure:
    """The rows of ``table`` with a B_gr, ranked, each with its bootstrap 95% interval and counts on hover."""
    frame = table[table["group_bias"].notna()].sort_values("group_bias")
    return diverging_bars(
        x=frame["group_bias"], y=bar_titles(frame["name"], frame[label]),
        colors=lean_colors(frame["group_bias"]),
        error_x={"type": "data", "array": frame["group_bias_high"] - frame["group_bias"],
                 "arrayminus": frame["group_bias"] - frame["group_bias_low"], "thickness": 1},
        customdata=frame[["n_male", "n_female"]],
        hovertemplate="%{y}: B_gr %{x:.3f}<br>%{customdata[0]} men, %{customdata[1]} women<extra></extra>",
        yaxis_title=yaxis_title, xaxis_title=xaxis_title,
    )


def ratio_scatter(ratios: pd.DataFrame) -> go.Figure:
    """B_gr against log(#men / #women), one point per occupation (a :func:`kgbias_core.tables.gender_ratio_table`)."""
    fig = px.scatter(
        ratios, x="log_gender_ratio", y="group_bias", size="n_persons", hover_name="name",
        hover_data={"n_male": True, "n_female": True, "n_persons": False},
        color=_lean(ratios["group_bias"]), color_discrete_map=LEAN_COLORS,
        labels={
            "log_gender_ratio": "log(#men / #women) in the training graph (natural log; > 0 = more men)",
            "group_bias": f"B_gr ({SIGN})",
            "color": "B_gr",
        },
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.add_vline(x=0, line_color="grey", line_width=1, line_dash="dot")
    return fig


# --- occupation explorer ------------------------------------------------------------------------
#: How persons show as points in the explorer's distributions: only the outliers by default (a few
#: dozen SVG points, not thousands: Actor has 1,874 persons), every person on request.
POINTS = {False: "outliers", True: "all"}


def box_summary(values: np.ndarray) -> dict[str, float]:
    """Tukey's box of ``values``: quartiles (linear interpolation, Plotly's default) and the whiskers'
    ends, the most extreme values within 1.5 IQR of the box."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return {"q1": q1, "median": median, "q3": q3, "lowerfence": values[values >= low].min(),
            "upperfence": values[values <= high].max()}


#: Points of the density outline per gender; enough for a smooth curve, a few KB to send.
DENSITY_GRID = 80


def density(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gaussian kernel density of ``values`` on ``grid``; bandwidth 1.06 σ n^(-1/5) (Silverman's rule of thumb)."""
    bandwidth = 1.06 * values.std(ddof=1) * len(values) ** (-1 / 5)
    z = (grid[:, None] - values[None, :]) / bandwidth
    return np.exp(-0.5 * z**2).sum(axis=1) / (len(values) * bandwidth * np.sqrt(2 * np.pi))


def individual_distribution(persons: pd.DataFrame, *, every_point: bool = False) -> go.Figure:
    """B_in per gender: the density as a violin, the box of quartiles, and the outliers (or every
    person) as points (hover: name, degree, B'_in).

    The density and the box are computed here, not by Plotly in the browser: the figure then carries a
    few dozen numbers per gender instead of every person's value (Actor: 1,874), which is what kept an
    occupation switch from being drawn in under half a second (issue 15, bench/bench_browser.py).
    """
    fig = go.Figure()
    rng = np.random.default_rng(0)  # the points' horizontal jitter, the same at every draw
    genders = [g for g in ("male", "female") if (persons["gender"] == g).any()]
    for position, gender in enumerate(genders):
        group = persons[persons["gender"] == gender]
        values = group["individual_bias"].to_numpy(dtype=float)
        color = GENDER_COLORS[gender]
        if len(values) > 1 and values.std() > 0:
            grid = np.linspace(values.min(), values.max(), DENSITY_GRID)
            width = density(values, grid)
            width = 0.4 * width / width.max()
            fig.add_trace(go.Scatter(
                x=np.concatenate([position - width, (position + width)[::-1]]), y=np.concatenate([grid, grid[::-1]]),
                fill="toself", mode="lines", line={"color": color, "width": 1}, opacity=0.45, name=gender,
                legendgroup=gender, hoverinfo="skip"))
        box = box_summary(values)
        fig.add_trace(go.Box(x=[position], **{k: [v] for k, v in box.items()}, width=0.12, name=gender,
                             legendgroup=gender, showlegend=False, marker_color=color, boxpoints=False,
                             hovertemplate=f"{gender}<br>median %{{median:.3f}}<br>quartiles %{{q1:.3f}} to "
                                           f"%{{q3:.3f}}<extra></extra>"))
        shown = group if every_point else group[(values < box["lowerfence"]) | (values > box["upperfence"])]
        fig.add_trace(go.Scatter(
            x=position + rng.uniform(-0.08, 0.08, len(shown)), y=shown["individual_bias"], mode="markers",
            marker={"color": color, "size": 5}, name=gender, legendgroup=gender, showlegend=False,
            text=shown["name"], customdata=shown[["degree", "fisher_individual"]].to_numpy(),
            hovertemplate="<b>%{text}</b><br>B_in %{y:.3f}<br>degree %{customdata[0]}<br>"
                          "B'_in %{customdata[1]:.3f}<extra></extra>"))
    fig.update_layout(
        xaxis={"tickvals": list(range(len(genders))), "ticktext": genders, "title": "gender"},
        yaxis_title=f"B_in per person (influence-based; {SIGN})", legend_title_text="gender")
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


#: Persons drawn in the explorer's scatter unless every person is asked for: a seeded sample. Each SVG
#: point costs the browser; measured in headless Chromium on FB15k-237 (bench/bench_browser.py), 700
#: points took ~1.6 s to draw and 150 ~0.8 s, while WebGL, without a GPU, took ~2 s even for 150.
SCATTER_SAMPLE = 300


def scatter_persons(persons: pd.DataFrame, *, every_point: bool = False) -> pd.DataFrame:
    """The persons the scatter draws: all of them, or a seeded sample of :data:`SCATTER_SAMPLE`."""
    if every_point or len(persons) <= SCATTER_SAMPLE:
        return persons
    return persons.sample(n=SCATTER_SAMPLE, random_state=0).sort_index()


def individual_scatter(persons: pd.DataFrame, *, every_point: bool = False) -> go.Figure:
    """B_in against B'_in, one point per person (Du Fig 3): the persons of :func:`scatter_persons`.
    Plotly Express draws more than 1,000 points with WebGL by itself. Each point carries its person's label as
    ``customdata[0]``: a click on it opens the person view (a selection event names the point by it)."""
    fig = px.scatter(
        scatter_persons(persons, every_point=every_point), x="fisher_individual", y="individual_bias",
        color="gender", hover_name="name", hover_data={"degree": True}, color_discrete_map=GENDER_COLORS,
        custom_data=["person"],
        category_orders={"gender": ["male", "female"]},
        labels={
            "fisher_individual": f"B'_in (Fisher's one-step update, up to a positive constant; {SIGN})",
            "individual_bias": f"B_in (influence of a gender flip; {SIGN})",
        },
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.add_vline(x=0, line_color="black", line_width=1)
    return fig


def compare_distributions(persons: pd.DataFrame, *, every_point: bool = False) -> go.Figure:
    """B_in per gender for several occupations side by side (Du Fig 2): boxes, the outliers (or every
    person) as points."""
    fig = px.box(
        persons, x="occupation_name", y="individual_bias", color="gender", points=POINTS[every_point],
        hover_name="name", hover_data={"degree": True}, color_discrete_map=GENDER_COLORS,
        category_orders={"gender": ["male", "female"]},
        labels={"occupation_name": "occupation", "individual_bias": f"B_in per person ({SIGN})"},
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


def subpopulation_bars(table: pd.DataFrame, *, attribute: str) -> go.Figure:
    """B_gr within each subpopulation with figures, with its bootstrap 95% interval (an
    :func:`~kgbias_core.subpopulations.intersection_table`'s table; the too-small rows, NaN, are not drawn)."""
    return _interval_bars(table, label="value", yaxis_title=attribute,
                          xaxis_title=f"B_gr among the persons with the value ({SIGN})")


# --- influential triples ------------------------------------------------------------------------
def influence_degree_scatter(table: pd.DataFrame) -> go.Figure:
    """Influence of each triple against the degree of its person, coloured by gender (Du Fig 1).

    The person's degree, never the occupation node's (``tables.triples_frame``); triples without a person
    have no degree and are not drawn."""
    table = table[table["person_degree"].notna()].astype({"person_degree": float})
    fig = px.scatter(
        table, x="person_degree", y="influence", color="person_gender", log_x=True,
        hover_name="person_name", hover_data={"in words": "in words" in table, "relation": True},
        color_discrete_map=GENDER_COLORS, render_mode="webgl",
        labels={
            "person_degree": "degree of the triple's person (training triples it is in; log scale)",
            "influence": "δ_z B_gr (> 0: removing the triple raises B_gr, more male-leaning)",
            "person_gender": "person's gender",
        },
    )
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


# --- attributes ---------------------------------------------------------------------------------
def fisher_bars(top_a: pd.DataFrame, top_b: pd.DataFrame, *, a_name: str, b_name: str) -> go.Figure:
    """b_p of the professions of the two tables, one bar per row (a to the right).

    ``associated_sides`` never puts a profession on both sides; were one there twice, it is drawn
    once, else Plotly would stack its two bars into one twice as long.
    """
    frame = pd.concat([top_a, top_b]).drop_duplicates("profession").sort_values("bias")
    return diverging_bars(
        x=frame["bias"], y=bar_titles(frame["name"], frame["label"]),
        colors=lean_colors(frame["bias"]),
        customdata=frame[["n_a", "n_b"]],
        hovertemplate="%{y}: b_p %{x:.4f}<br>%{customdata[0]} " + a_name + ", %{customdata[1]} "
        + b_name + "<extra></extra>",
        yaxis_title="profession",
        xaxis_title=f"Fisher's b_p (change of plausibility; > 0 = associated with {a_name}, < 0 with {b_name})",
    )


# --- model comparison ---------------------------------------------------------------------------
def link_prediction_chart(table: pd.DataFrame) -> go.Figure:
    sides = "side" in table.columns
    long = table.melt(id_vars=["model", "queries", *(["side"] if sides else [])],
                      value_vars=["mrr", "hits@1", "hits@3", "hits@10"], var_name="metric", value_name="value")
    fig = px.bar(long, x="metric", y="value", color="model", barmode="group", facet_col="queries",
                 facet_row="side" if sides else None,
                 labels={"metric": "metric (filtered, realistic ranks, test split)",
                         "value": "value (0-1; higher = better link prediction)", "model": "model"})
    fig.update_yaxes(range=[0, 1])
    return fig


def audit_heatmap(wide: pd.DataFrame) -> go.Figure:
    """One cell per relation and measure · model; colour relative to the largest of its measure."""
    values = wide.set_index("relation")
    measures = [c.split(" · ")[0] for c in values.columns]
    scale = pd.Series({m: values[[c for c in values.columns if c.startswith(m + " ")]].max().max() for m in measures})
    relative = values / scale[measures].to_numpy()
    text = values.map(lambda v: UNDEFINED if pd.isna(v) else f"{v:.3f}")
    fig = go.Figure(go.Heatmap(
        z=relative.to_numpy(), x=list(values.columns), y=list(values.index), text=text.to_numpy(),
        texttemplate="%{text}", colorscale="Reds", zmin=0, zmax=1,
        colorbar={"title": "share of the measure's<br>largest value"},
        hovertemplate="%{y}, %{x}: %{text}<extra></extra>",
    ))
    fig.update_layout(xaxis_title="measure · model (DPD, PPD, TLB: unsigned, larger = more bias)",
                      yaxis_title="sensitive relation", height=max(300, 45 * len(values) + 150), margin=_MARGIN)
    fig.update_yaxes(autorange="reversed")
    return fig


def value_chart(values: pd.DataFrame, relation: str) -> go.Figure:
    """Each tail value's bias per measure and model (a :func:`~kgbias_core.measures.relation_audit.relation_values`)."""
    fig = px.bar(values, x="value_name", y="bias", color="model", barmode="group", facet_row="measure",
                 category_orders={"measure": list(AUDIT_MEASURES)}, hover_data={"n_persons": True, "status": True},
                 labels={"value_name": f"tail value of {relation} (one-vs-rest)",
                         "bias": "bias (unsigned; larger = more)", "model": "model"})
    fig.update_yaxes(matches=None)
    fig.update_layout(height=650)
    return fig


def gap_chart(gaps: pd.DataFrame) -> go.Figure:
    """DPG, PPG and EOG per model with their bootstrap intervals (a ``gap_table``)."""
    long = pd.DataFrame([
        {"model": row["model"], "gap": gap, "value": row[gap], "plus": row[f"{gap}_high"] - row[gap],
         "minus": row[gap] - row[f"{gap}_low"]}
        for _, row in gaps.iterrows() for gap in GAP_NAMES
    ])
    return px.bar(long, x="gap", y="value", color="model", barmode="group", error_y="plus", error_y_minus="minus",
                  labels={"gap": "gap between men and women (macro mean over occupation classes)",
                          "value": "|metric(men) − metric(women)| (0 = fair)", "model": "model"})


def deviation_chart(table: pd.DataFrame) -> go.Figure:
    """Selection rate minus data share per occupation class and gender, one panel per model."""
    fig = px.bar(table, x="class_name", y="selection_deviation", color="group", barmode="group", facet_col="model",
                 color_discrete_map=GENDER_COLORS, hover_data={"n_true": True, "n_predicted": True},
                 labels={"class_name": "occupation class (test facts ≥ min count; the rest OTHER)",
                         "selection_deviation": "SelR − data share (> 0 = predicted more often than in the data)",
                         "group": "gender"})
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


# --- debiasing lab ------------------------------------------------------------------------------
def bias_change_bars(frame: pd.DataFrame, *, occupation: str, noise: pd.DataFrame | None) -> go.Figure:
    """Change of B_gr of every occupation after an edit: the edited one highlighted; with the noise
    band, half its spread as error bars and the collateral changes beyond the spread coloured as
    effects; without it every collateral bar stays grey and the title says the band is pending."""
    data = frame[frame["change"].notna()].sort_values("change")
    target = (data["occupation"] == occupation).to_numpy()
    error_x, colors, title = None, np.where(target, HIGHLIGHT, MUTED), "noise band pending: no bar is an effect yet"
    if noise is not None:
        spread = data["occupation"].map(noise.set_index("occupation")["spread"]).fillna(0)
        error_x = {"type": "data", "array": spread / 2, "thickness": 1}
        effect = (data["change"].abs() > spread).to_numpy() & ~target
        colors, title = np.where(target, HIGHLIGHT, np.where(effect, EFFECT, MUTED)), None
    fig = diverging_bars(
        x=data["change"], y=bar_titles(data["name"], data["occupation"]), colors=colors, error_x=error_x,
        hovertemplate="%{y}: change %{x:+.3f}<extra></extra>",
        xaxis_title=f"change of B_gr after − before ({SIGN})", yaxis_title="occupation",
    )
    # The axis scales to the target (its change and its noise band), so that no other bar squashes it;
    # bars beyond are cut at the edge and counted in the title.
    limit = collateral_axis_limit(data, occupation=occupation, noise=noise)
    if limit is not None:
        fig.update_xaxes(range=[-limit, limit])
        beyond = int((data["change"].abs() > limit).sum())
        if beyond:
            note = f"{beyond} bar(s) reach beyond the axis (see the table)"
            title = note if title is None else f"{title}; {note}"
    if title is not None:
        fig.update_layout(title={"text": title, "font": {"size": 13}})
    return fig


#: The collateral chart's axis reaches this many times the target's change (or its noise band, if wider).
COLLATERAL_AXIS_FACTOR = 2.0


def collateral_axis_limit(data: pd.DataFrame, *, occupation: str, noise: pd.DataFrame | None) -> float | None:
    """Half the width of the collateral chart's x axis: twice the larger of the target's |change| and its
    noise band's spread; None (Plotly's own range) without a target row."""
    target = data.loc[data["occupation"] == occupation, "change"]
    if target.empty or not np.isfinite(target.iloc[0]):
        return None
    spread = 0.0
    if noise is not None:
        hit = noise.loc[noise["occupation"] == occupation, "spread"]
        spread = float(hit.iloc[0]) if len(hit) and np.isfinite(hit.iloc[0]) else 0.0
    scale = max(abs(float(target.iloc[0])), spread)
    return COLLATERAL_AXIS_FACTOR * scale if scale > 0 else None


def removal_curve(curve: pd.DataFrame, *, spread: float | None, run: tuple[int, float] | None = None) -> go.Figure:
    """B_gr against k for IF-REMOVE and Random-REMOVE (Du Fig 4d-f), with the noise band around k = 0."""
    fig = px.line(curve, x="k", y="group_bias", color="strategy", markers=True,
                  labels={"k": "triples removed k", "group_bias": f"B_gr after retraining ({SIGN})"})
    base = float(curve.loc[curve["k"] == 0, "group_bias"].iloc[0])
    if spread is not None:
        fig.add_hrect(y0=base - spread / 2, y1=base + spread / 2, fillcolor="grey", opacity=0.2, line_width=0,
                      annotation_text="noise band (other seeds)")
    if run is not None:
        fig.add_scatter(x=[run[0]], y=[run[1]], mode="markers", name="selected run",
                        marker={"symbol": "star", "size": 14, "color": HIGHLIGHT})
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


# --- validation ---------------------------------------------------------------------------------
def accuracy_scatter(runs: pd.DataFrame, *, scale: float) -> go.Figure:
    """Predicted (sum of δ_z) against actual change of B_gr, one point per removal set (Du Fig 4a-c)."""
    fig = px.scatter(runs, x="predicted", y="actual", color="kind", symbol="kind", hover_data={"k": True},
                     labels={"predicted": "predicted change Σ δ_z B_gr (uncalibrated)",
                             "actual": "actual change of B_gr after masked retraining", "kind": "removed set"})
    if np.isfinite(scale):
        x = np.array([runs["predicted"].min(), runs["predicted"].max()])
        fig.add_scatter(x=x, y=scale * x, mode="lines", name=f"actual = {scale:.3g} × predicted",
                        line={"dash": "dash", "color": "black"})
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.add_vline(x=0, line_color="grey", line_width=1)
    return fig


#: Points of the census scatter named on the chart: the farthest from the fitted line. The others
#: carry their name on hover only, so that no two labels overlap.
CENSUS_LABELS = 6


def outliers(x: pd.Series, y: pd.Series, *, k: int) -> np.ndarray:
    """The ``k`` points farthest (vertically) from the least-squares line of y on x, as a mask [n]."""
    mask = np.zeros(len(x), dtype=bool)
    if len(x) < 3:
        return mask
    slope, intercept = np.polyfit(x, y, 1)
    distance = np.abs(np.asarray(y) - (slope * np.asarray(x) + intercept))
    mask[np.argsort(-distance, kind="stable")[:k]] = True
    return mask


def census_scatter(joined: pd.DataFrame, *, measure: str) -> go.Figure:
    """A measure against census log(p/(1−p)), one point per occupation; names on hover, and on the
    chart only for the :data:`CENSUS_LABELS` outliers of the fitted line."""
    data = joined[np.isfinite(joined[measure]) & np.isfinite(joined["log_prop"])]
    label = np.where(outliers(data["log_prop"], data[measure], k=CENSUS_LABELS), data["name"], "")
    fig = px.scatter(data.assign(label=label), x="log_prop", y=measure, text="label", hover_name="name",
                     hover_data={"p_male": ":.2f", "label": False},
                     labels={"log_prop": "census log(p / (1 − p)), p = share of men (> 0 = more men)",
                             measure: f"{measure_name(measure)} ({SIGN})"})
    fig.update_traces(textposition="top center")
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.add_vline(x=0, line_color="grey", line_width=1)
    return fig


# --- the embedding space (issue 28) --------------------------------------------------------------
#: Colours of the embedding space's points: persons by gender, occupations apart.


def embedding_space_scatter(points: pd.DataFrame, *, explained: float) -> tuple[go.Figure, list[pd.Index]]:
    """Persons and occupations on the gender axis and the residual's first component (WebGL, every point given).

    -> (the figure, per trace the index of ``points`` its points come from: a selection's (curve, point) maps back).
    """
    fig = go.Figure()
    rows: list[pd.Index] = []
    for kind, color in SPACE_COLORS.items():
        part = points[points["kind"] == kind]
        if part.empty:
            continue
        occupation = kind == "occupation"
        fig.add_trace(go.Scattergl(
            x=part["gender_axis"], y=part["second_axis"], mode="markers", name=kind, text=part["name"],
            marker={"color": color, "size": 9 if occupation else 5, "symbol": "diamond" if occupation else "circle",
                    "opacity": 0.9 if occupation else 0.6},
            hovertemplate="%{text}<br>gender axis %{x:.3f}<br>second axis %{y:.3f}<extra>" + kind + "</extra>"))
        rows.append(part.index)
    fig.update_layout(
        xaxis_title="gender direction: mean man − mean woman, normalised (> 0 = towards the men)",
        yaxis_title=f"first principal component of the rest ({explained:.0%} of its variance)",
        legend_title="persons by gender; occupations", dragmode="select", height=600, margin=_MARGIN)
    return fig, rows


def accuracy_disparity_scatter(table: pd.DataFrame, *, disparity: str = "mean_abs_group_bias") -> go.Figure:
    """Link-prediction MRR against a disparity measure (``disparity``: a key of
    :data:`~kgbias_core.accuracy_disparity.DISPARITIES`), one point per model (base, what-if and debiased apart)."""
    from kgbias_core.accuracy_disparity import DISPARITIES

    data = table[table["mrr"].notna() & table[disparity].notna()]
    fig = px.scatter(data, x=disparity, y="mrr", color="kind", symbol="kind", hover_name="model",
                     hover_data={"edit": True, "occupation_mrr": ":.3f", "n_occupations": True,
                                 "mean_abs_group_bias": ":.3f", "eog": ":.3f", "dpg": ":.3f",
                                 "degenerate_predictor": True},
                     labels={disparity: f"{DISPARITIES[disparity]} (disparity; 0 = none)",
                             "mrr": "link-prediction MRR, all test queries (filtered; accuracy)", "kind": "model"})
    fig.update_traces(marker={"size": 11})
    return fig


# --- debiasing lab: the planner (issue 29) ----------------------------------------------------------
def plan_verification_scatter(record: pd.DataFrame) -> go.Figure:
    """Predicted against actual B_gr after each verified plan (one point per target and plan; orange: the actual
    landed in the target), the prediction's interval as horizontal error bars, the target interval as a grey
    vertical segment at the predicted value, and the diagonal actual = predicted."""
    data = record.assign(label=record["name"] + " (k = " + record["k"].astype(str) + ")")
    fig = go.Figure()
    fig.add_scatter(
        x=data["predicted"], y=data["actual"], mode="markers", name="verified plan",
        marker={"size": 11, "color": np.where(data["inside_actual"], HIGHLIGHT, EFFECT)},
        error_x={"type": "data", "symmetric": False, "array": data["predicted_high"] - data["predicted"],
                 "arrayminus": data["predicted"] - data["predicted_low"], "thickness": 1},
        text=data["label"], customdata=data[["run"]],
        hovertemplate="%{text}<br>predicted %{x:+.3f}, actual %{y:+.3f}<br>%{customdata[0]}<extra></extra>",
    )
    # the target interval of each point: a grey vertical segment at its predicted value (None breaks the line)
    xs = [v for x in data["predicted"] for v in (x, x, None)]
    ys = [v for lo, hi in zip(data["target_low"], data["target_high"], strict=True) for v in (lo, hi, None)]
    fig.add_scatter(x=xs, y=ys, mode="lines", name="target interval", line={"color": MUTED, "width": 6},
                    opacity=0.5, hoverinfo="skip")
    ends = pd.concat([data["predicted_low"], data["predicted_high"], data["actual"], data["target_low"],
                      data["target_high"]]).astype(float)
    low, high = float(ends.min()), float(ends.max())
    fig.add_scatter(x=[low, high], y=[low, high], mode="lines", name="actual = predicted",
                    line={"color": "black", "width": 1, "dash": "dot"}, hoverinfo="skip")
    fig.update_layout(height=420, margin=_MARGIN, xaxis_title=f"predicted B_gr after the plan ({SIGN})",
                      yaxis_title=f"B_gr after the masked retrain ({SIGN})", legend={"orientation": "h"})
    return fig


# --- debiasing compared (issue 29 part 3) ---------------------------------------------------------
def debiasing_comparison_chart(table: pd.DataFrame, *, target: str, target_name: str) -> go.Figure:
    """Per model of a :func:`~kgbias_core.whatif.compare.comparison_table`: B_gr of the target (``target``: its
    label, ``target_name`` its name) and mean |B_gr| over every occupation as grouped bars (the disparity), MRR
    beside them (the side effect on link prediction); each bar's hover gives the method and its cost."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, column_widths=[0.65, 0.35], horizontal_spacing=0.12,
                        subplot_titles=(f"Disparity ({SIGN})", "Accuracy: link-prediction MRR"))
    models = table["model"].tolist()
    cost = np.stack([table["method"].astype(str), table["triples_edited"].astype(str),
                     table["seconds"].map(lambda s: f"{s:.1f}")], axis=-1)
    hover = "%{x}<br>%{customdata[0]}<br>triples edited %{customdata[1]}, %{customdata[2]} s<br>"
    bars = ((f"group_bias:{target}", f"B_gr of {target_name}", LEAN_COLORS["male-leaning"]),
            ("mean_abs_group_bias", "mean |B_gr| over every occupation", MUTED))
    for column, name, color in bars:
        fig.add_trace(go.Bar(x=models, y=table[column], name=name, marker_color=color, customdata=cost,
                             hovertemplate=hover + name + " %{y:.4f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=models, y=table["mrr"], name="MRR (filtered, test split)", marker_color=EFFECT,
                         customdata=cost, hovertemplate=hover + "MRR %{y:.4f}<extra></extra>"), row=1, col=2)
    fig.add_hline(y=0, line_color="black", line_width=1, row=1, col=1)
    fig.update_layout(barmode="group", legend_title_text="measure", margin=_MARGIN, height=480)
    fig.update_yaxes(title_text="B_gr (0 = no gap)", row=1, col=1)
    fig.update_yaxes(title_text="MRR (higher = more accurate)", rangemode="tozero", row=1, col=2)
    return fig
