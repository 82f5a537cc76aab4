"""AppTest of the Findings page: the findings computed as a job, then the retrains of claims 4-5."""

from __future__ import annotations

from pathlib import Path

from kgbias_core import tasks
from kgbias_core.findings import NOT_MEASURED
from tests.conftest import button, page, settled, texts


def test_findings_page_computes_the_claims_then_runs_the_retrains(quick_store: Path) -> None:
    app = page("findings").run()
    assert not app.exception
    assert "not computed yet" in texts(app.info)
    button(app, "Compute the findings").click().run()
    settled(app)
    assert not app.exception
    shown = app.table[0].value.reset_index()  # a static table: long verdicts wrap, never cut (issue 28)
    assert list(shown.columns[:3]) == ["Claim", "Du et al. claim", "Paper (FB5M)"] and "quick-transe" in shown.columns
    by_claim = dict(zip(shown["Claim"], shown["quick-transe"], strict=False))
    assert by_claim["4"].startswith(NOT_MEASURED) and ":" in by_claim["1"]
    app.selectbox(key="occupation").set_value("nurse").run()
    button(app, "Run the retrains and update the findings").click().run()
    settled(app)
    assert not app.exception
    shown = app.table[0].value.reset_index()
    retrained = shown.loc[shown["Claim"] == "4", "quick-transe"].tolist()
    assert any(cell.startswith("Nurse, k = ") for cell in retrained)
    assert tasks.add_runs(quick_store / "quick-transe")  # the Add run is kept as a what-if
