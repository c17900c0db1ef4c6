"""`cems eval` end to end on a tiny generated benchmark: isolated corpora, JSON shape, sane metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_model  # judges recall: the real model

METRIC_KEYS = {"n", "recall@5", "recall@10", "ndcg@10", "hit@5", "recall_all@5"}

# corpus → [(doc suffix, speaker, text)]; every corpus talks about different things.
CORPORA = {
    "home": [
        ("1", "Ann", "I adopted a grey kitten from the shelter and named her Mochi."),
        ("2", "Ben", "Congratulations! Does Mochi get along with your old dog?"),
        ("3", "Ann", "We repainted the kitchen a pale yellow last weekend."),
        ("4", "Ben", "My sister is getting married in Lisbon in September."),
        ("5", "Ann", "I have been baking sourdough bread every Sunday morning."),
        ("6", "Ben", "I finally fixed the leaking bathroom tap myself."),
        ("7", "Ann", "Our garden tomatoes were ruined by the hailstorm."),
    ],
    "work": [
        ("1", "Cy", "The billing service was migrated from MySQL to PostgreSQL."),
        ("2", "Di", "Deploys now go through the staging cluster before production."),
        ("3", "Cy", "The flaky integration test was caused by a timezone bug."),
        ("4", "Di", "We hired two new frontend engineers for the dashboard team."),
        ("5", "Cy", "The quarterly offsite will be held in a mountain cabin."),
        ("6", "Di", "Our API rate limit was raised to one thousand requests per minute."),
        ("7", "Cy", "Code review must be done within one working day."),
    ],
    "trip": [
        ("1", "Ed", "We hiked to the glacier lake on the second day of the trip."),
        ("2", "Fay", "The ferry to the island was cancelled because of the storm."),
        ("3", "Ed", "I lost my passport at the train station and got it back from the police."),
        ("4", "Fay", "The little fish restaurant by the harbour was the best meal we had."),
        ("5", "Ed", "We rented bicycles to ride along the coast road."),
        ("6", "Fay", "Our hostel room had a view of the old lighthouse."),
    ],
}
QUESTIONS = [
    ("q1", "home", "What pet did Ann adopt?", "single-hop", ["home:1"]),
    ("q2", "home", "What bread does Ann bake?", "single-hop", ["home:5"]),
    ("q3", "home", "Where is Ben's sister's wedding?", "single-hop", ["home:4"]),
    ("q4", "work", "Which database does the billing service use now?", "single-hop", ["work:1"]),
    ("q5", "work", "What caused the flaky test?", "multi-hop", ["work:3"]),
    ("q6", "work", "How fast must code reviews happen and where is the offsite?", "multi-hop",
     ["work:7", "work:5"]),
    ("q7", "trip", "What happened to the ferry?", "single-hop", ["trip:2"]),
    ("q8", "trip", "Where did they have their best meal?", "single-hop", ["trip:4"]),
    ("q9", "trip", "How did Ed get his passport back?", "multi-hop", ["trip:3"]),
    ("q10", "trip", "Is there anything unanswerable here?", "open-domain", []),
]


def _write_bench(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    corpus = [
        {"corpus_id": corpus_id, "doc_id": f"{corpus_id}:{suffix}", "session_id": f"{corpus_id}:s{suffix}",
         "text": f"{speaker}: {text}", "speaker": speaker, "timestamp": f"2023-05-1{suffix}T10:00:00"}
        for corpus_id, turns in CORPORA.items() for suffix, speaker, text in turns
    ]
    questions = [{"qid": qid, "question": q, "category": cat, "corpus_id": c}
                 for qid, c, q, cat, _ in QUESTIONS]
    qrels = [{"qid": qid, "relevant_doc_ids": gold} for qid, _c, _q, _cat, gold in QUESTIONS]
    for name, rows in (("corpus", corpus), ("questions", questions), ("qrels", qrels)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder



def test_eval_bench_end_to_end(cli, tmp_path, private_tmp):
    bench = _write_bench(tmp_path / "bench")
    own = cli("remember", "My own memory must not be touched by the eval.", "--json").json()["id"]
    out, details = tmp_path / "vector.json", tmp_path / "details.jsonl"
    result = cli("eval", "--bench", str(bench), "--mode", "vector", "--out", str(out),
                 "--details", str(details), "--json")
    assert result.code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data == result.json()
    assert set(data) == {"overall", "by_category", "latency_ms", "config"}
    assert set(data["overall"]) == METRIC_KEYS
    assert data["overall"]["n"] == 9  # q10 has no relevant doc: not scored
    assert {name: row["n"] for name, row in data["by_category"].items()} == {"multi-hop": 3, "single-hop": 6}
    for row in [data["overall"], *data["by_category"].values()]:
        assert set(row) == METRIC_KEYS
        assert all(0.0 <= row[k] <= 1.0 for k in METRIC_KEYS - {"n"})
        assert row["recall@5"] <= row["recall@10"] and row["recall_all@5"] <= row["hit@5"]
    # Every corpus has at most 7 memories, so the top 10 holds all of them; easy questions rank first.
    assert data["overall"]["recall@10"] == 1.0
    assert data["overall"]["hit@5"] >= 0.8
    latency = data["latency_ms"]
    assert set(latency) == {"p50", "p95"} and 0 < latency["p50"] <= latency["p95"]
    config = data["config"]
    assert (config["mode"], config["limit"], config["questions"], config["corpora"], config["units"]) == (
        "vector", 10, 9, 3, 20)
    assert "llm_api_key" not in config["settings"] and "user" not in config["settings"]
    assert config["as_of"] <= config["finished_at"]  # default: the run's start

    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert len(rows) == 9
    for row in rows:
        corpus = next(c for q, c, *_ in QUESTIONS if q == row["qid"])
        assert row["ranked"] and all(doc.startswith(f"{corpus}:") for doc in row["ranked"])  # isolation

    assert not list(private_tmp.glob("cems-eval-*"))  # the throwaway home is gone
    listed = cli("list", "--json").json()["memories"]
    assert [m["id"] for m in listed] == [own]


def test_eval_modes_and_compare(cli, tmp_path, private_tmp):
    bench = _write_bench(tmp_path / "bench")
    for mode in ("vector", "hybrid"):
        run = cli("eval", "--bench", str(bench), "--mode", mode, "--limit-questions", "4", "--out",
                  str(tmp_path / f"{mode}.json"), "--as-of", "2024-01-01")
        assert run.code == 0, run.stderr
        assert "overall" in run.stdout and "p50" in run.stdout
    hybrid = json.loads((tmp_path / "hybrid.json").read_text())
    assert hybrid["overall"]["n"] == 4 and hybrid["config"]["corpora"] == 2  # only the corpora asked about
    assert hybrid["config"]["as_of"] == "2024-01-01T00:00:00+00:00"

    files = (str(tmp_path / "vector.json"), str(tmp_path / "hybrid.json"))
    compared = cli("eval", "--compare", *files, "--json")
    assert compared.code == 0, compared.stderr
    rows = {(r["section"], r["metric"]): r for r in compared.json()["rows"]}
    vector = json.loads((tmp_path / "vector.json").read_text())
    overall = rows[("overall", "recall@5")]
    assert overall["a"] == vector["overall"]["recall@5"] and overall["b"] == hybrid["overall"]["recall@5"]
    assert overall["delta"] == pytest.approx(overall["b"] - overall["a"])
    assert ("latency_ms", "p95") in rows
    table = cli("eval", "--compare", *files)
    assert table.code == 0 and "recall@5" in table.stdout


def test_eval_without_context_indexes_each_unit_alone(cli, tmp_path, private_tmp):
    """The capture engine stores what it derives without the turn before it: --no-context measures that."""
    bench = _write_bench(tmp_path / "bench")
    runs = {}
    for flag in ("--context", "--no-context"):
        out = tmp_path / f"{flag}.json"
        run = cli("eval", "--bench", str(bench), "--mode", "hybrid", flag, "--out", str(out), "--as-of",
                  "2024-01-01")
        assert run.code == 0, run.stderr
        runs[flag] = json.loads(out.read_text())
    assert runs["--context"]["config"]["context"] == "the unit before it"
    assert runs["--no-context"]["config"]["context"].startswith("none")
    assert runs["--no-context"]["overall"]["n"] == runs["--context"]["overall"]["n"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --bench"),
        (["--bench", "/nonexistent/bench", "--locomo", "x.json"], "give exactly one of --bench"),
        (["--bench", "/nonexistent/bench"], "is not a folder"),
        (["--locomo", "/nonexistent/locomo10.json"], "cannot read"),
        (["--bench", ".", "--mode", "magic"], "unknown mode 'magic'"),
        (["--bench", ".", "--limit-questions", "0"], "--limit-questions must be at least 1"),
        (["--bench", ".", "--as-of", "last tuesday"], "--as-of 'last tuesday' is not a date"),
        (["--compare", "/nonexistent/a.json", "/nonexistent/b.json"], "cannot read"),
        (["--sessions", ".", "--no-context"], "--no-context applies to --locomo"),
    ],
)
def test_eval_errors_are_one_line(cli, args, message):
    result = cli("eval", *args)
    assert result.code == 2, (result.stdout, result.stderr)
    assert message in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
