"""A Plotly figure as a static image (PNG for slides, SVG for print), through Plotly's exporter, Kaleido.

Kaleido 1.x draws the figure in a headless Chrome it drives. It is told which one: the Chromium of the
machine (Debian's ``/usr/bin/chromium``, installed by ``scripts/setup.sh dev``) or ``$BROWSER_PATH``.
kgbias never lets it download a browser (``kaleido.get_chrome``), so an export without a Chromium fails
with a message saying what to install, never with a download.
"""

from __future__ import annotations

import os
from pathlib import Path

import plotly.graph_objects as go

from kgbias_core.errors import STATIC_EXPORT_FAILED, ExportError

#: The browser Kaleido drives unless $BROWSER_PATH names another (Kaleido and choreographer read it too).
DEBIAN_CHROMIUM = "/usr/bin/chromium"
BROWSER_ENV = "BROWSER_PATH"
#: The static formats offered, with their MIME types (for a download).
IMAGE_FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
#: Size of a figure that sets none, in CSS pixels (Plotly's own default); PNGs are drawn at twice that
#: resolution, sharp on a projector.
WIDTH, HEIGHT, PNG_SCALE = 700, 500, 2


def browser_path() -> str:
    """The Chromium that draws static images: ``$BROWSER_PATH``, else Debian's."""
    return os.environ.get(BROWSER_ENV) or DEBIAN_CHROMIUM


def figure_image(fig: go.Figure, *, image_format: str) -> bytes:
    """``fig`` drawn as ``image_format`` ("png" or "svg") by Kaleido in :func:`browser_path`'s Chromium.

    Raises :class:`ExportError` naming the format and the cause (no Chromium, a crash) instead of
    Kaleido's own error, which suggests downloading Chrome.
    """
    import kaleido  # imported on use: it starts nothing, but the CLI and the app need it only here

    browser = browser_path()
    if not Path(browser).is_file():
        raise ExportError(STATIC_EXPORT_FAILED.format(format=image_format.upper(), reason=f"no browser at {browser}"))
    layout = fig.layout
    options = {"format": image_format, "width": layout.width or WIDTH, "height": layout.height or HEIGHT,
               "scale": PNG_SCALE if image_format == "png" else 1}
    try:
        # mathjax=False: no figure of kgbias writes LaTeX, and MathJax would be fetched from a CDN.
        return kaleido.calc_fig_sync(fig, opts=options, kopts={"path": browser, "mathjax": False})
    except Exception as exc:  # Kaleido raises its own, choreographer's and asyncio's errors
        raise ExportError(STATIC_EXPORT_FAILED.format(format=image_format.upper(), reason=exc)) from None


#: Width of an exported slide image in CSS pixels (16:9 at a typical projector's 1000 px content width).
SLIDE_WIDTH = 1000
#: Height per bar of a horizontal bar chart, and the room for the title and the axis, in CSS pixels.
BAR_HEIGHT, CHART_FRAME = 24, 180


def slide_figure(fig: go.Figure, *, title: str | None = None) -> go.Figure:
    """A copy of ``fig`` laid out for a slide: ``title`` on top, labels that fit (automargin on every axis,
    so long occupation names are never cut), and for horizontal bars a height from the number of bars."""
    out = go.Figure(fig)
    out.update_xaxes(automargin=True)
    out.update_yaxes(automargin=True)
    bars = [len(trace.y) for trace in out.data if trace.type == "bar" and trace.orientation == "h"
            and trace.y is not None]
    height = out.layout.height or HEIGHT
    if bars:
        height = max(height, CHART_FRAME + BAR_HEIGHT * max(bars))
    layout: dict = {"width": out.layout.width or SLIDE_WIDTH, "height": height}
    if title:
        layout["title"] = {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 18}}
        layout["margin_t"] = max(out.layout.margin.t or 0, 70)
    out.update_layout(**layout)
    return out
