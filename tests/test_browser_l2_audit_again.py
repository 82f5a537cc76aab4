"""An L2 audit made with the step before 2026-12-07, in a real browser (issue 25): offered again, no retrain."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgbias_app import texts as ui_texts
from kgbias_app.sections import debiasing_lab as section
from kgbias_app.serve import CHROMIUM, chromium, click, dashboard
from kgbias_app.serve import text as browser_text
from kgbias_core import tasks
from kgbias_core.embeddings.results import save_result
from kgbias_core.embeddings.store import save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence.prediction import DISTANCE_NOTES
from kgbias_core.jobs import Progress
from kgbias_core.whatif.step_ratio import PREDICTION_AUDIT
from tests.conftest import TINY_TRAINING

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def test_an_old_l2_audit_is_offered_again_and_the_click_names_todays_step(tiny_graph, tmp_path: Path) -> None:
    """A person sees the offer in its own words, not the retrain's; the click stores the audit predicted with today's
    L2 step, its retrain (marked) kept, and the page names today's step in the audit's sentence."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    store = tmp_path / "store"
    model = train_model(tiny_graph, replace(TINY_TRAINING, distance="l2", epochs=10), name="l2-transe",
                        device=torch.device("cpu"))
    base = save_model(model, store)
    tasks.prediction_audit_task(base).run(Progress())  # one real masked retrain
    old = tasks.saved_prediction_audit(base).assign(estimator="Newton step, |H|, L2 distance")
    old["retrained"] += 0.0123  # a mark: a new retrain would not reproduce it
    save_result(base, PREDICTION_AUDIT, old, params={})
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    main = (By.CSS_SELECTOR, '[data-testid="stMain"]')
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 240)
        driver.get(f"{url}/debiasing_lab?lab_occupation=nurse")
        offer = section.AUDIT_AGAIN_BUTTON[:-1]  # the estimate goes inside its parenthesis
        wait.until(ec.text_to_be_present_in_element(main, offer))
        # read through serve.text's wait: Streamlit may replace the main container between two calls (a run's
        # redraw), which once left find_element with no stMain at all
        before = browser_text(driver, main)
        assert section.AUDIT_BUTTON not in before
        assert "Audit of this model's prediction" not in before
        click(driver, (By.XPATH, f'//button[.//p[starts-with(text(), "{section.AUDIT_AGAIN_BUTTON[:40]}")]]'),
              timeout=120)
        wait.until(ec.text_to_be_present_in_element(main, "Audit of this model's prediction"))
        shown = browser_text(driver, main)
        assert offer not in shown and f"retrained {ui_texts.fmt(old['retrained'].iloc[0])}" in shown
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        driver.save_screenshot(str(tmp_path / "again.png"))
    audit = tasks.saved_prediction_audit(base)
    assert audit is not None and audit["retrained"].iloc[0] == old["retrained"].iloc[0]
    assert DISTANCE_NOTES["l2"] in audit["estimator"].iloc[0]
