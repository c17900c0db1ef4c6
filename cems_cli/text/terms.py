"""How a query is split into terms: the one definition every retrieval stage uses.

- `words`: the lower-cased runs of word characters (`\\w+`), "ERR_MODULE_NOT_FOUND" whole;
- `query_terms`: a query's content words, the words without stop words or single letters, in order, once
  each (what snippets are cut around and what an overview question is about);
- `name_tokens`: names as a query writes them ("next.js", "front-end") with their parts, for the
  keyword lists of query understanding;
- `without_project_words`: the query BM25 reads inside a project, without the words of the project's name.

Stdlib only (`re`): the prompt hook's search runs it on every prompt.
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is "
    "it its me my of on or our should so than that the their them then there these this to was we were "
    "what when where which who why will with would you your".split()
)

_WORD = re.compile(r"\w+")
# A name keeps its joining characters: "next.js" and "front-end" are one keyword, not "next" and "js".
_NAME = re.compile(r"[a-z0-9]+(?:[.+#-][a-z0-9]+)*")
_NAME_JOINER = re.compile(r"[.+#-]")
# What names a project is ASCII letters and digits: "billing_worker" and "billing-worker" both say
# "billing" and "worker" (where `\w+` would keep "billing_worker" whole).
_ALNUM = re.compile(r"[a-z0-9]+")
_POSSESSIVE = re.compile(r"['’]s\b")
_CONTENT = re.compile(r"\w{3,}")


def words(text: str) -> list[str]:
    """Every word of `text`, lower-cased, in order (duplicates and stop words kept)."""
    return _WORD.findall(text.lower())


def query_terms(query: str) -> list[str]:
    """Lower-cased content words of a query, in order, without duplicates or stop words."""
    seen: dict[str, None] = {}
    for token in words(query):
        if len(token) >= 2 and token not in STOPWORDS:
            seen.setdefault(token, None)
    return list(seen)


def name_tokens(text: str) -> set[str]:
    """The names in `text` as written ("next.js", "front-end"), lower-cased, and their parts ("docker-compose"
    also gives "docker" and "compose")."""
    tokens = set(_NAME.findall(text.lower()))
    return tokens | {part for token in tokens for part in _NAME_JOINER.split(token)}


def without_project_words(query: str, current_project: str | None) -> str:
    """The query for BM25 without the words of the current project's name: in `billing-worker`, "is the
    worker alive?" matched every memory that names the project ("In project billing-worker the code is
    linted with …"), not the one about the Celery worker. Kept whole when nothing else would be left.

    The query is cut at whitespace, not into `words`: what is kept goes to BM25 as the user wrote it."""
    if not current_project:
        return query
    name = current_project.removeprefix("project:").lower()
    own = {w for w in _ALNUM.findall(name) if len(w) >= 3}

    def bare(word: str) -> str:  # "worker's," -> "worker"
        return "".join(_ALNUM.findall(_POSSESSIVE.sub("", word.lower())))

    split = query.split()
    kept = [w for w in split if bare(w) not in own]
    if len(kept) == len(split) or not any(_CONTENT.search(w) for w in kept):
        return query
    return " ".join(kept)
