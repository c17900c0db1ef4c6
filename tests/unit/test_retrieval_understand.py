"""Heuristic query understanding and validation of an LLM's analysis."""

from __future__ import annotations

import pytest

from cems_cli.retrieval.understand import (
    asks_general_knowledge,
    choose_route,
    detect_domains,
    extract_entities,
    heuristic_analysis,
    parse_llm_analysis,
    query_terms,
)


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("What's my database schema?", "recall"),
        ("How do I deploy this app?", "how-to"),
        ("Why does pytest fail with ECONNREFUSED?", "troubleshooting"),
        ("How did I fix the CORS error last time?", "recall"),  # past self-reference beats "fix"/"error"
        ("Recommend video editing resources?", "preference"),
        ("What should I use for background jobs?", "preference"),
        ("what is the refund policy", "factual"),
        ("pytest fixture scope", "factual"),  # "fixture" is not "fix"
        ("The build is broken after the upgrade", "troubleshooting"),
    ],
)
def test_intent(query, intent):
    assert heuristic_analysis(query).intent == intent


@pytest.mark.parametrize(
    ("query", "temporal", "preference", "aggregation"),
    [
        ("Which camping trip happened first?", True, False, False),
        ("When did I start using TypeScript?", True, False, False),
        ("What did we decide 3 weeks ago?", True, False, False),
        ("Recommend video editing resources?", False, True, False),
        ("What's the best editor for me?", False, True, False),
        ("What cocktails might I enjoy?", False, True, False),
        ("How many doctors did I visit?", False, False, True),
        ("List all my deployments", False, False, True),
        # "all my" marks aggregation by design ("list all my…"): an accepted false positive here.
        ("Why do all my tests fail?", False, False, True),
        ("pytest fixture scope", False, False, False),
    ],
)
def test_signals(query, temporal, preference, aggregation):
    analysis = heuristic_analysis(query)
    assert (analysis.is_temporal, analysis.is_preference, analysis.is_aggregation) == (
        temporal, preference, aggregation)


def test_domains_come_in_map_order_and_count_once():
    assert detect_domains("Run pytest against postgres in docker") == ["database", "devops", "testing"]
    assert detect_domains("open a pull request") == ["git"]  # phrase match
    assert detect_domains("rest of the day") == []  # "rest" alone is not the backend domain
    assert detect_domains("restart docker-compose; edit postgres.conf") == ["database", "devops"]
    assert detect_domains("") == []


def test_entities_of_each_kind_in_text_order():
    query = ('Why does "connection reset" happen in src/api/client.py when os.path.join gets '
             "last_accessed from HttpClient with ECONNREFUSED for Caroline Smith?")
    assert extract_entities(query) == [
        "connection reset", "src/api/client.py", "os.path.join", "last_accessed", "HttpClient",
        "ECONNREFUSED", "Caroline Smith",
    ]


def test_entities_edge_cases():
    assert extract_entities("What Caroline said") == ["Caroline"]  # "What" is capitalised by grammar
    assert extract_entities("Caroline said hi") == []  # a lone capital at sentence start is ambiguous
    assert extract_entities("see config.py.") == ["config.py"]  # full stop is not part of the name
    assert extract_entities("What's my schema, e.g. the DB?") == []  # apostrophe, abbreviation, 2-letter caps
    assert extract_entities("read ~/.config/cems/config.toml and https://x.io/a?b=1") == [
        "~/.config/cems/config.toml", "https://x.io/a?b=1"]
    assert extract_entities("`MAX_TOKENS` and `max_tokens`") == ["MAX_TOKENS"]  # case-insensitive dedup
    assert extract_entities("") == []


def test_complexity_levels():
    assert heuristic_analysis("What's my database schema?").complexity == "simple"
    # comparison (2 points) → moderate
    assert heuristic_analysis("useEffect vs componentDidMount").complexity == "moderate"
    # 18 words (1) + 2 domains: security, backend (1) + comparison (2) = 4 points → complex
    long_query = ("Compare the auth approaches used in our microservices and tell me which is safer for "
                  "our new API")
    analysis = heuristic_analysis(long_query)
    assert analysis.complexity == "complex"
    assert analysis.requires_reasoning


def test_temporal_ordering_needs_reasoning():
    assert heuristic_analysis("Which camping trip happened first?").requires_reasoning
    assert not heuristic_analysis("When did I start using TypeScript?").requires_reasoning


@pytest.mark.parametrize(
    ("query", "route"),
    [
        ("What's my database schema?", "vector"),  # simple, one domain, no entity
        ("How do I deploy this app?", "vector"),
        ("what is the refund policy", "vector"),
        ("When did I start using TypeScript?", "hybrid"),  # temporal
        ("Recommend video editing resources?", "hybrid"),  # preference
        ("How many doctors did I visit?", "hybrid"),  # aggregation
        ("Fix the ECONNREFUSED error", "hybrid"),  # entity
        ("postgres schema for the docker deploy", "hybrid"),  # two domains
        ("Why is it slow?", "hybrid"),  # reasoning
    ],
)
def test_route(query, route):
    assert heuristic_analysis(query).route == route


def test_full_analysis_of_seed_example():
    analysis = heuristic_analysis("What's my database schema?")
    assert analysis.intent == "recall"
    assert analysis.complexity == "simple"
    assert analysis.domains == ["database"]
    assert analysis.entities == []
    assert not (analysis.requires_reasoning or analysis.is_temporal or analysis.is_preference
                or analysis.is_aggregation)
    assert analysis.source == "heuristic"


def test_query_terms():
    assert query_terms("How do I deploy the app to Hetzner? Deploy!") == ["deploy", "app", "hetzner"]
    assert query_terms("") == []


def test_parse_llm_analysis_accepts_a_good_answer():
    answer = {
        "intent": "Troubleshooting",
        "complexity": "moderate",
        "domains": ["Postgres", "deployment", "postgres"],
        "entities": ["pgvector", 42, "", "HNSW"],
        "requires_reasoning": False,
        "temporal": False,
        "preference": "no",
        "aggregation": "yes",
        "route": "hybrid",
    }
    analysis = parse_llm_analysis(answer, "why is pgvector slow")
    assert analysis.source == "llm"
    assert analysis.intent == "troubleshooting"
    assert analysis.complexity == "moderate"
    assert analysis.domains == ["postgres", "deployment"]
    assert analysis.entities == ["pgvector", "HNSW"]
    assert (analysis.requires_reasoning, analysis.is_temporal, analysis.is_preference,
            analysis.is_aggregation) == (False, False, False, True)
    assert analysis.route == "hybrid"


def test_parse_llm_analysis_falls_back_field_by_field():
    query = "When did I start using TypeScript?"
    heuristic = heuristic_analysis(query)
    answer = {"primary_intent": "vibes", "complexity": "medium", "domains": "javascript",
              "entities": None, "requires_reasoning": "maybe", "route": "warp"}
    analysis = parse_llm_analysis(answer, query)
    assert analysis.intent == heuristic.intent == "recall"
    assert analysis.complexity == "moderate"  # alias
    assert analysis.domains == heuristic.domains
    assert analysis.entities == heuristic.entities == ["TypeScript"]
    assert analysis.requires_reasoning == heuristic.requires_reasoning
    assert analysis.is_temporal  # missing → heuristic
    assert analysis.route == "hybrid"


def test_llm_route_can_upgrade_but_not_veto():
    query = "Recommend video editing resources?"  # the rules say hybrid (preference)
    vetoed = parse_llm_analysis({"route": "vector", "preference": True}, query)
    assert vetoed.route == "hybrid"
    simple = "what is the refund policy"  # the rules say vector
    assert parse_llm_analysis({"route": "hybrid"}, simple).route == "hybrid"
    assert parse_llm_analysis({"route": "vector"}, simple).route == "vector"


@pytest.mark.parametrize("garbage", [None, [], "not json", 3.5, {"intent": {"x": 1}, "domains": [[1]]}])
def test_parse_llm_analysis_never_raises(garbage):
    analysis = parse_llm_analysis(garbage, "How do I deploy this app?")
    assert analysis.intent == "how-to"
    assert analysis.route == "vector"


def test_choose_route_on_a_modified_analysis():
    analysis = heuristic_analysis("what is the refund policy")
    assert choose_route(analysis) == "vector"
    analysis.domains = ["backend", "database"]
    assert choose_route(analysis) == "hybrid"


# --- questions about the world, not the asker's work ------------------------------------------------------

GENERAL = [
    "Explain what React.memo does.",
    "Explain how Python's GIL affects threads",
    "Can you explain what a closure is in JavaScript?",
    "Describe the CAP theorem.",
    "What's the difference between TCP and UDP?",
    "What is the difference between git merge and git rebase?",
    "Differences between a mutex and a semaphore and when to use each",
    "What is a goroutine?",
    "What are the differences between let and const?",
    "How does garbage collection work in Java?",
    "How does HTTPS work?",
    "How does async/await work under the hood?",
    "What is the purpose of __init__.py?",
]
OWN_WORK = [
    "Explain why the staging deploy failed last week",
    "Explain what the invoice run lock does in our worker",
    "How does our auth middleware work?",
    "What's the difference between the v1 and v2 endpoints here?",
    "How do I run the tests?",
    "How did we fix the flaky checkout test?",
    "What is the staging bucket called?",
    "How does the rate limiter work in this service?",
    "Describe what we changed in the billing schema",
    "Explain the error I got yesterday from alembic",
    # LoCoMo's shape: questions about people are about someone's life, not about the world.
    "What is a Star Wars book that Tim might enjoy?",
    "How does Andrew feel about his current work?",
]


@pytest.mark.parametrize("question", GENERAL)
def test_questions_about_the_world(question):
    assert asks_general_knowledge(question)


@pytest.mark.parametrize("question", OWN_WORK)
def test_questions_about_the_askers_work(question):
    assert not asks_general_knowledge(question)
