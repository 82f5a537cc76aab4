"""The README's screenshots of the dashboard, taken in headless Chromium on the synthetic graph.

    python -m kgbias_core train --dataset synthetic --out /tmp/kgbias-shots/synthetic-transe
    python docs/screenshots.py --store /tmp/kgbias-shots [--out docs/images]

Serves the dashboard on the loopback as the browser test does (``kgbias_app.serve``), with the store
``--store`` and no data directory, opens the Overview and the Occupation explorer, and saves each page
as a palette PNG under 300 KB (``overview.png``, ``occupation_explorer.png``).
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

from PIL import Image

from kgbias_app.serve import chromium, dashboard

MAX_BYTES = 300_000
WIDTH, HEIGHT = 1400, 1000


def save_small(png: bytes, target: Path) -> int:
    """Write ``png`` as an adaptive-palette PNG of at most MAX_BYTES: fewer colours first, then smaller."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    for scale in (1.0, 0.75, 0.5):
        sized = image.resize((int(image.width * scale), int(image.height * scale))) if scale < 1 else image
        for colours in (128, 64, 32):
            buffer = io.BytesIO()
            sized.quantize(colors=colours).save(buffer, format="PNG", optimize=True)
            if buffer.tell() <= MAX_BYTES:
                target.write_bytes(buffer.getvalue())
                return buffer.tell()
    raise SystemExit(f"{target.name}: still over {MAX_BYTES} bytes at half size")


def main() -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a model store holding synthetic-transe")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kgbias-shots-"))
    env = os.environ | {"KGBIAS_MODEL_DIR": str(args.store), "KGBIAS_DATA_DIR": str(work / "no-data")}
    with dashboard(env, timeout=120) as url, chromium(work / "chromium") as driver:
        driver.set_window_size(WIDTH, HEIGHT)
        wait = WebDriverWait(driver, 300)
        driver.get(url)  # the router first: a deep link to a fresh server skips st.navigation
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Overview"))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot")))
        time.sleep(3)  # the charts' entry transitions
        print("overview", save_small(driver.get_screenshot_as_png(), args.out / "overview.png"), "bytes")
        wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a[href$="/occupation_explorer"]'))).click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Occupation explorer"))
        chart = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot")))
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", chart)  # the tab's chart
        time.sleep(3)
        print("explorer", save_small(driver.get_screenshot_as_png(), args.out / "occupation_explorer.png"), "bytes")


if __name__ == "__main__":
    main()
