"""The dashboard served on the loopback for a real browser: ``streamlit run dashboard.py`` as a
subprocess on a free port, its health check, and headless Debian Chromium driven by Selenium.

Shared by the one browser test (``tests/test_browser.py``) and the browser bench
(``bench/bench_browser.py``); Selenium is imported only when a browser is asked for.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
#: Headless, no sandbox (containers), nothing fetched from the network, a tall window so that the
#: explorer's charts are laid out (and drawn) without scrolling.
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,2000")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_healthy(url: str, server: subprocess.Popen, timeout: float = 60) -> None:
    """Return once the server at ``url`` answers its health check; raise if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout} s")


@contextmanager
def dashboard(env: Mapping[str, str], *, timeout: float = 60) -> Iterator[str]:
    """The dashboard as ``scripts/start.sh`` serves it (:mod:`kgbias_app.launch`) on 127.0.0.1 with ``env``; -> its URL,
    once healthy. Stopped on exit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "kgbias_app.launch", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_healthy(url, server, timeout)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@contextmanager
def chromium(profile: Path, *, downloads: Path | None = None) -> Iterator[Any]:
    """Headless Chromium (a Selenium ``webdriver.Chrome``) with its profile in ``profile``, saving
    downloads into ``downloads`` (without asking) when given; quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (*CHROMIUM_ARGS, f"--user-data-dir={profile}"):
        options.add_argument(arg)
    if downloads is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                                  "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def click(driver: Any, locator: tuple[str, str], *, timeout: float = 60) -> None:
    """Find the element at ``locator`` afresh and click it, again while a Streamlit rerun replaces it under the
    pointer (stale, covered or not yet interactable): a click on a replaced element is silently lost."""
    from selenium.common.exceptions import (
        ElementClickInterceptedException,
        ElementNotInteractableException,
        NoSuchElementException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    def attempt(d: Any) -> bool:
        element = d.find_element(*locator)
        d.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
        element.click()
        return True

    retried = (StaleElementReferenceException, ElementClickInterceptedException, ElementNotInteractableException,
               NoSuchElementException)
    WebDriverWait(driver, timeout, ignored_exceptions=retried).until(attempt)


def texts(driver: Any, locator: tuple[str, str], *, timeout: float = 30) -> list[str]:
    """The visible text of every element at ``locator``, read afresh until one read sees no stale element: a
    Streamlit rerun can replace an element between ``find_elements`` and ``.text`` (issue 26's CI failures)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    read: list[str] = []

    def attempt(d: Any) -> bool:
        read[:] = [e.text for e in d.find_elements(*locator)]
        return True

    WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(attempt)
    return read


def text(driver: Any, locator: tuple[str, str], *, timeout: float = 30) -> str:
    """The visible text of the first element at ``locator`` (waited for), read as ``texts`` reads."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    read: list[str] = []

    def attempt(d: Any) -> bool:
        read[:] = [d.find_element(*locator).text]  # an empty text is a reading too, not a reason to wait
        return True

    retried = (StaleElementReferenceException, NoSuchElementException)
    WebDriverWait(driver, timeout, ignored_exceptions=retried).until(attempt)
    return read[0]
