"""Ready for a talk (issue 26) in a real browser: a fresh machine's first start opens by itself in every open
session; the job queue in the sidebar cancels a job and tells only that session what was kept, until dismissed."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kgbias_app.serve import chromium, click, dashboard, text, texts

#: The synthetic model trains in ~10 s on a quiet 2-core CPU; a loaded machine takes several times that.
FIRST_START = 240


def test_a_fresh_start_opens_by_itself_everywhere_and_the_queue_cancels_truthfully(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    store = tmp_path / "empty-store"
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    main = (By.CSS_SELECTOR, '[data-testid="stMain"]')
    queue = (By.CSS_SELECTOR, ".st-key-job_queue")
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 60)
        driver.get(url)
        wait.until(ec.text_to_be_present_in_element(main, "Training a first model"))
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")  # a second session, open while the model trains
        driver.get(url)
        wait.until(ec.text_to_be_present_in_element(main, "Training a first model"))
        second = driver.current_window_handle
        started = time.monotonic()
        # No refresh from here on: each page must open by itself when the model is saved.
        WebDriverWait(driver, FIRST_START).until(ec.text_to_be_present_in_element(main, "Persons with a gender"))
        opened = time.monotonic() - started
        driver.switch_to.window(first)
        WebDriverWait(driver, 10).until(ec.text_to_be_present_in_element(main, "Persons with a gender"))
        print(f"first start opened {opened:.0f} s after the second session's page")

        # The two prediction audits (a removal's and an addition's, one retrain each; never the 13-retrain
        # calibration, issue 25) follow as background work and end by themselves in seconds. Then this session asks
        # for a longer job (the seed family: two more trainings) and cancels it while it runs.
        results = store / "synthetic-transe" / "results"
        WebDriverWait(driver, FIRST_START).until(
            lambda d: (results / "prediction_audit.csv").is_file() and (results / "add_audit.csv").is_file())
        assert "calibration" not in text(driver, queue)
        family = '//details[.//summary[contains(., "Seed family of synthetic-transe")]]'

        def train_the_family(d) -> bool:
            if d.find_element(By.XPATH, family).get_attribute("open") is None:
                d.find_element(By.XPATH, family + "/summary").click()  # the sidebar's expander, closed
                return False
            d.find_element(By.XPATH, family + '//button[.//p[starts-with(text(), "Train the family")]]').click()
            return True

        from selenium.common.exceptions import WebDriverException

        WebDriverWait(driver, 60, poll_frequency=1, ignored_exceptions=(WebDriverException,)).until(train_the_family)
        wait.until(ec.text_to_be_present_in_element(queue, "synthetic-transe: family of 3 seeds"))
        click(driver, (By.CSS_SELECTOR, '.st-key-job_queue button[kind="secondary"]'))
        # A rerun can replace an alert between find_elements and .text: `texts` reads them again, not a failure.
        errors = (By.CSS_SELECTOR, '[data-testid="stAlertContentError"]')
        notice = WebDriverWait(driver, 120).until(
            lambda d: next((t for t in texts(d, errors) if "family of 3 seeds" in t), False))
        assert "cancelled" in notice and "stays in use" in notice and "Nothing was saved" not in notice
        assert (store / "synthetic-transe" / "config.json").is_file()  # true: the model is still there

        driver.switch_to.window(second)  # the other session is not told
        time.sleep(3)
        assert not [t for t in texts(driver, errors) if "family of 3 seeds" in t]
        assert "Persons with a gender" in text(driver, main)

        driver.switch_to.window(first)
        click(driver, (By.XPATH, '//button[.//p[text()="Dismiss"]]'))
        WebDriverWait(driver, 20).until(lambda d: not [t for t in texts(d, errors) if "family of 3 seeds" in t])
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
