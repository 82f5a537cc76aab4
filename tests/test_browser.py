"""One real browser test: the dashboard served by `streamlit run`, driven by headless Chromium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_healthy(url: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}: {server.stdout.read()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout} s")


def test_occupation_explorer_in_a_real_browser(tiny_store: Path, tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = os.environ | {"KGBIAS_MODEL_DIR": str(tiny_store), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard.py", "--server.headless", "true",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    driver = None
    try:
        wait_until_healthy(url, server)
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1400,2000"):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        wait = WebDriverWait(driver, 60)
        # Start at the root: a deep link to a fresh server would run the page without the router
        # (Streamlit's pages/-directory fallback), see dashboard.py.
        driver.get(url)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Overview"))
        wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a[href$="/occupation_explorer"]')
        )).click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Occupation explorer"))
        picker = wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stMain"] [data-testid="stSelectbox"] input')
        ))
        picker.click()
        picker.send_keys("Librarian")
        picker.send_keys(Keys.ENTER)

        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), "Librarian"))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot")))
        time.sleep(1.0)  # let the charts finish drawing before the screenshot
        assert "Librarian" in driver.find_element(By.TAG_NAME, "h2").text
        assert driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        driver.save_screenshot(str(tmp_path / "occupation_explorer.png"))
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
