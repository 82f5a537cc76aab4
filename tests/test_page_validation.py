"""AppTest of the Validation page: the influence check and the calibration as jobs, the census hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgbias_core import tasks
from kgbias_core.embeddings.store import load_model
from tests.conftest import NO_WOMEN, button, metric, page, settled, texts


def test_validation_influence_check_and_the_calibration(quick_store: Path) -> None:
    app = page("validation").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value("nurse").run()
    app.text_input(key="val_ks:nurse").set_value("3, 6").run()
    app.multiselect(key="val_kinds").set_value(["top", "random"]).run()
    button(app, "Run the check").click().run()
    settled(app)
    assert not app.exception
    assert float(metric(app, "Pearson r")) > 0.5  # 6 epochs: a page check, not an accuracy check
    assert float(metric(app, "Scale actual/predicted")) > 0
    assert "not calibrated" in texts(app.info)
    button(app, "Calibrate the old closed form").click().run()
    settled(app)
    assert not app.exception
    calibration = load_model(quick_store / "quick-transe").calibration
    assert calibration is not None and len(calibration.occupations) >= 3
    assert float(metric(app, "Calibrated scale")) == pytest.approx(calibration.scale, rel=1e-2)
    assert metric(app, "Range over occupations") == f"{calibration.low:.3g} – {calibration.high:.3g}"
    assert "Leave-one-occupation-out" in texts(app.caption)
    shown = app.dataframe[-1].value
    assert len(shown) == 2 * len(calibration.occupations) and "retrained change" in shown.columns
    assert tasks.saved_accuracy(quick_store / "quick-transe", "nurse") is not None  # results kept
    assert button(app, "Recalibrate") is not None


def test_validation_no_women_and_census_without_pairing(app_store: Path) -> None:
    app = page("validation").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "needs at least one man and one woman" in texts(app.warning)
    assert "No census pairing exists for the synthetic graph" in texts(app.info)


def test_validation_offers_no_retrain_of_an_import(tiny_model, monkeypatch, tmp_path: Path) -> None:
    """A model imported from another engine cannot be retrained here: the influence check and the calibration (each
    masked retrains) are not offered; one line says why, naming the import, and nothing fails."""
    from kgbias_app import texts as ui_texts
    from kgbias_app.escape import md
    from kgbias_core.embeddings.store import save_model
    from tests.conftest import imported_copy, use_store

    save_model(imported_copy(tiny_model, "tiny-import"), tmp_path / "store")
    use_store(tmp_path / "store", monkeypatch, tmp_path)
    app = page("validation").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    assert not app.exception and not app.error
    why = load_model(tmp_path / "store" / "tiny-import").retrain_refusal()
    assert why is not None and "imported from npy" in why
    shown = texts(app.caption)
    assert shown.count(ui_texts.NO_RETRAIN_HERE.format(why=md(why))) == 2  # the check, then the calibration
    labels = [b.label for b in app.button]
    assert "Run the check" not in labels and not any("Calibrate" in label for label in labels)
