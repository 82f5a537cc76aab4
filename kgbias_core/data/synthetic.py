"""A seeded synthetic people graph: the offline default and the test fixture.

Persons have a gender, one to three occupations drawn with a realistic gender skew, a
nationality, a birthplace (a city located in a country), works they created (a heavy-tailed
number, so degrees differ by orders of magnitude), genres of those works that lean by gender,
awards, and spouses. Gender therefore reaches an occupation both directly (the skew) and through
two-hop structure (works, genres, spouses), as in real knowledge graphs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np

from kgbias_core.data.graph import KnowledgeGraph, from_labeled_triples
from kgbias_core.data.schema import SYNTHETIC_SCHEMA

# (occupation, share of women, relative popularity): shares loosely follow US census figures.
OCCUPATIONS: tuple[tuple[str, float, float], ...] = (
    ("nurse", 0.90, 1.0),
    ("secretary", 0.85, 0.6),
    ("dancer", 0.80, 0.6),
    ("model", 0.80, 0.5),
    ("librarian", 0.75, 0.4),
    ("teacher", 0.70, 1.2),
    ("singer", 0.55, 1.5),
    ("actor", 0.45, 3.0),
    ("writer", 0.45, 1.5),
    ("journalist", 0.45, 0.8),
    ("physician", 0.40, 0.8),
    ("lawyer", 0.40, 0.8),
    ("professor", 0.30, 0.8),
    ("politician", 0.25, 1.5),
    ("film_director", 0.15, 0.8),
    ("mathematician", 0.15, 0.4),
    ("engineer", 0.12, 0.6),
    ("soldier", 0.10, 0.5),
    ("pilot", 0.08, 0.3),
    ("footballer", 0.03, 1.0),
)
COUNTRIES = ("Aland", "Borovia", "Caldera", "Dunmore", "Elbonia", "Freedonia", "Genovia", "Hyrule")
GENRES = (  # (genre, share of women among its creators)
    ("romance", 0.75),
    ("drama", 0.55),
    ("comedy", 0.45),
    ("documentary", 0.40),
    ("thriller", 0.30),
    ("war", 0.15),
    ("sports", 0.10),
)
FIRST_MALE = ("Adam", "Boris", "Carl", "David", "Emil", "Felix", "Georg", "Hugo", "Ivan", "Jonas")
FIRST_FEMALE = ("Anna", "Berta", "Clara", "Dora", "Eva", "Frida", "Greta", "Hanna", "Ida", "Julia")
LAST = ("Alder", "Birch", "Cedar", "Dale", "Elm", "Fern", "Glenn", "Heath", "Ivy", "Juniper",
        "Kestrel", "Linden", "Moss", "North", "Oak", "Pine", "Quill", "Reed", "Stone", "Thorn")


@dataclass(frozen=True)
class SyntheticConfig:
    """Parameters of the generator; the graph is a pure function of them."""

    n_persons: int = 3000  # persons in the graph
    female_share: float = 0.30  # share of women among persons (FB15k-237: ~22%)
    other_gender_share: float = 0.005  # persons with a gender value neither male nor female
    n_cities: int = 40  # birthplaces, each located in one of the countries
    works_per_person: float = 1.5  # mean of the heavy-tailed number of works per person
    spouse_share: float = 0.3  # share of persons with a spouse in the graph
    test_share: float = 0.1  # occupation and nationality facts held out as valid+test
    seed: int = 0  # everything is drawn from numpy's Generator(seed)


def generate_people_graph(config: SyntheticConfig = SyntheticConfig()) -> KnowledgeGraph:
    """Generate the synthetic people graph described in the module docstring."""
    rng = np.random.default_rng(config.seed)
    triples: list[tuple[str, str, str]] = []
    heldout: list[tuple[str, str, str]] = []  # facts that may go to valid/test
    names: dict[str, str] = {}

    cities = _places(config.n_cities, triples, names)

    shares = np.array([s for _, s, _ in OCCUPATIONS])
    popularity = np.array([p for _, _, p in OCCUPATIONS])
    genre_shares = np.array([s for _, s in GENRES])
    persons = [f"person_{i:05d}" for i in range(config.n_persons)]
    genders: list[str] = []
    work_id = 0
    for person in persons:
        draw = rng.random()
        if draw < config.other_gender_share:
            gender = "nonbinary"
        elif draw < config.other_gender_share + config.female_share:
            gender = "female"
        else:
            gender = "male"
        genders.append(gender)
        first = FIRST_FEMALE if gender == "female" else FIRST_MALE
        names[person] = f"{rng.choice(first)} {rng.choice(LAST)} {person[-5:]}"
        triples.append((person, "gender", gender))

        # P(o | g) ∝ popularity(o) * P(g | o) / P(g): Bayes from the census-like shares.
        share = shares if gender == "female" else 1.0 - shares
        weights = popularity * share
        weights = weights / weights.sum()
        n_occupations = 1 + rng.binomial(2, 0.25)
        chosen = rng.choice(len(OCCUPATIONS), size=n_occupations, replace=False, p=weights)
        for index in chosen:
            heldout.append((person, "occupation", OCCUPATIONS[index][0]))

        city = cities[rng.integers(len(cities))]
        triples.append((person, "born_in", city))
        # Nationality mostly follows the birthplace's country.
        country = COUNTRIES[cities.index(city) % len(COUNTRIES)]
        if rng.random() < 0.2:
            country = COUNTRIES[rng.integers(len(COUNTRIES))]
        heldout.append((person, "nationality", country))

        # Heavy-tailed creative output: a few persons have dozens of works.
        n_works = min(int(rng.pareto(1.6) * config.works_per_person * 0.6), 60)
        gshare = genre_shares if gender == "female" else 1.0 - genre_shares
        for _ in range(n_works):
            work = f"work_{work_id:05d}"
            work_id += 1
            names[work] = f"Work {work_id}"
            triples.append((person, "created", work))
            genre = GENRES[rng.choice(len(GENRES), p=gshare / gshare.sum())][0]
            triples.append((work, "genre", genre))
            if rng.random() < 0.1:
                triples.append((person, "award", f"award_{genre}"))
                names[f"award_{genre}"] = f"{genre.capitalize()} award"

    triples.extend(_spouses(rng, persons, genders, share=config.spouse_share))
    train, rest = _split(rng, triples, heldout, test_share=config.test_share)
    half = len(rest) // 2
    params = json.dumps(asdict(config), sort_keys=True)
    return from_labeled_triples(
        name="synthetic",
        train=train,
        valid=rest[:half],
        test=rest[half:],
        schema=SYNTHETIC_SCHEMA,
        entity_names=names,
        data_hash=hashlib.sha256(f"synthetic-v1 {params}".encode()).hexdigest(),
    )


def _places(n_cities: int, triples: list[tuple[str, str, str]], names: dict[str, str]) -> list[str]:
    """The cities (each located in a country), appended to ``triples``; the readable names of the cities,
    countries, occupations and genres into ``names``. Draws nothing: the random stream starts with the persons."""
    cities = [f"city_{i:02d}" for i in range(n_cities)]
    for i, city in enumerate(cities):
        triples.append((city, "located_in", COUNTRIES[i % len(COUNTRIES)]))
        names[city] = f"City {i}"
    for country in COUNTRIES:
        names[country] = country
    for occupation, _, _ in OCCUPATIONS:
        names[occupation] = occupation.replace("_", " ").capitalize()
    for genre, _ in GENRES:
        names[genre] = genre.capitalize()
    return cities


def _spouses(rng: np.random.Generator, persons: list[str], genders: list[str], *, share: float,
             ) -> list[tuple[str, str, str]]:
    """Spouses: pairs of persons, mostly of different gender, both directions of each pair."""
    order = rng.permutation(len(persons))
    n_pairs = int(share * len(persons) / 2)
    males = [i for i in order if genders[i] == "male"]
    females = [i for i in order if genders[i] == "female"]
    pairs = list(zip(males, females, strict=False))[:n_pairs]
    return [t for a, b in pairs for t in ((persons[a], "spouse", persons[b]), (persons[b], "spouse", persons[a]))]


def _split(rng: np.random.Generator, triples: list[tuple[str, str, str]], heldout: list[tuple[str, str, str]], *,
           test_share: float) -> tuple[np.ndarray, np.ndarray]:
    """(train, held out): a ``test_share`` of the facts that may be held out leave training; of those, only the
    facts whose entities occur in training are kept, as in FB15k-237."""
    heldout_array = np.asarray(heldout, dtype=str)
    held = rng.random(len(heldout_array)) < test_share
    train = np.concatenate([np.asarray(triples, dtype=str), heldout_array[~held]])
    rest = heldout_array[held]
    known = set(train[:, 0]) | set(train[:, 2])
    return train, rest[[h in known and t in known for h, _, t in rest]]
