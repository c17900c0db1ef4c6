"""Benchmark loaders (generic folder, LoCoMo) and how a unit becomes a memory."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from cems_cli.evaluation.datasets import DatasetError, Unit, load_bench_dir, load_locomo, normalise_evidence
from cems_cli.evaluation.indexing import unit_context, unit_to_memory_text, unit_to_record


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _bench(tmp_path: Path, corpus=None, questions=None, qrels=None) -> Path:
    _write_jsonl(tmp_path / "corpus.jsonl", corpus if corpus is not None else [
        {"corpus_id": "c1", "doc_id": "c1:1", "session_id": "c1:s1", "text": "Ann: I adopted a cat.",
         "timestamp": "2023-05-08T13:56:00", "speaker": "Ann"},
        {"corpus_id": "c1", "doc_id": "c1:2", "session_id": "c1:s1", "text": "Bob: Nice!", "timestamp": None},
        {"corpus_id": "c2", "doc_id": "c2:1", "text": "Deploys go through staging.", "timestamp": None},
    ])
    _write_jsonl(tmp_path / "questions.jsonl", questions if questions is not None else [
        {"qid": "q1", "question": "What pet did Ann get?", "category": "single-hop", "corpus_id": "c1",
         "answer": "a cat", "category_id": 4},
        {"qid": "q2", "question": "How do deploys go?", "category": "single-hop", "corpus_id": "c2"},
        {"qid": "q3", "question": "Unanswerable?", "category": "open-domain", "corpus_id": "c1"},
    ])
    _write_jsonl(tmp_path / "qrels.jsonl", qrels if qrels is not None else [
        {"qid": "q1", "relevant_doc_ids": ["c1:1", "c1:1"]},
        {"qid": "q2", "relevant_doc_ids": ["c2:1"]},
        {"qid": "q3", "relevant_doc_ids": []},
    ])
    return tmp_path


def test_generic_folder_loads_units_questions_and_qrels(tmp_path):
    bench = load_bench_dir(_bench(tmp_path))
    assert bench.name == tmp_path.name
    first = bench.units[0]
    assert first == Unit(corpus_id="c1", doc_id="c1:1", text="Ann: I adopted a cat.", session_id="c1:s1",
                         timestamp=datetime(2023, 5, 8, 13, 56), speaker="Ann")
    assert bench.units[2].timestamp is None and bench.units[2].session_id is None
    assert bench.questions[0].answer == "a cat" and bench.questions[0].category_id == 4
    assert bench.qrels["q1"] == ("c1:1",)  # repeated ids collapse
    assert [q.qid for q in bench.scored_questions()] == ["q1", "q2"]  # q3 has no gold: not scored
    assert {c: [u.doc_id for u in us] for c, us in bench.units_by_corpus().items()} == {
        "c1": ["c1:1", "c1:2"], "c2": ["c2:1"]}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"corpus": [{"corpus_id": "c1", "doc_id": "d", "text": "x"},
                     {"corpus_id": "c1", "doc_id": "d", "text": "y"}]}, "doc_id 'd' appears twice"),
        ({"corpus": [{"corpus_id": "c1", "doc_id": "d", "text": ""}]}, "corpus.jsonl line 1: 'text'"),
        ({"corpus": [{"corpus_id": "c1", "doc_id": "d", "text": "x", "timestamp": "yesterday"}]},
         "not ISO 8601"),
        ({"qrels": [{"qid": "q1", "relevant_doc_ids": ["c2:1"]}]}, "not a doc of its corpus"),
        ({"qrels": [{"qid": "nope", "relevant_doc_ids": ["c1:1"]}]}, "unknown question 'nope'"),
        ({"qrels": [{"qid": "q1", "relevant_doc_ids": "c1:1"}]}, "qrels.jsonl line 1"),
    ],
)
def test_generic_folder_errors_name_the_problem(tmp_path, files, message):
    _bench(tmp_path, **files)
    with pytest.raises(DatasetError, match=message):
        load_bench_dir(tmp_path)


def test_bad_json_line_is_named(tmp_path):
    _bench(tmp_path)
    with open(tmp_path / "questions.jsonl", "a", encoding="utf-8") as handle:
        handle.write("\n{not json\n")
    with pytest.raises(DatasetError, match="questions.jsonl line 5: not valid JSON"):
        load_bench_dir(tmp_path)


def test_missing_folder_or_file(tmp_path):
    with pytest.raises(DatasetError, match="not a folder"):
        load_bench_dir(tmp_path / "absent")
    with pytest.raises(DatasetError, match="cannot read .*corpus.jsonl"):
        load_bench_dir(tmp_path)


def _locomo_sample() -> dict:
    turn = {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat yesterday."}
    return {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [turn, {"speaker": "Bob", "dia_id": "D1:2", "text": "Show me!"},
                          {"speaker": "Ann", "dia_id": "D1:3", "text": "Here she is.",
                           "blip_caption": "a cat", "img_url": ["http://x"], "query": "cat"}],
            "session_10_date_time": "9:05 am on 2 June, 2023",
            "session_10": [{"speaker": "Bob", "dia_id": "D10:1", "text": "How is the cat?"}],
            "session_2_date_time": "10:00 am on 1 June, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Hi again."}],
        },
        "qa": [
            {"question": "When did Ann adopt a cat?", "answer": "7 May 2023", "evidence": ["D1:1"],
             "category": 2},
            {"question": "What year?", "answer": 2023,
             "evidence": ["D1:1; D2:1", "D:1:3", "D10:01", "D9:9", "D"], "category": 1},
            {"question": "What did Bob adopt?", "adversarial_answer": "a cat", "evidence": ["D1:1"],
             "category": 5},
            {"question": "Would Ann like dogs?", "answer": "maybe", "evidence": [], "category": 3},
        ],
    }


def test_locomo_turns_become_units_in_session_order(tmp_path):
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([_locomo_sample()]), encoding="utf-8")
    bench = load_locomo(path)
    assert [u.doc_id for u in bench.units] == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D1:3", "conv-1:D2:1",
                                              "conv-1:D10:1"]
    first = bench.units[0]
    assert first.text == "Ann: I adopted a cat yesterday."
    assert first.session_id == "conv-1:session_1" and first.speaker == "Ann"
    assert first.timestamp == datetime(2023, 5, 8, 13, 56) and first.timestamp_raw == "1:56 pm on 8 May, 2023"
    assert bench.units[2].text == "Ann: Here she is. [shares a photo: a cat]"
    assert bench.units[4].timestamp == datetime(2023, 6, 2, 9, 5)


def test_locomo_questions_and_evidence(tmp_path):
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([_locomo_sample()]), encoding="utf-8")
    bench = load_locomo(path)
    q0, q1, q2, q3 = bench.questions
    assert (q0.qid, q0.category, q0.category_id, q0.answer) == ("conv-1:q0", "temporal", 2, "7 May 2023")
    assert (q1.category, q1.answer) == ("multi-hop", "2023")
    assert (q2.category, q2.answer) == ("adversarial", "a cat")
    assert bench.qrels["conv-1:q1"] == ("conv-1:D1:1", "conv-1:D2:1", "conv-1:D1:3", "conv-1:D10:1")
    assert "conv-1:q3" not in bench.qrels
    assert [q.qid for q in bench.scored_questions()] == ["conv-1:q0", "conv-1:q1", "conv-1:q2"]


def test_evidence_normalisation():
    known = {"c:D1:1", "c:D8:6", "c:D9:17", "c:D11:26"}
    assert normalise_evidence("c", ["D8:6; D9:17", "D:11:26", "D1:01", "D8:6", "D", "D4:4"], known) == (
        "c:D8:6", "c:D9:17", "c:D11:26", "c:D1:1")


def test_not_a_locomo_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DatasetError, match="not a LoCoMo file"):
        load_locomo(path)
    path.write_text("[", encoding="utf-8")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_locomo(path)


# Two conversations in LoCoMo's official layout (the shape of locomo10.json: samples with `conversation`,
# `session_N` / `session_N_date_time`, `qa`, plus summary keys the loader ignores), with the file's quirks:
# session 11 sorts after session 2 (numeric, not text, order), an empty session, a session without a date,
# a shared photo, an integer answer, an adversarial answer, evidence run together ("D1:2; D2:1") or
# misspelt ("D:2:2", "D11:03"), repeated, naming no turn ("D9:9"), or missing.
MARCH_3, MARCH_17 = "4:12 pm on 3 March, 2024", "10:30 am on 17 March, 2024"
JULY_2, JANUARY_9 = "8:05 pm on 2 July, 2024", "7:45 am on 9 January, 2023"
_LOCOMO_CONVERSATIONS = [
    {
        "sample_id": "conv-7",
        "conversation": {
            "speaker_a": "Nadia", "speaker_b": "Tomás",
            "session_1_date_time": MARCH_3,
            "session_1": [
                {"speaker": "Nadia", "dia_id": "D1:1", "text": "I finally signed up for the pottery class."},
                {"speaker": "Tomás", "dia_id": "D1:2", "text": "Nice! Is it the one on Thursdays?"},
                {"speaker": "Nadia", "dia_id": "D1:3", "text": "Yes, and here is my first bowl.",
                 "img_url": ["https://example.org/bowl.jpg"], "query": "clay bowl",
                 "blip_caption": "a lopsided clay bowl on a wheel"},
            ],
            "session_2_date_time": MARCH_17,
            "session_2": [
                {"speaker": "Tomás", "dia_id": "D2:1", "text": "How was the second pottery class?"},
                {"speaker": "Nadia", "dia_id": "D2:2", "text": "Better. I made two mugs for my sister."},
            ],
            "session_3_date_time": "9:00 am on 20 March, 2024",
            "session_3": [],
            "session_11_date_time": JULY_2,
            "session_11": [
                {"speaker": "Nadia", "dia_id": "D11:1", "text": "I'm back from Lisbon."},
                {"speaker": "Tomás", "dia_id": "D11:2", "text": "Did you visit the tile museum?"},
                {"speaker": "Nadia", "dia_id": "D11:3", "text": "Twice, it inspired my next glaze."},
            ],
            "session_4": [{"speaker": "Tomás", "dia_id": "D4:1", "text": "Happy birthday, Nadia!"}],
        },
        "qa": [
            {"question": "When did Nadia sign up for a pottery class?", "answer": "March 2024",
             "evidence": ["D1:1"], "category": 2},
            {"question": "How many pottery classes had Nadia taken by 17 March 2024?", "answer": 2,
             "evidence": ["D1:2; D2:1", "D11:03", "D1:2"], "category": 1},
            {"question": "Would Nadia enjoy a ceramics museum?", "answer": "Likely yes", "evidence": [],
             "category": 3},
            {"question": "What did Tomás make for his sister?", "adversarial_answer": "two mugs",
             "evidence": ["D:2:2"], "category": 5},
            {"question": "Where did Nadia take a glassblowing course?", "answer": "Porto",
             "evidence": ["D9:9"], "category": 4},
        ],
        "event_summary": {"events_session_1": {"Nadia": ["Signs up for a pottery class."]}},
        "observation": {"session_1_observation": {"Nadia": [["Nadia takes pottery classes.", "D1:1"]]}},
        "session_summary": {"session_1_summary": "Nadia tells Tomás about her pottery class."},
    },
    {
        "sample_id": "conv-12",
        "conversation": {
            "speaker_a": "Iris", "speaker_b": "Kwame",
            "session_1_date_time": JANUARY_9,
            "session_1": [
                {"speaker": "Iris", "dia_id": "D1:1", "text": "My bike got a flat on the way to work."},
                {"speaker": "Kwame", "dia_id": "D1:2", "text": "Take mine until the shop fixes it."},
            ],
        },
        "qa": [{"question": "Whose bike did Iris borrow?", "answer": "Kwame's", "evidence": ["D1:2"],
                "category": 4}],
    },
]

# The same conversations in the generic format, written out by hand: what the converter must produce.
_ISO = {MARCH_3: "2024-03-03T16:12:00", MARCH_17: "2024-03-17T10:30:00", JULY_2: "2024-07-02T20:05:00",
        JANUARY_9: "2023-01-09T07:45:00"}
_GENERIC_CORPUS = [
    {"corpus_id": corpus, "doc_id": f"{corpus}:{dia}", "session_id": f"{corpus}:session_{session}",
     "text": text, "timestamp": _ISO.get(raw or ""), "timestamp_raw": raw, "speaker": speaker}
    for corpus, dia, session, speaker, raw, text in [
        ("conv-7", "D1:1", 1, "Nadia", MARCH_3, "Nadia: I finally signed up for the pottery class."),
        ("conv-7", "D1:2", 1, "Tomás", MARCH_3, "Tomás: Nice! Is it the one on Thursdays?"),
        ("conv-7", "D1:3", 1, "Nadia", MARCH_3,
         "Nadia: Yes, and here is my first bowl. [shares a photo: a lopsided clay bowl on a wheel]"),
        ("conv-7", "D2:1", 2, "Tomás", MARCH_17, "Tomás: How was the second pottery class?"),
        ("conv-7", "D2:2", 2, "Nadia", MARCH_17, "Nadia: Better. I made two mugs for my sister."),
        ("conv-7", "D4:1", 4, "Tomás", None, "Tomás: Happy birthday, Nadia!"),
        ("conv-7", "D11:1", 11, "Nadia", JULY_2, "Nadia: I'm back from Lisbon."),
        ("conv-7", "D11:2", 11, "Tomás", JULY_2, "Tomás: Did you visit the tile museum?"),
        ("conv-7", "D11:3", 11, "Nadia", JULY_2, "Nadia: Twice, it inspired my next glaze."),
        ("conv-12", "D1:1", 1, "Iris", JANUARY_9, "Iris: My bike got a flat on the way to work."),
        ("conv-12", "D1:2", 1, "Kwame", JANUARY_9, "Kwame: Take mine until the shop fixes it."),
    ]
]
_GENERIC_QUESTIONS = [
    {"qid": qid, "question": question, "category": category, "category_id": category_id,
     "corpus_id": qid.split(":")[0], "answer": answer, "n_gold": n_gold}
    for qid, question, category, category_id, answer, n_gold in [
        ("conv-7:q0", "When did Nadia sign up for a pottery class?", "temporal", 2, "March 2024", 1),
        ("conv-7:q1", "How many pottery classes had Nadia taken by 17 March 2024?", "multi-hop", 1, "2", 3),
        ("conv-7:q2", "Would Nadia enjoy a ceramics museum?", "open-domain", 3, "Likely yes", 0),
        ("conv-7:q3", "What did Tomás make for his sister?", "adversarial", 5, "two mugs", 1),
        ("conv-7:q4", "Where did Nadia take a glassblowing course?", "single-hop", 4, "Porto", 0),
        ("conv-12:q0", "Whose bike did Iris borrow?", "single-hop", 4, "Kwame's", 1),
    ]
]
_GENERIC_QRELS = [  # questions without gold have no line, as in a converted benchmark
    {"qid": "conv-7:q0", "relevant_doc_ids": ["conv-7:D1:1"]},
    {"qid": "conv-7:q1", "relevant_doc_ids": ["conv-7:D1:2", "conv-7:D2:1", "conv-7:D11:3"]},
    {"qid": "conv-7:q3", "relevant_doc_ids": ["conv-7:D2:2"]},
    {"qid": "conv-12:q0", "relevant_doc_ids": ["conv-12:D1:2"]},
]


def test_locomo_converter_matches_the_generic_form(tmp_path):
    official_file = tmp_path / "locomo-mini.json"
    official_file.write_text(json.dumps(_LOCOMO_CONVERSATIONS, ensure_ascii=False), encoding="utf-8")
    generic_dir = tmp_path / "generic"
    generic_dir.mkdir()
    _bench(generic_dir, _GENERIC_CORPUS, _GENERIC_QUESTIONS, _GENERIC_QRELS)
    official = load_locomo(official_file)
    generic = load_bench_dir(generic_dir)
    assert (len(official.units), len(official.questions)) == (11, 6)
    assert official.units == generic.units
    assert official.questions == generic.questions
    assert official.qrels == generic.qrels
    scored = ["conv-7:q0", "conv-7:q1", "conv-7:q3", "conv-12:q0"]
    assert [q.qid for q in official.scored_questions()] == scored
    assert {c: len(us) for c, us in official.units_by_corpus().items()} == {"conv-7": 9, "conv-12": 2}


def test_memory_text_leads_with_the_day_and_the_speaker():
    unit = Unit(corpus_id="c", doc_id="c:1", text="Ann: I adopted a cat.",
                timestamp=datetime(2023, 5, 8, 13, 56), speaker="Ann")
    assert unit_to_memory_text(unit) == "[8 May 2023] Ann: I adopted a cat."
    bare = Unit(corpus_id="c", doc_id="c:2", text="  I adopted a cat. ", speaker="Ann")
    assert unit_to_memory_text(bare) == "Ann: I adopted a cat."
    assert unit_to_memory_text(Unit(corpus_id="c", doc_id="c:3", text="Plain note.")) == "Plain note."


def test_unit_record_carries_session_doc_and_time():
    unit = Unit(corpus_id="c", doc_id="c:D1:3", text="Ann: hi", session_id="c:session_1",
                timestamp=datetime(2023, 5, 8, 13, 56), speaker="Ann")
    record = unit_to_record(unit, "project:eval/c")
    assert record["tags"] == ["session:c:session_1", "doc:c:D1:3"]
    assert record["created_at"] == "2023-05-08T13:56:00"
    assert record["source_ref"] == "project:eval/c" and record["source"] == "eval"
    assert record["content"] == "[8 May 2023] Ann: hi"
    assert record["context"] is None


def test_the_previous_unit_of_the_same_session_is_the_context():
    first = Unit(corpus_id="c", doc_id="c:1", text="Bob: Did you adopt anything?", session_id="c:s1")
    second = Unit(corpus_id="c", doc_id="c:2", text="Ann: A grey kitten.", session_id="c:s1")
    other_session = Unit(corpus_id="c", doc_id="c:3", text="Ann: Hello again.", session_id="c:s2")
    assert unit_context(second, first) == "Bob: Did you adopt anything?"
    assert unit_to_record(second, None, first)["context"] == "Bob: Did you adopt anything?"
    assert unit_context(other_session, second) is None
    assert unit_context(first, None) is None
