"""Validation against the census (Du et al. 2022, §4.1; METHODS §10).

Each KG occupation is paired by hand with census occupation classes (``census_pairing.csv``,
many-to-many); its census male share ``p`` gives ``log_prop = log(p / (1 - p))``, and each bias
measure is correlated (Pearson) with ``log_prop`` across occupations. Positive measures mean
male-leaning, as does a positive ``log_prop``, so a valid measure has r > 0.

The census file (Garg et al. 2018, IPUMS, OCC1950-derived classes) names some classes twice
with identical rows (``doctor``/``physician``/``surgeon``, ``lawyer``/``judge``,
``manager``/``proprietor``, ``professor``/``instructor``, ...): the pairing uses one name each.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from kgbias_core.data.text import read_text
from kgbias_core.errors import (
    CENSUS_DUPLICATE,
    CENSUS_DUPLICATE_KEY,
    CENSUS_EMPTY,
    CENSUS_MALFORMED_ROW,
    CENSUS_MISSING_COLUMNS,
    CENSUS_NO_KEY,
    CENSUS_NOT_PAIRED,
    CENSUS_SEVERAL_YEARS,
    CENSUS_UNKNOWN_YEAR,
    PAIRING_BAD_COLUMNS,
    PAIRING_EMPTY,
    PAIRING_MALFORMED_ROW,
    DataError,
    MeasureError,
)

#: Columns of the census CSV, in the file's spelling.
CENSUS_COLUMNS = ("Census year", "Occupation", "Total Weight", "Female", "Male")
#: Columns of the pairing CSV.
PAIRING_COLUMNS = ("kg_occupation", "kg_name", "census_occupation", "note")
#: The pairing shipped with the package.
#: The hand-made pairing shipped for each named graph (``kg_occupation`` is that graph's entity label).
PAIRING_RESOURCES = {"fb15k237": "census_pairing_fb15k237.csv", "fb13": "census_pairing_fb13.csv"}
#: The measures correlated with the census (Du Table 2, plus B_wo and Fisher's b_p).
CENSUS_MEASURES = (
    "group_bias", "individual_bias_vanilla", "individual_bias_weighted", "fisher_individual_vanilla",
    "fisher_individual_weighted", "projection_bias", "fisher_bp",
)
#: Where the census file lies under the data directory.
CENSUS_FILE = Path("census") / "occupation_gender_ipums.csv"


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and (line number, fields) of each non-empty row; line numbers count from 1."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        header = next(reader, None) or []
        # reader.line_num is the physical line the row ended on: right for the one-line rows here.
        rows = [(reader.line_num, row) for row in reader if any(field.strip() for field in row)]
    except csv.Error as exc:  # e.g. a NUL byte, or a quote left open at the end of the file
        raise DataError(CENSUS_MALFORMED_ROW.format(path=path, line=reader.line_num, problem=exc)) from None
    return [name.strip() for name in header], rows


def _number(text: str, *, what: str, path: Path, line: int, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (low <= value <= high):  # also rejects NaN
        problem = f"{what} must be a number in [{low}, {high}], found {text!r}"
        raise DataError(CENSUS_MALFORMED_ROW.format(path=path, line=line, problem=problem))
    return value


def _read_census(path: Path) -> pd.DataFrame:
    """Every row of the census file, checked: columns as :func:`load_census`'s, all years."""
    header, rows = _read_rows(path)
    missing = [name for name in CENSUS_COLUMNS if name not in header]
    if missing:
        raise DataError(CENSUS_MISSING_COLUMNS.format(path=path, missing=missing, expected=list(CENSUS_COLUMNS)))
    if not rows:
        raise DataError(CENSUS_EMPTY.format(path=path))
    col = {name: header.index(name) for name in CENSUS_COLUMNS}
    records: list[tuple[int, str, float, float, float]] = []
    seen: set[tuple[int, str]] = set()
    for line, row in rows:
        if len(row) != len(header):
            problem = f"expected {len(header)} comma-separated columns, found {len(row)}"
            raise DataError(CENSUS_MALFORMED_ROW.format(path=path, line=line, problem=problem))
        year_text, occupation = row[col["Census year"]].strip(), row[col["Occupation"]].strip()
        if not year_text.isdigit():
            problem = f"Census year must be an integer, found {year_text!r}"
            raise DataError(CENSUS_MALFORMED_ROW.format(path=path, line=line, problem=problem))
        if not occupation:
            raise DataError(CENSUS_MALFORMED_ROW.format(path=path, line=line, problem="Occupation is empty"))
        row_year = int(year_text)
        if (row_year, occupation) in seen:
            raise DataError(CENSUS_DUPLICATE.format(path=path, line=line, occupation=occupation, year=row_year))
        seen.add((row_year, occupation))
        weight = _number(row[col["Total Weight"]], what="Total Weight", path=path, line=line, low=0.0, high=math.inf)
        female = _number(row[col["Female"]], what="Female", path=path, line=line, low=0.0, high=1.0)
        male = _number(row[col["Male"]], what="Male", path=path, line=line, low=0.0, high=1.0)
        records.append((row_year, occupation, weight, female, male))

    return pd.DataFrame.from_records(records, columns=["year", "occupation", "total_weight", "p_female", "p_male"])


def load_census(path: Path, *, year: int | None = None) -> pd.DataFrame:
    """Male and female shares per census occupation for one year (the latest by default).

    Returns columns ``year`` (int), ``occupation`` (str), ``total_weight`` (float, the number of
    workers the IPUMS sample weights stand for), ``p_female`` and ``p_male`` (shares in [0, 1]),
    one row per occupation. Raises :class:`DataError` naming the file and line of a malformed
    row (or of a byte that is not UTF-8), or listing the available years for an unknown ``year``.
    """
    path = Path(path)
    table = _read_census(path)
    years = sorted(table["year"].unique().tolist())
    chosen = years[-1] if year is None else year
    if chosen not in years:
        raise DataError(CENSUS_UNKNOWN_YEAR.format(path=path, year=year, years=", ".join(map(str, years))))
    one_year = table[table["year"] == chosen].sort_values("occupation")
    return one_year.reset_index(drop=True)


def census_file(data_dir: Path) -> Path:
    return data_dir / CENSUS_FILE


def census_years(path: Path) -> list[int]:
    """The census years in the file, newest first (the file checked as by :func:`load_census`)."""
    return sorted(_read_census(Path(path))["year"].unique().tolist(), reverse=True)


def load_pairing(path: Path | None = None, *, dataset: str = "fb15k237") -> pd.DataFrame:
    """The KG-occupation ↔ census-occupation pairing (the one shipped for ``dataset`` when ``path`` is None).

    Columns ``kg_occupation`` (the graph's entity label: a Freebase MID, an FB13 slug), ``kg_name``,
    ``census_occupation`` and ``note``, all
    str. An empty ``census_occupation`` marks a profession left unpaired on purpose; its note must
    say why. Raises :class:`DataError` naming the line of a bad row.
    """
    if path is None:
        if dataset not in PAIRING_RESOURCES:
            raise MeasureError(CENSUS_NOT_PAIRED.format(model=dataset, dataset=dataset))
        with resources.as_file(resources.files("kgbias_core.data") / PAIRING_RESOURCES[dataset]) as shipped:
            return load_pairing(shipped)
    path = Path(path)
    header, rows = _read_rows(path)
    if sorted(header) != sorted(PAIRING_COLUMNS):
        raise DataError(PAIRING_BAD_COLUMNS.format(path=path, expected=list(PAIRING_COLUMNS), found=header))
    if not rows:
        raise DataError(PAIRING_EMPTY.format(path=path))
    records: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for line, row in rows:
        if len(row) != len(header):
            problem = f"expected {len(header)} comma-separated columns, found {len(row)}"
            raise DataError(PAIRING_MALFORMED_ROW.format(path=path, line=line, problem=problem))
        record = {name: field.strip() for name, field in zip(header, row, strict=True)}
        problem = None
        if not record["kg_occupation"]:
            problem = "kg_occupation is empty"
        elif not record["census_occupation"] and not record["note"]:
            problem = "census_occupation is empty: say in note why the occupation is left unpaired"
        elif (record["kg_occupation"], record["census_occupation"]) in seen:
            problem = f"the pair {record['kg_occupation']} / {record['census_occupation']!r} appears twice"
        if problem:
            raise DataError(PAIRING_MALFORMED_ROW.format(path=path, line=line, problem=problem))
        seen.add((record["kg_occupation"], record["census_occupation"]))
        records.append(record)
    return pd.DataFrame.from_records(records, columns=list(PAIRING_COLUMNS))


def paired_shares(census: pd.DataFrame, pairing: pd.DataFrame) -> pd.DataFrame:
    """Census male share and log-proportion of each KG occupation (Du §4.1).

    ``p_male = sum_c w_c p_c / sum_c w_c`` over the census classes c paired with the occupation,
    with ``w_c`` the class's Total Weight: the male share of all workers of the paired classes
    pooled, so a large class counts more than a small one. ``log_prop = log(p / (1 - p))``
    (±inf if p is 0 or 1).

    ``census`` is one year of :func:`load_census`. Returns one row per KG occupation (index
    ``kg_occupation``, in pairing order) with ``kg_name``, ``p_male``, ``log_prop``,
    ``total_weight``, ``census_classes`` (tuple of the classes used) and ``missing_classes``
    (tuple of paired classes absent that year: reported, not dropped silently). An occupation with
    no usable class (unpaired on purpose, or all classes missing) has NaN ``p_male``.
    """
    years = sorted(census["year"].unique().tolist())
    if len(years) > 1:
        raise DataError(CENSUS_SEVERAL_YEARS.format(years=years))
    by_class = census.set_index("occupation")
    rows = []
    for kg_occupation, group in pairing.groupby("kg_occupation", sort=False):
        wanted = [name for name in group["census_occupation"] if name]
        used = tuple(name for name in wanted if name in by_class.index)
        missing = tuple(name for name in wanted if name not in by_class.index)
        weight = by_class.loc[list(used), "total_weight"].to_numpy(dtype=float)
        male = by_class.loc[list(used), "p_male"].to_numpy(dtype=float)
        total = float(weight.sum())
        p_male = float((weight * male).sum() / total) if total > 0 else math.nan
        rows.append(
            {
                "kg_occupation": kg_occupation,
                "kg_name": group["kg_name"].iloc[0],
                "p_male": p_male,
                "total_weight": total,
                "census_classes": used,
                "missing_classes": missing,
            }
        )
    shares = pd.DataFrame.from_records(rows).set_index("kg_occupation")
    with np.errstate(divide="ignore"):  # p in {0, 1} gives ±inf on purpose
        shares.insert(2, "log_prop", np.log(shares["p_male"] / (1.0 - shares["p_male"])))
    return shares


def census_correlations(measures: pd.DataFrame, shares: pd.DataFrame, *, key: str = "kg_occupation") -> pd.DataFrame:
    """Pearson r and two-sided p-value of each measure against the census log-proportion.

    ``measures`` has one row per KG occupation, indexed by its label, and one column per measure.
    ``key`` says which column of ``shares`` (from :func:`paired_shares`) the labels are:
    ``"kg_occupation"`` (MIDs, the index) or ``"kg_name"``. Per measure, occupations with a
    non-finite measure or log_prop are skipped; ``n`` is the number used, and r and p are NaN
    when n < 3 (or a side is constant). Returns columns ``measure, r, p_value, n``.
    """
    if key == "kg_occupation":
        log_prop = shares["log_prop"]
    elif key in shares.columns:
        duplicated = shares[key][shares[key].duplicated()]
        if not duplicated.empty:
            raise DataError(CENSUS_DUPLICATE_KEY.format(key=key, value=duplicated.iloc[0]))
        log_prop = shares.set_index(key)["log_prop"]
    else:
        raise DataError(CENSUS_NO_KEY.format(key=key, known=["kg_occupation", *shares.columns]))
    target = log_prop.reindex(measures.index).to_numpy(dtype=float)
    rows = []
    for measure in measures.columns:
        values = measures[measure].to_numpy(dtype=float)
        keep = np.isfinite(values) & np.isfinite(target)
        n = int(keep.sum())
        r = p_value = math.nan
        if n >= 3:
            with warnings.catch_warnings():
                # A constant side has no correlation: scipy warns and returns NaN, which we keep.
                warnings.simplefilter("ignore", stats.ConstantInputWarning)
                result = stats.pearsonr(values[keep], target[keep])
            r, p_value = float(result.statistic), float(result.pvalue)
        rows.append({"measure": str(measure), "r": r, "p_value": p_value, "n": n})
    return pd.DataFrame(rows, columns=["measure", "r", "p_value", "n"])


def census_validation(
    measures: pd.DataFrame,
    *,
    census_path: Path | str,
    year: int | None = None,
    min_per_gender: int = 1,
    dataset: str = "fb15k237",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pearson r of each measure against census log(p/(1-p)), p = share of men (Du §4.1, METHODS §10).

    ``measures`` is :func:`kgbias_core.tables.measures_table`; occupations with fewer than
    ``min_per_gender`` persons of either gender are left out; ``dataset`` picks the shipped pairing.
    -> (correlations: measure, r,
    p_value, n over :data:`CENSUS_MEASURES`; the joined per-occupation table behind them, for
    scatter plots).
    """
    shares = paired_shares(load_census(Path(census_path), year=year), load_pairing(dataset=dataset))
    kept = measures[(measures["n_male"] >= min_per_gender) & (measures["n_female"] >= min_per_gender)]
    table = kept.set_index("occupation")[list(CENSUS_MEASURES)]
    correlations = census_correlations(table, shares)
    joined = kept.set_index("occupation").join(shares[["p_male", "log_prop", "census_classes"]], how="inner")
    return correlations, joined.reset_index()
