"""AppTest of the Validation page: the influence check as a job, storing the scale, the census hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgbias_core import tasks
from kgbias_core.embeddings.store import load_model
from tests.conftest import NO_WOMEN, button, metric, page, settled, texts


def test_validation_influence_check_and_storing_the_scale(quick_store: Path) -> None:
    app = page("validation").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value("nurse").run()
    app.text_input(key="val_ks:nurse").set_value("3, 6").run()
    app.multiselect(key="val_kinds").set_value(["top", "random"]).run()
    button(app, "Run the check").click().run()
    settled(app)
    assert not app.exception
    assert float(metric(app, "Pearson r")) > 0.5  # 6 epochs: a page check, not an accuracy check
    scale = float(metric(app, "Scale actual/predicted"))
    assert scale > 0
    button(app, "Store the scale").click().run()
    assert load_model(quick_store / "quick-transe").influence_scale == pytest.approx(scale, rel=1e-2)
    assert tasks.saved_accuracy(quick_store / "quick-transe", "nurse") is not None  # results kept
    assert "Stored scale: " + f"{scale:.3g}" in texts(app.caption)


def test_validation_no_women_and_census_without_pairing(app_store: Path) -> None:
    app = page("validation").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "needs at least one man and one woman" in texts(app.warning)
    assert "No census pairing exists for the synthetic graph" in texts(app.info)
