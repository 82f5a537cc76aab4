"""Resolve a data set name (fb15k237, synthetic, or a path) and the data directory."""

from __future__ import annotations

import os
from pathlib import Path

from kgbias_core.data.graph import KnowledgeGraph, load_fb15k237, load_user_graph
from kgbias_core.data.schema import Schema, load_schema
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph

DATA_DIR_ENV = "KGBIAS_DATA_DIR"


def resolve_data_dir(flag: str | Path | None = None) -> Path:
    """--data-dir flag, else $KGBIAS_DATA_DIR, else ./data."""
    if flag:
        return Path(flag)
    return Path(os.environ.get(DATA_DIR_ENV) or "data")


def has_fb15k237(data_dir: Path) -> bool:
    return (data_dir / "fb15k237" / "train.txt").is_file()


def load_dataset(
    dataset: str,
    *,
    data_dir: str | Path | None = None,
    schema: Schema | str | Path | None = None,
    names: str | Path | None = None,
    synthetic: SyntheticConfig | None = None,
) -> KnowledgeGraph:
    """``fb15k237`` (from the data directory), ``synthetic`` (generated), or a user graph at a path.

    A user graph needs a schema (a :class:`Schema` or a TOML/JSON file); a directory holding
    ``schema.toml`` or ``schema.json`` supplies its own.
    """
    if dataset == "fb15k237":
        return load_fb15k237(resolve_data_dir(data_dir))
    if dataset == "synthetic":
        return generate_people_graph(synthetic or SyntheticConfig())
    path = Path(dataset)
    if schema is None:
        folder = path if path.is_dir() else path.parent
        for candidate in ("schema.toml", "schema.json"):
            if (folder / candidate).is_file():
                schema = folder / candidate
                break
    if not isinstance(schema, Schema):
        from kgbias_core.errors import NO_SCHEMA, SchemaError

        if schema is None:
            raise SchemaError(NO_SCHEMA.format(path=path))
        schema = load_schema(schema)
    return load_user_graph(path, schema=schema, names=names)
