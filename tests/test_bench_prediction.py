"""bench/bench_prediction.py (issue 25's cost bench) on the graph of the tests: it times each prediction, counts its
|H| products and the seconds it spent building |H|: once a model, by its first prediction, on squared L2 (the
analysis keeps its sparse matrix) and on pseudo-Huber (its curvature per term and coordinate, kept since
2026-12-07)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgbias_core.embeddings.store import save_model

from .conftest import REPO, small_distance_model

LINE = re.compile(r"prediction (?P<s>[\d.]+) s, (?P<products>\d+) \|H\| products, \|H\| built in (?P<built>[\d.]+) s")


@pytest.mark.parametrize("distance", ["squared_l2", "pseudo_huber"])
def test_the_bench_counts_products_and_the_seconds_building_h(distance: str, tmp_path: Path) -> None:
    save_model(small_distance_model(distance, negatives=3), tmp_path / "store")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "bench_prediction.py"), "--model",
                           str(tmp_path / "store" / "small"), "--occupations", "2", "--k", "5"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [m.groupdict() for m in LINE.finditer(done.stdout)]
    assert len(rows) == 2, done.stdout
    # the prediction's seconds are printed to 2 decimals, the build's to 4: a build is part of its prediction
    assert all(int(r["products"]) > 0 and float(r["built"]) <= float(r["s"]) + 0.005 for r in rows)
    first, second = (float(r["built"]) for r in rows)
    assert first > 0
    assert second == 0  # the analysis's |H|, built by the first prediction


def test_the_bench_times_the_hinge_temperatures_prediction_apart_from_building_h_t(tmp_path: Path) -> None:
    """``--temperature``: H_T is built once before the predictions (its line), each prediction then counts H_T
    products and builds nothing, and its estimator is the hinge's at that T."""
    save_model(small_distance_model("squared_l2", negatives=1), tmp_path / "store")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "bench_prediction.py"), "--model",
                           str(tmp_path / "store" / "small"), "--occupations", "2", "--k", "5",
                           "--temperature", "0.9"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"H_T at T = 0.9 margins built in [\d.]+ s \(\|H\| in [\d.]+ s of it\)", done.stdout)
    rows = re.findall(r"prediction [\d.]+ s, (\d+) H_T products, \|H\| built in ([\d.]+) s: .*"
                      r"hinge's curvature at T = 0.90 margins", done.stdout)
    assert len(rows) == 2 and all(int(n) > 0 and float(b) == 0 for n, b in rows), done.stdout


def test_the_bench_times_a_refined_prediction_as_an_occupations_first(eight_model, tmp_path: Path) -> None:
    """``--refined --refined-first``: each occupation begins with a refined prediction that solves its own step
    (|H| products counted) before anything else of that occupation; only the process's first pays the import of
    torch._dynamo (an optimizer's first step), and says so; the refined predictions after it are printed too."""
    save_model(eight_model, tmp_path / "store")  # a model the refined prediction is offered on
    done = subprocess.run([sys.executable, str(REPO / "bench" / "bench_prediction.py"), "--model",
                           str(tmp_path / "store" / eight_model.name), "--occupations", "2", "--k", "6", "--refined",
                           "--refined-first"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    firsts = re.findall(r"refined first, k=3: [\d.]+ s \(its own step, (\d+) \|H\| products, \|H\| built in "
                        r"[\d.]+ s, its own unedited half(, the import of torch._dynamo)?\): .*then the rows B_gr "
                        r"reads refitted", done.stdout)
    assert len(firsts) == 2, done.stdout
    assert all(int(products) > 0 for products, _ in firsts)
    assert [bool(imported) for _, imported in firsts] == [True, False]
    assert len(re.findall(r"refined(, k=12 next)?: [\d.]+ s \(", done.stdout)) == 4, done.stdout
