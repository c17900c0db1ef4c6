"""The window of a long memory a recalled line shows (cems_cli/text/snippet.py)."""

from __future__ import annotations

import re

from cems_cli.text.snippet import TOKEN_SLACK, best_snippet


def test_short_content_is_shown_whole():
    assert best_snippet("short text", ["text"], width=300) == "short text"


def test_the_matches_are_centred_and_no_word_is_cut():
    content = "lorem " * 20 + "we tuned the postgres index with hnsw parameters for speed " + "ipsum " * 20
    # Matches span "postgres … hnsw" (24 chars); 36 chars of slack, 18 each side. The start cut "lorem" is
    # left out; the end cut "speed", finished within the slack, is shown whole.
    assert best_snippet(content, ["postgres", "hnsw"], width=60) == (
        "we tuned the postgres index with hnsw parameters for speed")


def test_distinct_terms_count_before_repeats():
    content = ("cache cache cache cache and some filler words here to pad it out. "
               "Later the cache eviction policy was LRU.")
    shown = best_snippet(content, ["cache", "eviction"], width=40)
    assert shown == "Later the cache eviction policy was LRU."


def test_prefix_match_and_fallback():
    text = "the deployment runs nightly on the build server and nothing else matters here"
    assert best_snippet(text, ["deploy"], width=30) == "the deployment runs nightly on"
    # No match: the start ("gamma", cut by the width, is finished).
    assert best_snippet("alpha beta gamma delta", ["zzz"], width=13) == "alpha beta gamma"
    assert best_snippet("alpha beta gamma delta", [], width=13) == "alpha beta gamma"
    assert best_snippet("alpha beta gamma delta", ["go"], width=13) == "alpha beta gamma"  # 2-letter: exact
    assert best_snippet("anything", ["x"], width=0) == ""


def test_a_query_word_is_found_by_its_stem():
    filler = "Ran: `ls -R`; `cat setup.cfg`; `grep -n fits astropy/io/fits/header.py`. " * 3
    content = filler + "Still failing: pytest tests: ERROR at setup, nose tests are deprecated."
    # "errors" is found as "ERROR" (one stem): the window holding it and "setup" wins over the commands,
    # which hold "setup" only (as "setup.cfg").
    assert "ERROR at setup, nose tests" in best_snippet(content, ["errors", "setup"], width=60)
    # Never inside a longer word: "pango" does not find "libpango".
    assert best_snippet("libpango " * 20 + "pango here", ["pango"], width=12) == "pango here"


def test_a_path_cut_by_the_end_is_finished():
    path = "sympy/combinatorics/tests/test_permutations.py"
    content = "which file covers the permutation class: " + path + " and nowhere else. " + "filler " * 50
    assert best_snippet(content, ["file", "covers"], width=50) == (
        "which file covers the permutation class: " + path)


def test_the_width_is_kept_but_for_one_finished_token():
    content = " ".join(f"word{i} postgres" if i % 7 == 0 else f"word{i}" for i in range(200))
    for width in (20, 50, 120, 300):
        shown = best_snippet(content, ["postgres"], width=width)
        assert len(shown) <= width + TOKEN_SLACK
        assert shown in content
        # Every token shown is a whole token of the text.
        assert all(re.search(rf"(^|\s){re.escape(token)}(\s|$)", content) for token in shown.split())


def test_word_boundaries_include_newlines_and_tabs():
    content = "intro\tparagraph\nthe postgres\nindex\twas rebuilt after the upgrade of everything else"
    # "postgres" spans 20..28; slack 14 → window 13..35. 13 cuts "paragraph": the start moves past the "\n"
    # at 15. 35 cuts "was": it ends at 37, within the slack, so it is finished.
    assert best_snippet(content, ["postgres"], width=22) == "the postgres\nindex\twas"


def test_a_rare_term_outweighs_a_common_one():
    # "tests" is in every command of the roll, "migrate" in two: weighed by rarity in the store, the window
    # that holds "migrate" wins over the one holding "run" from the roll's own words.
    content = ("In project django the tests run with " + ", ".join(
        f"`./tests/runtests.py {name}`" for name in ("aggregation", "annotations", "pagination", "queries",
                                                     "ordering", "validators", "expressions", "lookup"))
               + " or `python3 tests/runtests.py migrations.test_commands`.")
    terms = ["run", "tests", "migrate"]
    assert "migrations.test_commands" not in best_snippet(content, terms, width=120)
    weighted = best_snippet(content, terms, width=120, weights={"run": 0.2, "tests": 0.1, "migrate": 3.0})
    assert "migrations.test_commands" in weighted
