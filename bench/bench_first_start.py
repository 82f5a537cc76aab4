"""Ready for a talk (issue 26), timed: a fresh start that opens by itself, a warm store's first content,
and a person's what-if queued behind a calibration.

    python bench/bench_first_start.py [--out bench/results/first_start.csv] [--threads 2]

1. **Fresh machine**: an empty store and a data directory with no graph (the synthetic graph only).
   ``bash scripts/start.sh`` is launched at t = 0 (its ``setup.sh`` included), headless Chromium (already
   open, as a person's browser is) loads the page as soon as the server answers, and the clock stops when
   the Overview's content ("Persons with a gender") is in the page: no refresh, the waiting page opens by
   itself when the first model is saved. Target <= 60 s.
2. **Warm store**: ``kgbias prepare --dataset synthetic`` (timed, printed), then ``start.sh`` again:
   first content from the launch, from the page's request (server up, a new session), and for a second
   session. Target: first content <= 5 s from the page's request.
3. **The queue**: in this process, the synthetic model's calibration (13 masked retrains, background) is
   running; after its first retrain a person submits a what-if (a real masked retrain, priority USER).
   Printed: how long the what-if waited to start, against the duration of one calibration retrain
   (target: at most one retrain).

``/proc/loadavg`` is printed before and after each part: on a shared machine every figure moves with
the load. Figures are seconds of wall time on this machine; absolute times hold only for its class.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kgbias_app.serve import chromium, free_port, wait_until_healthy  # noqa: E402

CONTENT = "Persons with a gender"  # the Overview's first figure line: the dashboard is open


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0]


def _start(env: dict[str, str], port: int) -> subprocess.Popen:
    """``bash scripts/start.sh`` as a person runs it (setup included), on the loopback, in its own process group."""
    return subprocess.Popen(
        ["bash", "scripts/start.sh", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def _content_after(driver, url: str, *, timeout: float) -> float:
    """Load ``url`` in a new tab; seconds until the Overview's content is in the page (no refresh)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.switch_to.new_window("tab")
    started = time.monotonic()
    driver.get(url)
    WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, '[data-testid="stMain"]'), CONTENT))
    return time.monotonic() - started


def start_and_open(env: dict[str, str], driver, *, timeout: float) -> tuple[subprocess.Popen, str, dict[str, float]]:
    """Launch start.sh, load the page once the server answers: (server, url, {healthy, content} seconds)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    launched = time.monotonic()
    server = _start(env, port)
    wait_until_healthy(url, server, timeout=timeout)
    healthy = time.monotonic() - launched
    content = _content_after(driver, url, timeout=timeout)
    return server, url, {"healthy": healthy, "content": healthy + content, "content_from_request": content}


def queue_latency(store: Path, *, threads: int) -> dict[str, float]:
    """Calibration running (background); after its first retrain a person's what-if is submitted (USER)."""
    import torch

    from kgbias_core.embeddings.store import load_model
    from kgbias_core.jobs import JobRegistry, Priority
    from kgbias_core.tasks import calibration_task, whatif_task
    from kgbias_core.whatif.edits import remove_edit

    model_dir = store / "synthetic-transe"
    model = load_model(model_dir)
    registry = JobRegistry(torch_threads=threads)
    retrain_ends: list[float] = []
    calibration = calibration_task(model_dir)

    def background(progress):
        original = progress.update

        def update(**kwargs):
            if kwargs.get("step"):
                retrain_ends.append(time.monotonic())
            original(**kwargs)

        progress.update = update  # records when each calibration retrain ends (its progress step)
        return calibration.run(progress)

    cal_id = registry.submit("calibration", background, owner="bench", priority=Priority.BACKGROUND)
    cal_started = time.monotonic()
    while len(retrain_ends) < 1:
        time.sleep(0.05)
    one_retrain = retrain_ends[0] - cal_started  # the first retrain (the base's influence is computed first)
    edit = remove_edit(model, _an_occupation(model), torch.arange(10), strategy="Random-REMOVE")
    whatif = whatif_task(base=model_dir, edit=edit, out=store / "bench-whatif")
    started: list[float] = []

    def person(progress):
        started.append(time.monotonic())
        return whatif.run(progress)

    submitted = time.monotonic()
    job = registry.submit("what-if", person, owner="person", priority=Priority.USER)
    registry.wait(job, timeout=600)
    waited = started[0] - submitted
    between = [b - a for a, b in zip(retrain_ends, retrain_ends[1:], strict=False)]
    registry.cancel(cal_id)
    registry.shutdown(timeout=60)
    return {"what-if waited to start": waited, "one calibration retrain (first)": one_retrain,
            "calibration retrains seen": len(retrain_ends), "median gap between retrains": sorted(between)[
                len(between) // 2] if between else float("nan")}


def _an_occupation(model) -> str:
    from kgbias_core.analysis import ModelAnalysis

    return str(ModelAnalysis(model).groups.labels[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="CSV of the figures (what, seconds, target, load)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="kgbias-first-start-") as tmp:
        tmp = Path(tmp)
        store, data = tmp / "store", tmp / "no-graphs"
        data.mkdir()
        env = os.environ | {"KGBIAS_MODEL_DIR": str(store), "KGBIAS_DATA_DIR": str(data)}
        with chromium(tmp / "chromium") as driver:
            before = loadavg()
            server, _, fresh = start_and_open(env, driver, timeout=args.timeout)
            _stop(server)
            print(f"fresh start: server answered after {fresh['healthy']:.1f} s, content after "
                  f"{fresh['content']:.1f} s (load {before} -> {loadavg()})")
            rows += [("fresh: start.sh to server answering", f"{fresh['healthy']:.1f}", "", before),
                     ("fresh: start.sh to dashboard content, no refresh", f"{fresh['content']:.1f}", "<= 60", before)]

            before = loadavg()
            t0 = time.monotonic()
            subprocess.run([sys.executable, "-m", "kgbias_core", "prepare", "--dataset", "synthetic"], cwd=REPO,
                           env=env, check=True, stdout=subprocess.DEVNULL)
            prepared = time.monotonic() - t0
            print(f"kgbias prepare --dataset synthetic: {prepared:.0f} s (load {before} -> {loadavg()})")
            rows.append(("kgbias prepare --dataset synthetic (model already trained)", f"{prepared:.0f}", "", before))

            before = loadavg()
            server, url, warm = start_and_open(env, driver, timeout=args.timeout)
            again = _content_after(driver, url, timeout=args.timeout)
            _stop(server)
            print(f"warm store: server after {warm['healthy']:.1f} s, first content {warm['content']:.1f} s from the "
                  f"launch, {warm['content_from_request']:.1f} s from the page's request; a second session "
                  f"{again:.1f} s (load {before} -> {loadavg()})")
            rows += [("warm: start.sh to server answering", f"{warm['healthy']:.1f}", "", before),
                     ("warm: start.sh to first content", f"{warm['content']:.1f}", "", before),
                     ("warm: page request to first content", f"{warm['content_from_request']:.1f}", "<= 5", before),
                     ("warm: a second session, request to content", f"{again:.1f}", "<= 5", before)]

        before = loadavg()
        queue = queue_latency(store, threads=args.threads)
        print("queue:", ", ".join(f"{k} {v:.1f}" for k, v in queue.items()), f"(load {before} -> {loadavg()})")
        rows += [("queue: a person's what-if waited to start, behind a running calibration",
                  f"{queue['what-if waited to start']:.1f}", "<= one retrain", before),
                 ("queue: one calibration retrain", f"{queue['one calibration retrain (first)']:.1f}", "", before)]
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["what", "seconds", "target", "load average before"])
            writer.writerows(rows)


if __name__ == "__main__":
    main()
