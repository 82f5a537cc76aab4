"""The dashboard's figures: one bar per row of the table they draw, titles that never merge two bars."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kgbias_app import charts
from kgbias_core.measures.fisher import associated_sides


def fisher_table(biases: dict[str, float]) -> pd.DataFrame:
    """A tables.fisher_table-shaped frame: one profession per name, largest b_p first."""
    frame = pd.DataFrame({"profession": range(len(biases)), "label": [f"/m/{i}" for i in range(len(biases))],
                          "name": list(biases), "bias": list(biases.values()), "n_a": 3, "n_b": 2})
    return frame.sort_values("bias", ascending=False, ignore_index=True)


def bars(fig) -> dict[str, float]:
    (trace,) = fig.data
    assert len(trace.y) == len(set(trace.y))
    return dict(zip(trace.y, np.asarray(trace.x).tolist(), strict=True))


def test_fisher_bars_draw_a_profession_on_both_sides_once() -> None:
    table = fisher_table({"nurse": 0.4, "judge": 0.1, "pilot": 0.2})  # no b_p < 0: the b side is a fallback
    top_a, top_b, fallback = associated_sides(table, k=2)
    assert fallback and set(top_a["name"]) & set(top_b["name"]) == {"pilot"}
    fig = charts.fisher_bars(top_a, top_b, a_name="male", b_name="female")
    shown = pd.concat([top_a, top_b]).drop_duplicates("name")
    assert bars(fig) == dict(zip(shown["name"], shown["bias"], strict=True))  # pilot 0.2, not 0.4


def test_bars_of_two_occupations_with_one_name_stay_apart() -> None:
    measures = pd.DataFrame({
        "occupation": ["/m/a", "/m/b", "/m/c"], "name": ["Actor", "Actor", "Nurse"],
        "group_bias": [0.2, -0.1, np.nan], "group_bias_low": [0.1, -0.2, np.nan],
        "group_bias_high": [0.3, 0.0, np.nan], "n_male": [5, 4, 3], "n_female": [5, 6, 0],
    })
    fig = charts.group_bias_bars(measures)
    assert bars(fig) == {"Actor (/m/b)": -0.1, "Actor (/m/a)": 0.2}  # ranked; no B_gr, no bar
    assert list(fig.data[0].marker.color) == [charts.LEAN_COLORS["female-leaning"], charts.LEAN_COLORS["male-leaning"]]


def test_bias_change_bars_highlight_the_edited_occupation_with_half_the_noise_spread() -> None:
    frame = pd.DataFrame({"occupation": ["a", "b", "c"], "name": ["A", "B", "C"], "change": [0.3, -0.2, np.nan]})
    noise = pd.DataFrame({"occupation": ["a", "b"], "spread": [0.1, 0.4]})
    fig = charts.bias_change_bars(frame, occupation="a", noise=noise)
    assert bars(fig) == {"B": -0.2, "A": 0.3}
    assert list(fig.data[0].marker.color) == [charts.MUTED, charts.HIGHLIGHT]
    assert np.asarray(fig.data[0].error_x.array).tolist() == [0.2, 0.05]
