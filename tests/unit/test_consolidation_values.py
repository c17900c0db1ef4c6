"""Consolidation merges two wordings of one fact, never two facts one value apart (cems_cli/text/values.py,
cems_cli/engine/maintain.same_fact), on the pairs of tests/fixtures/consolidation_pairs.json (written by
bench/consolidation_pairs.py, each with its cosine under the local embedding model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cems_cli.engine.maintain import SIMILARITY_THRESHOLD, same_fact
from cems_cli.text.values import differences, same_values

FIXTURE = Path(__file__).parent.parent / "fixtures" / "consolidation_pairs.json"
PAIRS = json.loads(FIXTURE.read_text(encoding="utf-8"))["pairs"]
NEAR_MISSES = [p for p in PAIRS if p["kind"] == "near_miss"]
PARAPHRASES = [p for p in PAIRS if p["kind"] == "paraphrase"]


def test_the_set_is_large_and_varied():
    assert len(NEAR_MISSES) >= 200 and len(PARAPHRASES) >= 100
    assert len({p["a"] for p in PAIRS}) >= 200
    # By cosine alone (the old decision) many near misses were merged: the set tests what it must.
    assert sum(p["cosine"] >= SIMILARITY_THRESHOLD for p in NEAR_MISSES) >= 90


def test_no_near_miss_is_merged():
    merged = [(p["changed"], p["a"], p["b"]) for p in NEAR_MISSES if same_fact(p["a"], p["b"], p["cosine"])]
    assert merged == []
    # Not even when a lower threshold lets the cosine through: the values decide.
    assert [p for p in NEAR_MISSES if same_values(p["a"], p["b"])] == []


def test_paraphrases_state_the_same_values():
    same = sum(same_values(p["a"], p["b"]) for p in PARAPHRASES)
    assert same / len(PARAPHRASES) >= 0.88, f"{same} of {len(PARAPHRASES)}"
    # The value check takes few of the paraphrases the cosine would merge (7 of 101 at 0.80), and the
    # threshold few of the others (65 of 104 paraphrases were merged at 0.92, 94 at 0.80).
    alike = [p for p in PARAPHRASES if p["cosine"] >= SIMILARITY_THRESHOLD]
    merged = sum(same_fact(p["a"], p["b"], p["cosine"]) for p in alike)
    assert merged / len(alike) >= 0.92, f"{merged} of {len(alike)}"
    assert merged / len(PARAPHRASES) >= 0.90, f"{merged} of {len(PARAPHRASES)}"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Code freeze starts on 2026-12-18.", "The code freeze begins on 2026-12-18."),
        ("The API listens on port 8080.", "The API binds to port 8080."),
        ("Thumbnails are 256px wide.", "Thumbnails have a width of 256px."),
        ("The staging environment runs 3 replicas.", "Staging runs 3 replicas."),
    ],
)
def test_words_of_one_meaning_are_one_value(a, b):
    assert same_values(a, b), differences(a, b)


def test_a_synonym_hides_no_changed_value():
    assert not same_values("Code freeze starts on 2026-12-18.", "The code freeze begins on 2026-12-19.")
    assert not same_values("The API listens on port 8080.", "The API binds to port 8081.")
    assert not same_values("The staging environment runs 3 replicas.", "The production environment runs 3 "
                           "replicas.")


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("Staging runs Kubernetes 1.29.", "Production runs Kubernetes 1.27.", "numbers"),
        ("The API listens on port 8080.", "The API listens on port 8081.", "numbers"),
        ("Cache entries live for 30 seconds.", "Cache entries live for 30 minutes.", "numbers"),
        ("The primary database is in eu-west-1.", "The primary database is in us-east-1.", "terms"),
        ("Never force-push to main.", "Always force-push to main.", "negation"),
        ("Alice reviews the database migrations.", "Bob reviews the database migrations.", "names"),
        ("Deploys go out on Fridays.", "Deploys go out on Thursdays.", "names"),
        ("Indent with tabs in Makefiles.", "Indent with spaces in Makefiles.", "indentation"),
        ("Run migrations before the deploy.", "Run migrations after the deploy.", "order"),
        ("Config lives in config/app.yaml.", "Config lives in config/app.toml.", "terms"),
        ("The staging database is reset nightly.", "The production database is reset nightly.",
         "environments"),
        ("Use Node 20 for the build.", "Use Node 20 for the test suite.", "words"),
        ("We use poetry for dependencies.", "We use uv for dependencies.", "words"),
        ("Send alerts to ops@acme.io.", "Send alerts to dev@acme.io.", "terms"),
        ("The freeze starts 2026-12-18.", "The freeze starts 2026-12-11.", "terms"),
    ],
)
def test_one_value_apart_names_the_kind(a, b, kind):
    found = differences(a, b)
    assert any(line.startswith(kind + ":") for line in found), found
    assert differences(b, a)  # either way round


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Run the unit tests with pytest -q before pushing to the main branch.",
         "Always run the unit tests with pytest -q before you push to the main branch."),
        ("Please run the linter before committing.", "Run the linter before committing."),
        ("Cache TTL is 30 seconds.", "The cache TTL is 30s."),
        ("Keep three replicas in staging.", "Keep 3 replicas in staging."),
        ("Alice reviews every database migration.", "Every database migration is reviewed by Alice."),
        ("Don't push to main directly.", "Do not push directly to main."),
        ("Use ruff instead of flake8.", "Use ruff, not flake8."),
    ],
)
def test_wordings_of_one_fact_state_the_same_values(a, b):
    assert differences(a, b) == []
