"""``python -m kgbias_app.launch [streamlit options]``: the dashboard's server, with its heavy imports done
before the first visitor arrives.

Streamlit imports the app's modules only when the first session runs ``dashboard.py``: on a 2-core CPU that is
about 4 s of the first page's 5.5 s (torch 1.4 s, PyKEEN 1.7 s with scikit-learn and SciPy), paid by whoever
opens the page first. Importing them here, in the server's process before it listens, moves that cost to the
launch (once, while nobody waits on a page) and leaves the first page its own work: reading the store's cached
results and drawing (``bench/bench_first_start.py``). Same process, same ``sys.modules``: the script's imports
then cost nothing. The rest is ``streamlit run dashboard.py`` with the options given.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[1] / "dashboard.py"

#: What every first page imports (the Overview through the sidebar and the links), heaviest first. The core
#: only: the app's own modules decorate functions with ``st.cache_data``, which wants the server's runtime.
#: ``torch._dynamo``: the first torch optimiser a process builds imports it (1.6 s on the 2-core CPU, torch 2.13),
#: and the refined Remove prediction's L-BFGS (``influence/local_refit.py``) is often the app's first: imported
#: here, the first what-if of a talk does not pay it.
PRELOAD = ("torch", "torch._dynamo", "pykeen.models", "kgbias_core.analysis", "kgbias_core.subpopulations",
           "kgbias_core.tables", "kgbias_core.readings", "plotly.graph_objects", "plotly.express", "pandas")


def preload(modules: tuple[str, ...] = PRELOAD) -> None:
    for name in modules:
        importlib.import_module(name)


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    preload()
    args = ["run", str(DASHBOARD), *(sys.argv[1:] if argv is None else argv)]
    cli.main(args=args, prog_name="streamlit")


if __name__ == "__main__":
    main()
