"""The house's floors: every import in kgbias_core and kgbias_app goes down the pipeline, never up.

Each module is parsed (``ast``, so imports inside functions and under ``TYPE_CHECKING`` count too) and
each import between two rooms is checked against :data:`LAYERS`: a room may import its own layer or a
lower one, never a higher one. A new room must be given its floor here, which is the point: where it
sits is a decision, written down once.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The floors, bottom first. A room is a top-level module or subpackage of kgbias_core, or a whole app package.
# Rooms on one floor may import each other; an import from a floor to a higher one is an arrow back up.
LAYERS: tuple[tuple[str, ...], ...] = (
    # Ground: messages, tensor types, the device, and the package root (its public API is a table of strings,
    # resolved lazily: it imports nothing when loaded).
    ("errors", "types", "device", "kgbias_core"),
    ("data",),  # graphs, schemas, the census: read from files
    ("embeddings",),  # training, the model store and its results cache, the calibration record (config.py)
    ("evaluation",),  # link prediction
    ("measures",),  # the bias measures (Du, Fisher, Keidar, Schwertmann)
    ("influence",),  # influence of triples, its estimator and the calibration's fit
    # ModelAnalysis measures one model through measures + influence; the what-ifs measure their runs with it,
    # so it sits below whatif (whatif/runs.py, compare.py, edits.py use it), as do the tables built from it.
    ("analysis",),
    ("tables", "subpopulations"),
    ("whatif",),  # retrained and debiased runs, the noise band, the debiasing comparison
    # What is read off a model and its runs: readings, the findings, people, the embedding space, reports.
    # families: seed families of one config and the seed band of their measures (issue 24).
    ("readings", "findings", "persons", "embedding_space", "accuracy_disparity", "report", "static_images",
     "palette", "families"),
    ("jobs",),  # the job registry and Progress: tasks report through it
    ("tasks",),  # every long job as a Task
    ("cli", "commands", "__main__"),  # the command line
    ("kgbias_app",),  # what only the dashboard needs: above all of kgbias_core
    ("app_pages", "dashboard"),  # the pages and the router
)
FLOOR = {room: floor for floor, rooms in enumerate(LAYERS) for room in rooms}
PACKAGES = ("kgbias_core", "kgbias_app", "app_pages")


def _room(module: str) -> str | None:
    """The room of a dotted module name; None outside the project."""
    parts = module.split(".")
    if parts[0] == "kgbias_core":
        return parts[1] if len(parts) > 1 else "kgbias_core"
    if parts[0] in ("kgbias_app", "app_pages", "dashboard"):
        return parts[0]
    return None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, *, module: str, is_package: bool) -> list[str]:
    """The dotted names ``node`` imports (relative imports resolved against ``module``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    # ``from kgbias_core import tasks``: the submodule is the target; ``from kgbias_core import __version__``: the root.
    return [f"{base}.{alias.name}" if base in PACKAGES and _is_submodule(base, alias.name) else base
            for alias in node.names]


def _is_submodule(package: str, name: str) -> bool:
    return (ROOT / package / name).is_dir() or (ROOT / package / f"{name}.py").is_file()


def _files() -> list[Path]:
    files = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    return [*files, ROOT / "dashboard.py"]


def _arrows() -> list[tuple[str, str, str]]:
    """(file:line, from room, to room) of every import between two rooms of the project."""
    arrows = []
    for path in _files():
        module = _module_name(path)
        source = _room(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported(node, module=module, is_package=path.name == "__init__.py"):
                target = _room(name)
                if target is not None and target != source:
                    arrows.append((f"{path.relative_to(ROOT)}:{node.lineno}", source, target))
    return arrows


def test_every_room_has_a_floor() -> None:
    rooms = {_room(_module_name(path)) for path in _files()}
    assert rooms - set(FLOOR) == set(), "give each new room its floor in LAYERS"


def test_the_checker_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    """Oracle: a hand-written module whose arrows are known."""
    tree = ast.parse("def f():\n    from kgbias_core.tasks import Task\n    from . import store\n")
    found = [_imported(n, module="kgbias_core.embeddings.results", is_package=False)
             for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert found == [["kgbias_core.tasks"], ["kgbias_core.embeddings"]]
    assert FLOOR[_room("kgbias_core.tasks")] > FLOOR[_room("kgbias_core.embeddings.store")]


@pytest.mark.parametrize("floor", range(len(LAYERS)), ids=[" ".join(rooms) for rooms in LAYERS])
def test_no_import_goes_up_from(floor: int) -> None:
    up = [f"{where}: {source} (floor {FLOOR[source]}) imports {target} (floor {FLOOR[target]})"
          for where, source, target in _arrows()
          if FLOOR.get(source) == floor and target in FLOOR and FLOOR[target] > floor]
    assert up == []
