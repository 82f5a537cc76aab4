"""The HTML report of an occupation and of a what-if run (kgbias_core.report), and ``kgbias report``."""

from __future__ import annotations

import html
import platform
import re
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import plotly
import pytest
import torch
from plotly.offline import get_plotlyjs

import kgbias_core
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.embeddings.store import StoredModel, load_model
from kgbias_core.influence.prediction import ADD_ESTIMATOR, predict_removal
from kgbias_core.jobs import Progress
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.readings import old_estimate_sentence, prediction_sentence
from kgbias_core.report import NO_BAND, occupation_report, whatif_run
from kgbias_core.tables import measures_table
from kgbias_core.whatif.edits import make_edit

#: Elements that have no end tag in HTML.
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "source", "area", "base", "wbr"}
WHEN = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)


class Page(HTMLParser):
    """Checks that every element closes in order, and reads the report's tables as {first cell: cells}."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.problems: list[str] = []
        self.rows: dict[str, list[str]] = {}
        self.texts: list[str] = []  # text outside <script> and <style>
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        self.open.append(tag)
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1] if self.open else 'nothing'}")
            return
        self.open.pop()
        if tag in ("td", "th") and self._row is not None:
            self._row.append("".join(self._cell or []).strip())
            self._cell = None
        elif tag == "tr" and self._row:
            self.rows.setdefault(self._row[0], self._row[1:])
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if not self.open or self.open[-1] not in ("script", "style"):
            self.texts.append(data)


@pytest.fixture(scope="module")
def analysis(tiny_model: StoredModel) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


@pytest.fixture(scope="module")
def nurse_report(analysis: ModelAnalysis) -> str:
    return occupation_report(analysis, "nurse", created=WHEN)


@pytest.fixture(scope="module")
def removal_run(tiny_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real what-if of the tiny model: IF-REMOVE of the 5 triples that move Nurse's B_gr most towards 0."""
    base = tiny_store / "tiny-transe"
    edit = make_edit(ModelAnalysis(load_model(base)), "nurse", strategy="if", k=5)
    return Path(tasks.whatif_task(base=base, edit=edit, out=tmp_path_factory.mktemp("runs") / "run").run(Progress()))


def test_the_report_is_well_nested_html(nurse_report: str) -> None:
    page = Page(nurse_report)
    assert page.problems == []
    assert page.open == []
    assert nurse_report.startswith("<!DOCTYPE html>")


def test_the_report_shows_the_measures_table_values_with_their_intervals(nurse_report: str, analysis) -> None:
    row = measures_table(analysis).set_index("occupation").loc["nurse"]
    cells = Page(nurse_report).rows
    assert cells["B_gr"][:2] == [f"{row['group_bias']:+.3f}",
                                 f"{row['group_bias_low']:+.3f} to {row['group_bias_high']:+.3f}"]
    assert cells["Fisher's b_p"][0] == f"{row['fisher_bp']:+.4f}"
    assert cells["B_wo"][1] == "none"  # one projection: no persons to resample
    assert cells["B_gr"][2].endswith(".")  # a plain-language sentence beside each figure


def test_the_report_names_its_data_config_date_and_library_versions(nurse_report: str, tiny_model) -> None:
    cells = Page(nurse_report).rows
    assert cells["data hash (SHA-256)"] == [tiny_model.data_hash]
    assert cells["epochs"] == [str(tiny_model.config.epochs)]
    assert "2025-01-02 03:04 UTC" in nurse_report
    expected = {"python": platform.python_version(), "torch": torch.__version__, "pykeen": version("pykeen"),
                "plotly": plotly.__version__, "kgbias": kgbias_core.__version__}
    assert {name: cells[name] for name in expected} == {name: [v] for name, v in expected.items()}


def test_the_report_opens_offline_with_plotly_inlined_once(nurse_report: str) -> None:
    assert nurse_report.count(get_plotlyjs()) == 1  # plotly.js itself, once for every chart
    assert nurse_report.count("Plotly.newPlot") >= 2  # B_in by gender, the influential triples
    assert not re.search(r"<script[^>]*\bsrc\s*=", nurse_report)  # nothing fetched: no CDN, no file


def test_the_report_escapes_names(tiny_model) -> None:
    names = list(tiny_model.entity_names)
    names[tiny_model.entity_id("nurse")] = "Nurse <b>&"
    report = occupation_report(ModelAnalysis(replace(tiny_model, entity_names=tuple(names))), "nurse")
    assert "Nurse &lt;b&gt;&amp;" in report
    assert "Nurse <b>" not in report


def test_a_report_apart_from_its_date_is_a_function_of_model_and_occupation(analysis, nurse_report) -> None:
    again = occupation_report(ModelAnalysis(analysis.model), "Nurse", created=WHEN)  # a fresh memo, the name
    assert again == nurse_report


def test_a_whatif_report_shows_the_edit_and_the_retrained_and_predicted_change(tiny_store, removal_run) -> None:
    base = ModelAnalysis(load_model(tiny_store / "tiny-transe"))
    run = ModelAnalysis(load_model(removal_run))
    before, after = base.group_bias("nurse").item(), run.group_bias("nurse").item()
    noise = pd.DataFrame({"occupation": ["nurse"], "spread": [0.01]})
    report = occupation_report(base, "nurse", run=whatif_run(base, run, noise=noise))
    cells = Page(report).rows
    assert cells["run"] == [removal_run.name]
    assert cells["edit"] == [f"{run.model.edit['strategy']} on Nurse (nurse)"]
    assert cells["triples removed"] == ["5"]
    assert cells["retrained change"] == [f"{after - before:+.3f}"]
    removed = torch.tensor(run.model.edit["removed"])
    # Issue 25: the Newton step with its interval (floored by the noise band), its estimator, the old one beside.
    expected = predict_removal(base, "nurse", removed, spread=0.01)
    assert expected.floor == 0.01
    assert cells["predicted change"] == [f"{expected.point:+.3f} [{expected.low:+.3f}, {expected.high:+.3f}]"]
    assert cells["estimator"] == [prediction_sentence(expected)]
    assert "Newton step, |H|" in cells["estimator"][0] and "noise band (±0.010) included" in cells["estimator"][0]
    assert cells["beside it, the old estimator"] == [old_estimate_sentence(base.predicted_removal("nurse", removed))]
    assert cells["noise band (spread of B_gr)"] == ["0.010"]
    # judged over the original persons, the groups the step holds fixed (not the edited groups' change above)
    original = group_bias(entity_embeddings=run.model.entity_embeddings,
                          relation_embeddings=run.model.relation_embeddings, groups=base.groups,
                          distance=run.model.config.distance)[base.groups.index("nurse")].item() - before
    inside = expected.low <= original <= expected.high
    assert cells["prediction against the retrain"] == [
        f"Retrained change over the original persons {original:+.3f}: {'inside' if inside else 'outside'} the "
        f"predicted interval ({expected.low:+.3f} to {expected.high:+.3f}); a removal's prediction holds the base's "
        "persons fixed."]
    assert "spread B_gr over 0.010" in report
    assert report.count("Plotly.newPlot") == 3  # and the predicted against the retrained change
    without = occupation_report(base, "nurse", run=whatif_run(base, run))
    assert NO_BAND in without


def test_cli_report_writes_the_html_file(tiny_store: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "reports" / "nurse.html"
    assert main(["report", "--model", str(tiny_store / "tiny-transe"), "--occupation", "Nurse", "--out", str(out)]) == 0
    written = out.read_text(encoding="utf-8")
    assert Page(written).open == [] and "<h1>kgbias report: Nurse (nurse) in tiny-transe</h1>" in written
    assert capsys.readouterr().out.strip() == f"wrote the report to {out}"


def test_cli_report_of_a_whatif_run(tiny_store: Path, removal_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    assert main(["report", "--model", str(tiny_store / "tiny-transe"), "--run", str(removal_run), "--out",
                 str(out)]) == 0
    strategy = load_model(removal_run).edit["strategy"]
    rows = Page(out.read_text(encoding="utf-8")).rows
    assert rows["edit"] == [f"{strategy} on Nurse (nurse)"]
    # one negative a triple: the refined prediction is not offered, and the report says why
    assert rows["refined prediction"][0].startswith("none: tiny-transe was trained with 1 negative(s) per triple")


def test_a_removal_runs_report_gives_the_refined_prediction_judged_over_the_original_persons(eight_model,
                                                                                             tmp_path: Path) -> None:
    """Issue 25: on a model of eight negatives, a removal run's report gives the refined prediction beside the
    step's, with its estimator, interval and verdict against the retrained change over the original persons; before
    the model's audit it says the scale is missing."""
    from kgbias_core.embeddings.store import save_model
    from kgbias_core.influence.refit_prediction import refit_removal_prediction
    from kgbias_core.readings import verdict_sentence

    base = save_model(eight_model, tmp_path / "store")
    edit = make_edit(ModelAnalysis(load_model(base)), "actor", strategy="if", k=20)
    run = Path(tasks.whatif_task(base=base, edit=edit, out=tmp_path / "store" / "run").run(Progress()))
    out = tmp_path / "run.html"
    args = ["report", "--model", str(base), "--run", str(run), "--out", str(out)]
    assert main(args) == 0
    assert Page(out.read_text(encoding="utf-8")).rows["refined prediction"] == [
        f"none: {tasks.prediction_audit.NO_REFIT_AUDIT}"]
    tasks.prediction_audit_task(base).run(Progress())  # one real masked retrain: the refined prediction's scale
    assert main(args) == 0
    rows = Page(out.read_text(encoding="utf-8")).rows
    analysis = ModelAnalysis(load_model(base))
    expected = refit_removal_prediction(analysis, "actor", torch.tensor(edit.removed),
                                        scale=tasks.refit_scale(base, analysis))
    assert rows["refined prediction"] == [f"{expected.point:+.3f} [{expected.low:+.3f}, {expected.high:+.3f}]"]
    assert rows["refined estimator"] == [prediction_sentence(expected)]
    # over the original persons, computed here from the run's rows (not the code's bias_change)
    retrained = load_model(run)
    original = group_bias(entity_embeddings=retrained.entity_embeddings,
                          relation_embeddings=retrained.relation_embeddings, groups=analysis.groups,
                          distance=retrained.config.distance)[analysis.groups.index("actor")].item() \
        - analysis.group_bias("actor").item()
    assert rows["refined against the retrain"] == [
        verdict_sentence(expected, original, kind="remove", what="refined")]


def test_cli_report_errors_are_one_line(tiny_store: Path, tmp_path: Path, capsys) -> None:
    model, out = str(tiny_store / "tiny-transe"), str(tmp_path / "r.html")
    assert main(["report", "--model", model, "--occupation", "astronaut", "--out", out]) == 2
    assert capsys.readouterr().err == "error: unknown entity 'astronaut': it does not occur in the model's graph\n"
    assert main(["report", "--model", model, "--run", model, "--out", out]) == 2  # a base model is no run
    assert capsys.readouterr().err.startswith(f"error: {model} is no what-if run")
    assert not Path(out).exists()


# --- several occupations in one report (issue 28) -------------------------------------------------
def test_a_report_of_several_occupations_has_the_summary_first_and_a_section_each(analysis, tiny_store: Path,
                                                                                  tmp_path: Path, capsys) -> None:
    from kgbias_core.report import occupations_report

    measures = measures_table(analysis).set_index("occupation")
    report = occupations_report(analysis, ["nurse", "Engineer"], created=WHEN)
    parsed = Page(report)
    assert parsed.open == [] and not parsed.problems
    headings = re.findall(r"<h2>(.*?)</h2>", report)
    assert headings[0] == "Summary" and headings[2:4] == ["Nurse (nurse)", "Engineer (engineer)"]
    for label, name in (("nurse", "Nurse"), ("engineer", "Engineer")):
        cells = parsed.rows[name]
        row = measures.loc[label]
        assert cells[:4] == [label, str(row["n_male"]), str(row["n_female"]), f"{row['group_bias']:+.3f}"]
    assert report.count(get_plotlyjs()[:200]) == 1  # plotly.js inlined once for every chart
    assert len(set(re.findall(r'id="(chart-\d+)"', report))) == report.count("Plotly.newPlot") == 4
    out = tmp_path / "several.html"
    assert main(["report", "--model", str(tiny_store / "tiny-transe"), "--occupations", "nurse", "engineer",
                 "--out", str(out)]) == 0
    assert "<h2>Engineer (engineer)</h2>" in out.read_text(encoding="utf-8")
    assert capsys.readouterr().out.strip().endswith(f"wrote the report of 2 occupation(s) to {out}")
    assert main(["report", "--model", str(tiny_store / "tiny-transe"), "--occupations", "nurse", "astronaut",
                 "--out", str(tmp_path / "bad.html")]) == 2
    assert not (tmp_path / "bad.html").exists()


def test_the_report_quotes_the_models_link_prediction_where_computed(tiny_model, tmp_path: Path) -> None:
    """Issue 24: the 'Graph and model' table carries MRR and Hits@k (both sides), or says it is not computed."""
    from kgbias_core.embeddings.store import save_model
    from kgbias_core.evaluation.link_prediction import cached_link_prediction, headline
    from kgbias_core.report import LINK_PREDICTION_NOT_COMPUTED

    path = save_model(tiny_model, tmp_path)
    before = tmp_path / "before.html"
    assert main(["report", "--model", str(path), "--occupation", "nurse", "--out", str(before)]) == 0
    assert html.escape(LINK_PREDICTION_NOT_COMPUTED) in before.read_text()
    line = headline(cached_link_prediction(path))
    after = tmp_path / "after.html"
    assert main(["report", "--model", str(path), "--occupations", "nurse", "engineer", "--out", str(after)]) == 0
    text = after.read_text()
    assert f"MRR {line['mrr']:.3f}, Hits@1 {line['hits@1']:.3f}" in text and LINK_PREDICTION_NOT_COMPUTED not in text
    assert f"reaches MRR {line['baseline_mrr']:.3f}" in text  # the popularity baseline beside it


def test_a_report_of_an_add_run_shows_the_addition_prediction(tiny_store: Path, tmp_path: Path) -> None:
    base_dir = tiny_store / "tiny-transe"
    base = ModelAnalysis(load_model(base_dir))
    edit = make_edit(base, "nurse", strategy="add", c=0.5)
    out = tmp_path / "tiny-transe--add"
    tasks.whatif_task(base=base_dir, edit=edit, out=out).run(Progress())
    run = whatif_run(base, ModelAnalysis(load_model(out)))
    assert run.predicted is not None and run.predicted.estimator == ADD_ESTIMATOR and run.old is None
    cells = Page(occupation_report(base, "nurse", run=run)).rows
    assert cells["estimator"] == [prediction_sentence(run.predicted)]
    assert "beside it, the old estimator" not in cells
