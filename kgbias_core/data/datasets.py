"""Resolve a data set name (a named real graph, ``synthetic``, or a path) and the data directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kgbias_core.data.graph import KnowledgeGraph, load_user_graph, with_inverse_occupation
from kgbias_core.data.schema import FB13_SCHEMA, FB15K237_SCHEMA, Schema, load_schema
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.errors import NO_DATA_DIR, NO_SCHEMA, UNKNOWN_DATASET, DataError, SchemaError

DATA_DIR_ENV = "KGBIAS_DATA_DIR"
SYNTHETIC = "synthetic"


@dataclass(frozen=True)
class NamedDataset:
    """A real graph that kgbias knows by name: where it lives under the data directory and its schema."""

    name: str  # the --dataset value, and the folder under the data directory
    title: str  # shown in the dashboard's graph picker
    schema: Schema  # built in, so a copy fetched from the original source needs no schema file
    source: str  # where the public original is, for users who fetch it themselves


#: The real graphs, in the order the dashboard offers them (PROVENANCE.md describes each).
NAMED_DATASETS: dict[str, NamedDataset] = {
    "fb15k237": NamedDataset(
        name="fb15k237",
        title="FB15k-237",
        schema=FB15K237_SCHEMA,
        source="With a network, 'kgbias download --dataset fb15k237 --data-dir DIR' fetches it.",
    ),
    "fb13": NamedDataset(
        name="fb13",
        title="FB13 (Freebase people)",
        schema=FB13_SCHEMA,
        source=(
            "With a network, 'kgbias download --dataset fb13 --data-dir DIR' fetches OpenKE's copy "
            "(benchmarks/FB13 of thunlp/OpenKE) and converts it to head<TAB>relation<TAB>tail slugs."
        ),
    ),
}


def resolve_data_dir(flag: str | Path | None = None) -> Path:
    """--data-dir flag, else $KGBIAS_DATA_DIR, else ./data."""
    if flag:
        return Path(flag)
    return Path(os.environ.get(DATA_DIR_ENV) or "data")


def has_dataset(name: str, data_dir: Path) -> bool:
    """True for ``synthetic`` and for a named graph whose train.txt is in ``data_dir``."""
    return name == SYNTHETIC or (name in NAMED_DATASETS and (data_dir / name / "train.txt").is_file())


def available_datasets(data_dir: Path) -> list[str]:
    """The built-in synthetic graph, then every named graph present in ``data_dir``."""
    return [SYNTHETIC] + [name for name in NAMED_DATASETS if has_dataset(name, data_dir)]


def dataset_title(name: str) -> str:
    """Readable title of a data set name (a user graph keeps its own name)."""
    if name == SYNTHETIC:
        return "Synthetic people graph (built in)"
    return NAMED_DATASETS[name].title if name in NAMED_DATASETS else name


def load_dataset(
    dataset: str,
    *,
    data_dir: str | Path | None = None,
    schema: Schema | str | Path | None = None,
    names: str | Path | None = None,
    synthetic: SyntheticConfig | None = None,
    inverse_occupation: bool = False,
) -> KnowledgeGraph:
    """A named graph (from the data directory), ``synthetic`` (generated), or a user graph at a path.

    A user graph needs a schema (a :class:`Schema` or a TOML/JSON file); a directory holding
    ``schema.toml`` or ``schema.json`` supplies its own. ``inverse_occupation`` adds the inverse of
    the occupation relation to the training split (:func:`~kgbias_core.data.graph.with_inverse_occupation`).
    """
    graph = _load(dataset, data_dir=data_dir, schema=schema, names=names, synthetic=synthetic)
    return with_inverse_occupation(graph) if inverse_occupation else graph


def _load(
    dataset: str,
    *,
    data_dir: str | Path | None,
    schema: Schema | str | Path | None,
    names: str | Path | None,
    synthetic: SyntheticConfig | None,
) -> KnowledgeGraph:
    if dataset == SYNTHETIC:
        return generate_people_graph(synthetic or SyntheticConfig())
    if dataset in NAMED_DATASETS:
        named, root = NAMED_DATASETS[dataset], resolve_data_dir(data_dir)
        if not has_dataset(dataset, root):
            raise DataError(NO_DATA_DIR.format(title=named.title, path=root, folder=named.name, source=named.source))
        return load_user_graph(root / named.name, schema=named.schema)
    path = Path(dataset)
    if schema is None and not path.exists():  # a mistyped name (fb15k-237), not a user graph lacking its schema
        raise DataError(UNKNOWN_DATASET.format(dataset=dataset, names=", ".join([SYNTHETIC, *NAMED_DATASETS])))
    if schema is None:
        folder = path if path.is_dir() else path.parent
        for candidate in ("schema.toml", "schema.json"):
            if (folder / candidate).is_file():
                schema = folder / candidate
                break
    if not isinstance(schema, Schema):
        if schema is None:
            raise SchemaError(NO_SCHEMA.format(path=path))
        schema = load_schema(schema)
    return load_user_graph(path, schema=schema, names=names)
