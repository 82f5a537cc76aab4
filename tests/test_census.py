"""Census validation: loading, the shipped pairing, shares and correlations (Du §4.1)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from kgbias_core.data.census import (
    CENSUS_MEASURES,
    census_correlations,
    census_validation,
    load_census,
    load_pairing,
    paired_shares,
)
from kgbias_core.errors import CENSUS_UNKNOWN_YEAR, DataError, MeasureError

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / os.environ.get("KGBIAS_DATA_DIR", "../shared/data")).resolve()
CENSUS = DATA / "census" / "occupation_gender_ipums.csv"
PROFESSION = "/people/person/profession"
HEADER = "Census year,Occupation,Total Weight,Female,Male\n"


@pytest.fixture(scope="module")
def census_2015() -> pd.DataFrame:
    return load_census(CENSUS)


def test_load_census_latest_year(census_2015: pd.DataFrame) -> None:
    assert list(census_2015.columns) == ["year", "occupation", "total_weight", "p_female", "p_male"]
    assert set(census_2015["year"]) == {2015}
    assert len(census_2015) == 103
    physician = census_2015.set_index("occupation").loc["physician"]
    assert physician["total_weight"] == 979939.0
    assert physician["p_male"] == pytest.approx(0.6506496832966133)
    assert np.allclose(census_2015["p_female"] + census_2015["p_male"], 1.0)


def test_load_census_chosen_year() -> None:
    census = load_census(CENSUS, year=1950)
    assert set(census["year"]) == {1950}
    assert census.set_index("occupation").loc["author", "total_weight"] == 15747.0


def test_unknown_year_lists_the_years() -> None:
    with pytest.raises(DataError) as info:
        load_census(CENSUS, year=2016)
    years = sorted(pd.read_csv(CENSUS)["Census year"].unique())
    assert str(info.value) == CENSUS_UNKNOWN_YEAR.format(path=CENSUS, year=2016, years=", ".join(str(y) for y in years))
    assert "available years: 1850, 1860," in str(info.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("2015,judge,10.0,0.5\n", "line 3: expected 5 comma-separated columns, found 4"),
        ("20x5,judge,10.0,0.5,0.5\n", "line 3: Census year must be an integer, found '20x5'"),
        ("2015,judge,10.0,1.5,-0.5\n", "line 3: Female must be a number in [0.0, 1.0], found '1.5'"),
        ("2015,judge,lots,0.5,0.5\n", "line 3: Total Weight must be a number in [0.0, inf], found 'lots'"),
        ("2015,nurse,10.0,0.5,0.5\n", "line 3: occupation 'nurse' appears twice in year 2015"),
    ],
)
def test_malformed_census_names_file_and_line(tmp_path: Path, body: str, expected: str) -> None:
    path = tmp_path / "census.csv"
    path.write_text(HEADER + "2015,nurse,10.0,0.9,0.1\n" + body)
    with pytest.raises(DataError) as info:
        load_census(path)
    assert str(info.value) == f"{path}, {expected}"


def test_census_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "census.csv"
    path.write_text("Census year,Occupation,Female,Male\n2015,nurse,0.9,0.1\n")
    with pytest.raises(DataError, match=r"missing columns \['Total Weight'\]"):
        load_census(path)


def test_bad_pairing_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "pairing.csv"
    path.write_text("kg_occupation,kg_name,census_occupation,note\n/m/1,A,author,\n/m/2,B,,\n")
    with pytest.raises(DataError) as info:
        load_pairing(path)
    assert str(info.value) == (
        f"{path}, line 3: census_occupation is empty: say in note why the occupation is left unpaired"
    )
    path.write_text("kg_occupation,name,census_occupation,note\n")
    with pytest.raises(DataError, match="expected columns"):
        load_pairing(path)


def _profession_tails() -> set[str]:
    train = pd.read_csv(DATA / "fb15k237" / "train.txt", sep="\t", header=None, names=["h", "r", "t"], dtype=str)
    return set(train.loc[train["r"] == PROFESSION, "t"])


def _entity_names() -> dict[str, str]:
    names = pd.read_csv(
        DATA / "fb15k237" / "entity_names.tsv",
        sep="\t",
        header=None,
        names=["mid", "name"],
        dtype=str,
        quoting=3,  # names hold quotes
        keep_default_na=False,
    )
    return dict(zip(names["mid"], names["name"].str.removesuffix("-GB"), strict=True))


def test_shipped_pairing_covers_what_it_claims(census_2015: pd.DataFrame) -> None:
    pairing = load_pairing()
    professions = _profession_tails()
    names = _entity_names()
    # Every row is a real FB15k-237 profession with its Freebase name ...
    assert set(pairing["kg_occupation"]) <= professions
    assert all(names[mid] == name for mid, name in zip(pairing["kg_occupation"], pairing["kg_name"], strict=True))
    # ... every profession of the training graph is listed (paired, or unpaired with a reason) ...
    assert set(pairing["kg_occupation"]) == professions
    # ... and every census class exists in the latest year, or the row says why not.
    known = set(census_2015["occupation"])
    for row in pairing.itertuples():
        assert row.census_occupation in known or (row.census_occupation == "" and row.note), row
    # The railway conductor must not stand in for music conductors.
    assert "conductor" not in set(pairing["census_occupation"])


def test_paired_shares_weighted_mean() -> None:
    census = pd.DataFrame(
        {
            "year": [2015] * 3,
            "occupation": ["author", "musician", "nurse"],
            "total_weight": [100.0, 300.0, 50.0],
            "p_female": [0.4, 0.8, 0.9],
            "p_male": [0.6, 0.2, 0.1],
        }
    )
    pairing = pd.DataFrame(
        {
            "kg_occupation": ["/m/song", "/m/song", "/m/writer", "/m/old", "/m/none"],
            "kg_name": ["Songwriter", "Songwriter", "Writer", "Smith", "Activism"],
            "census_occupation": ["musician", "author", "author", "blacksmith", ""],
            "note": ["", "", "", "", "not an occupation"],
        }
    )
    shares = paired_shares(census, pairing)
    assert list(shares.index) == ["/m/song", "/m/writer", "/m/old", "/m/none"]
    song = shares.loc["/m/song"]
    assert song["p_male"] == pytest.approx((300 * 0.2 + 100 * 0.6) / 400)
    assert song["log_prop"] == pytest.approx(math.log(0.3 / 0.7))
    assert song["census_classes"] == ("musician", "author")
    assert song["total_weight"] == 400.0
    assert shares.loc["/m/writer", "p_male"] == pytest.approx(0.6)
    assert shares.loc["/m/old", "missing_classes"] == ("blacksmith",)  # reported, not dropped
    assert math.isnan(shares.loc["/m/old", "p_male"])
    assert shares.loc["/m/none", "census_classes"] == ()
    with pytest.raises(DataError, match="census of one year"):
        paired_shares(pd.concat([census, census.assign(year=2014)]), pairing)


def _pearson_by_hand(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sx = math.sqrt(sum((a - mx) ** 2 for a in x))
    sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return cov / (sx * sy)


def test_correlations_match_hand_computation() -> None:
    labels = ["a", "b", "c", "d", "e"]
    shares = pd.DataFrame(
        {"kg_name": ["A", "B", "C", "D", "E"], "log_prop": [-1.0, -0.2, 0.3, 0.9, 2.0]},
        index=pd.Index(labels, name="kg_occupation"),
    )
    measures = pd.DataFrame(
        {
            "B_gr": [-0.5, 0.1, 0.0, 0.7, 1.1],
            "B_in": [0.2, np.nan, -0.1, 0.4, 0.9],  # NaN skipped: n = 4
            "tiny": [np.nan, np.nan, np.nan, 1.0, 2.0],  # n = 2 < 3: no r
            "flat": [1.0, 1.0, 1.0, 1.0, 1.0],  # constant: no r
        },
        index=labels,
    )
    table = census_correlations(measures, shares).set_index("measure")
    assert list(table.columns) == ["r", "p_value", "n"]
    lp = shares["log_prop"].tolist()
    assert table.loc["B_gr", "r"] == pytest.approx(_pearson_by_hand(measures["B_gr"].tolist(), lp))
    assert table.loc["B_gr", "n"] == 5
    kept = [0, 2, 3, 4]
    expected = _pearson_by_hand([measures["B_in"].iloc[i] for i in kept], [lp[i] for i in kept])
    assert table.loc["B_in", "r"] == pytest.approx(expected)
    assert table.loc["B_in", "n"] == 4
    # two-sided p-value of r with n - 2 degrees of freedom
    r = table.loc["B_gr", "r"]
    t = r * math.sqrt(3 / (1 - r * r))
    assert table.loc["B_gr", "p_value"] == pytest.approx(2 * stats.t.sf(abs(t), df=3))
    assert table.loc["tiny", "n"] == 2 and math.isnan(table.loc["tiny", "r"])
    assert math.isnan(table.loc["flat", "r"]) and table.loc["flat", "n"] == 5
    # Labels may also be names.
    by_name = census_correlations(measures.set_axis(list("ABCDE")), shares, key="kg_name")
    assert by_name.set_index("measure").loc["B_gr", "r"] == pytest.approx(r)


def test_correlations_on_real_shares(census_2015: pd.DataFrame) -> None:
    shares = paired_shares(census_2015, load_pairing())
    measures = pd.DataFrame({"census_itself": shares["log_prop"]})
    table = census_correlations(measures, shares)
    assert table.loc[0, "r"] == pytest.approx(1.0)
    assert table.loc[0, "n"] == shares["log_prop"].notna().sum()


def test_census_validation_correlates_each_measure_over_the_paired_occupations(census_2015: pd.DataFrame) -> None:
    shares = paired_shares(census_2015, load_pairing())
    finite = shares[np.isfinite(shares["log_prop"])]
    paired = finite.drop_duplicates("log_prop").index[:8].tolist()  # eight distinct census shares
    rng = np.random.default_rng(0)
    measures = pd.DataFrame({"occupation": [*paired, "/m/not-paired"], "n_male": [3] * 9, "n_female": [2] * 9})
    for measure in CENSUS_MEASURES:
        measures[measure] = rng.normal(size=9)
    measures.loc[0, "n_female"] = 0  # left out below min_per_gender = 1
    correlations, joined = census_validation(measures, census_path=CENSUS)
    assert list(correlations["measure"]) == list(CENSUS_MEASURES)
    assert sorted(joined["occupation"]) == sorted(paired[1:])  # the unpaired one has no census share
    lp = shares.loc[paired[1:], "log_prop"].tolist()
    for row in correlations.itertuples():
        values = measures.set_index("occupation").loc[paired[1:], row.measure].tolist()
        assert row.n == 7 and row.r == pytest.approx(_pearson_by_hand(values, lp))
    assert joined.set_index("occupation").loc[paired[1], "p_male"] == shares.loc[paired[1], "p_male"]


def test_fb13_pairing_covers_every_profession_with_five_of_each_gender(census_2015: pd.DataFrame) -> None:
    """FB13's pairing: real slugs with their display names, every profession with >= 5 women and >= 5 men."""
    from collections import Counter

    from kgbias_core.data.download import slug_display_name

    pairing = load_pairing(dataset="fb13")
    train = pd.read_csv(DATA / "fb13" / "train.txt", sep="\t", header=None, names=["h", "r", "t"], dtype=str,
                        quoting=3, keep_default_na=False)
    genders = train[train["r"] == "gender"].groupby("h")["t"].agg(set)
    binary = {person: next(iter(values)) for person, values in genders.items() if len(values) == 1}
    jobs = train[train["r"] == "profession"].drop_duplicates(["h", "t"])
    counts = Counter((t, binary[h]) for h, t in zip(jobs["h"], jobs["t"], strict=True) if h in binary)
    both = {p for (p, _) in counts if counts[(p, "male")] >= 5 and counts[(p, "female")] >= 5}
    assert len(both) == 72 and set(pairing["kg_occupation"]) == both
    assert all(slug_display_name(s) == n for s, n in zip(pairing["kg_occupation"], pairing["kg_name"], strict=True))
    known = set(census_2015["occupation"])
    exact = {row.kg_occupation for row in pairing.itertuples() if row.kg_occupation == row.census_occupation}
    assert len(exact) == 18  # PROVENANCE.md: 18 exact name matches with >= 5 of each gender
    for row in pairing.itertuples():
        assert row.census_occupation in known or (row.census_occupation == "" and row.note), row


def test_a_graph_without_a_pairing_is_one_clear_error() -> None:
    with pytest.raises(MeasureError, match="kgbias ships pairings for FB15k-237 and FB13 only"):
        load_pairing(dataset="my-wikidata")
