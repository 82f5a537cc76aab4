"""Charts as PNG and SVG through Kaleido, driving the machine's Chromium (never a downloaded one)."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from kgbias_core.errors import ExportError
from kgbias_core.static_images import BROWSER_ENV, browser_path, figure_image

needs_chromium = pytest.mark.skipif(not Path(browser_path()).is_file(),
                                    reason=f"no Chromium at {browser_path()} (scripts/setup.sh dev installs it)")


@needs_chromium
def test_a_chart_saves_as_png_and_svg() -> None:
    fig = go.Figure(go.Bar(x=["male", "female"], y=[0.3, -0.2]))
    png = figure_image(fig, image_format="png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = figure_image(fig, image_format="svg").decode("utf-8")
    assert svg.startswith("<svg") and "female" in svg


def test_without_a_browser_the_export_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv(BROWSER_ENV, str(tmp_path / "no-chromium"))
    with pytest.raises(ExportError, match=r"^could not save the chart as PNG: no browser at .*no-chromium\. .*"
                                          r"kgbias never downloads one"):
        figure_image(go.Figure(), image_format="png")


@needs_chromium
def test_an_exported_ranking_has_its_title_and_every_full_name_fits(tiny_model) -> None:
    """The Overview ranking as saved for a slide: titled, every long occupation name drawn in full, the plot
    area starting right of the longest name (automargin), one bar row per occupation (rendered, then read)."""
    import re
    import xml.etree.ElementTree as ET

    import pandas as pd

    from kgbias_app import charts
    from kgbias_core.static_images import BAR_HEIGHT, CHART_FRAME, slide_figure

    names = [f"Screenwriter and script doctor {i:02d}" for i in range(30)]
    ranked = pd.DataFrame({"occupation": [f"/m/0dxt{i:02d}" for i in range(30)], "name": names,
                           "n_male": 10, "n_female": 10, "group_bias": [0.01 * (i - 15) for i in range(30)]})
    ranked["group_bias_low"], ranked["group_bias_high"] = ranked["group_bias"] - 0.01, ranked["group_bias"] + 0.01
    title = "Group bias B_gr per occupation (95% CI) — FB15k-237 · fb15k237-transe"
    slide = slide_figure(charts.group_bias_bars(ranked), title=title)
    assert slide.layout.height == CHART_FRAME + BAR_HEIGHT * 30
    svg = figure_image(slide, image_format="svg").decode("utf-8")
    root = ET.fromstring(svg)
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert title in texts
    labels = [t for t in texts if t.startswith("Screenwriter")]
    assert len(labels) == 30 and all(any(name in label for label in labels) for name in names)  # none cut
    # The plot area's left edge (the x axis' clip rectangle) lies right of the longest label: >= 5 px per
    # character at Plotly's 12 px font (Plotly's fixed 80 px margin, without automargin, would cut it).
    (left,) = [float(m) for m in re.findall(r'class="axesclip" id="clip[0-9a-f]+x"><rect x="([0-9.]+)"', svg)]
    longest = max(len(label) for label in labels)
    assert left >= 5 * longest
