"""Which relations and entities of a graph carry gender, occupation and other attributes.

A schema is what turns a bag of triples into a people graph: it names the gender relation and its
male and female values, the occupation relation, and other sensitive attribute relations.
Freebase MIDs (``/people/person/gender``) and Wikidata ids (``P21``, ``Q6581097``) both work:
ids are opaque strings here.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgbias_core.errors import BAD_SCHEMA_FILE, SchemaError


@dataclass(frozen=True)
class AttributeRelation:
    """A sensitive attribute stored as a relation, e.g. nationality or religion."""

    name: str  # what the UI calls it ("nationality")
    relation: str  # relation label in the graph
    person_is_head: bool = True  # False for value -> person relations (ethnicity/people)


@dataclass(frozen=True)
class Schema:
    """The people-graph roles of a knowledge graph's relations and entities."""

    gender_relation: str  # person --gender--> male|female|other value
    male: str  # entity label of the male gender value
    female: str  # entity label of the female gender value
    occupation_relation: str  # person --occupation--> occupation
    attributes: tuple[AttributeRelation, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "schema") -> Schema:
        required = ("gender_relation", "male", "female", "occupation_relation")
        missing = [k for k in required if not isinstance(data.get(k), str) or not data.get(k)]
        if missing:
            raise SchemaError(
                BAD_SCHEMA_FILE.format(path=source, problem=f"missing or empty key(s) {missing}")
            )
        attributes = []
        for i, item in enumerate(data.get("attributes", ()) or ()):
            if not isinstance(item, dict) or "relation" not in item:
                raise SchemaError(
                    BAD_SCHEMA_FILE.format(
                        path=source, problem=f"attribute {i} needs at least a 'relation' key"
                    )
                )
            attributes.append(
                AttributeRelation(
                    name=str(item.get("name", item["relation"])),
                    relation=str(item["relation"]),
                    person_is_head=bool(item.get("person_is_head", True)),
                )
            )
        return cls(
            gender_relation=data["gender_relation"],
            male=data["male"],
            female=data["female"],
            occupation_relation=data["occupation_relation"],
            attributes=tuple(attributes),
        )

    def attribute(self, name_or_relation: str) -> AttributeRelation:
        """The attribute by UI name or relation label; gender is always available."""
        if name_or_relation in ("gender", self.gender_relation):
            return AttributeRelation("gender", self.gender_relation, True)
        for attr in self.attributes:
            if name_or_relation in (attr.name, attr.relation):
                return attr
        return AttributeRelation(name_or_relation, name_or_relation, True)


def load_schema(path: Path | str) -> Schema:
    """Read a schema from a TOML or JSON file (keys as the fields of :class:`Schema`).

    Example TOML for Wikidata ids::

        gender_relation = "P21"
        male = "Q6581097"
        female = "Q6581072"
        occupation_relation = "P106"
        [[attributes]]
        name = "nationality"
        relation = "P27"
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaError(BAD_SCHEMA_FILE.format(path=path, problem=exc.strerror)) from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SchemaError(BAD_SCHEMA_FILE.format(path=path, problem=str(exc))) from exc
    return Schema.from_dict(data, source=str(path))


FB15K237_SCHEMA = Schema(
    gender_relation="/people/person/gender",
    male="/m/05zppz",
    female="/m/02zsn",
    occupation_relation="/people/person/profession",
    attributes=(
        AttributeRelation("nationality", "/people/person/nationality"),
        AttributeRelation("religion", "/people/person/religion"),
        AttributeRelation("ethnicity", "/people/ethnicity/people", person_is_head=False),
        AttributeRelation("languages", "/people/person/languages"),
    ),
)

FB13_SCHEMA = Schema(
    gender_relation="gender",
    male="male",
    female="female",
    occupation_relation="profession",
    attributes=(
        AttributeRelation("nationality", "nationality"),
        AttributeRelation("religion", "religion"),
        AttributeRelation("ethnicity", "ethnicity"),
    ),
)

SYNTHETIC_SCHEMA = Schema(
    gender_relation="gender",
    male="male",
    female="female",
    occupation_relation="occupation",
    attributes=(
        AttributeRelation("nationality", "nationality"),
        AttributeRelation("birthplace", "born_in"),
    ),
)
