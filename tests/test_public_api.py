"""The curated public API (kgbias_core.__all__) and the README's "use it from Python" example."""

from __future__ import annotations

import re
import subprocess
import sys

import kgbias_core

from .conftest import REPO


def test_every_public_name_resolves_to_its_one_home() -> None:
    for name in kgbias_core.__all__:
        value = getattr(kgbias_core, name)
        assert value.__module__ == f"kgbias_core.{kgbias_core._API[name]}", name


def test_importing_the_core_imports_neither_streamlit_nor_heavy_modules_up_front() -> None:
    code = "import sys, kgbias_core; print(sorted(m for m in ('streamlit', 'torch', 'pykeen') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
    code = "import sys, kgbias_core; kgbias_core.ModelAnalysis; kgbias_core.tables; print('streamlit' in sys.modules)"
    code = code.replace("kgbias_core.tables; ", "import kgbias_core.tables, kgbias_core.cli, kgbias_core.tasks; ")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_readme_python_example_runs_as_printed() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use it from Python"):]
    example = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    namespace: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    table = namespace["table"]
    assert {"group_bias", "group_bias_low", "group_bias_high", "fisher_bp"} <= set(table.columns)
    assert len(namespace["triples"]) == 10
