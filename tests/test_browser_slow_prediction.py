"""A slow what-if prediction in a real browser (issue 25): offered with its estimate, run on the click."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgbias_app import texts as ui_texts
from kgbias_app import widgets
from kgbias_app.serve import CHROMIUM, chromium, click, dashboard
from kgbias_app.serve import text as browser_text
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.influence.hinge_curvature import PRIOR_TEMPERATURE
from kgbias_core.whatif.edits import make_edit, predict_edit

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def test_a_slow_prediction_waits_for_the_click_and_then_shows_the_change(tiny_model, tmp_path: Path) -> None:
    """With every prediction counted slow (KGBIAS_SLOW_PREDICTION_S=0), the lab shows a person the estimate and the
    button, not the predicted change; the click shows the change the core predicts for the lab's default edit."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    store = tmp_path / "store"
    base = save_model(tiny_model, store)
    analysis = ModelAnalysis(load_model(base))
    edit = make_edit(analysis, "actor", strategy="if", k=20)  # the lab's default edit
    expected = predict_edit(analysis, edit, temperature=PRIOR_TEMPERATURE, prior=True)  # not audited: the prior T
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data"),
                        widgets.SLOW_PREDICTION_ENV: "0"}
    main = (By.CSS_SELECTOR, '[data-testid="stMain"]')
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 240)
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")
        wait.until(ec.text_to_be_present_in_element(main, "On this model a prediction takes about"))
        assert ui_texts.PREDICTED_CHANGE not in browser_text(driver, main)
        click(driver, (By.XPATH, f'//button[.//p[starts-with(text(), "{widgets.PREDICT_BUTTON[:-1]}")]]'),
              timeout=120)
        wait.until(ec.text_to_be_present_in_element(main, f"Estimator: {expected.estimator}"))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')

        def metrics_shown(driver) -> dict[str, str] | None:  # the rerun's metrics, once the predicted one is drawn
            try:
                shown = {m.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text:
                         m.find_element(By.CSS_SELECTOR, '[data-testid="stMetricValue"]').text
                         for m in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stMetric"]')}
            except StaleElementReferenceException:  # a rerun replaced them while read: read again
                return None
            return shown if ui_texts.PREDICTED_CHANGE in shown else None

        # a loaded machine may draw the caption's text before the rerun's metrics settle (seen once in CI)
        metrics = wait.until(metrics_shown)
        driver.save_screenshot(str(tmp_path / "asked.png"))
    assert metrics[ui_texts.PREDICTED_CHANGE] == ui_texts.fmt(expected.point)
