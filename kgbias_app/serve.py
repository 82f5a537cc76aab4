"""The dashboard served on the loopback for a real browser: ``streamlit run dashboard.py`` as a
subprocess on a free port, its health check, and headless Debian Chromium driven by Selenium.

Shared by the one browser test (``tests/test_browser.py``) and the browser bench
(``bench/bench_browser.py``); Selenium is imported only when a browser is asked for.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

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


#: Streamlit's words where another process bound its port first: free_port's port is free when it answers, and a
#: test beside it (two workers start dashboards, Chromium opens ports) may take it before Streamlit binds it (a
#: full run of 2026-12-07 lost a browser test so). Such a start is tried again on a new port, at most PORT_TRIES times.
PORT_TAKEN = "Port {port} is not available"
PORT_TRIES = 3


def _log_text(log: IO[bytes]) -> str:
    """All the server has written to ``log`` so far."""
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


@contextmanager
def dashboard(env: Mapping[str, str], *, timeout: float = 60) -> Iterator[str]:
    """The dashboard as ``scripts/start.sh`` serves it (:mod:`kgbias_app.launch`) on 127.0.0.1 with ``env``; -> its URL,
    once healthy. Stopped on exit. Where the body raises, the error carries a note with the server's state and the
    tail of its log: a browser test that times out then says whether the server had died (a one-off CI failure of
    2026-12-03 timed out on a click and left nothing to tell why). A server that exits because its port was taken
    in the meantime (:data:`PORT_TAKEN`) is started again on another."""
    with tempfile.TemporaryFile() as log:
        for attempt in range(1, PORT_TRIES + 1):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            log.seek(0)
            log.truncate()
            server = subprocess.Popen(
                [sys.executable, "-m", "kgbias_app.launch", "--server.headless", "true",
                 "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
                cwd=REPO, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
            )
            try:
                wait_until_healthy(url, server, timeout)
                break
            except BaseException as error:
                # it exited (RuntimeError) saying its port was taken in the meantime: tried again on another
                if (isinstance(error, RuntimeError) and attempt < PORT_TRIES
                        and PORT_TAKEN.format(port=port) in _log_text(log)):
                    continue
                error.add_note(server_note(server, log))
                _stop(server)
                raise
        try:
            yield url
        except BaseException as error:
            error.add_note(server_note(server, log))
            raise
        finally:
            _stop(server)


def server_note(server: subprocess.Popen, log: IO[bytes], *, chars: int = 2000) -> str:
    """One note on a served dashboard: running or its exit status, and the last ``chars`` characters of its log."""
    tail = _log_text(log)[-chars:].strip()
    state = "still running" if server.poll() is None else f"exited with {server.returncode}"
    return f"the dashboard's server was {state}; the end of its log:\n{tail or '(empty)'}"


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
        # automatic_downloads 1: a second download of the page is not held for a "multiple files" prompt that
        # headless Chromium never shows (a download a Streamlit rerun starts after the click's user activation has
        # expired counts as automatic; the selection export, the page's second, once got no file in 180 s of clicks)
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                                  "download.prompt_for_download": False,
                                                  "profile.default_content_setting_values.automatic_downloads": 1})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    except BaseException as error:  # any wait of a test that timed out: say what the page showed then
        error.add_note(page_note(driver))
        raise
    finally:
        driver.quit()


def click(driver: Any, locator: tuple[str, str], *, timeout: float = 60) -> None:
    """Find the element at ``locator`` afresh and click it, again while a Streamlit rerun replaces it under the
    pointer (stale, covered or not yet interactable): a click on a replaced element is silently lost. On a timeout
    the error's note names the last refusal (and :func:`chromium`'s, what the page showed)."""
    from selenium.common.exceptions import (
        ElementClickInterceptedException,
        ElementNotInteractableException,
        NoSuchElementException,
        StaleElementReferenceException,
        TimeoutException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    retried = (StaleElementReferenceException, ElementClickInterceptedException, ElementNotInteractableException,
               NoSuchElementException)
    refused: list[BaseException] = []

    def attempt(d: Any) -> bool:
        try:
            element = d.find_element(*locator)
            d.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
            element.click()
        except retried as exc:
            refused[:] = [exc]
            raise
        return True

    try:
        WebDriverWait(driver, timeout, ignored_exceptions=retried).until(attempt)
    except TimeoutException as error:
        first_line = (refused[0].msg or "").partition("\n")[0] if refused else ""
        last = f"{type(refused[0]).__name__}: {first_line}" if refused else "none"
        error.add_note(f"no click on {locator[1]} in {timeout:g} s; the last refusal: {last}")
        raise


#: What a stuck page shows, read in one script (no stale elements between reads): dialogs (Streamlit's
#: "Connection error" is one), exceptions, the buttons with their state, the end of the main area's text.
PAGE_STATE = """
const main = document.querySelector('[data-testid="stMain"]');
return {
  dialogs: Array.from(document.querySelectorAll('[role="dialog"]')).map(e => e.innerText),
  exceptions: Array.from(document.querySelectorAll('[data-testid="stException"]')).map(e => e.innerText),
  buttons: Array.from(document.querySelectorAll('button')).filter(e => e.innerText.trim())
    .map(e => e.innerText.trim() + (e.disabled ? ' (disabled)' : '')),
  main: main ? main.innerText.slice(-800) : null,
};
"""


def page_note(driver: Any) -> str:
    """One note on what the browser shows now (:data:`PAGE_STATE`), for an error of a browser test."""
    try:
        state, url = driver.execute_script(PAGE_STATE), driver.current_url
    except Exception as exc:  # noqa: BLE001 - a note must not hide the error it explains (a dead browser, say)
        return f"the page could not be read: {type(exc).__name__}"
    return (f"the page at {url}: dialogs {state['dialogs']}, exceptions {state['exceptions']}, "
            f"buttons {state['buttons']}; the end of its main area:\n{state['main']}")


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
