"""The device scripts (experiments/gpu/*.sh) run only on a lent GPU, where a syntax error costs a session's minutes:
each must parse, and each that uses the shared helpers must source them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

GPU = Path(__file__).resolve().parents[1] / "experiments" / "gpu"
SCRIPTS = sorted(GPU.glob("*.sh"))
HELPERS = ("step", "bg", "await", "pack", "left", "task")


def test_there_are_device_scripts() -> None:
    assert (GPU / "steps.sh") in SCRIPTS and (GPU / "whatif_bench.sh") in SCRIPTS


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_device_script_parses_and_sources_its_helpers(script: Path) -> None:
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    if script.name == "steps.sh":
        defined = set(re.findall(r"^(\w+)\(\) \{", script.read_text(), flags=re.MULTILINE))
        assert set(HELPERS) <= defined
        return
    text = script.read_text()
    used = {h for h in HELPERS if re.search(rf"^\s*(?:.*[;&|]\s*)?{h}\b", text, flags=re.MULTILINE)}
    if used:
        assert "source experiments/gpu/steps.sh" in text, f"{script.name} uses {sorted(used)} without steps.sh"
    assert not re.search(r"^\s*wait\s*$", text, flags=re.MULTILINE), "a bare wait also waits for the log's tee"
