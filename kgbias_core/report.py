"""One occupation's report as a single HTML file that opens offline: the graph, the model's config and
data hash, the date and the library versions; the measures with their 95% intervals and a sentence each;
interactive charts (plotly.js inlined once, no CDN); and, for a what-if run, its edit, the predicted and
the retrained change of B_gr and the retraining noise band.

The dashboard's "Download report" and ``kgbias report`` both call :func:`occupation_report`, so the two
files are the same. Apart from the date, a report is a function of the model, the occupation and the run:
the charts get fixed element ids, and the measures' bootstrap is seeded.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import torch

from kgbias_core import __version__, readings
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import library_versions
from kgbias_core.errors import REPORT_NOT_A_RUN, MeasureError
from kgbias_core.evaluation.link_prediction import headline as link_prediction_headline
from kgbias_core.influence.prediction import WhatIfPrediction
from kgbias_core.influence.refit_prediction import refit_removal_prediction
from kgbias_core.influence.scale import PredictedChange
from kgbias_core.palette import EFFECT, FEMALE, MALE
from kgbias_core.tables import influence_table, measures_table, persons_table, triples_in_words
from kgbias_core.whatif.edits import edit_of_record, predict_edit
from kgbias_core.whatif.runs import (
    AFTER_GROUPS_CHOICE,
    JUDGED_OVER,
    EditMembership,
    bias_change,
    judged_change,
    membership_of_record,
    noise_spread,
)

#: Training triples charted by |delta_z B_gr|: enough to see who moves the occupation, few enough to read.
TOP_TRIPLES = 15
#: Bar colours by what removing the triple does to B_gr (positive = towards male-leaning).
INFLUENCE_COLORS = {True: MALE, False: FEMALE}

#: The report's link-prediction row where the model's has not been computed (it is never computed for a report).
LINK_PREDICTION_NOT_COMPUTED = "not computed yet (kgbias link-prediction --model DIR, or the Model comparison page)"

PERSONS_CAPTION = (
    "B_in per person of the occupation (Du §3.2: the change of B_gr if that person's gender fact were flipped), "
    "by gender; boxes show the quartiles, points the outliers. {sign}."
)
INFLUENCE_CAPTION = (
    "The {n} training triples whose removal would move B_gr most (δ_z B_gr, Du Eq. 3; closed-form influence "
    "gives the direction and the ranking, its size is uncalibrated). A positive δ_z: removing the triple "
    "makes the occupation more male-leaning. Negatives: {negatives}."
)
#: Beside the influence chart of a model whose negatives were re-drawn (an imported one).
REDRAWN_CAPTION = (
    " This model has no frozen negatives (it was not trained by kgbias): one negative per training triple was "
    "re-drawn, so δ_z is approximate. Stability: {stability}. On a FB15k-237 model whose true negatives are "
    "known, re-drawn ones found about 6% of its true top 1% (README): these are examples of triples that can "
    "move B_gr, not the ones that do."
)
NO_INFLUENCE = "No influential triples: {reason}."
CHANGE_CAPTION = (
    "Change of B_gr of {name}: predicted before retraining (one Newton step, its estimator and interval in the "
    "table above) and measured after retraining, over the persons the prediction holds (a removal's: the original "
    "persons; an Add's: the edited graph's groups, its dummies counted); the band is the retraining noise (± the "
    "spread of B_gr across retrains of the unedited graph)."
)
NOT_PREDICTED = "none: {why}"
NO_REMOVED_RECORD = "none: the run's record does not list the removed triples"
NO_ADD_RECORD = "none: the run's record does not say which dummies it added"
COMPARISON_CAPTION = (
    "Each row one model of the same graph: the original, Du's what-ifs (data edits, retrained) and embedding-level "
    "debiasing (the gender direction projected out; TransE retrained with a B_gr² penalty). B_gr and b_p: {sign}; "
    "mean |·| over every occupation with both genders; TLB (Keidar), DPG/PPG/EOG (Schwertmann): unsigned, larger = "
    "more bias; MRR and Hits@10: filtered link prediction on the test split, heads and tails pooled; cost: training "
    "triples removed or added, and seconds to make the model."
)
NO_BAND = "No noise band is saved for this model: the retrained change cannot be read against retraining noise."


@dataclass(frozen=True)
class WhatIfRun:
    """A retrained what-if as its report shows it."""

    name: str  # the run's model name
    edit: Mapping[str, Any]  # its edit record (config.json "edit"): kind, strategy, occupation, counts
    change: pd.Series  # the edited occupation's row of bias_change: group_bias_before, group_bias_after, change
    predicted: WhatIfPrediction | None  # the Newton-step prediction (issue 25); None where the record lacks the edit
    spread: float | None  # the noise band's spread of the occupation's B_gr; None without a band
    membership: EditMembership | None = None  # who the edit removes or re-labels in the target's groups
    old: PredictedChange | None = None  # the old closed form (x its calibrated scale), beside it for removals
    unpredicted: str = ""  # why there is no prediction, when there is none
    refined: WhatIfPrediction | None = None  # the refined prediction of a removal, where asked for and offered
    unrefined: str = ""  # why a removal has no refined prediction, where asked for and not offered

    @property
    def kind(self) -> str:
        return str(self.edit.get("kind", "remove"))

    @property
    def judged(self) -> float:
        """The retrained change the prediction is judged against (:func:`~kgbias_core.whatif.runs.judged_change`)."""
        return judged_change(self.change, self.kind)


def whatif_run(base: ModelAnalysis, run: ModelAnalysis, *, noise: pd.DataFrame | None = None,
               scale: float = 1.0, temperature: float | None = None, prior: bool = False,
               refit: tuple[float | None, str | None] | None = None) -> WhatIfRun:
    """The report's view of ``run``, a what-if retrained from ``base``; ``noise``: the base's noise band;
    ``scale``: the base's ratio for the run's kind (:func:`~kgbias_core.whatif.step_ratio.model_step_ratio` with
    ``use_for(kind)``: the removal audit's, or the Add audit's for an Add run), or ``temperature``: a removal's hinge
    temperature from the removal audit, or the prior one before it (``prior``;
    :func:`~kgbias_core.whatif.step_ratio.edit_calibration`). ``refit``: for a
    removal, the refined prediction's (scale, why not) (:func:`kgbias_core.tasks.refit_offer`; seconds); None: not
    asked for."""
    edit = run.model.edit
    if not edit:
        raise MeasureError(REPORT_NOT_A_RUN.format(path=run.model.name))
    occupation = edit["occupation"]
    change = bias_change(base, run).set_index("occupation").loc[occupation]
    spread = noise_spread(noise, occupation)
    predicted, old, why = None, None, ""
    try:
        recorded = edit_of_record(base.model, edit)
        if recorded is None:
            why = NO_ADD_RECORD if edit.get("kind") == "add" else NO_REMOVED_RECORD
        else:
            predicted = predict_edit(base, recorded, spread=spread, scale=scale, temperature=temperature, prior=prior)
    except MeasureError as exc:  # a distance the Newton step does not differentiate
        why = NOT_PREDICTED.format(why=exc)
    refined, unrefined = None, ""
    if edit.get("kind") == "remove" and edit.get("removed"):
        removed = torch.tensor(edit["removed"], dtype=torch.long)
        old = base.predicted_removal(occupation, removed)
        if refit is not None:
            refit_scale, unrefined = refit[0], refit[1] or ""
            if refit_scale is not None:
                refined = refit_removal_prediction(base, occupation, removed, spread=spread, scale=refit_scale)
    return WhatIfRun(name=run.model.name, edit=edit, change=change, predicted=predicted, spread=spread,
                     membership=membership_of_record(base, edit), old=old, unpredicted=why, refined=refined,
                     unrefined=unrefined)


# --- figures ------------------------------------------------------------------------------------
def persons_figure(persons: pd.DataFrame) -> go.Figure:
    """B_in per person by gender (a :func:`~kgbias_core.tables.persons_table`), one box per gender."""
    fig = go.Figure()
    for gender, color in {"male": MALE, "female": FEMALE}.items():
        mine = persons[persons["gender"] == gender]
        fig.add_trace(go.Box(y=mine["individual_bias"], name=gender, text=mine["name"], marker_color=color,
                             boxpoints="outliers", hovertemplate="%{text}: %{y:.4f}<extra></extra>"))
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.update_layout(yaxis_title=f"B_in per person ({readings.SIGN})", showlegend=False, height=450)
    return fig


def influence_figure(triples: pd.DataFrame) -> go.Figure:
    """The triples of an influence table (with ``in words``) as horizontal bars of δ_z B_gr, largest on top."""
    ordered = triples.iloc[::-1]
    fig = go.Figure(go.Bar(x=ordered["influence"], y=ordered["in words"], orientation="h",
                           marker_color=[INFLUENCE_COLORS[v > 0] for v in ordered["influence"]],
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(xaxis_title="δ_z B_gr (removing the triple changes B_gr by about this)",
                      height=max(400, 28 * len(triples)), margin={"l": 10})
    fig.update_yaxes(automargin=True)
    return fig


def change_figure(run: WhatIfRun) -> go.Figure:
    """The predicted (with its interval) and the retrained change of B_gr, against the noise band."""
    predicted = run.predicted
    shown = predicted is not None
    # The retrained bar is the change the prediction is judged against: a removal's over the original persons.
    retrained = f"retrained, {JUDGED_OVER[run.kind]}"
    bars = ["predicted", retrained] if shown else [retrained]
    values = [predicted.point, run.judged] if shown else [run.judged]
    error = None
    if shown and predicted.has_interval:
        error = {"type": "data", "symmetric": False, "array": [predicted.high - predicted.point, 0],
                 "arrayminus": [predicted.point - predicted.low, 0]}
    fig = go.Figure(go.Bar(x=bars, y=values, error_y=error, marker_color=EFFECT,
                           hovertemplate="%{x}: %{y:+.4f}<extra></extra>"))
    if run.spread is not None:
        fig.add_hrect(y0=-run.spread, y1=run.spread, fillcolor="grey", opacity=0.2, line_width=0,
                      annotation_text="retraining noise", annotation_position="top left")
    fig.add_hline(y=0, line_color="black", line_width=1)
    fig.update_layout(yaxis_title=f"change of B_gr ({readings.SIGN})", height=400)
    return fig


# --- HTML ---------------------------------------------------------------------------------------
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.caption { color: #555; font-size: 0.9rem; }
"""


def _text(value: Any) -> str:
    """``value`` as escaped text, with **bold** (the readings' Markdown) as <strong>."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(str(value)))


def _table(rows: Sequence[Sequence[Any]], *, header: Sequence[str], numbers: Sequence[int] = ()) -> str:
    """An HTML table, every cell escaped; the columns at ``numbers`` right-aligned."""
    head = "".join(f"<th>{_text(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="number">{_text(v)}</td>' if i in numbers else f"<td>{_text(v)}</td>"
                         for i, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _chart(fig: go.Figure, *, number: int, title: str, caption: str) -> str:
    """A figure as a <div> and its script; the first one carries plotly.js, the others reuse it."""
    div = fig.to_html(full_html=False, include_plotlyjs=number == 1, div_id=f"chart-{number}",
                      config={"displaylogo": False})
    return f'<h3>{_text(title)}</h3>{div}<p class="caption">{_text(caption)}</p>'


def _measures(row: pd.Series) -> str:
    """The headline measures with their 95% intervals (and seed band, for a member of a seed family) and a
    sentence each, after whether they agree."""
    rows, bands = [], "group_bias_seed_min" in row
    for column, short in readings.HEADLINE_MEASURES.items():
        digits = readings.DIGITS.get(column, 3)
        low, high = (row.get(f"{column}_low"), row.get(f"{column}_high")) if f"{column}_low" in row else (None, None)
        interval = "none" if low is None else f"{readings.fmt(low, digits)} to {readings.fmt(high, digits)}"
        seed_min, seed_max, n_seeds = readings.seed_band_of(row, column)
        reading = readings.sentence(column, row[column], low, high, seed_min=seed_min, seed_max=seed_max,
                                    n_seeds=n_seeds)
        band = "" if seed_min is None else f"{readings.fmt(seed_min, digits)} to {readings.fmt(seed_max, digits)}"
        rows.append((short, readings.fmt(row[column], digits), interval, *([band] if bands else []), reading))
    header = ("measure", "value", "95% interval", *(["seed band (min to max)"] if bands else []), "reading")
    table = _table(rows, header=header, numbers=(1, 2))
    return (f"<p>{_text(readings.agreement(row))}</p>{table}"
            f'<p class="caption">{_text(readings.WHY_THEY_DIFFER)}</p>')


def _link_prediction_row(link_prediction: pd.DataFrame | None) -> tuple[str, str]:
    """The model's link prediction in one row: MRR and Hits@k of all test queries, heads and tails pooled."""
    line = link_prediction_headline(link_prediction)
    value = (LINK_PREDICTION_NOT_COMPUTED if line is None else
             " ".join(filter(None, ("MRR {mrr:.3f}, Hits@1 {hits@1:.3f}, Hits@3 {hits@3:.3f}, Hits@10 {hits@10:.3f}."
                                    .format(**line), readings.link_baseline_sentence(line)))))
    return "link prediction (test split, filtered, realistic ranks, heads and tails pooled)", value


def _model_rows(analysis: ModelAnalysis, link_prediction: pd.DataFrame | None = None) -> list[tuple[str, Any]]:
    """The graph and the model: what made the weights, the influence scale, and how well it predicts links."""
    model = analysis.model
    calibration = model.calibration
    rows = [("model", model.name), ("graph", model.dataset), ("data hash (SHA-256)", model.data_hash),
            ("training triples", f"{model.triples.shape[0]:,}"), ("entities", f"{model.n_entities:,}"),
            ("relations", f"{model.n_relations:,}"), ("gender relation", model.schema.gender_relation),
            ("occupation relation", model.schema.occupation_relation)]
    # The training config: its "model" is the kind of embedding; "damping" the λ in use (the config's may be
    # None, meaning the default 2|G|/|E| that the stored model holds).
    config = {**model.config.to_dict(), "damping": f"{model.damping:.6g}"}
    rows += [("embedding" if key == "model" else key, value) for key, value in config.items()]
    rows.append(("influence scale", "not calibrated" if model.influence_scale is None
                 else f"{model.influence_scale:.4g}" + ("" if calibration is None else
                                                        f" (range {calibration.low:.4g} to {calibration.high:.4g} "
                                                        f"over {len(calibration.occupations)} occupations)")))
    rows.append(_link_prediction_row(link_prediction))
    return rows


def _versions() -> dict[str, str]:
    import plotly

    return {**library_versions(), "plotly": plotly.__version__, "kgbias": __version__}


def _whatif(run: WhatIfRun, *, name: str) -> str:
    """The edit, the predicted and the retrained change of B_gr, and the noise band."""
    edit, change, predicted = run.edit, run.change, run.predicted
    predicted_text = run.unpredicted if predicted is None else (
        f"{readings.fmt(predicted.point)} [{readings.fmt(predicted.low)}, {readings.fmt(predicted.high)}]")
    rows = [("run", run.name), ("edit", f"{edit.get('strategy')} on {name} ({edit.get('occupation')})"),
            ("triples removed", edit.get("n_removed", 0)), ("triples added", edit.get("n_added_triples", 0)),
            ("B_gr before", readings.fmt(change["group_bias_before"])),
            ("B_gr after retraining (edited graph's groups, Du's choice)", readings.fmt(change["group_bias_after"])),
            ("retrained change", readings.fmt(change["change"])),
            ("B_gr after retraining, original persons", readings.fmt(change.get("group_bias_after_original"))),
            ("predicted change", predicted_text),
            ("estimator", "none" if predicted is None else readings.prediction_sentence(predicted)),
            *([("prediction against the retrain", readings.verdict_sentence(predicted, run.judged, kind=run.kind))]
              if predicted is not None else []),
            *_refined_rows(run),
            *([("beside it, the old estimator", readings.old_estimate_sentence(run.old))] if run.old else []),
            ("noise band (spread of B_gr)", "none saved" if run.spread is None else f"{run.spread:.3f}")]
    noise = NO_BAND if run.spread is None else readings.noise_sentence(change["change"], run.spread)
    membership = "" if run.membership is None else readings.membership_sentence(run.membership, name=name)
    return (f"{_table(rows, header=('', ''))}<p>{_text(noise)}</p><p>{_text(membership)}</p>"
            f'<p class="caption">{_text(AFTER_GROUPS_CHOICE)}</p>')


def _refined_rows(run: WhatIfRun) -> list[tuple[str, str]]:
    """The refined prediction's rows (point and interval, estimator, verdict), or the one that says why there is
    none; nothing where the report was not asked for it."""
    refined = run.refined
    if refined is None:
        return [("refined prediction", NOT_PREDICTED.format(why=run.unrefined))] if run.unrefined else []
    return [("refined prediction", f"{readings.fmt(refined.point)} [{readings.fmt(refined.low)}, "
                                   f"{readings.fmt(refined.high)}]"),
            ("refined estimator", readings.prediction_sentence(refined)),
            ("refined against the retrain", readings.verdict_sentence(refined, run.judged, kind=run.kind,
                                                                      what="refined"))]


def _occupation_charts(analysis: ModelAnalysis, label: str) -> tuple[list[tuple[str, go.Figure, str]], str]:
    """(title, figure, caption) of one occupation's charts, and the note where influence has none."""
    charts = [("B_in per person, by gender", persons_figure(persons_table(analysis, label)),
               PERSONS_CAPTION.format(sign=readings.SIGN))]
    try:
        triples = triples_in_words(influence_table(analysis, label, top=TOP_TRIPLES))
        negatives = analysis.negatives
        caption, title = INFLUENCE_CAPTION.format(n=len(triples), negatives=negatives.label), ""
        if not negatives.exact:
            caption += REDRAWN_CAPTION.format(stability=analysis.redraw_stability(label).summary())
            title = f" ({negatives.label})"
        charts.append((f"Most influential training triples{title}", influence_figure(triples), caption))
        return charts, ""
    except MeasureError as exc:  # one gender only, or a model without the negatives influence needs
        return charts, f"<p>{_text(NO_INFLUENCE.format(reason=exc))}</p>"


def _comparison(table: pd.DataFrame) -> str:
    """The debiasing comparison (:func:`kgbias_core.whatif.compare.comparison_table`) as an HTML table."""
    signed = [c.startswith(("group_bias:", "fisher_bp:")) for c in table.columns]

    def cell(value: Any, is_signed: bool) -> Any:
        if not isinstance(value, float):
            return value
        return readings.fmt(value, 4) if is_signed else readings.number(value, 4)

    rows = [[cell(v, sign) for v, sign in zip(record, signed, strict=True)] for record in table.itertuples(index=False)]
    table_html = _table(rows, header=list(table.columns), numbers=tuple(range(2, len(table.columns))))
    return f'{table_html}<p class="caption">{_text(COMPARISON_CAPTION.format(sign=readings.SIGN))}</p>'


def occupation_report(
    analysis: ModelAnalysis,
    occupation: str,
    *,
    measures: pd.DataFrame | None = None,
    run: WhatIfRun | None = None,
    created: datetime | None = None,
    comparison: pd.DataFrame | None = None,
    link_prediction: pd.DataFrame | None = None,
) -> str:
    """The report of ``occupation`` (label or readable name) under ``analysis``'s model, as one HTML page.

    ``measures``: the model's :func:`~kgbias_core.tables.measures_table` where the caller has it (the
    dashboard's cache), else computed here. ``run``: a what-if of the occupation (:func:`whatif_run`),
    whose section and chart are added. ``created``: the report's date (default now, UTC). ``comparison``: a
    debiasing comparison table (:func:`kgbias_core.whatif.compare.comparison_table`), shown as its own section.
    ``link_prediction``: the model's cached
    :func:`~kgbias_core.evaluation.link_prediction.cached_link_prediction` table, if any.
    """
    groups = analysis.groups
    label = groups.labels[groups.index(occupation)]  # a name resolves to its label; an unknown one raises
    measures = measures_table(analysis) if measures is None else measures
    row = measures.set_index("occupation").loc[label]
    name = str(row["name"])
    created = created or datetime.now(UTC)
    charts, influence_note = _occupation_charts(analysis, label)
    if run is not None:
        charts.append(("Predicted and retrained change of B_gr", change_figure(run), CHANGE_CAPTION.format(name=name)))
    drawn = "".join(_chart(fig, number=i, title=title, caption=caption)
                    for i, (title, fig, caption) in enumerate(charts, start=1))
    title = f"{name} ({label}) in {analysis.model.name}" + ("" if run is None else f", what-if {run.name}")
    persons = f"{row['n_male']} men, {row['n_female']} women" + (f"; note: {row['note']}" if row["note"] else "")
    sections = [
        f"<h1>kgbias report: {_text(title)}</h1>",
        f'<p class="caption">Made {created:%Y-%m-%d %H:%M} UTC by kgbias {__version__}. Every bias: '
        f"{_text(readings.SIGN)}.</p>",
        f"<section><h2>Graph and model</h2>{_table(_model_rows(analysis, link_prediction), header=('', ''))}</section>",
        f"<section><h2>Measures of {_text(name)}</h2><p>Persons: {_text(persons)}.</p>{_measures(row)}</section>",
    ]
    if run is not None:
        sections.append(f"<section><h2>What-if</h2>{_whatif(run, name=name)}</section>")
    if comparison is not None:
        sections.append(f"<section><h2>Debiasing compared</h2>{_comparison(comparison)}</section>")
    sections.append(f"<section><h2>Charts</h2>{drawn}{influence_note}</section>")
    versions = _table(list(_versions().items()), header=("library", "version"))
    sections.append(f"<section><h2>Library versions</h2>{versions}</section>")
    head = f'<head>\n<meta charset="utf-8">\n<title>{_text(title)}</title>\n<style>{STYLE}</style>\n</head>'
    body = "\n".join(sections)
    return f'<!DOCTYPE html>\n<html lang="en">\n{head}\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n'


#: The columns of a several-occupation report's summary table: (measures-table column, header).
SUMMARY_COLUMNS = (("n_male", "men"), ("n_female", "women"), ("group_bias", "B_gr"), ("group_bias_low", "B_gr low"),
                   ("group_bias_high", "B_gr high"), ("projection_bias", "B_wo"),
                   ("individual_bias_weighted", "B_in (women + men)"), ("fisher_bp", "Fisher's b_p"))


def occupations_report(
    analysis: ModelAnalysis,
    occupations: Sequence[str],
    *,
    measures: pd.DataFrame | None = None,
    created: datetime | None = None,
    link_prediction: pd.DataFrame | None = None,
) -> str:
    """Several occupations (labels or names) under one model as one HTML page: the graph and the model, a summary
    table of every occupation first, then one section each (measures with intervals and readings, then charts).
    ``link_prediction``: as :func:`occupation_report`'s.

    One plotly.js for all charts, fixed chart ids: apart from the date, a function of the model and the list.
    """
    groups = analysis.groups
    labels = list(dict.fromkeys(groups.labels[groups.index(o)] for o in occupations))  # unknown -> MeasureError
    measures = measures_table(analysis) if measures is None else measures
    rows = measures.set_index("occupation").loc[labels]
    created = created or datetime.now(UTC)
    summary = [(str(row["name"]), label, *[readings.fmt(row[c], readings.DIGITS.get(c, 3))
                                          if c not in ("n_male", "n_female") else int(row[c])
                                          for c, _ in SUMMARY_COLUMNS], readings.lean(row["group_bias"],
                                                                                      row["group_bias_low"],
                                                                                      row["group_bias_high"]))
               for label, row in rows.iterrows()]
    header = ("occupation", "id", *[h for _, h in SUMMARY_COLUMNS], "B_gr leans")
    title = f"{len(labels)} occupations in {analysis.model.name}"
    sections = [
        f"<h1>kgbias report: {_text(title)}</h1>",
        f'<p class="caption">Made {created:%Y-%m-%d %H:%M} UTC by kgbias {__version__}. Every bias: '
        f"{_text(readings.SIGN)}.</p>",
        f"<section><h2>Summary</h2>{_table(summary, header=header, numbers=tuple(range(2, 2 + len(SUMMARY_COLUMNS))))}"
        f'<p class="caption">{_text(SUMMARY_CAPTION)}</p></section>',
        f"<section><h2>Graph and model</h2>{_table(_model_rows(analysis, link_prediction), header=('', ''))}</section>",
    ]
    number = 0
    for label, row in rows.iterrows():
        name = str(row["name"])
        persons = f"{row['n_male']} men, {row['n_female']} women" + (f"; note: {row['note']}" if row["note"] else "")
        charts, influence_note = _occupation_charts(analysis, label)
        drawn = []
        for chart_title, fig, caption in charts:
            number += 1
            drawn.append(_chart(fig, number=number, title=chart_title, caption=caption))
        sections.append(f"<section><h2>{_text(name)} ({_text(label)})</h2><p>Persons: {_text(persons)}.</p>"
                        f"{_measures(row)}{''.join(drawn)}{influence_note}</section>")
    versions = _table(list(_versions().items()), header=("library", "version"))
    sections.append(f"<section><h2>Library versions</h2>{versions}</section>")
    head = f'<head>\n<meta charset="utf-8">\n<title>{_text(title)}</title>\n<style>{STYLE}</style>\n</head>'
    body = "\n".join(sections)
    return f'<!DOCTYPE html>\n<html lang="en">\n{head}\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n'


SUMMARY_CAPTION = ("One row per occupation of this report; B_gr low/high: its bootstrap 95% interval. \"B_gr leans\": "
                   "a direction only where the interval excludes 0. Each occupation's section follows.")
