"""Knowledge graphs: reading triples files, one id mapping for all splits, schema checks.

A :class:`KnowledgeGraph` holds PyKEEN ``TriplesFactory`` objects for the splits, all sharing
one entity/relation id mapping (built over every split, so that valid/test triples never lose
an entity), readable names, the schema, and a SHA-256 over the files it came from.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from pykeen.triples import TriplesFactory

from kgbias_core.data.schema import Schema
from kgbias_core.data.text import check_id, read_columns, text_lines
from kgbias_core.errors import (
    EMPTY_FIELD,
    EMPTY_FILE,
    MALFORMED_LINE,
    MALFORMED_NAME_LINE,
    NO_GENDER_FACTS,
    UNKNOWN_SCHEMA_ENTITY,
    UNKNOWN_SCHEMA_RELATION,
    DataError,
    SchemaError,
)
from kgbias_core.types import BoolTensor, LongTensor

#: Training triples from which a graph counts as large (FB15k-237 has 272k). The papers' defaults
#: (e.g. Schwertmann's 100 test facts per class) apply from there; a smaller graph's test split and
#: value groups hold too few persons for them, so the audits default to smaller minimums.
LARGE_GRAPH = 100_000


class Gender(IntEnum):
    """A person's gender as every measure sees it (the code stored per entity by :func:`gender_of`)."""

    UNKNOWN = 0  # no gender fact at all
    MALE = 1  # exactly one gender fact, with the schema's male value
    FEMALE = 2  # exactly one gender value, the schema's female value
    OTHER = 3  # a non-binary value, or several values (ambiguous): kept out of binary measures, reported


def relation_facts(triples: LongTensor, relation: int, *, n_entities: int) -> LongTensor:
    """The distinct (head, tail) pairs of ``relation``, sorted by head then tail. [n, 3] -> [k, 2].

    ``torch.unique(dim=0)`` would do, 10x slower at millions of facts: one int64 key per pair instead.
    """
    pairs = triples[triples[:, 1] == relation]
    keys = torch.unique(pairs[:, 0] * n_entities + pairs[:, 2])  # [k] sorted
    return torch.stack([keys // n_entities, keys % n_entities], dim=1)


def gender_of(
    triples: LongTensor, *, gender_relation: int, male: int, female: int, n_entities: int
) -> LongTensor:
    """The one reader of gender facts: a :class:`Gender` code per entity. [n, 3] -> [E] (int64).

    A person with a single distinct gender value gets MALE, FEMALE or OTHER (a non-binary value);
    a person with two or more distinct values (e.g. both male and female, as 29 persons of FB13)
    is OTHER, never one of the two at random. Duplicate identical facts count once. Every measure,
    table and fairness report reads gender through this function, so they cannot disagree.
    """
    facts = relation_facts(triples, gender_relation, n_entities=n_entities)  # [k, 2] (person, value)
    persons, values = facts[:, 0], facts[:, 1]
    n_values = torch.bincount(persons, minlength=n_entities)  # [E] distinct gender values per entity
    code = torch.full((n_entities,), int(Gender.OTHER), dtype=torch.long, device=triples.device)
    single = n_values[persons] == 1
    value_code = torch.full_like(values, int(Gender.OTHER))
    value_code[values == male] = int(Gender.MALE)
    value_code[values == female] = int(Gender.FEMALE)
    code[persons[single]] = value_code[single]
    code[n_values == 0] = int(Gender.UNKNOWN)
    return code

AMBIGUOUS_GENDER = "ambiguous (several values)"

def person_mask(triples: LongTensor, *, gender_relation: int, occupation_relation: int, n_entities: int) -> BoolTensor:
    """Which entities are persons per the schema: the head of a gender fact or of an occupation fact. [n, 3] -> [E].

    An occupation fact alone makes a person (FB15k-237's Carl Reiner has his gender fact only in valid.txt):
    gender alone would take the occupation node for the person of "Carl Reiner —profession→ Actor".
    """
    mask = torch.zeros(n_entities, dtype=torch.bool, device=triples.device)
    facts = triples[(triples[:, 1] == gender_relation) | (triples[:, 1] == occupation_relation)]
    mask[facts[:, 0]] = True
    return mask


#: The person of a triple that has none (:func:`triple_persons`).
NO_PERSON = -1


def triple_persons(triples: LongTensor, is_person: BoolTensor) -> LongTensor:
    """The person of each triple: its head if that is a person, else its tail if that is one, else
    :data:`NO_PERSON` ("Actor —people with this profession→ Carl Reiner" is Carl Reiner's). [n, 3] -> [n]."""
    heads, tails = triples[:, 0], triples[:, 2]
    person = torch.where(is_person[heads], heads, tails)
    return torch.where(is_person[person], person, torch.full_like(person, NO_PERSON))



@dataclass(frozen=True)
class GenderReport:
    """Counts of gender facts; non-binary values are kept out of binary measures, but reported."""

    n_male: int
    n_female: int
    other_values: Mapping[str, int]  # gender value label -> number of persons


@dataclass(frozen=True)
class KnowledgeGraph:
    """A knowledge graph ready for training: splits over one id mapping, names, schema."""

    name: str
    training: TriplesFactory
    validation: TriplesFactory | None
    testing: TriplesFactory | None
    schema: Schema
    entity_names: Mapping[str, str] = field(default_factory=dict)  # label -> readable name
    data_hash: str = ""  # sha256 over the source files (or the generator's parameters)
    inverse_occupation: bool = False  # training split extended by with_inverse_occupation (recorded in the model)

    @property
    def entity_to_id(self) -> Mapping[str, int]:
        return self.training.entity_to_id

    @property
    def relation_to_id(self) -> Mapping[str, int]:
        return self.training.relation_to_id

    def entity_name(self, label: str) -> str:
        return display_name(self.entity_names.get(label, label))

    def gender_report(self) -> GenderReport:
        """How many persons have each gender (:func:`gender_of`) in the training triples.

        ``other_values`` counts the persons with one non-binary value by that value, and the
        persons with several values under "ambiguous (several values)".
        """
        mapped = self.training.mapped_triples
        relation = self.relation_to_id.get(self.schema.gender_relation, -1)
        ids = self.entity_to_id
        codes = gender_of(
            mapped, gender_relation=relation, male=ids.get(self.schema.male, -1),
            female=ids.get(self.schema.female, -1), n_entities=self.training.num_entities,
        )
        id_to_entity = self.training.entity_id_to_label  # PyKEEN's own inverse: no copy of millions of labels
        facts = relation_facts(mapped, relation, n_entities=self.training.num_entities)
        single_other = facts[codes[facts[:, 0]] == int(Gender.OTHER)]
        n_values = torch.bincount(single_other[:, 0], minlength=self.training.num_entities)
        others = Counter(id_to_entity[v] for v in single_other[n_values[single_other[:, 0]] == 1, 1].tolist())
        n_ambiguous = int((n_values > 1).sum())
        if n_ambiguous:
            others[AMBIGUOUS_GENDER] = n_ambiguous
        return GenderReport(
            n_male=int((codes == int(Gender.MALE)).sum()),
            n_female=int((codes == int(Gender.FEMALE)).sum()),
            other_values=dict(others),
        )


def display_name(name: str) -> str:
    """Strip the "-GB" suffix that KG-BERT's copy of the Freebase names carries."""
    return name[:-3] if name.endswith("-GB") else name


def _tsv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, tab-separated fields) of every non-blank line of a UTF-8 file (:func:`text_lines`)."""
    for number, line in text_lines(path):
        if line.strip():
            yield number, line.split("\t")


def read_triples(path: Path) -> np.ndarray:
    """Read a ``head<TAB>relation<TAB>tail`` file into an array of str objects, shape [n, 3].

    Blank lines are skipped; every other line must have exactly three non-empty columns of at
    most :data:`~kgbias_core.data.text.MAX_ID_LENGTH` characters, else :class:`DataError` names
    the file and line. An object array, not numpy's fixed-width str: one long id would make every
    cell as wide as it (a 1 MB id in FB15k-237's 272k rows asked for 68 GiB).
    """
    rows: list[list[str]] = []
    for number, parts in _tsv_rows(path):
        if len(parts) != 3:
            raise DataError(MALFORMED_LINE.format(path=path, line=number, found=len(parts)))
        for column, part in enumerate(parts, start=1):
            if not part.strip():
                raise DataError(EMPTY_FIELD.format(path=path, line=number, column=column))
            check_id(part.strip(), path=path, line=number, column=column)
        rows.append([p.strip() for p in parts])
    if not rows:
        raise DataError(EMPTY_FILE.format(path=path))
    triples = np.empty((len(rows), 3), dtype=object)
    triples[:] = rows
    return triples


_TRIPLE_COLUMNS = ("head", "relation", "tail")


def read_triple_columns(path: Path) -> pa.Table:
    """The triples of a ``head<TAB>relation<TAB>tail`` file as a table of three string columns.

    Columnar (:func:`read_columns`) where the file allows; otherwise :func:`read_triples`, whose
    errors name the file and line.
    """
    table = read_columns(Path(path), columns=_TRIPLE_COLUMNS, id_columns=_TRIPLE_COLUMNS, nonempty=True,
                         stripped=True)
    return table if table is not None else _label_table(read_triples(path))


def _label_table(triples: np.ndarray) -> pa.Table:
    """[n, 3] labels (str or object array) -> a table of three string columns."""
    return pa.table([pa.array(np.asarray(triples[:, i], dtype=object), type=pa.string()) for i in range(3)],
                    names=list(_TRIPLE_COLUMNS))


def read_names(path: Path) -> dict[str, str]:
    """Read an ``id<TAB>name`` file; extra columns or an over-long id are an error naming the line."""
    table = read_columns(Path(path), columns=("id", "name"), id_columns=("id",), nonempty=False, stripped=True)
    if table is not None:
        return dict(zip(table["id"].to_pylist(), table["name"].to_pylist(), strict=True))
    names: dict[str, str] = {}
    for number, parts in _tsv_rows(path):
        if len(parts) != 2:
            raise DataError(MALFORMED_NAME_LINE.format(path=path, line=number, found=len(parts)))
        names[check_id(parts[0].strip(), path=path, line=number, column=1)] = parts[1].strip()
    return names


def hash_files(paths: Iterable[Path]) -> str:
    """SHA-256 over the files' names and bytes, in the given order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).name.encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def from_labeled_triples(
    *,
    name: str,
    train: np.ndarray | pa.Table,
    schema: Schema,
    valid: np.ndarray | pa.Table | None = None,
    test: np.ndarray | pa.Table | None = None,
    entity_names: Mapping[str, str] | None = None,
    data_hash: str = "",
) -> KnowledgeGraph:
    """Build a graph from labelled triples, one id mapping over all splits, and check the schema.

    Each split is an [n, 3] array of labels or a table of three string columns
    (:func:`read_triple_columns`). Ids are the labels' ranks in code-point order, entities over
    heads and tails of every split. Mapping is columnar (pyarrow's ``index_in``), and PyKEEN's
    factories are built from the mapped ids: its labelled constructor maps row by row in Python.
    """
    tables = [None if s is None or not len(s) else (s if isinstance(s, pa.Table) else _label_table(s))
              for s in (train, valid, test)]
    present = [t for t in tables if t is not None]
    entities, entity_ids = _encode([t[column] for t in present for column in ("head", "tail")])
    relations, relation_ids = _encode([t["relation"] for t in present])
    entity_to_id = {e: i for i, e in enumerate(entities.to_pylist())}
    relation_to_id = {r: i for i, r in enumerate(relations.to_pylist())}
    mapped = iter([(entity_ids[2 * i], relation_ids[i], entity_ids[2 * i + 1]) for i in range(len(present))])

    def factory(table: pa.Table | None) -> TriplesFactory | None:
        if table is None:
            return None
        head, relation, tail = next(mapped)
        # kgbias never adds inverse triples, so a user's relation ending in "_inverse" stays data, as
        # filter_out_candidate_inverse_relations=False keeps it in the labelled constructor.
        return TriplesFactory(mapped_triples=_unique_rows(head, relation, tail, n_entities=len(entities),
                                                          n_relations=len(relations)),
                              entity_to_id=entity_to_id, relation_to_id=relation_to_id)

    graph = KnowledgeGraph(
        name=name,
        training=factory(tables[0]),
        validation=factory(tables[1]),
        testing=factory(tables[2]),
        schema=schema,
        entity_names=dict(entity_names or {}),
        data_hash=data_hash,
    )
    check_schema(graph)
    return graph


def _unique_rows(head: np.ndarray, relation: np.ndarray, tail: np.ndarray, *, n_entities: int,
                 n_relations: int) -> torch.Tensor:
    """The distinct (h, r, t) rows in lexicographic order, as PyKEEN's labelled constructor returns
    them (``np.unique(axis=0)``). [n] x 3 -> [m, 3] int64. One int64 key per row sorts ~10x faster than
    numpy's row-wise unique; rows whose key could overflow take numpy's way."""
    if n_entities * n_entities * n_relations < 2**62:
        keys = np.sort((head * n_relations + relation) * n_entities + tail)  # [n]; np.unique hashes first: 10x slower
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]  # [m] distinct, sorted
        head, rest = np.divmod(keys, n_relations * n_entities)
        relation, tail = np.divmod(rest, n_entities)
        return torch.from_numpy(np.stack([head, relation, tail], axis=1))
    return torch.from_numpy(np.unique(np.stack([head, relation, tail], axis=1), axis=0))


def _encode(columns: list[pa.ChunkedArray]) -> tuple[pa.Array, list[np.ndarray]]:
    """The distinct strings of all ``columns`` in code-point order (UTF-8 byte order, as Python's
    ``sorted``), and each column's ids into them (int64 arrays).

    One hash pass over every cell (``dictionary_encode`` of the columns joined), then a sort of the
    distinct values only: ``index_in`` per column would hash the whole vocabulary once per column.
    """
    lengths = [len(column) for column in columns]
    joined = pa.concat_arrays([chunk.cast(pa.large_string()) for column in columns for chunk in column.chunks])
    encoded = pc.dictionary_encode(joined)
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ids = rank[encoded.indices.to_numpy()]
    bounds = np.cumsum([0, *lengths])
    return encoded.dictionary.take(order), [ids[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


#: Appended to the occupation relation's label to name its inverse (:func:`with_inverse_occupation`).
INVERSE_SUFFIX = " (inverse)"


def with_inverse_occupation(graph: KnowledgeGraph) -> KnowledgeGraph:
    """The graph with (o, r_p⁻¹, s) added to its training split for every (s, r_p, o) in it.

    Du et al.'s FB5M has the inverse of the profession relation (people_with_this_profession) and
    most of its top-influence triples use one of the two (Du §3.1); FB15k-237 and FB13 have none.
    Off by default. The inverse is named ``r_p`` + :data:`INVERSE_SUFFIX`; validation and test keep
    their triples (an inverse of a test fact in training would leak it); the data hash changes, so
    no result of the plain graph is mistaken for this one's.
    """
    relation = graph.schema.occupation_relation
    train = graph.training.triples  # [n, 3] labels
    facts = train[train[:, 1] == relation]
    inverse = np.stack([facts[:, 2], np.full(len(facts), relation + INVERSE_SUFFIX, dtype=object), facts[:, 0]], axis=1)
    extended = from_labeled_triples(
        name=graph.name, train=np.concatenate([train.astype(object), inverse]).astype(str), schema=graph.schema,
        valid=None if graph.validation is None else graph.validation.triples,
        test=None if graph.testing is None else graph.testing.triples,
        entity_names=graph.entity_names,
        data_hash=hashlib.sha256(f"{graph.data_hash}+inverse-occupation".encode()).hexdigest(),
    )
    return replace(extended, inverse_occupation=True)


def check_schema(graph: KnowledgeGraph) -> None:
    """Raise :class:`SchemaError` if the schema's relations/entities are absent from the graph."""
    schema = graph.schema
    present = set(graph.training.mapped_triples[:, 1].unique().tolist())
    for role, relation in (
        ("gender", schema.gender_relation),
        ("occupation", schema.occupation_relation),
    ):
        if graph.relation_to_id.get(relation, -1) not in present:
            raise SchemaError(
                UNKNOWN_SCHEMA_RELATION.format(role=role, relation=relation, graph=graph.name)
            )
    for attribute in schema.attributes:  # an absent one would be an empty, silently wrong analysis
        if graph.relation_to_id.get(attribute.relation, -1) not in present:
            raise SchemaError(UNKNOWN_SCHEMA_RELATION.format(role=f"attribute {attribute.name!r}",
                                                             relation=attribute.relation, graph=graph.name))
    for role, entity in (("male", schema.male), ("female", schema.female)):
        if entity not in graph.entity_to_id:
            raise SchemaError(UNKNOWN_SCHEMA_ENTITY.format(role=role, entity=entity, graph=graph.name))
    report = graph.gender_report()
    if report.n_male + report.n_female == 0:
        raise SchemaError(
            NO_GENDER_FACTS.format(
                graph=graph.name,
                relation=schema.gender_relation,
                male=schema.male,
                female=schema.female,
            )
        )


def load_user_graph(
    path: Path | str, *, schema: Schema, names: Path | str | None = None
) -> KnowledgeGraph:
    """A user's graph: one triples TSV, or a directory with train.txt [valid.txt test.txt].

    ``names`` is an optional ``id<TAB>name`` file; inside a directory, ``entity_names.tsv`` is
    picked up by default.
    """
    path = Path(path)
    if path.is_dir():
        files = [path / "train.txt"] + [
            path / f for f in ("valid.txt", "test.txt") if (path / f).is_file()
        ]
        if names is None and (path / "entity_names.tsv").is_file():
            names = path / "entity_names.tsv"
    else:
        files = [path]
    splits = [read_triple_columns(f) for f in files]
    splits += [None] * (3 - len(splits))
    return from_labeled_triples(
        name=path.stem if path.is_file() else path.name,
        train=splits[0],
        valid=splits[1],
        test=splits[2],
        schema=schema,
        entity_names=read_names(Path(names)) if names else {},
        data_hash=hash_files(files),
    )
