"""The Attributes page's own UI: the attribute and its values, the associated professions. The page
(``app_pages/attributes.py``) calls these."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from kgbias_app import cache, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_app.widgets import (
    MIN_PERSONS,
    fisher_names,
    table,
)
from kgbias_core.data.schema import Schema
from kgbias_core.embeddings.store import StoredModel

# --- attributes (Fisher et al.) -----------------------------------------------------------------
#: The "value b" that stands for every other value of the relation (one vs rest).
REST = "__rest__"


def attribute_options(schema: Schema, relation_labels: tuple[str, ...]) -> dict[str, str]:
    """Attribute relations to offer: gender, the schema's attributes, then every other relation."""
    options = {"gender": f"gender ({schema.gender_relation})"}
    options |= {a.name: f"{a.name} ({a.relation})" for a in schema.attributes}
    named = {schema.gender_relation, schema.occupation_relation} | {a.relation for a in schema.attributes}
    options |= {r: f"relation {r}" for r in relation_labels if r not in named}
    return options


def value_titles(values: pd.DataFrame) -> dict[str, str]:
    """Attribute value label -> "name (n persons)" (a frame of :func:`kgbias_core.tables.attribute_values`)."""
    return {label: f"{name} ({n:,} persons)"
            for label, name, n in zip(values["label"], values["name"], values["n_persons"], strict=True)}


@dataclass(frozen=True)
class AttributeChoice:
    """What the Attributes page compares."""

    relation: str  # schema attribute name or relation label
    value_a: str  # label of value a
    value_b: str | None  # label of value b; None = every other value (one vs rest)
    a_name: str  # readable names, for captions and headings
    b_name: str
    min_count: int  # minimum a- plus b-persons per profession


def attribute_choice(model: ModelRef) -> AttributeChoice:
    """Relation, values a and b (gender: male vs female by default, else the commonest vs the rest), minimum count."""
    stored: StoredModel = cache.analysis(model).model
    options = attribute_options(stored.schema, stored.relation_labels)
    relation = links.selectbox("Attribute relation", list(options), format_func=options.__getitem__, key="attribute",
                               what="attribute relation")
    values = cache.attribute_values(model, relation)
    titles, names = value_titles(values), dict(zip(values["label"], values["name"], strict=True))
    labels, gender = list(titles), relation == "gender"
    left, middle, right = st.columns(3)
    value_a = links.selectbox(
        "Value a", labels, format_func=titles.__getitem__, key="value_a", what="value", container=left,
        index=labels.index(stored.schema.male) if gender and stored.schema.male in labels else 0,
    )
    others = [REST] + [v for v in labels if v != value_a]
    value_b = links.selectbox(
        "Value b", others, key="value_b", what="value", container=middle,
        format_func=lambda v: texts.ONE_VS_REST if v == REST else titles[v],
        index=others.index(stored.schema.female) if gender and stored.schema.female in others else 0,
    )
    min_count = links.number(right.slider, "Minimum a- plus b-persons per profession", 0, 500, MIN_PERSONS,
                             key="min_count", what="minimum count")
    return AttributeChoice(relation=relation, value_a=value_a, value_b=None if value_b == REST else value_b,
                           a_name=names[value_a], b_name=texts.REST_NAME if value_b == REST else names[value_b],
                           min_count=min_count)


def associated_tables(top_a: pd.DataFrame, top_b: pd.DataFrame, *, fallback: str | None, a: str, b: str) -> None:
    """The two sides of ``associated_sides`` beside each other; a side without any associated
    profession says so, and lists the professions the step moves least (a shared offset)."""
    for column, side, frame in zip(st.columns(2), ("a", "b"), (top_a, top_b), strict=True):
        value, other = (a, b) if side == "a" else (b, a)
        with column:
            if side == fallback:
                st.subheader(f"Least associated with {md(other)}")
                missing = texts.NO_PROFESSION_FOR_A if side == "a" else texts.NO_PROFESSION_FOR_B
                st.info(missing.format(a=md(a), b=md(b)))
            else:
                st.subheader(f"Most associated with {md(value)}")
            if not frame.empty:
                table(frame, ["name", "bias", "n_a", "n_b"], ids=["label"], names=fisher_names(a, b), digits=4)
