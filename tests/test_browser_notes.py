"""What a failing browser test says: a click that never lands names its last refusal and what the page showed,
and an error inside a served dashboard carries the server's state and the end of its log (a CI run of 2026-12-03
timed out on a click and left nothing to tell why)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from kgbias_app.serve import CHROMIUM, chromium, click, dashboard, page_note

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

#: A button under a full-window dialog, as Streamlit's "Connection error" covers a page whose server went away.
COVERED = ('<button id="go">Build the plan</button><button disabled>Verify</button>'
           '<div role="dialog" style="position:fixed;inset:0;background:#fff">Connection error</div>')


def test_a_covered_button_times_out_naming_the_refusal_and_the_dialog(tmp_path: Path) -> None:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By

    with pytest.raises(TimeoutException) as caught, chromium(tmp_path / "chromium") as driver:
        driver.get("data:text/html," + quote(COVERED))
        click(driver, (By.ID, "go"), timeout=2)
    refusal, page = caught.value.__notes__  # the click's, then the browser's (as any wait's that times out)
    assert refusal.startswith("no click on go in 2 s; the last refusal: ElementClickInterceptedException: ")
    assert "dialogs ['Connection error']" in page
    assert "'Verify (disabled)'" in page and "'Build the plan'" in page
    with chromium(tmp_path / "chromium") as driver:  # a button that is there and free is clicked at once
        driver.get("data:text/html," + quote(COVERED))
        driver.execute_script("document.querySelector('[role=dialog]').remove();"
                              "document.getElementById('go').onclick = () => { document.title = 'clicked'; };")
        click(driver, (By.ID, "go"), timeout=2)
        assert driver.title == "clicked"
    # a browser gone (quit, or crashed) still gives a note, not an error that hides the one it explains
    assert page_note(driver).startswith("the page could not be read: ")


def test_an_error_inside_a_served_dashboard_carries_the_server_log(tmp_path: Path) -> None:
    env = os.environ | {"KGBIAS_MODEL_DIR": str(tmp_path / "store"), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    with pytest.raises(LookupError) as caught, dashboard(env) as url:
        raise LookupError(url)
    (note,) = caught.value.__notes__
    assert note.startswith("the dashboard's server was still running; the end of its log:")
    assert str(caught.value) in note  # Streamlit's own banner names the URL it serves


def test_a_dashboard_whose_port_is_taken_before_it_binds_starts_on_another(tmp_path: Path, monkeypatch) -> None:
    """free_port's port may be taken before Streamlit binds it (another worker's server, Chromium): the server then
    exits saying so, and dashboard starts it again on a new port, healthy there; a port taken on every try is the
    error, with the server's words in its note (a full run of 2026-12-07 lost a browser test to such a race)."""
    import socket
    import urllib.request

    from kgbias_app import serve

    env = os.environ | {"KGBIAS_MODEL_DIR": str(tmp_path / "store"), "KGBIAS_DATA_DIR": str(tmp_path / "no-data")}
    real = serve.free_port
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        handed = []

        def first_taken() -> int:
            handed.append(taken if not handed else real())
            return handed[-1]

        monkeypatch.setattr(serve, "free_port", first_taken)
        with dashboard(env) as url:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as response:
                assert response.status == 200
        assert len(handed) == 2 and url == f"http://127.0.0.1:{handed[1]}" != f"http://127.0.0.1:{taken}"
        monkeypatch.setattr(serve, "free_port", lambda: taken)
        with pytest.raises(RuntimeError) as caught, dashboard(env):
            pass
    assert serve.PORT_TAKEN.format(port=taken) in caught.value.__notes__[0]
