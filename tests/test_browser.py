"""One real browser test: the dashboard served by `streamlit run`, driven by headless Chromium."""

from __future__ import annotations

import os
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kgbias_app.serve import CHROMIUM, chromium, click, dashboard, text, texts
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model
from kgbias_core.readings import fmt
from kgbias_core.tables import measures_table

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def test_occupation_explorer_in_a_real_browser(tiny_store: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    env = os.environ | {"KGBIAS_MODEL_DIR": str(tiny_store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    downloads = tmp_path / "downloads"
    measures = measures_table(ModelAnalysis(load_model(tiny_store / "tiny-transe")))
    librarian_b_gr = float(measures.set_index("occupation").loc["librarian", "group_bias"])
    with dashboard(env) as url, chromium(tmp_path / "chromium", downloads=downloads) as driver:
        wait = WebDriverWait(driver, 60)
        # A deep link as the fresh server's first request: the router's page, names and layout.
        driver.get(f"{url}/occupation_explorer?occupation=librarian")
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Occupation explorer"))
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), "Librarian"))
        nav = texts(driver, (By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a'))
        assert any("Occupation explorer" in name for name in nav) and not any("dashboard" in name for name in nav)

        # The link to the view, drawn at the end of the page's run.
        wait.until(ec.presence_of_element_located(
            (By.XPATH, '//*[@data-testid="stSidebar"]//*[text()="Link to this view"]')))

        # Another occupation: the URL follows; Back returns to the librarians.
        picker = wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stMain"] [data-testid="stSelectbox"] input')
        ))
        picker.click()
        picker.send_keys("Engineer")
        picker.send_keys(Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), "Engineer"))
        wait.until(lambda d: "occupation=engineer" in d.current_url)
        driver.back()
        wait.until(lambda d: "occupation=librarian" in d.current_url)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), "Librarian"))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot")))
        time.sleep(1.0)  # let the charts finish drawing before the screenshot
        assert "Librarian" in text(driver, (By.TAG_NAME, "h2"))
        assert driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        driver.save_screenshot(str(tmp_path / "occupation_explorer.png"))

        # "Download report": one HTML file holding the occupation's B_gr and an interactive chart.
        report = downloaded(driver, (By.XPATH, '//button[.//p[text()="Download report"]]'), downloads,
                            "*librarian*report*.html")
        page = report.read_text(encoding="utf-8")
        HTMLParser().feed(page)  # raises on HTML it cannot read
        assert page.lstrip().lower().startswith("<!doctype html>")
        assert "Librarian" in page and fmt(librarian_b_gr) in page
        assert "Plotly.newPlot" in page

        # The Findings page, as a person first sees it: the claims are offered for computing.
        driver.find_element(By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a[href$="/findings"]').click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Findings"))
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, '[data-testid="stMain"]'), "not computed yet"))
        # Streamlit sends the elements one by one: the note can be drawn before the button.
        button = wait.until(ec.element_to_be_clickable(
            (By.XPATH, '//button[.//p[text()="Compute the findings"]]')
        ))
        assert button.is_displayed()
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


def test_search_a_person_open_their_triples_and_export_a_selection(tiny_store: Path, tmp_path: Path) -> None:
    """Issue 28 in a real browser: the person view found by a search, their triples downloaded, and a box
    selection of the embedding space exported as CSV.

    Every wait is on the condition itself, with a generous limit (a loaded machine draws slowly); a box drawn
    before the chart could take it is drawn again until the selection shows, never asserted on less."""
    import pandas as pd
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec

    from kgbias_core.embedding_space import embedding_space

    # Each download's request reaches the server late, as on a loaded machine (tests/late_deferred): the flake of
    # 2026-12-03/04, no selection CSV in 180 s of clicks, came back on every run with it until downloads stopped
    # rerunning the page.
    late = os.pathsep.join([str(Path(__file__).parent / "late_deferred"), os.environ.get("PYTHONPATH", "")])
    env = os.environ | {"KGBIAS_MODEL_DIR": str(tiny_store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data"),
                        "PYTHONPATH": late.rstrip(os.pathsep)}
    downloads = tmp_path / "downloads"
    analysis = ModelAnalysis(load_model(tiny_store / "tiny-transe"))
    groups = analysis.groups
    woman = int(groups.pair_person[groups.pair_female][0])
    name, label = analysis.model.entity_names[woman], analysis.model.entity_labels[woman]
    degree = int(((analysis.model.triples[:, 0] == woman) | (analysis.model.triples[:, 2] == woman)).sum())
    points, _ = embedding_space(analysis)
    with dashboard(env) as url, chromium(tmp_path / "chromium", downloads=downloads) as driver:
        wait = patient_wait(driver)
        driver.get(f"{url}/person")
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Person"))
        search = wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stMain"] [data-testid="stTextInput"] input')))
        search.send_keys(name)
        search.send_keys(Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), name))
        wait.until(lambda d: "person=" in d.current_url)
        # Their triples: the table and its download, one row per training triple the person is in.
        clicked = time.monotonic()
        saved = downloaded(driver, (By.XPATH, '//button[.//p[text()="Download the person\'s triples (CSV)"]]'),
                           downloads, f"*{label}*triples*.csv")
        assert time.monotonic() - clicked >= 1.5  # the late request was in force (a lower bound on any machine)
        triples = pd.read_csv(saved)
        assert len(triples) == degree and "in words" in triples.columns and "influence" in triples.columns
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')

        # The embedding space: a box drawn over the chart selects points; their CSV is offered and saved.
        wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a[href$="/embedding_space"]'))).click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Embedding space"))
        export_button = '//button[.//p[contains(text(), "selected points (CSV)")]]'
        selected = wait.until(lambda d: box_selection(d, export_button))
        n = int(selected.text.split()[2].replace(",", ""))
        export = downloaded(driver, (By.XPATH, export_button), downloads, "*embedding-space-selection*.csv")
        chosen = pd.read_csv(export)
        assert len(chosen) == n > 0 and len(chosen) < len(points)
        assert set(chosen["label"]) <= set(points["label"])
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


def test_a_click_on_a_point_of_the_explorer_scatter_opens_that_persons_view(tiny_store: Path, tmp_path: Path) -> None:
    """Issue 28: a click on a person's point in the B_in against B'_in scatter opens the person view of exactly
    the person plotly reports under the pointer; the explorer opened again shows the scatter (no stale click)."""
    from urllib.parse import quote

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    from kgbias_app.texts import EXPLORER_TABS

    env = os.environ | {"KGBIAS_MODEL_DIR": str(tiny_store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    model = load_model(tiny_store / "tiny-transe")
    groups = ModelAnalysis(model).groups
    nurses = {model.entity_labels[int(p)]
              for p in groups.pair_person[groups.pair_occupation == groups.index("nurse")]}
    with dashboard(env) as url, chromium(tmp_path / "chromium") as driver:
        wait = patient_wait(driver)
        driver.get(f"{url}/occupation_explorer?occupation=nurse&view={quote(EXPLORER_TABS[1])}")
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Occupation explorer"))
        clicked: dict[str, str] = {}
        label = wait.until(lambda d: click_a_point(d, clicked))
        assert label in nurses
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Person"))
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), model.entity_names[model.entity_id(label)]))
        assert f"person={quote(label, safe='')}" in driver.current_url
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')

        # Back to the explorer in the same session: the scatter again, and the click is not replayed.
        wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a[href$="/occupation_explorer"]'))).click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Occupation explorer"))
        scatter_tab = f'//*[@data-testid="stTab"][normalize-space(.)="{EXPLORER_TABS[1]}"]'
        wait.until(ec.element_to_be_clickable((By.XPATH, scatter_tab))).click()  # the page opens on its first tab
        wait.until(lambda d: d.execute_script(CHART_DRAWN)
                   and d.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .scatterlayer .point"))
        time.sleep(3.0)  # a stale click would switch pages again within a rerun: none does
        assert "Occupation explorer" in text(driver, (By.TAG_NAME, "h1"))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


# --- waits on conditions (a loaded machine draws slowly: generous limits, every step re-checked) -------------
#: Seconds a step may take on a loaded two-core machine before the test fails.
PATIENCE = 240


def patient_wait(driver):
    """A WebDriverWait of :data:`PATIENCE` seconds that ignores elements replaced by a rerun meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, PATIENCE, poll_frequency=0.5, ignored_exceptions=(StaleElementReferenceException,))


#: True once the page's plotly chart has laid out its axes and drawn its points (SVG markers or a WebGL canvas).
CHART_DRAWN = """
const gd = document.querySelector('.js-plotly-plot');
return Boolean(gd && gd._fullLayout && gd.querySelector('.nsewdrag')
               && (gd.querySelector('.scatterlayer .point') || gd.querySelector('canvas.gl-canvas-context')));
"""


def downloaded(driver, locator: tuple[str, str], downloads: Path, pattern: str, *, timeout: float = 180) -> Path:
    """Click the download button at ``locator`` and -> the file matching ``pattern`` that it saves in ``downloads``.

    A click on a button that a Streamlit rerun is replacing is lost without a trace: full-suite runs saw no file
    within 60 s, once after the report's button and once after the embedding space's selection export. The button
    is found afresh and clicked again wherever no file has come 15 s after a click. (The download buttons rerun
    nothing since 2026-12-04: a click's own rerun had dropped the deferred file the browser asked for.) What the
    button says under it on a failed try goes into the failure's message."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    errors: list[str] = []  # what the button said under it (a deferred file the server no longer had, ...)

    def saved(d) -> Path | bool:
        try:
            errors.extend(e.text for e in d.find_elements("css selector", '[data-testid="stDownloadButtonError"]'))
        except StaleElementReferenceException:  # shown for 5 s: gone between the find and the read
            pass
        return next(iter(downloads.glob(pattern)), False)

    def attempt(d) -> Path | bool:
        click(d, locator)
        return WebDriverWait(d, 15, poll_frequency=0.25).until(saved)

    try:
        return WebDriverWait(driver, timeout, ignored_exceptions=(TimeoutException,)).until(attempt)
    except TimeoutException:
        got = sorted(path.name for path in downloads.glob("*")) if downloads.is_dir() else "no folder"
        raise AssertionError(f"no {pattern} in {timeout:.0f} s of clicks; the downloads hold {got}; the button said "
                             f"{sorted(set(errors)) or 'nothing'}; the page says: "
                             f"{driver.find_element('tag name', 'body').text[:2000]!r}") from None


def box_selection(driver, button_xpath: str):
    """Draw a box over the drawn chart; -> the button that the selection brings, or False (then the next poll
    draws the box again: one drawn while the chart was still being laid out selects nothing)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    if not driver.execute_script(CHART_DRAWN):
        return False
    plot = driver.find_element(By.CSS_SELECTOR, ".js-plotly-plot .nsewdrag")
    width, height = plot.size["width"], plot.size["height"]
    ActionChains(driver).move_to_element_with_offset(plot, -width // 3, -height // 3).click_and_hold() \
        .move_by_offset(width // 3, height // 3).move_by_offset(width // 4, height // 4).release().perform()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = driver.find_elements(By.XPATH, button_xpath)
        if found and found[0].is_displayed() and found[0].is_enabled():
            return found[0]
        time.sleep(0.5)
    return False


#: The person label of the point under the pointer, as plotly reports it (its customdata), or null.
HOVERED_LABEL = """
const gd = document.querySelector('.js-plotly-plot');
const hovered = gd && gd._hoverdata;
return hovered && hovered.length && hovered[0].customdata ? String(hovered[0].customdata[0]) : null;
"""


def click_a_point(driver, clicked: dict[str, str]):
    """Hover the first drawn point of the chart, read which person plotly has under the pointer (kept in
    ``clicked``), click there; -> that person's label once the click has left the page, or False (the next poll
    tries again)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    if "person=" in driver.current_url:
        return clicked.get("label", False)
    if not driver.execute_script(CHART_DRAWN):
        return False
    point = driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .scatterlayer .point")[0]
    ActionChains(driver).move_to_element(point).perform()
    label = driver.execute_script(HOVERED_LABEL)
    if label is None:
        return False
    clicked["label"] = label
    ActionChains(driver).click().perform()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if "person=" in driver.current_url:
            return label
        time.sleep(0.5)
    return False
