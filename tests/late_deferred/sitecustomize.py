"""Imported first by a dashboard whose PYTHONPATH starts here (``tests/test_browser.py``): every deferred download's
request reaches Streamlit 1.5 s late, as on a loaded machine. A download whose click also reruns the page then
fails on every click (the rerun drops the file id the browser asks for: 8 clicks of 8, 2026-12-04), so a browser
test run with it fails should a download button rerun again."""

import time

from streamlit.runtime import media_file_manager

_execute = media_file_manager.MediaFileManager.execute_deferred


def _late(self, file_id: str) -> str:
    time.sleep(1.5)
    return _execute(self, file_id)


media_file_manager.MediaFileManager.execute_deferred = _late
