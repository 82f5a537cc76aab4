"""Every bench, experiment and docs script still imports what it names from kgbias (a module moved by a
refactor breaks a script that no test runs: experiments/whatif_accuracy imported ``calibrate`` from its old
home until this test)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*REPO.glob("bench/*.py"), *REPO.glob("experiments/*/*.py"), *REPO.glob("docs/*.py")])


def _kgbias_imports(path: Path) -> list[tuple[str, str]]:
    ours = ("kgbias_core", "kgbias_app")
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ours:
            names += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [(alias.name, "") for alias in node.names if alias.name.split(".")[0] in ours]
    return names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_script_imports_what_it_names(script: Path) -> None:
    missing = []
    for module, name in _kgbias_imports(script):
        found = importlib.import_module(module)
        if name and not hasattr(found, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{script.name} imports what no longer exists: {missing}"
