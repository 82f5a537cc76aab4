"""A seeded synthetic people graph at scale (millions of persons), written to a folder.

The small generator (:mod:`kgbias_core.data.synthetic`) builds its graph triple by triple in Python,
which is fine for 3000 persons and hopeless for 2 million. This one draws every relation as whole
numpy arrays (no Python loop per triple or per person) and writes ``train.txt`` (plus small
``valid.txt`` / ``test.txt``), ``entity_names.tsv`` and ``schema.toml``, so that the folder loads with
``--dataset DIR`` / ``--graph DIR`` like any user graph. It reuses the small generator's
vocabulary (occupations with census-like women's shares, countries, genres, first and last names)
and adds Zipf-distributed extra occupations, so that occupation sizes and gender shares are skewed.

Degrees are heavy-tailed on purpose: each person has a Pareto "activity" that sets how many works
they create, awards they win and persons they know, and the persons known are drawn with a Zipf
popularity; cities (birthplaces) also follow a Zipf law. The graph holds exactly ``n_triples``
triples over its three files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from kgbias_core.data.synthetic import COUNTRIES, FIRST_FEMALE, FIRST_MALE, GENRES, LAST, OCCUPATIONS
from kgbias_core.errors import SYNTHETIC_TOO_FEW_TRIPLES, DataError

#: Relations in the order of their draws; relations.tsv is not needed (labels are their own names).
RELATIONS = ("gender", "occupation", "born_in", "nationality", "located_in", "spouse", "created", "genre",
             "award", "knows")
_GENDERS = ("male", "female", "nonbinary")
#: Fixed triples per person on average: gender 1, occupation ~1.5, born_in 1, nationality 1, spouse ~0.3.
FIXED_PER_PERSON = 4.8


@dataclass(frozen=True)
class ScaleConfig:
    """Parameters of the generator; the folder's bytes are a pure function of them."""

    n_persons: int  # persons in the graph
    n_triples: int  # triples over train + valid + test, exactly
    seed: int = 0  # everything is drawn from numpy's Generator(seed)
    female_share: float = 0.30  # share of women among persons (FB15k-237: ~22%)
    other_gender_share: float = 0.005  # persons with the value "nonbinary"
    heldout_share: float = 0.001  # occupation and nationality facts held out as valid + test (at most 20k each)


@dataclass(frozen=True)
class _Vocabulary:
    """Entity ids by block: one contiguous id range per kind, labels built once for all of them."""

    labels: np.ndarray  # [E] str: entity label of each id
    names: np.ndarray  # [E] str: readable name of each id
    start: dict[str, int]  # kind -> first id


def _zipf(n: int, exponent: float) -> np.ndarray:
    """Zipf weights 1 / rank^exponent over ``n`` items, normalised. [n]."""
    weights = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def _draw(rng: np.random.Generator, weights: np.ndarray, size: int) -> np.ndarray:
    """``size`` indices drawn from the (unnormalised) ``weights``: one searchsorted, int64 [size]."""
    cumulative = np.cumsum(weights, dtype=np.float64)
    return np.minimum(np.searchsorted(cumulative, rng.random(size) * cumulative[-1], side="right"), len(weights) - 1)


def _sizes(config: ScaleConfig) -> dict[str, int]:
    """How many entities of each kind: occupations, countries and cities grow with the persons."""
    n = config.n_persons
    return {
        "gender": len(_GENDERS),
        "occupation": max(len(OCCUPATIONS), min(2000, n // 1000)),
        "country": max(len(COUNTRIES), min(200, n // 10_000)),
        "city": max(40, min(20_000, n // 200)),
        "genre": len(GENRES),
        "award": len(GENRES),
        "person": n,
    }


def _occupation_table(config: ScaleConfig, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(popularity [n], women's share [n]): the named occupations first, then Zipf-sized extras with
    Beta-drawn shares (mean ~0.3: most occupations lean male, a few strongly female)."""
    popularity = _zipf(n, 1.1) * n
    share = rng.beta(1.2, 2.5, size=n)
    named = len(OCCUPATIONS)
    # The named occupations keep their census-like shares and are among the most popular ones.
    share[:named] = [s for _, s, _ in OCCUPATIONS]
    popularity[:named] = np.array([p for _, _, p in OCCUPATIONS]) * popularity[:named].mean()
    return popularity, share


def _checked_persons(config: ScaleConfig) -> int:
    """The number of persons, once the triple budget holds every person's fixed facts (with a fifth to spare)."""
    n = config.n_persons
    minimum = int(np.ceil(FIXED_PER_PERSON * 1.2 * n)) + 1000
    if n < 100 or config.n_triples < minimum:
        raise DataError(SYNTHETIC_TOO_FEW_TRIPLES.format(persons=n, triples=config.n_triples,
                                                         minimum=max(minimum, 1000)))
    return n


def generate_scale_graph(config: ScaleConfig, out: Path | str) -> Path:
    """Generate the graph of ``config`` into the folder ``out`` (created); returns it. See the module docstring."""
    n = _checked_persons(config)
    rng = np.random.default_rng(config.seed)
    sizes = _sizes(config)
    start, offset = {}, 0
    for kind, size in sizes.items():
        start[kind] = offset
        offset += size
    # --- persons: gender, activity
    draw = rng.random(n)
    gender = np.where(draw < config.other_gender_share, 2,
                      np.where(draw < config.other_gender_share + config.female_share, 1, 0))  # [n] 0 m 1 f 2 nb
    activity = rng.pareto(1.5, size=n) + 0.05  # [n] heavy-tailed: a few persons are hubs
    person = start["person"] + np.arange(n)
    blocks: list[tuple[str, np.ndarray, np.ndarray]] = []  # (relation, heads, tails)
    blocks.append(("gender", person, start["gender"] + gender))

    # --- occupations: 1-3 per person, P(o | g) ∝ popularity(o) * P(g | o) (Bayes, as the small generator)
    n_occ = sizes["occupation"]
    popularity, share = _occupation_table(config, rng, n_occ)
    n_jobs = 1 + rng.binomial(2, 0.25, size=n)  # [n]
    holder = np.repeat(np.arange(n), n_jobs)  # [k]
    female = gender[holder] == 1
    job = np.empty(len(holder), dtype=np.int64)
    job[female] = _draw(rng, popularity * share, int(female.sum()))
    job[~female] = _draw(rng, popularity * (1 - share), int((~female).sum()))
    pairs = np.unique(holder * n_occ + job)  # drawn with replacement: a repeated job counts once
    occupation_facts = (person[pairs // n_occ], start["occupation"] + pairs % n_occ)

    # --- birthplace (Zipf-sized cities), nationality (mostly the city's country)
    n_city, n_country = sizes["city"], sizes["country"]
    city = _draw(rng, _zipf(n_city, 1.0), n)
    city_country = np.arange(n_city) % n_country
    country = np.where(rng.random(n) < 0.8, city_country[city], _draw(rng, _zipf(n_country, 0.8), n))
    blocks.append(("born_in", person, start["city"] + city))
    nationality_facts = (person, start["country"] + country)
    blocks.append(("located_in", start["city"] + np.arange(n_city), start["country"] + city_country))

    # --- spouses: men and women in random order, paired, both directions
    men, women = rng.permutation(np.flatnonzero(gender == 0)), rng.permutation(np.flatnonzero(gender == 1))
    n_pairs = min(int(0.15 * n), len(men), len(women))
    a, b = person[men[:n_pairs]], person[women[:n_pairs]]
    blocks.append(("spouse", np.concatenate([a, b]), np.concatenate([b, a])))

    # --- the rest of the budget: works (created + genre), awards, then "knows" fills it exactly
    fixed = n + len(pairs) + 2 * n + n_city + 2 * n_pairs
    remaining = config.n_triples - fixed
    n_works = int(0.35 * remaining)
    n_awards = int(0.05 * remaining)
    n_knows = remaining - 2 * n_works - n_awards
    creator = _draw(rng, activity, n_works)  # [W] heavy-tailed number of works per person
    start["work"] = offset
    work = start["work"] + np.arange(n_works)
    genre_share = np.array([s for _, s in GENRES])
    work_female = gender[creator] == 1
    genre = np.empty(n_works, dtype=np.int64)  # the genre of a work leans with its creator's gender
    genre[work_female] = _draw(rng, genre_share, int(work_female.sum()))
    genre[~work_female] = _draw(rng, 1 - genre_share, int((~work_female).sum()))
    blocks.append(("created", person[creator], work))
    blocks.append(("genre", work, start["genre"] + genre))
    winner = _draw(rng, activity, n_awards)
    blocks.append(("award", person[winner], start["award"] + rng.integers(len(GENRES), size=n_awards)))
    popular = rng.permutation(n)  # Zipf popularity over persons in random order: heavy-tailed in-degree
    known = popular[_draw(rng, _zipf(n, 0.9), n_knows)]
    blocks.append(("knows", person[_draw(rng, activity, n_knows)], person[known]))

    # --- held-out occupation / nationality facts: valid and test
    held_facts = [("occupation", *occupation_facts), ("nationality", *nationality_facts)]
    n_held = min(20_000, max(50, int(config.heldout_share * (len(pairs) + n))))
    train, held = _split_heldout(rng, blocks, held_facts, n_held=n_held, n_entities=offset + n_works)
    half = len(held) // 2
    vocabulary = _vocabulary(config, rng, sizes, start, gender, n_works)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for file, rows in (("train.txt", train), ("valid.txt", held[:half]), ("test.txt", held[half:])):
        _write_triples(out / file, rows, vocabulary.labels)
    _write_names(out / "entity_names.tsv", vocabulary)
    (out / "schema.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    return out


#: The schema of every generated graph (the small generator's SYNTHETIC_SCHEMA, as a file).
SCHEMA_TOML = """gender_relation = "gender"
male = "male"
female = "female"
occupation_relation = "occupation"

[[attributes]]
name = "nationality"
relation = "nationality"

[[attributes]]
name = "birthplace"
relation = "born_in"
"""


def _stack(relation: int, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
    """[k, 3] int64 (head, relation, tail) rows."""
    return np.stack([heads, np.full(len(heads), relation), tails], axis=1).astype(np.int64)


def _labels(prefix: str, count: int, width: int) -> np.ndarray:
    """``prefix_000..`` labels, [count] str, formatted by numpy (no Python loop)."""
    if count == 0:
        return np.array([], dtype=str)
    numbers = np.char.zfill(np.arange(count).astype(str), width)
    return np.char.add(prefix, numbers)


def _vocabulary(config: ScaleConfig, rng: np.random.Generator, sizes: dict[str, int], start: dict[str, int],
                gender: np.ndarray, n_works: int) -> _Vocabulary:
    """Labels and readable names of every entity id."""
    del config  # the sizes carry everything the labels need
    named_occupations = [o for o, _, _ in OCCUPATIONS]
    extra = sizes["occupation"] - len(named_occupations)
    occupations = np.concatenate([np.array(named_occupations), _labels("occupation_", extra, 4)])
    occupation_names = np.concatenate([
        np.array([o.replace("_", " ").capitalize() for o in named_occupations]),
        np.char.add("Occupation ", np.arange(extra).astype(str))])
    countries = np.concatenate([np.array(COUNTRIES), _labels("country_", sizes["country"] - len(COUNTRIES), 3)])
    cities = _labels("city_", sizes["city"], 5)
    genres = np.array([g for g, _ in GENRES])
    awards = np.char.add("award_", genres)
    n = sizes["person"]
    persons = _labels("person_", n, 7)
    first_male, first_female = np.array(FIRST_MALE), np.array(FIRST_FEMALE)
    first = np.where(gender == 1, first_female[rng.integers(len(FIRST_FEMALE), size=n)],
                     first_male[rng.integers(len(FIRST_MALE), size=n)])
    person_names = np.char.add(np.char.add(np.char.add(first, " "), np.array(LAST)[rng.integers(len(LAST), size=n)]),
                               np.char.add(" ", np.arange(n).astype(str)))
    works = _labels("work_", n_works, 8)
    labels = np.concatenate([np.array(_GENDERS), occupations, countries, cities, genres, awards, persons, works])
    names = np.concatenate([np.array([g.capitalize() for g in _GENDERS]), occupation_names, countries,
                            np.char.add("City ", np.arange(sizes["city"]).astype(str)),
                            np.char.capitalize(genres), np.char.add(np.char.capitalize(genres), " award"),
                            person_names, np.char.add("Work ", np.arange(n_works).astype(str))])
    return _Vocabulary(labels=labels.astype(object), names=names.astype(object), start=start)


_CHUNK = 1 << 21  # rows written per batch
_WRITE = pa_csv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")


def _write_triples(path: Path, rows: np.ndarray, labels: np.ndarray) -> None:
    """``head<TAB>relation<TAB>tail`` lines through pyarrow's CSV writer (dictionary columns: the labels
    are stored once, the rows as int32 indices)."""
    entity_dictionary = pa.array(labels, type=pa.string())
    relation_dictionary = pa.array(RELATIONS, type=pa.string())
    schema = pa.schema([("head", pa.string()), ("relation", pa.string()), ("tail", pa.string())])
    with pa_csv.CSVWriter(path, schema, write_options=_WRITE) as writer:
        for first in range(0, len(rows), _CHUNK):  # chunks: the strings of 20M rows at once would take GiBs
            chunk = rows[first : first + _CHUNK].astype(np.int32)
            columns = [pa.DictionaryArray.from_arrays(pa.array(chunk[:, i]), dictionary).cast(pa.string())
                       for i, dictionary in enumerate((entity_dictionary, relation_dictionary, entity_dictionary))]
            writer.write_table(pa.table(columns, schema=schema))


def _write_names(path: Path, vocabulary: _Vocabulary) -> None:
    table = pa.table([pa.array(vocabulary.labels, type=pa.string()), pa.array(vocabulary.names, type=pa.string())],
                     names=["id", "name"])
    pa_csv.write_csv(table, path, write_options=_WRITE)


def _split_heldout(
    rng: np.random.Generator,
    blocks: list[tuple[str, np.ndarray, np.ndarray]],
    held_facts: list[tuple[str, np.ndarray, np.ndarray]],
    *,
    n_held: int,
    n_entities: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(train [T, 3], held out [H, 3], shuffled): every block trains; of each kind of held-out fact, ``n_held``
    drawn ones leave training. A held-out fact whose tail never occurs in training (a rare occupation) goes
    back to training, as FB15k-237 keeps only entities seen in training."""
    relation_index = {r: i for i, r in enumerate(RELATIONS)}
    train_parts = [_stack(relation_index[relation], heads, tails) for relation, heads, tails in blocks]
    held_parts = []
    for relation, heads, tails in held_facts:
        both = _stack(relation_index[relation], heads, tails)
        chosen = np.zeros(len(both), dtype=bool)
        chosen[rng.choice(len(both), size=min(n_held, len(both)), replace=False)] = True
        train_parts.append(both[~chosen])
        held_parts.append(both[chosen])
    train = np.concatenate(train_parts)
    held = np.concatenate(held_parts)
    seen = np.zeros(n_entities, dtype=bool)
    seen[train[:, 0]] = True
    seen[train[:, 2]] = True
    known_tail = seen[held[:, 2]]
    return np.concatenate([train, held[~known_tail]]), held[known_tail][rng.permutation(int(known_tail.sum()))]
