"""Which relations and entities of a graph carry gender, occupation and other attributes.

A schema is what turns a bag of triples into a people graph: it names the gender relation and its
male and female values, the occupation relation, and other sensitive attribute relations.
Freebase MIDs (``/people/person/gender``) and Wikidata ids (``P21``, ``Q6581097``) both work:
ids are opaque strings here.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgbias_core.data.text import MAX_ID_LENGTH, read_text
from kgbias_core.errors import (
    BAD_SCHEMA_FILE,
    SCHEMA_ATTRIBUTE_GENDER,
    SCHEMA_ATTRIBUTE_TWICE,
    SCHEMA_BAD_VALUE,
    SCHEMA_NOT_A_TABLE,
    SCHEMA_ROLES_EQUAL,
    SchemaError,
)


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
    def from_dict(cls, data: Any, *, source: str = "schema") -> Schema:
        """The schema a TOML/JSON table describes; every key and value type is checked.

        Raises :class:`SchemaError` naming ``source`` and the key at fault: the top level is
        not a table, a required key is missing or not a non-empty string, a key is unknown (a
        typo would otherwise be ignored), or an attribute is malformed.
        """

        def bad(problem: str) -> SchemaError:
            return SchemaError(BAD_SCHEMA_FILE.format(path=source, problem=problem))

        if not isinstance(data, dict):
            raise bad(SCHEMA_NOT_A_TABLE.format(found=_shown(data)))
        required = ("gender_relation", "male", "female", "occupation_relation")
        unknown = sorted(set(data) - {*required, "attributes"})
        if unknown:
            raise bad(f"unknown key(s) {unknown}; the keys are {[*required, 'attributes']}")
        missing = [k for k in required if k not in data]
        if missing:
            raise bad(f"missing key(s) {missing}")
        for key in required:
            _check_text(data[key], key=key, bad=bad)
        items = data.get("attributes", [])
        if not isinstance(items, list | tuple):
            raise bad(SCHEMA_BAD_VALUE.format(key="attributes", expected="a list of tables", found=_shown(items)))
        attributes = []
        for i, item in enumerate(items):
            where = f"attributes[{i}]"
            if not isinstance(item, dict) or "relation" not in item:
                raise bad(f"{where} needs at least a 'relation' key, found {_shown(item)}")
            extra = sorted(set(item) - {"name", "relation", "person_is_head"})
            if extra:
                raise bad(f"{where} has unknown key(s) {extra}; the keys are ['name', 'relation', 'person_is_head']")
            relation = _check_text(item["relation"], key=f"{where}.relation", bad=bad)
            name = _check_text(item.get("name", relation), key=f"{where}.name", bad=bad)
            person_is_head = item.get("person_is_head", True)
            if not isinstance(person_is_head, bool):
                raise bad(SCHEMA_BAD_VALUE.format(key=f"{where}.person_is_head", expected="true or false",
                                                  found=_shown(person_is_head)))
            attributes.append(AttributeRelation(name=name, relation=relation, person_is_head=person_is_head))
        # Roles that coincide make the measures read the wrong facts (Fisher and intersect read
        # different relations under one name), so they are refused here, not found out downstream.
        if data["male"] == data["female"]:
            raise bad(SCHEMA_ROLES_EQUAL.format(a="male", b="female", value=data["male"]))
        if data["occupation_relation"] == data["gender_relation"]:
            raise bad(SCHEMA_ROLES_EQUAL.format(a="occupation_relation", b="gender_relation",
                                                value=data["gender_relation"]))
        seen: dict[str, str] = {}
        for i, attribute in enumerate(attributes):
            if attribute.name == "gender" or attribute.relation == data["gender_relation"]:
                raise bad(SCHEMA_ATTRIBUTE_GENDER.format(where=f"attributes[{i}]", name=attribute.name))
            if attribute.name in seen:
                raise bad(SCHEMA_ATTRIBUTE_TWICE.format(name=attribute.name, first=seen[attribute.name],
                                                        second=f"attributes[{i}]"))
            seen[attribute.name] = f"attributes[{i}]"
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


def _shown(value: Any) -> str:
    """A value as a message shows it: its type and a short repr."""
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '…' if len(text) > 60 else text}"


def _check_text(value: Any, *, key: str, bad: Callable[[str], SchemaError]) -> str:
    """``value`` if it is a usable id: a non-empty string of at most MAX_ID_LENGTH characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_LENGTH:
        expected = f"a non-empty string of at most {MAX_ID_LENGTH} characters"
        raise bad(SCHEMA_BAD_VALUE.format(key=key, expected=expected, found=_shown(value)))
    return value


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
    text = read_text(path)
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
