"""Neighbouring query terms for the BM25 phrase bonus (pure: positions in, pairs out)."""

from __future__ import annotations

from cems_cli.store.lexical import _phrase, neighbouring_pairs


def test_adjacent_terms_pair_in_query_order():
    assert neighbouring_pairs({"support": [1], "group": [2]}) == [("support", "group", 1)]
    assert neighbouring_pairs({"group": [2], "support": [1]}) == [("support", "group", 1)]


def test_stop_words_between_keep_their_places():
    # "trip to the beach": 'trip' at 1, 'beach' at 4.
    assert neighbouring_pairs({"trip": [1], "beach": [4]}) == [("trip", "beach", 3)]


def test_terms_too_far_apart_are_no_phrase():
    assert neighbouring_pairs({"trip": [1], "beach": [5]}) == []
    assert neighbouring_pairs({"trip": [1], "beach": [5]}, max_distance=4) == [("trip", "beach", 4)]


def test_only_next_neighbours_pair_and_repeats_count_once():
    positions = {"dog": [1, 6], "park": [2, 7], "fetch": [4]}
    assert neighbouring_pairs(positions) == [("dog", "park", 1), ("park", "fetch", 2), ("fetch", "dog", 2)]


def test_a_term_next_to_itself_is_no_phrase():
    assert neighbouring_pairs({"very": [1, 2]}) == []
    assert neighbouring_pairs({}) == []


def test_phrase_query_text_quotes_both_terms_and_keeps_content_weight():
    assert _phrase("it's", "back\\slash", 2) == "'it''s':A <2> 'back\\\\slash':A"
