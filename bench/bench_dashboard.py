"""Server time of the Occupation explorer page: start-up and switching occupation, in ms.

Runs the page with Streamlit's AppTest (in-process: the wall time of ``run()`` is the script's
server time plus AppTest's small overhead) for a synthetic model and, when $KGBIAS_DATA_DIR holds
FB15k-237 and ``cached_models/fb15k237-transe`` exists, for that model too.

    python bench/bench_dashboard.py [--occupations 5] [--store cached_models]

Without ``synthetic-transe`` in the store, the default synthetic model is trained into a
temporary store first (about a minute on two CPU cores). Target: a switch ≤ 300 ms on FB15k-237.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from streamlit.testing.v1 import AppTest  # noqa: E402

from kgbias_core.data.datasets import has_dataset, resolve_data_dir  # noqa: E402
from kgbias_core.embeddings.store import (  # noqa: E402
    default_store,
    list_models,
    load_model,
    read_config,
    save_model,
)

PAGE = str(REPO / "app_pages" / "occupation_explorer.py")


def synthetic_store(store: Path) -> Path:
    """A store holding ``synthetic-transe``: ``store`` if it has one, else a fresh temporary one."""
    if "synthetic-transe" in list_models(store):
        return store
    from kgbias_core.data.datasets import load_dataset
    from kgbias_core.embeddings.config import default_train_config
    from kgbias_core.embeddings.training import train_model

    temporary = Path(tempfile.mkdtemp(prefix="kgbias-bench-"))
    print(f"training synthetic-transe into {temporary} …", flush=True)
    start = time.perf_counter()
    graph = load_dataset("synthetic")
    save_model(train_model(graph, default_train_config("synthetic"), name="synthetic-transe"), temporary)
    print(f"  trained in {time.perf_counter() - start:.1f} s")
    return temporary


def timed_run(app: AppTest) -> float:
    start = time.perf_counter()
    app.run()
    elapsed = (time.perf_counter() - start) * 1000
    if app.exception:
        raise RuntimeError(app.exception[0].message)
    return elapsed


def bench(store: Path, model: str, graph: str, n_occupations: int, *, preload: bool = False) -> None:
    os.environ["KGBIAS_MODEL_DIR"] = str(store)
    load_ms = None
    if preload:  # the model loaded into the page's own cache first: the first page is then timed "after load"
        from kgbias_app import cache

        start = time.perf_counter()
        cache.analysis(cache.catalog()[model])
        load_ms = (time.perf_counter() - start) * 1000
    app = AppTest.from_file(PAGE, default_timeout=600)
    app.session_state["graph"] = graph
    app.session_state["model"] = model
    start_ms = timed_run(app)
    from kgbias_app import cache  # imported after the first run: same module objects as the page

    measures_frame = cache.measures(cache.catalog()[model])
    largest = measures_frame.assign(n=measures_frame["n_male"] + measures_frame["n_female"])
    occupations = largest.nlargest(n_occupations, "n")["occupation"].tolist()
    rerun_ms = timed_run(app)
    first, again = [], []
    for occupation in occupations:
        app.selectbox(key="occupation").set_value(occupation)
        first.append(timed_run(app))
    for occupation in occupations:
        app.selectbox(key="occupation").set_value(occupation)
        again.append(timed_run(app))
    stored = load_model(store / model)
    print(f"\n{model} ({stored.dataset}: {stored.n_entities:,} entities, {stored.triples.shape[0]:,} triples)")
    if load_ms is not None:
        print(f"  model load (into the page's cache):        {load_ms:8.0f} ms")
        print(f"  first page run after load (every measure):  {start_ms:8.0f} ms")
    else:
        print(f"  first page run (load model, every measure): {start_ms:8.0f} ms")
    print(f"  rerun, nothing changed:                     {rerun_ms:8.0f} ms")
    for occupation, a, b in zip(occupations, first, again, strict=True):
        print(f"  switch to {occupation:<32} first {a:6.0f} ms   again {b:6.0f} ms")
    print(f"  switch median: first visit {statistics.median(first):.0f} ms, "
          f"revisit {statistics.median(again):.0f} ms (target ≤ 300 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--occupations", type=int, default=5, help="how many occupations to switch through")
    parser.add_argument("--store", type=Path, default=default_store(), help="model store (default: $KGBIAS_MODEL_DIR)")
    parser.add_argument("--model", help="only this model of --store (e.g. a 20M-triple random import, issue 10)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--preload", action="store_true", help="with --model: time the model load apart from the page")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("KGBIAS_DATA_DIR", str(resolve_data_dir()))
    if args.model:
        bench(args.store, args.model, read_config(args.store / args.model)["dataset"], args.occupations,
              preload=args.preload)
        return
    bench(synthetic_store(args.store), "synthetic-transe", "synthetic", args.occupations)
    fb_store = REPO / "cached_models"
    if has_dataset("fb15k237", resolve_data_dir()) and "fb15k237-transe" in list_models(fb_store):
        bench(fb_store, "fb15k237-transe", "fb15k237", args.occupations)
    else:
        print("\n(no FB15k-237 benchmark: needs $KGBIAS_DATA_DIR/fb15k237 and cached_models/fb15k237-transe)")


if __name__ == "__main__":
    main()
