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
