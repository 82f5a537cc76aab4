"""The findings of a seed family's member (issue 24): every claim read off the model with its seed band over the
family, a direction stated only where the interval and the band both exclude no effect; on the command line and
the Findings page."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.embeddings.results import save_result
from kgbias_core.embeddings.store import load_model
from kgbias_core.findings import (
    CONTRADICTS,
    INCONCLUSIVE,
    NOT_MEASURED,
    READ_OFF_CLAIMS,
    REPRODUCES,
    family_findings,
    finding_text,
    findings_frame,
    model_findings,
    side_by_side,
)
from kgbias_core.jobs import Progress
from kgbias_core.tables import measures_table
from tests.conftest import FAMILY_MEMBERS, page, texts, use_store


def _finding(claim: str, key: str, value: float, low: float = math.nan, high: float = math.nan,
             verdict: str = REPRODUCES) -> dict:
    return {"claim": claim, "key": key, "statement": f"claim {claim}", "paper": "positive", "scope": "9 occupations",
            "value": value, "low": low, "high": high, "p_value": math.nan, "n": 9, "verdict": verdict,
            "detail": "bootstrap"}


def _hand_made() -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """One model's findings and its two siblings' (hand-made figures): claim 1's band crosses 0, claim 2's does
    not, claim 3a's share crosses one half, claim 4 is a retrain (no band)."""
    own = pd.DataFrame([_finding("1", "r_bgr_log_ratio", 0.3, 0.1, 0.5),
                        _finding("2", "r_bgr_weighted", 0.3, 0.1, 0.5),
                        _finding("3a", "occupation_share_positive", 0.7, 0.6, 0.8),
                        _finding("4", "if_minus_random", 0.2, 0.1, 0.3)])
    siblings = [pd.DataFrame([_finding("1", "r_bgr_log_ratio", -0.05), _finding("2", "r_bgr_weighted", 0.2),
                              _finding("3a", "occupation_share_positive", 0.45),
                              _finding("4", "if_minus_random", math.nan, verdict=NOT_MEASURED)]),
                pd.DataFrame([_finding("1", "r_bgr_log_ratio", 0.4), _finding("2", "r_bgr_weighted", 0.25),
                              _finding("3a", "occupation_share_positive", 0.8),
                              _finding("4", "if_minus_random", math.nan, verdict=NOT_MEASURED)])]
    return own, siblings


def test_a_direction_is_stated_only_where_interval_and_seed_band_exclude_no_effect() -> None:
    own, siblings = _hand_made()
    found = family_findings(own, [own, *siblings])
    claim1, claim2, share, retrain = (found[found["key"] == k].iloc[0] for k in (
        "r_bgr_log_ratio", "r_bgr_weighted", "occupation_share_positive", "if_minus_random"))
    assert (claim1["seed_min"], claim1["seed_max"], claim1["n_seeds"]) == (-0.05, 0.4, 3)
    assert claim1["verdict"] == INCONCLUSIVE and "across 0: no direction stated" in claim1["detail"]
    assert (claim2["seed_min"], claim2["seed_max"], claim2["verdict"]) == (0.2, 0.3, REPRODUCES)
    assert share["verdict"] == INCONCLUSIVE and "from 45% to 80%, across one half" in share["detail"]
    assert retrain["verdict"] == REPRODUCES and retrain["n_seeds"] == 0 and math.isnan(retrain["seed_min"])
    # the cell the page shows: the band before the verdict
    assert finding_text(claim1) == "+0.300 [+0.100, +0.500]; 3 seeds -0.050 to +0.400, across 0: inconclusive"
    assert finding_text(claim2).endswith("; 3 seeds +0.200 to +0.300: reproduces")
    # without a family nothing changes: the model's own verdicts and no band
    alone = family_findings(own, [own]).set_index("key")
    assert list(alone["verdict"]) == list(own["verdict"]) and (alone["n_seeds"] == 1).sum() == 3


@pytest.fixture(scope="module")
def family_with_findings(family_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the family store whose first member has its findings computed (no census)."""
    store = tmp_path_factory.mktemp("family-findings") / "store"
    shutil.copytree(family_store, store)
    tasks.findings_task(store / "fam").run(Progress())
    return store


def test_a_members_findings_carry_the_band_of_its_siblings_findings(family_with_findings: Path) -> None:
    path = family_with_findings / "fam"
    frame = tasks.saved_findings(path)  # cached under inputs that name the family
    assert frame is not None and tasks.findings_inputs(path)["family"] == list(FAMILY_MEMBERS)
    # Independently: every member's claims read off it, from its own measures.
    members = []
    for name in FAMILY_MEMBERS:
        analysis = ModelAnalysis(load_model(family_with_findings / name))
        members.append(findings_frame(model_findings(analysis, measures_table(analysis))).set_index(["claim", "key"]))
    read_off = frame[frame["claim"].isin(READ_OFF_CLAIMS) & frame["value"].notna()]
    assert len(read_off) >= 5
    for row in read_off.itertuples():
        values = [float(m.loc[(row.claim, row.key), "value"]) for m in members]
        values = [v for v in values if not math.isnan(v)]
        assert row.n_seeds == len(values)
        assert row.seed_min == pytest.approx(min(values), abs=1e-9)
        assert row.seed_max == pytest.approx(max(values), abs=1e-9)
        reference = 0.5 if row.key.startswith(("occupation_share", "women_in", "men_in")) else 0.0
        if row.verdict in (REPRODUCES, CONTRADICTS):  # a direction: the band excludes no effect too
            assert not row.seed_min <= reference <= row.seed_max
    assert (frame.loc[frame["claim"].isin(["4", "5"]), "n_seeds"] == 0).all()


def test_kgbias_findings_of_a_member_prints_and_writes_the_seed_band(family_with_findings: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "findings.json"
    assert main(["findings", "--model", str(family_with_findings / "fam"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fam is one of 3 seeds of family fam" in printed and " seeds [" in printed
    rows = json.loads(out.read_text())["findings"]
    claim1 = next(r for r in rows if r["key"] == "r_bgr_log_ratio")
    assert claim1["n_seeds"] == 3 and claim1["seed_min"] <= claim1["value"] <= claim1["seed_max"]


def test_kgbias_findings_reads_back_a_table_of_the_same_inputs_and_shows_what_measuring_shows(
        family_with_findings: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second ``kgbias findings`` with the model and its inputs unchanged reads the table the first made instead
    of measuring the member and its siblings again; it prints and writes what a fresh measurement prints and
    writes."""
    store = Path(shutil.copytree(family_with_findings, tmp_path / "store"))
    no_census = tmp_path / "no-data"  # whatever KGBIAS_DATA_DIR says (an earlier test may have used a census)
    no_census.mkdir()
    command = ["findings", "--model", str(store / "fam"), "--data-dir", str(no_census), "--out"]
    assert main([*command, str(tmp_path / "first.json")]) == 0  # read back or measured, by what ran before
    capsys.readouterr()
    assert main([*command, str(tmp_path / "read.json")]) == 0
    read = capsys.readouterr()
    assert tasks.FINDINGS_CACHED in read.err and "the seed band of 3 seeds" in read.err
    (store / "fam" / "results" / f"{tasks.FINDINGS}.csv").unlink()
    assert main([*command, str(tmp_path / "measured.json")]) == 0
    measured = capsys.readouterr()
    assert tasks.FINDINGS_CACHED not in measured.err and "bootstrap interval" in measured.err
    assert measured.out.replace("measured.json", "read.json") == read.out
    rows = [pd.DataFrame(json.loads((tmp_path / f"{name}.json").read_text())["findings"]) for name in ("read",
                                                                                                      "measured")]
    pd.testing.assert_frame_equal(rows[0], rows[1])


def test_the_findings_page_of_a_member_says_no_direction_where_the_seeds_disagree(
    family_with_findings: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The page shows a member's cached findings with their bands; a claim whose interval excludes 0 and whose
    seed band crosses it reads inconclusive (hand-made figures, so the case is certain to be there)."""
    store = tmp_path / "store"
    shutil.copytree(family_with_findings, store)
    own, siblings = _hand_made()
    save_result(store / "fam", tasks.FINDINGS, family_findings(own, [own, *siblings]),
                params=tasks.findings_inputs(store / "fam"))
    use_store(store, monkeypatch, tmp_path)
    app = page("findings").run()
    assert not app.exception
    assert "fam is one of 3 seeds of family **fam**" in texts(app.info)
    shown = app.table[0].value.reset_index()
    cells = dict(zip(shown["Claim"], shown["fam"], strict=False))
    assert cells["1"] == "+0.300 [+0.100, +0.500]; 3 seeds -0.050 to +0.400, across 0: inconclusive"
    assert cells["2"].endswith("3 seeds +0.200 to +0.300: reproduces")
    assert cells["3a"].endswith("across one half: inconclusive")
    assert list(side_by_side({"fam": family_findings(own, [own, *siblings])})["fam"]) == list(shown["fam"])
