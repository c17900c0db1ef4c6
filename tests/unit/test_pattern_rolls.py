"""A project's roll of commands of one kind (cems_cli/capture/pattern_rolls.py)."""

from __future__ import annotations

from cems_cli.capture.pattern_rolls import ROLL_ITEMS, items_of, roll_tag, with_item
from cems_cli.capture.tool_patterns import roll_text


def roll(*items: str) -> list[str]:
    named: list[str] = []
    for item in items:
        named = with_item(named, item) or named
    return named


def test_a_command_with_options_added_is_that_command_and_the_plain_one_takes_its_place():
    assert roll("`npm run test:e2e -- --reporter=line`", "`npm test`", "`npm run test:e2e -- --headed`",
                "`npm run test:e2e`") == ["`npm run test:e2e`", "`npm test`"]
    assert with_item(["`npm test`"], "`npm test -- --verbose`") is None
    assert with_item(["`npm test`"], "`npm test`") is None


def test_a_command_with_an_argument_added_is_another_command():
    assert roll("`pip install` (pip)", "`pip install -e .` (pip)") == ["`pip install` (pip)",
                                                                      "`pip install -e .` (pip)"]
    assert roll("`pytest`", "`pytest tests/unit`", "`cd web && pytest`") == [
        "`pytest`", "`pytest tests/unit`", "`cd web && pytest`"]
    assert roll("`npm run test:e2e`", "`npm run test:e2e:ui`") == [
        "`npm run test:e2e`", "`npm run test:e2e:ui`"]


def test_the_oldest_leaves_a_full_roll():
    named = roll(*(f"`make test{n}`" for n in range(ROLL_ITEMS + 2)))
    assert len(named) == ROLL_ITEMS
    assert named[0] == "`make test2`" and named[-1] == f"`make test{ROLL_ITEMS + 1}`"


def test_the_text_lists_the_items_and_gives_them_back():
    text = roll_text("api", "test", ["`pytest -q`", "`make test`", "`tox -e py311`"])
    assert text == "In project api the tests run with `pytest -q`, `make test` or `tox -e py311`."
    assert items_of(text) == ["`pytest -q`", "`make test`", "`tox -e py311`"]
    install = roll_text("api", "install", ["`npm install` (npm)", "`pip install -e .` (pip)"])
    assert install == ("In project api dependencies are installed with `npm install` (npm) or "
                       "`pip install -e .` (pip).")
    assert items_of(install) == ["`npm install` (npm)", "`pip install -e .` (pip)"]
    assert roll_text("api", "test", ["`pytest`"]) == "In project api the tests run with `pytest`."
    assert roll_text("api", "hot_file", ["`a.py`", "`b.py`"]) == (
        "In project api the files `a.py` and `b.py` change often: each was edited in several sessions.")


def test_each_project_and_kind_has_its_own_roll():
    tags = {roll_tag(project, kind) for project in ("project:a", "project:b") for kind in ("test", "lint")}
    assert len(tags) == 4 and all(tag.startswith("roll:") for tag in tags)
