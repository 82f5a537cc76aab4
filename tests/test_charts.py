"""The dashboard's figures: one bar per row of the table they draw, titles that never merge two bars."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kgbias_app import charts, texts
from kgbias_core.measures.fisher import associated_sides
from kgbias_core.tables import ranked_occupations


def fisher_table(biases: dict[str, float]) -> pd.DataFrame:
    """A tables.fisher_table-shaped frame: one profession per name, largest b_p first."""
    frame = pd.DataFrame({"profession": range(len(biases)), "label": [f"/m/{i}" for i in range(len(biases))],
                          "name": list(biases), "bias": list(biases.values()), "n_a": 3, "n_b": 2})
    return frame.sort_values("bias", ascending=False, ignore_index=True)


def bars(fig) -> dict[str, float]:
    (trace,) = fig.data
    assert len(trace.y) == len(set(trace.y))
    return dict(zip(trace.y, np.asarray(trace.x).tolist(), strict=True))


def test_fisher_bars_draw_one_bar_per_row_of_the_two_tables() -> None:
    table = fisher_table({"nurse": 0.4, "judge": 0.1, "pilot": 0.2, "cook": 0.05})  # no b_p < 0: b is a fallback
    top_a, top_b, fallback = associated_sides(table, k=2)
    assert fallback == "b"
    fig = charts.fisher_bars(top_a, top_b, a_name="male", b_name="female")
    rows = pd.concat([top_a, top_b])
    assert len(fig.data[0].y) == len(rows) == 4
    assert bars(fig) == dict(zip(rows["name"], rows["bias"], strict=True))


def test_fisher_bars_draw_a_profession_given_on_both_sides_once() -> None:
    table = fisher_table({"nurse": 0.4, "pilot": 0.2})
    fig = charts.fisher_bars(table, table.tail(1), a_name="male", b_name="female")
    assert bars(fig) == {"pilot": 0.2, "nurse": 0.4}  # pilot 0.2, not stacked into 0.4


def test_bars_of_two_occupations_with_one_name_stay_apart() -> None:
    measures = pd.DataFrame({
        "occupation": ["/m/a", "/m/b", "/m/c"], "name": ["Actor", "Actor", "Nurse"],
        "group_bias": [0.2, -0.1, np.nan], "group_bias_low": [0.1, -0.2, np.nan],
        "group_bias_high": [0.3, 0.0, np.nan], "n_male": [5, 4, 3], "n_female": [5, 6, 0],
    })
    fig = charts.group_bias_bars(measures)
    assert bars(fig) == {"Actor (/m/b)": -0.1, "Actor (/m/a)": 0.2}  # ranked; no B_gr, no bar
    assert list(fig.data[0].marker.color) == [charts.LEAN_COLORS["female-leaning"], charts.LEAN_COLORS["male-leaning"]]
    assert "squared TransE distance" in fig.layout.xaxis.title.text
    # an imported L1 model: the axis names its engine's distance, never the squared one
    assert "TransE L1 distance" in charts.group_bias_bars(measures, distance="l1").layout.xaxis.title.text


def test_bias_change_bars_highlight_the_edited_occupation_with_half_the_noise_spread() -> None:
    frame = pd.DataFrame({"occupation": ["a", "b", "c"], "name": ["A", "B", "C"], "change": [0.3, -0.2, np.nan]})
    noise = pd.DataFrame({"occupation": ["a", "b"], "spread": [0.1, 0.4]})
    fig = charts.bias_change_bars(frame, occupation="a", noise=noise)
    assert bars(fig) == {"B": -0.2, "A": 0.3}
    assert list(fig.data[0].marker.color) == [charts.MUTED, charts.HIGHLIGHT]
    assert np.asarray(fig.data[0].error_x.array).tolist() == [0.2, 0.05]


def test_group_bias_bars_draw_exactly_the_ranked_rows() -> None:
    measures = pd.DataFrame({
        "occupation": ["/m/a", "/m/b", "/m/c", "/m/d"], "name": ["Actor", "Judge", "Nurse", "Pilot"],
        "group_bias": [0.2, 3.0, -0.1, np.nan], "group_bias_low": [0.1, 3.0, -0.2, np.nan],
        "group_bias_high": [0.3, 3.0, 0.0, np.nan], "n_male": [5, 1, 6, 9], "n_female": [5, 1, 7, 0],
    })
    ranked, small = ranked_occupations(measures, minimum=5)
    assert list(small["name"]) == ["Judge", "Pilot"]  # one man and one woman do not lead the ranking
    fig = charts.group_bias_bars(ranked)
    assert bars(fig) == dict(zip(ranked["name"], ranked["group_bias"], strict=True)) == {"Nurse": -0.1, "Actor": 0.2}


def test_subpopulation_bars_draw_the_values_with_figures_and_their_intervals() -> None:
    table = pd.DataFrame({
        "value": ["us", "uk", "fr", ""], "name": ["US", "UK", "France", "no value"],
        "group_bias": [-0.4, 0.3, np.nan, 0.1], "group_bias_low": [-0.6, 0.1, np.nan, -0.2],
        "group_bias_high": [-0.1, 0.6, np.nan, 0.3], "n_male": [9, 7, 9, 6], "n_female": [8, 5, 1, 5],
    })
    fig = charts.subpopulation_bars(table, attribute="nationality")
    assert bars(fig) == {"US": -0.4, "no value": 0.1, "UK": 0.3}  # France: too few persons, no bar
    assert np.asarray(fig.data[0].error_x.array).tolist() == pytest.approx([0.3, 0.2, 0.3])
    assert np.asarray(fig.data[0].error_x.arrayminus).tolist() == pytest.approx([0.2, 0.3, 0.2])
    assert fig.layout.yaxis.title.text == "nationality" and texts.SIGN in fig.layout.xaxis.title.text


def test_census_scatter_draws_every_point_and_names_only_the_outliers() -> None:
    rng = np.random.default_rng(0)
    x = np.linspace(-2, 2, 40)
    y = 0.5 * x + rng.normal(0, 0.01, 40)
    y[[3, 30]] += [2.0, -3.0]  # two points far from the line
    joined = pd.DataFrame({"occupation": [f"/m/{i}" for i in range(40)], "name": [f"job {i}" for i in range(40)],
                           "log_prop": x, "group_bias": y, "p_male": 0.5})
    (trace,) = charts.census_scatter(joined, measure="group_bias").data
    assert len(trace.x) == 40 and list(trace.hovertext) == list(joined["name"])  # every name on hover
    named = {t for t in trace.text if t}
    assert {"job 3", "job 30"} <= named and len(named) == charts.CENSUS_LABELS


def drawn(fig) -> list[tuple[str, str, float]]:
    """Every bar or point of a figure: (trace name, x, y), sorted (Plotly Express splits colours and facets
    into traces)."""
    return sorted((trace.name or "", str(x), round(float(y), 9))
                  for trace in fig.data for x, y in zip(trace.x, trace.y, strict=True))


def test_the_comparison_charts_draw_one_bar_per_row_of_their_tables() -> None:
    classes = pd.DataFrame({
        "model": ["m1"] * 4 + ["m2"] * 4, "class_name": ["Nurse", "Nurse", "OTHER", "OTHER"] * 2,
        "group": ["male", "female"] * 4, "selection_deviation": [0.1, -0.2, 0.0, 0.05, 0.3, -0.1, -0.05, 0.2],
        "n_true": 3, "n_predicted": 2,
    })
    expected = sorted(zip(classes["group"], classes["class_name"], classes["selection_deviation"].round(9),
                          strict=True))
    assert drawn(charts.deviation_chart(classes)) == expected

    values = pd.DataFrame({"value_name": ["Aland", "Borovia"] * 2, "bias": [0.1, 0.2, 0.3, 0.4],
                           "model": ["m1", "m1", "m2", "m2"], "measure": "DPD", "n_persons": 9, "status": "ok"})
    assert drawn(charts.value_chart(values, "nationality")) == sorted(
        zip(values["model"], values["value_name"], values["bias"], strict=True))

    names = ("DPG", "PPG", "EOG")
    gaps = pd.DataFrame({"model": ["m1", "m2"], **{g: [0.1 * i, 0.2 * i] for i, g in enumerate(names, 1)},
                         **{f"{g}_{end}": [0.0, 0.0] for g in names for end in ("low", "high")}})
    assert len(drawn(charts.gap_chart(gaps))) == 3 * len(gaps)
    assert {(m, g, round(float(gaps.loc[gaps.model == m, g].iloc[0]), 9)) for m in gaps.model
            for g in names} == set(drawn(charts.gap_chart(gaps)))


def test_the_explorer_charts_draw_one_point_per_person() -> None:
    persons = pd.DataFrame({"person": ["p1", "p2", "p3"], "name": ["A", "B", "C"], "gender": ["male", "female", "male"],
                            "degree": [3, 4, 5], "individual_bias": [0.1, -0.2, 0.3],
                            "fisher_individual": [0.01, -0.02, 0.03]})
    scatter = charts.individual_scatter(persons)
    assert sorted((t.name, float(x), float(y)) for t in scatter.data for x, y in zip(t.x, t.y, strict=True)) == sorted(
        zip(persons["gender"], persons["fisher_individual"], persons["individual_bias"], strict=True))
    violin = charts.individual_distribution(persons, every_point=True)
    points = [t for t in violin.data if t.type == "scatter" and t.mode == "markers"]
    assert sorted(float(y) for t in points for y in t.y) == sorted(persons["individual_bias"])


def test_the_scatter_draws_a_sample_by_default_and_every_person_on_request() -> None:
    n = charts.SCATTER_SAMPLE + 50
    persons = pd.DataFrame({"person": [f"p{i}" for i in range(n)], "name": [f"P{i}" for i in range(n)],
                            "gender": ["male", "female"] * (n // 2), "degree": 3,
                            "individual_bias": np.linspace(-1, 1, n), "fisher_individual": np.linspace(-2, 2, n)})
    sampled = sorted(float(y) for t in charts.individual_scatter(persons).data for y in t.y)
    assert len(sampled) == charts.SCATTER_SAMPLE and set(sampled) <= set(persons["individual_bias"])
    every = sorted(float(y) for t in charts.individual_scatter(persons, every_point=True).data for y in t.y)
    assert every == sorted(persons["individual_bias"])
    assert "sample of 300 of the 350 persons" in texts.persons_scatter(n, every_point=False, sample=300)
    assert "sample" not in texts.persons_scatter(n, every_point=True, sample=300)


def test_the_distributions_draw_the_outliers_by_default_and_every_person_on_request() -> None:
    persons = pd.DataFrame({"person": ["a", "b"], "name": ["A", "B"], "gender": ["male", "female"], "degree": 1,
                            "individual_bias": [0.1, -0.1], "fisher_individual": [0.0, 0.0],
                            "occupation_name": "Nurse"})
    assert {t.boxpoints for t in charts.compare_distributions(persons, every_point=True).data} == {"all"}


def test_the_distribution_draws_tukeys_box_a_kernel_density_and_exactly_the_outliers() -> None:
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(0.0, 0.1, 200), [1.5, -1.2, 2.0]])  # three far outliers among men
    persons = pd.DataFrame({"name": [f"P{i}" for i in range(len(values) + 50)], "degree": 2,
                            "gender": ["male"] * len(values) + ["female"] * 50,
                            "individual_bias": np.concatenate([values, rng.normal(0.2, 0.1, 50)]),
                            "fisher_individual": 0.0})
    fig = charts.individual_distribution(persons)
    box = next(t for t in fig.data if t.type == "box" and t.name == "male")
    # Tukey's box by brute force: sorted values, linear quartiles, whiskers at the last value within 1.5 IQR.
    ordered = np.sort(values)
    q = [np.interp(p * (len(ordered) - 1), np.arange(len(ordered)), ordered) for p in (0.25, 0.5, 0.75)]
    iqr = q[2] - q[0]
    inside = [v for v in ordered if q[0] - 1.5 * iqr <= v <= q[2] + 1.5 * iqr]
    assert np.allclose([box.q1[0], box.median[0], box.q3[0]], q)
    assert box.lowerfence[0] == inside[0] and box.upperfence[0] == inside[-1]
    male_points = next(t for t in fig.data if t.type == "scatter" and t.mode == "markers" and t.name == "male")
    assert sorted(male_points.y) == sorted(v for v in values if v not in inside)  # exactly the outliers
    assert len(male_points.y) >= 3
    # The violin's outline: the kernel density, checked against scipy's on the same bandwidth rule.
    from scipy.stats import gaussian_kde
    outline = next(t for t in fig.data if t.type == "scatter" and t.fill == "toself" and t.name == "male")
    grid = np.asarray(outline.y[: charts.DENSITY_GRID])
    reference = gaussian_kde(values, bw_method=1.06 * values.std(ddof=1) * len(values) ** (-1 / 5) / values.std(ddof=1))
    mine = charts.density(values, grid)
    assert np.allclose(mine, reference(grid), rtol=1e-6)
    half_width = np.asarray(outline.x[: charts.DENSITY_GRID])
    assert np.allclose(0 - half_width, 0.4 * mine / mine.max())
    # A figure of a few dozen numbers per gender, not one per person (what the browser must draw).
    assert len(fig.to_json()) < 20_000
