"""A Markdown-payload entity name and URL value in a real browser (issue 30, item 5): shown as text,
no <img> fetched, no bold, colour or KaTeX."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from kgbias_app.serve import CHROMIUM, chromium, dashboard, text, texts
from kgbias_core.embeddings.store import save_model

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

PAYLOAD = "![p](http://host/x.png) **bold** :red[x] $x^2$"
#: The crafted link's value: the payload plus a word, so that it names no occupation (links take plain names).
LINK_PAYLOAD = PAYLOAD + " z"


def test_a_markdown_name_and_link_value_render_as_literal_text(tiny_model, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    names = list(tiny_model.entity_names)
    names[tiny_model.entity_labels.index("nurse")] = PAYLOAD
    store = tmp_path / "store"
    save_model(replace(tiny_model, entity_names=tuple(names)), store)
    env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    main = '[data-testid="stMain"]'

    def literal_only(driver) -> None:
        assert not driver.find_elements(By.CSS_SELECTOR, f"{main} img"), "an <img> from Markdown"
        assert not driver.find_elements(By.CSS_SELECTOR, 'img[src*="host"]')
        assert not driver.find_elements(By.CSS_SELECTOR, f"{main} .katex")
        assert "bold" not in texts(driver, (By.CSS_SELECTOR, f"{main} strong"))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')

    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = WebDriverWait(driver, 60)
        # The name from the data: the occupation's heading shows it character for character.
        driver.get(f"{url}/occupation_explorer?occupation=nurse")
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), "![p](http://host/x.png)"))
        assert text(driver, (By.TAG_NAME, "h2")) == PAYLOAD
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot")))
        literal_only(driver)

        # The crafted link: its value is named in the warning as text.
        driver.get(f"{url}/occupation_explorer?occupation={quote(LINK_PAYLOAD)}")
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, main), "which this view does not have"))
        alert = next(t for t in texts(driver, (By.CSS_SELECTOR, '[data-testid="stAlert"]'))
                     if "which this view does not have" in t)
        assert LINK_PAYLOAD in alert
        literal_only(driver)
