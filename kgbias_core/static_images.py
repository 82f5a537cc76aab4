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
