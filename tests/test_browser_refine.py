"""The refined what-if prediction in a real browser (issue 25): asked for with a click, shown with its estimator, and
judged against the retrain in the run view."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from kgbias_app import texts as ui_texts
from kgbias_app.sections import refined_prediction as section
from kgbias_app.serve import CHROMIUM, chromium, click, dashboard
from kgbias_app.serve import text as browser_text
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.influence.refit_prediction import REFIT_ESTIMATOR, refit_removal_prediction
from kgbias_core.jobs import Progress
from kgbias_core.whatif.edits import make_edit
from tests.conftest import an_earlier_curve, imported_copy

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def _metrics(driver) -> dict[str, str]:
    """Label -> value of every metric on the page, as a person reads them."""
    from selenium.webdriver.common.by import By

    return {m.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text:
            m.find_element(By.CSS_SELECTOR, '[data-testid="stMetricValue"]').text
            for m in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stMetric"]')}


def test_refine_a_removal_and_read_its_estimator(eight_model, tmp_path: Path) -> None:
    """The lab of a model of eight negatives, its audit stored: the refine button, once clicked, shows the refined
    change a person reads (the core's figure), its estimator and its interval, and no exception; the run view below,
    the same edit retrained, then judges that prediction against the retrain."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    store = tmp_path / "store"
    base = save_model(eight_model, store)
    tasks.prediction_audit_task(base).run(Progress())  # one real masked retrain: the refit's scale reads it
    edit = make_edit(ModelAnalysis(load_model(base)), "actor", strategy="if", k=20)  # the lab's default edit
    tasks.whatif_task(base=base, edit=edit, out=store / "eight-transe--if").run(Progress())  # its retrain
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 240)
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Debiasing lab"))
        click(driver, (By.XPATH, f'//button[.//p[text()="{section.REFINE_BUTTON}"]]'), timeout=120)
        main = (By.CSS_SELECTOR, '[data-testid="stMain"]')
        wait.until(ec.text_to_be_present_in_element(main, section.REFINED_CHANGE))
        wait.until(ec.text_to_be_present_in_element(main, f"Estimator: {REFIT_ESTIMATOR}"))
        wait.until(ec.text_to_be_present_in_element(main, "Refined before retraining: change"))
        time.sleep(1.0)
        driver.save_screenshot(str(tmp_path / "refined.png"))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        metrics = _metrics(driver)
        judged = driver.find_element(By.XPATH, '//*[starts-with(text(), "Refined before retraining: change")]').text
    analysis = ModelAnalysis(load_model(base))
    expected = refit_removal_prediction(analysis, "actor", torch.tensor(edit.removed),
                                        scale=tasks.refit_scale(base, analysis))
    assert metrics[section.REFINED_CHANGE] == ui_texts.fmt(expected.point)
    # the run view: the same figure, judged over the original persons (inside or outside: whichever it is)
    assert judged.startswith(f"Refined before retraining: change {ui_texts.fmt(expected.point)}.")
    assert "over the original persons" in judged and (" inside the refined interval" in judged
                                                       or " outside the refined interval" in judged)


def test_the_lab_names_the_prior_temperature_then_the_audits(tiny_model, tmp_path: Path) -> None:
    """The lab of the tests' model (one negative a triple) in a real browser: before any retrain, the removal's change
    a person reads is the step at the prior temperature (the core's figure), named so, with the "Not audited yet"
    sentence under it; once the audit has run (one masked retrain), a reload shows the step at the audit's own
    temperature, named with it, and no such sentence."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from kgbias_core.influence.hinge_curvature import PRIOR_TEMPERATURE
    from kgbias_core.whatif.edits import predict_edit
    from kgbias_core.whatif.step_ratio import EDITS

    store = tmp_path / "store"
    base = save_model(tiny_model, store)
    analysis = ModelAnalysis(load_model(base))
    edit = make_edit(analysis, "actor", strategy="if", k=20)  # the lab's default edit
    prior = predict_edit(analysis, edit, temperature=PRIOR_TEMPERATURE, prior=True)
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    main = (By.CSS_SELECTOR, '[data-testid="stMain"]')

    def metrics_of(driver) -> dict[str, str] | bool:  # the page's metrics once the predicted change is among them
        try:
            metrics = _metrics(driver)
        except StaleElementReferenceException:  # a rerun replaced the elements while they were read
            return False
        return metrics if ui_texts.PREDICTED_CHANGE in metrics else False

    def shown(driver) -> tuple[dict[str, str], str]:
        metrics = WebDriverWait(driver, 120).until(metrics_of)
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        return metrics, browser_text(driver, main)

    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 240)
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")
        wait.until(ec.text_to_be_present_in_element(main, f"Estimator: {prior.estimator}"))
        wait.until(ec.text_to_be_present_in_element(main, "Not audited yet"))
        metrics, text = shown(driver)
        assert metrics[ui_texts.PREDICTED_CHANGE] == ui_texts.fmt(prior.point)
        assert "at a prior temperature, T = 1.00 margins" in text

        tasks.prediction_audit_task(base).run(Progress())  # one real masked retrain, then the temperature search
        temperature = tasks.model_step_ratio(base, use=EDITS).temperature
        audited = predict_edit(analysis, edit, temperature=temperature)
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")
        wait.until(ec.text_to_be_present_in_element(main, f"Estimator: {audited.estimator}"))
        metrics, text = shown(driver)
        driver.save_screenshot(str(tmp_path / "audited.png"))
    assert metrics[ui_texts.PREDICTED_CHANGE] == ui_texts.fmt(audited.point) != ui_texts.fmt(prior.point)
    assert f"T = {temperature:.2f} margins" in text and "Not audited yet" not in text


def test_a_curve_of_an_earlier_calibration_is_predicted_again_on_request(tiny_model, tmp_path: Path) -> None:
    """The lab in a real browser, with a removal curve stored by an earlier kgbias (no calibration record, the |H|
    step's name): the page names it and offers to predict it again; a click does so (no retrain), and the page then
    shows the curve without the caption, the stored curve predicted as the lab predicts now."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from kgbias_app.sections import debiasing_lab as lab
    from kgbias_core.influence.prediction import ESTIMATOR

    store = tmp_path / "store"
    base = save_model(tiny_model, store)
    fresh = an_earlier_curve(base, "actor")
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    main = (By.CSS_SELECTOR, '[data-testid="stMain"]')
    stale = "The curve's predictions were made with an earlier calibration of this model"
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 240)
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")
        wait.until(ec.text_to_be_present_in_element(main, stale))
        assert f"({ESTIMATOR}); its retrains stand." in browser_text(driver, main)
        click(driver, (By.XPATH, f'//button[.//p[starts-with(text(), "{lab.CURVE_REPREDICT[:-1]}")]]'), timeout=120)
        wait.until(lambda d: tasks.curve_is_current(base, "actor"))
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")  # a person's reload once the job is done
        # the section drawn after the curve's: the curve's caption and button, where there are any, came before it
        wait.until(ec.text_to_be_present_in_element(main, "Plan an edit (predicted, then verified)"))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot")))
        text = browser_text(driver, main)
        assert "B_gr against k" in text
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        driver.save_screenshot(str(tmp_path / "curve.png"))
    assert stale not in text and lab.CURVE_REPREDICT[:-1] not in text
    again = tasks.saved_curve(base, "actor")
    assert again["estimator"].tolist() == fresh["estimator"].tolist()
    assert again["predicted"].to_numpy() == pytest.approx(fresh["predicted"].to_numpy(), rel=1e-5)


def test_refine_a_removal_of_an_l2_import_with_no_audit(eight_l2_model, tmp_path: Path) -> None:
    """An L2 model imported from another engine (negatives re-drawn), never audited: a person reads, under the step,
    that a retrain moves several times it and that the refined prediction is the one to ask for; one click shows the
    refined change (the core's figure) and its estimator, which names the re-drawn negatives and the prior scale."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from kgbias_core.readings import UNAUDITED_EVIDENCE, UNAUDITED_RATIOS

    store = tmp_path / "store"
    base = save_model(imported_copy(eight_l2_model, "l2-import"), store)
    low, high = UNAUDITED_RATIOS["imported l2"]
    evidence = UNAUDITED_EVIDENCE["imported l2"].format(low=f"{low:.2f}", high=f"{high:.2f}")
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 240)
        driver.get(f"{url}/debiasing_lab?lab_occupation=actor")
        main = (By.CSS_SELECTOR, '[data-testid="stMain"]')
        wait.until(ec.text_to_be_present_in_element(main, evidence))
        click(driver, (By.XPATH, f'//button[.//p[text()="{section.REFINE_BUTTON}"]]'), timeout=120)
        wait.until(ec.text_to_be_present_in_element(main, section.REFINED_CHANGE))
        wait.until(ec.text_to_be_present_in_element(main, "negatives re-drawn"))
        time.sleep(1.0)
        driver.save_screenshot(str(tmp_path / "refined-import.png"))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        metrics = _metrics(driver)
        text = browser_text(driver, main)
    analysis = ModelAnalysis(load_model(base))
    edit = make_edit(analysis, "actor", strategy="if", k=20)  # the lab's default edit
    expected = refit_removal_prediction(analysis, "actor", torch.tensor(edit.removed))
    assert metrics[section.REFINED_CHANGE] == ui_texts.fmt(expected.point)
    assert f"Estimator: {expected.estimator}" in text and "x 1.45 (a prior" in expected.estimator
    assert section.REFINE_NEEDS_AUDIT not in text
    # no noise band on an import: its intervals' floor is the imports' prior, and the page says so
    from kgbias_core.readings import PREDICTION_FLOOR_IMPORTED
    from kgbias_core.whatif.runs import import_noise_spread

    assert PREDICTION_FLOOR_IMPORTED.format(spread=f"{import_noise_spread(analysis, 'actor'):.3f}") in text
