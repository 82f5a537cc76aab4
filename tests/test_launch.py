"""The dashboard's launcher (kgbias_app.launch): its preload imports the heavy modules without Streamlit (whose
st.cache_data wants the server's runtime), and it starts the same app as ``streamlit run dashboard.py``."""

from __future__ import annotations

import subprocess
import sys

from kgbias_app.launch import DASHBOARD, PRELOAD


def test_the_preload_imports_what_the_first_page_needs_and_never_streamlit() -> None:
    code = ("import sys; from kgbias_app.launch import preload; preload(); "
            "print(sorted(m for m in ('streamlit', 'torch', 'torch._dynamo', 'pykeen', 'kgbias_core.analysis') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['kgbias_core.analysis', 'pykeen', 'torch', 'torch._dynamo']"
    assert all(not name.startswith(("streamlit", "kgbias_app")) for name in PRELOAD)


def test_the_launcher_runs_the_repository_dashboard() -> None:
    assert DASHBOARD.name == "dashboard.py" and DASHBOARD.is_file()
    # Bad options are Streamlit's to refuse, as `streamlit run` would: one message, a non-zero exit.
    done = subprocess.run([sys.executable, "-m", "kgbias_app.launch", "--no-such-option"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "no-such-option" in done.stderr
