"""Load bench: N concurrent dashboard sessions against one running server, over the loopback only.

    python bench/bench_load.py [--sessions 1 5 10] [--switches 10] [--retrains 3] [--soak-minutes 0]

Starts ``streamlit run dashboard.py`` on 127.0.0.1 with a fresh model store holding the synthetic
default model, then drives sessions the way a browser does: each one opens a websocket to the
server, sends Streamlit's own ``BackMsg`` protocol messages (rerun with widget states) and reads
``ForwardMsg`` deltas until the script run finishes. Per session: open the Occupation explorer,
switch occupation ``--switches`` times; ``--retrains`` of the sessions first start a what-if
retrain in the Debiasing lab (IF-REMOVE on a different occupation each). Everything is bounded:
a fixed number of requests, a timeout per run, loopback addresses only.

Reports per N: the median and p95 seconds from sending a switch to its script run finishing (the
server's work plus the loopback), errors (exceptions shown on a page, runs that did not finish),
the server's peak RSS, and the app's retrain time against the same retrain from the command line
(``train_seconds`` of each saved model). ``--soak-minutes`` keeps 5 sessions switching for that long
and reports the RSS at its start and end. XSRF protection is off for the bench server: the bench
client cannot read the cookie a browser would, and nothing but this process talks to the server.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import websocket
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings.config import default_train_config
from kgbias_core.embeddings.store import list_models, read_config, save_model
from kgbias_core.embeddings.training import train_model

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 120.0  # seconds one script run may take before it counts as an error


@dataclass
class Run:
    seconds: float
    widgets: dict[str, tuple[str, object]] = field(default_factory=dict)  # label -> (widget id, element)
    errors: list[str] = field(default_factory=list)


class Session:
    """One browser tab's conversation with the server, without the browser."""

    def __init__(self, url: str) -> None:
        self.ws = websocket.create_connection(url, subprotocols=["streamlit"], timeout=RUN_TIMEOUT)
        self.pages: dict[str, str] = {}  # page title -> script hash
        self.opened = self.run()  # the default page, as a browser opens it; it names the pages

    def run(self, *, page: str = "", states: list[dict] | None = None) -> Run:
        if page and page not in self.pages:
            raise KeyError(f"no page {page!r}: the app has {sorted(self.pages)}")
        message = BackMsg()
        message.rerun_script.page_script_hash = self.pages.get(page, "")
        for state in states or []:
            widget = message.rerun_script.widget_states.widgets.add()
            for key, value in state.items():
                setattr(widget, key, value)
        start = time.perf_counter()
        self.ws.send_binary(message.SerializeToString())
        run = Run(seconds=0.0)
        while True:
            reply = ForwardMsg()
            reply.ParseFromString(self.ws.recv())
            kind = reply.WhichOneof("type")
            if kind == "new_session":
                self.pages.update({p.page_name: p.page_script_hash for p in reply.new_session.app_pages})
            elif kind == "navigation":
                self.pages.update({p.page_name: p.page_script_hash for p in reply.navigation.app_pages})
            elif kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                etype = element.WhichOneof("type")
                if etype == "exception":
                    where = element.exception.stack_trace[-1].strip() if element.exception.stack_trace else "?"
                    run.errors.append(f"{element.exception.type}: {element.exception.message} ({where})")
                elif etype in ("selectbox", "button", "radio"):
                    widget = getattr(element, etype)
                    run.widgets[widget.label] = (widget.id, widget)
            elif kind == "script_finished":
                if reply.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue  # the server reruns at once (st.rerun); the run we wait for comes next
                run.seconds = time.perf_counter() - start
                return run

    def close(self) -> None:
        self.ws.close()


def occupation_switches(session: Session, *, n: int, offset: int) -> tuple[list[float], list[str]]:
    first = session.run(page="Occupation explorer")
    errors = list(first.errors)
    widget_id, box = first.widgets["Occupation"]
    times = []
    for i in range(n):
        option = box.options[(offset + i + 1) % len(box.options)]
        run = session.run(page="Occupation explorer", states=[{"id": widget_id, "string_value": option}])
        times.append(run.seconds)
        errors += run.errors
    return times, errors


def start_retrain(session: Session, *, offset: int) -> list[str]:
    first = session.run(page="Debiasing lab")
    widget_id, box = first.widgets["Occupation"]
    occupation = {"id": widget_id, "string_value": box.options[offset % len(box.options)]}
    chosen = session.run(page="Debiasing lab", states=[occupation])
    button = next((wid for label, (wid, _) in chosen.widgets.items() if label.startswith("Retrain from")), None)
    if button is None:
        return first.errors + chosen.errors + ["no Retrain button (the run is already in the store?)"]
    clicked = session.run(page="Debiasing lab", states=[occupation, {"id": button, "trigger_value": True}])
    return first.errors + chosen.errors + clicked.errors


def rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size of ``pid`` in MiB, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the server did not answer {url} within {seconds:.0f}s")


def drive(url: str, *, n_sessions: int, switches: int, retrains: int, first_retrain: int = 0) -> dict[str, object]:
    results: list[tuple[list[float], list[str]]] = [([], [])] * n_sessions

    def one(i: int) -> None:
        try:
            session = Session(url)
            # Each round retrains other occupations: a run already in the store offers no Retrain button.
            errors = start_retrain(session, offset=7 + first_retrain + i) if i < retrains else []
            times, more = occupation_switches(session, n=switches, offset=3 * i)
            results[i] = (times, errors + more)
            session.close()
        except Exception as exc:  # a session that broke is an error of the run, not of the bench
            results[i] = ([], [f"{type(exc).__name__}: {exc}"])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n_sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=RUN_TIMEOUT * (switches + 4))
    times = sorted(t for ts, _ in results for t in ts)
    errors = [e for _, es in results for e in es]
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))] if times else float("nan")
    return {"sessions": n_sessions, "switches": len(times), "median_s": statistics.median(times) if times else None,
            "p95_s": p95, "errors": errors}


def cli_retrain_seconds(store: Path, run: str) -> float:
    """The same what-if as the app's run, from the command line; its training seconds."""
    edit = read_config(store / run)["edit"]
    k = int(edit["strategy"].split("k=")[1])
    out = Path(tempfile.mkdtemp(prefix="kgbias-cli-")) / "cli-run"
    subprocess.run([sys.executable, "-m", "kgbias_core", "debias", "--model", str(store / "synthetic-transe"),
                    "--occupation", edit["occupation"], "--remove-k", str(k), "--strategy", "if",
                    "--out", str(out)], check=True, capture_output=True)
    return float(read_config(out)["train_seconds"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", nargs="+", type=int, default=[1, 5, 10])
    parser.add_argument("--switches", type=int, default=10)
    parser.add_argument("--retrains", type=int, default=3)
    parser.add_argument("--soak-minutes", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=8599)
    args = parser.parse_args()

    store = Path(tempfile.mkdtemp(prefix="kgbias-load-"))
    graph = load_dataset("synthetic")
    save_model(train_model(graph, default_train_config("synthetic"), name="synthetic-transe"), store)
    env = {**os.environ, "KGBIAS_MODEL_DIR": str(store)}
    env.pop("KGBIAS_DATA_DIR", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(args.port),
         "--server.enableXsrfProtection", "false", "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    runs: list[str] = []
    try:
        wait_for(f"http://127.0.0.1:{args.port}/_stcore/health", 60)
        url = f"ws://127.0.0.1:{args.port}/_stcore/stream"
        print(f"load average at start: {os.getloadavg()[0]:.2f} (2-core machine); server pid {server.pid}")
        drive(url, n_sessions=1, switches=2, retrains=0)  # warm the caches once, as a first visitor would
        for round_, n in enumerate(args.sessions):
            before = rss_mib(server.pid)[0]
            result = drive(url, n_sessions=n, switches=args.switches, retrains=min(args.retrains, n),
                           first_retrain=round_ * args.retrains)
            now, peak = rss_mib(server.pid)
            median = result["median_s"] if result["median_s"] is not None else float("nan")
            print(f"N={n:2d}: {result['switches']} switches, median {median:.3f}s, "
                  f"p95 {result['p95_s']:.3f}s, errors {len(result['errors'])}, RSS {before:.0f} -> {now:.0f} MiB "
                  f"(peak {peak:.0f} MiB)", flush=True)
            for error in result["errors"][:5]:
                print(f"    error: {error}")
        deadline = time.monotonic() + 600
        expected = 1 + sum(min(args.retrains, n) for n in args.sessions)
        while time.monotonic() < deadline and len(list_models(store)) < expected:
            time.sleep(2)  # the queued retrains finish one after the other
        runs = [name for name in list_models(store) if name != "synthetic-transe"]
        if args.soak_minutes > 0:
            start_rss = rss_mib(server.pid)[0]
            end = time.monotonic() + 60 * args.soak_minutes
            rounds = 0
            while time.monotonic() < end:
                drive(url, n_sessions=5, switches=args.switches, retrains=0)
                rounds += 1
            end_rss = rss_mib(server.pid)[0]
            print(f"soak {args.soak_minutes:.0f} min ({rounds} rounds of 5 sessions): RSS {start_rss:.0f} -> "
                  f"{end_rss:.0f} MiB ({100 * (end_rss / start_rss - 1):+.0f}%)")
        print(json.dumps({"load_average_end": os.getloadavg()[0]}))
    finally:
        server.terminate()
        server.wait(timeout=30)
    # The command line's retrains once the server is gone: its background jobs (the lab's noise band)
    # would otherwise share the cores with them.
    for run in runs:
        app_seconds = float(read_config(store / run)["train_seconds"])
        cli_seconds = cli_retrain_seconds(store, run)
        print(f"retrain {run}: app {app_seconds:.1f}s, CLI {cli_seconds:.1f}s, ratio {app_seconds / cli_seconds:.2f}")


if __name__ == "__main__":
    main()
