"""The generated world and its questions: determinism, disjoint splits, correct answers."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from agentgym.envs.search.searchqa import (
    SEEDS_PER_TRAIN_WORLD,
    TEST_WORLD_SEED,
    VALID_WORLD_SEED,
    SearchQAEnv,
    world_of,
)
from agentgym.simulators.search import QUESTION_MIX, build_world, get_encyclopedia, make_question
from agentgym.simulators.search.names import ALPHABETS
from agentgym.simulators.search.world import FILLER_WORDS, WORLD_SIZES

TRAIN_WORLDS = [world_of(s) for s in range(0, 4 * SEEDS_PER_TRAIN_WORLD, SEEDS_PER_TRAIN_WORLD)]


@pytest.fixture(scope="module")
def enc():
    return get_encyclopedia(0, 0)


def test_task_seeds_map_to_four_train_worlds_and_one_test_world():
    assert TRAIN_WORLDS == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert world_of(SEEDS_PER_TRAIN_WORLD - 1) == (0, 0)
    assert world_of(99_999) == (3, 0)
    assert world_of(100_000) == world_of(100_999) == (TEST_WORLD_SEED, 1)
    assert world_of(101_000) == world_of(101_999) == (VALID_WORLD_SEED, 1)
    env = SearchQAEnv(split="valid")
    ids = {split: set(env.task_ids(split)) for split in ("train", "test", "valid")}
    assert len(ids["valid"]) == len(ids["test"]) == 1000 and len(ids["train"]) == 100_000
    assert not ids["valid"] & ids["test"] and not ids["valid"] & ids["train"]
    assert env.reset(seed=0)[1]["task_id"] in ids["valid"]


def test_same_seed_same_world_articles_and_questions():
    a, b = build_world(5), build_world(5)
    assert [(e.title, e.year, e.rel, e.extra) for e in a.entities] == [
        (e.title, e.year, e.rel, e.extra) for e in b.entities
    ]
    assert [e.title for e in build_world(6).entities] != [e.title for e in a.entities]
    enc = get_encyclopedia(0, 0)
    q1, q2 = make_question(enc.world, 77), make_question(enc.world, 77)
    assert q1 == q2 and make_question(enc.world, 78) != q1


def test_world_has_a_few_thousand_uniquely_titled_entities(enc):
    world = enc.world
    assert len(world.entities) == sum(WORLD_SIZES.values()) == 3395
    assert len({e.title for e in world.entities}) == len(world.entities)
    # adaptations share a name with their novel and get disambiguated titles
    films = [e for e in world.entities if e.kind == "film" and "adapts" in e.extra]
    assert len(films) > 30
    film = films[0]
    assert film.title == f"{film.name} (film)"
    assert world[film.extra["adapts"][0]].title == f"{film.name} (novel)"
    assert enc.open(film.name).ambiguous


@pytest.mark.parametrize("held_out", [TEST_WORLD_SEED, VALID_WORLD_SEED])
def test_held_out_world_names_are_disjoint_from_every_train_world(held_out):
    test_world = build_world(held_out, 1)
    test_names = {e.name for e in test_world.entities}
    test_words = {w for n in test_names for w in n.split()}
    for seed, alphabet in TRAIN_WORLDS:
        train_names = {e.name for e in build_world(seed, alphabet).entities}
        assert not train_names & test_names
        train_words = {w for n in train_names for w in n.split()}
        # the invented words differ; only the English fillers of name patterns ("The",
        # "Rising") occur in both, and every other word starts with its world's alphabet
        assert train_words & test_words <= FILLER_WORDS
        assert all(w.lower().startswith(ALPHABETS[1]) for w in test_words - FILLER_WORDS)
        assert all(w.lower().startswith(ALPHABETS[0]) for w in train_words - FILLER_WORDS)


def _follow(world, start, chain):
    current = world[start]
    for relation in chain:
        if relation == "year":
            return str(current.year)
        current = world[current.rel[relation]]
    return current.name


def test_chain_answers_follow_the_relations_and_are_stated_in_the_last_article(enc):
    world = enc.world
    kinds = collections.Counter()
    for seed in range(300):
        q = make_question(world, seed)
        kinds[(q.kind, q.hops)] += 1
        if q.kind == "comparison":
            continue
        assert len(q.chain) == q.hops
        assert q.answer == _follow(world, q.subjects[0], q.chain)
        assert q.answer in enc.article_of(q.needed[-1]).text
        assert world[q.subjects[0]].name in q.text and q.answer not in q.text
    assert set(kinds) == {
        ("bridge", 2),
        ("comparison", 2),
        ("compositional", 3),
        ("compositional", 4),
    }


def test_comparison_answers_are_correct_by_the_world_facts(enc):
    world = enc.world
    styles = collections.Counter()
    for seed in range(1500):
        q = make_question(world, seed)
        if q.kind != "comparison":
            continue
        a, b = (world[s] for s in q.subjects)
        assert a.id != b.id and a.name in q.text and b.name in q.text
        if "same country" in q.text:
            country = [world[world[p.id].rel["born_in"]].rel["located_in"] for p in (a, b)]
            expected = "yes" if country[0] == country[1] else "no"
        elif "same person" in q.text:
            expected = "yes" if a.rel["directed_by"] == b.rel["directed_by"] else "no"
        else:
            assert a.year != b.year and a.kind == b.kind
            expected = a.name if a.year < b.year else b.name
            for e in (a, b):  # the years to compare are in the articles
                assert str(e.year) in enc.article_of(e.id).text
        styles[expected if expected in ("yes", "no") else "name"] += 1
        assert q.answer == expected
    # both yes/no outcomes and the which-first style occur, the yes/no ones about evenly
    assert styles["name"] > 100 and styles["yes"] > 40 and styles["no"] > 40


def test_question_mix_matches_the_declared_proportions(enc):
    counts = collections.Counter()
    for seed in range(2000):
        q = make_question(enc.world, seed)
        counts[
            "comparison"
            if q.kind == "comparison"
            else q.kind
            if q.kind == "bridge"
            else f"compositional-{q.hops}"
        ] += 1
    for kind, share in QUESTION_MIX.items():
        assert abs(counts[kind] / 2000 - share) < 0.04, (kind, counts)


def test_search_ranks_the_named_article_first_and_open_is_lenient(enc):
    rng = np.random.default_rng(0)
    people = enc.world.by_kind["person"]
    for pid in rng.choice(people, size=20, replace=False):
        person = enc.world[int(pid)]
        hits = enc.search(f"{person.name} born")
        assert person.title in [h.title for h in hits]
        assert enc.open(f"  {person.title.lower()} ").article.entity_id == person.id
    assert enc.search("") == [] and enc.search("zzzqqq unknownword") == []
    assert len(enc.search("film director", k=5)) == 5
    missing = enc.open("Nothing Like This Title")
    assert missing.article is None and not missing.ambiguous
