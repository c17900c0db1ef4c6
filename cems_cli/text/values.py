"""The values a fact states, to tell two wordings of one fact from two facts that differ in one value.

"Staging runs Kubernetes 1.29" and "Production runs Kubernetes 1.27" are 0.95 alike by embedding, and
merging them loses one of the two facts. A near duplicate is the same fact only when both texts state the
same values: numbers and versions (with their unit: 30s is not 30 min), paths, URLs, hosts, emails, code
spans, identifiers and flags, capitalised names (people, products, weekdays, months), environments
(staging, production, …), negation (never/not/no/don't, against always), words of one contrast (tabs or
spaces, before or after, JSON or YAML, …), and the words themselves: one wording may add a word or two, but
when each has words the other lacks, something was replaced ("Use Node 20 for the build" / "… for the test
suite"; "We use poetry" / "We use uv").

Pure and stdlib only (the retrieval pipeline imports it). Hand-written because no library compares two
developer notes value by value; it runs on the few pairs a cosine already found alike (microseconds each).
The decision leans to keeping apart: an unmerged duplicate costs a line in a search result, a wrong merge
costs a fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# Words that carry no value; a sentence may start with one, a paraphrase may add or drop one.
_STOP = frozenset(
    """a about above across actually after again against all also am an and any anything are as at be
    because been before being below between both but by can could did do does doing done down during each
    either else etc even ever every everything few for from further had has have having he her here hers
    him his how however i if in into is it its itself just keep kept let lets like make makes may me might
    more most much must my need needs now of off often on once one only onto or other our ours out over own
    per please prior rather really same set shall she should so some something still such than that the
    their theirs them then there these they thing things this those through thus to too under until up
    upon us use used uses using usually via was we well were what when where whether which while who whom
    whose why will with within would yet you your yours always please also just""".split()
)
# Sentence openers that are no name although capitalised: imperatives and the like.
_OPENERS = frozenset(
    """add always avoid check configure create deploy do don't ensure keep make never note prefer put
    remember run set start stop try use when whenever""".split()
)

_NEGATIONS = frozenset(
    "not no never none nothing nobody neither nor without cannot can't don't doesn't didn't isn't aren't "
    "wasn't weren't won't wouldn't shouldn't mustn't haven't hasn't hadn't couldn't".split()
)

# "X instead of Y", "X rather than Y": Y is negated as in "X, not Y".
_CONTRARY = frozenset({("instead", "of"), ("rather", "than")})

# Verbs that link a subject to its value and carry none themselves: one wording says the database "lives"
# in a region, another that it "is hosted" there (compared by stem).
_LIGHT = frozenset(
    """live host run store keep hold go goe process need requir handl get have make do back power manag
    stay sit reach receiv carri contain happen work call come give take put find done is be""".split()
    # The noun after an environment's name: "the staging environment" is "staging".
    + ["environ"]
)

# "development" is no environment here: it is mostly the activity ("Android development").
_ENVIRONMENTS = {
    "production": "production", "prod": "production", "staging": "staging", "stage": "staging",
    "preprod": "preprod", "pre-prod": "preprod", "pre-production": "preprod", "dev": "development",
    "qa": "qa", "uat": "uat", "sandbox": "sandbox",
}

# Words of one contrast: each names one value of it. Two texts that use different words of one group say
# different things ("indent with tabs" / "indent with spaces"); a text that uses none says nothing of it.
_CONTRASTS: dict[str, dict[str, str]] = {}


def _contrast(group: str, *values: str) -> None:
    table = _CONTRASTS.setdefault(group, {})
    for value in values:
        canonical, *spellings = value.split("|")
        for word in (canonical, *spellings):
            table[word] = canonical


_contrast("indentation", "tabs|tab", "spaces|space")
_contrast("synchrony", "sync|synchronous|synchronously", "async|asynchronous|asynchronously")
_contrast("switch", "enabled|enable|enables|enabling", "disabled|disable|disables|disabling")
_contrast("boolean", "true", "false")
_contrast("order", "before|prior", "after|afterwards")
_contrast("position", "first", "last")
_contrast("bound", "minimum|min|least", "maximum|max|most")
_contrast("io", "read|reads|reading", "write|writes|writing")
_contrast("visibility", "public", "private", "internal", "external")
_contrast("permission", "allow|allowed|allows|permit|permitted",
          "deny|denied|denies|forbid|forbidden|reject|rejected")
_contrast("inclusion", "include|included|includes|including", "exclude|excluded|excludes|excluding")
_contrast("sorting", "ascending|asc", "descending|desc")
_contrast("direction", "increase|increased|increases|raise|raised",
          "decrease|decreased|decreases|reduce|reduced")
_contrast("lifecycle", "start|starts|started", "stop|stops|stopped")
_contrast("place", "local|locally", "remote|remotely")
_contrast("traffic", "inbound|ingress", "outbound|egress")
_contrast("semver", "major", "minor", "patch")
_contrast("loglevel", "debug", "info", "warning|warn", "error|errors", "critical|fatal", "trace")
_contrast("quotes", "single", "double")
_contrast("case", "uppercase|upper", "lowercase|lower", "camelcase", "snake_case", "kebab-case")
_contrast("integration", "merge|merges|merged|merging", "rebase|rebases|rebased|rebasing", "squash|squashed")
_contrast("daytime", "morning", "afternoon", "evening", "night", "midnight", "noon")
_contrast("cadence", "hourly", "daily", "nightly", "weekly", "monthly", "quarterly", "yearly|annually")
_contrast("frequency", "always", "usually|normally|generally", "often|frequently", "sometimes|occasionally",
          "rarely|seldom")
_contrast("obligation", "required|must|mandatory", "recommended|should", "optional|may")
_contrast("outcome", "pass|passes|passed|passing", "fail|fails|failed|failing")
_contrast("strictness", "strict|strictly", "lenient|loose|loosely")
_contrast("theme", "light", "dark")
_contrast("side", "left", "right")
_contrast("locking", "optimistic", "pessimistic")
_contrast("format", "json", "yaml|yml", "toml", "xml", "csv", "ini")
_contrast("scheme", "http", "https")
_contrast("copy", "shallow", "deep")
_contrast("size", "smaller|small", "larger|large|bigger|big")
_contrast("speed", "faster|fast", "slower|slow")

# Every contrast word → (group, value) for each group it belongs to: one lookup per word.
_CONTRAST_OF: dict[str, list[tuple[str, str]]] = {}
for _group, _table in _CONTRASTS.items():
    for _word, _value in _table.items():
        _CONTRAST_OF.setdefault(_word, []).append((_group, _value))

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "fifteen": "15", "twenty": "20",
    "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000", "once": "1x",
    "twice": "2x", "half": "0.5",
}
# "one" is mostly a pronoun ("the one in the repo"); counted as a number only next to a unit.
_WEAK_NUMBER_WORDS = frozenset({"one", "once", "half"})
_UNITS = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d", "w": "w", "wk": "w", "week": "w", "weeks": "w",
    "mo": "mo", "month": "mo", "months": "mo", "y": "y", "yr": "y", "year": "y", "years": "y",
    "b": "b", "byte": "b", "bytes": "b", "kb": "kb", "kib": "kib", "mb": "mb", "mib": "mib", "gb": "gb",
    "gib": "gib", "tb": "tb", "tib": "tib", "%": "%", "percent": "%", "pct": "%", "x": "x", "px": "px",
    "times": "x", "k": "k", "am": "am", "pm": "pm", "rem": "rem", "em": "em", "cores": "cpu", "core": "cpu",
    "cpu": "cpu", "cpus": "cpu", "vcpu": "cpu", "vcpus": "cpu",
}
# Abbreviations whose dots are no identifier.
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a", "approx"})

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"\S+|\n")
_EDGE = "\"'“”‘’()[]{}<>,;:!?*"
_NUMBER = re.compile(r"^(?:v|version)?(\d+(?:[.,]\d+)*)([a-z%]*)$", re.IGNORECASE)
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_ACRONYM = re.compile(r"[A-Z]{2,5}s?")
_ALNUM = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class Values:
    """The values of one text, each kind lower-cased and normalised so that two wordings compare equal."""

    numbers: frozenset[str] = frozenset()
    terms: frozenset[str] = frozenset()  # paths, URLs, hosts, emails, code spans, identifiers, flags
    names: frozenset[str] = frozenset()  # capitalised inside a sentence
    openers: frozenset[str] = frozenset()  # capitalised at a sentence's start only: a name or just a word
    environments: frozenset[str] = frozenset()
    negated: bool = False  # an odd number of negations
    contrasts: dict[str, frozenset[str]] = field(default_factory=dict)
    words: tuple[str, ...] = ()  # the other words, stemmed, in order


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """Snowball's English stemmer: Fridays/Friday, deploys/deployment, approves/approval compare equal;
    the irregular past tenses it leaves alone are looked up first."""
    word = word.lower().removesuffix("'s").removesuffix("’s")
    stem = _stemmer().stemWord(_IRREGULAR.get(word, word))
    return _SAME_MEANING.get(stem, stem)


# Stems of one meaning in a developer's note, where a paraphrase takes the other word ("the freeze starts" /
# "begins", "listens on port 8080" / "binds to", "256px wide" / "a width of 256px"). Only pairs that never
# name two values: a word that could be the changed value ("tabs"/"spaces") is a contrast, not a synonym.
_SAME_MEANING = {"begin": "start", "bind": "listen", "width": "wide"}


_IRREGULAR = {
    "built": "build", "sent": "send", "ran": "run", "written": "write", "wrote": "write", "kept": "keep",
    "held": "hold", "began": "begin", "begun": "begin", "found": "find", "made": "make", "paid": "pay",
    "brought": "bring", "chosen": "choose", "chose": "choose", "taken": "take", "took": "take",
    "gone": "go", "went": "go", "set": "set", "split": "split", "shipped": "ship", "led": "lead",
}


@lru_cache(maxsize=4096)
def snowball_stem(word: str) -> str:
    """Snowball's English stem of a word, as PostgreSQL's `english` configuration stems it."""
    return str(_stemmer().stemWord(word.lower()))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def _number(value: str, unit: str) -> str:
    value = value.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+", value) else value
    return value + _UNITS.get(unit.lower(), unit.lower())


def _term(token: str) -> bool:
    """An identifier, path, host, flag or the like: the kinds of token a paraphrase copies as they are."""
    if token.isalpha():  # the common case, first: a plain word is a term only in camelCase or CONSTANT case
        if _CAMEL.search(token):
            return not _ACRONYM.fullmatch(token)
        return len(token) > 5 and token.isupper()
    if any(c in token for c in "/\\@=$#~") or token.startswith("-") or "://" in token:
        return True
    if any(c.isdigit() for c in token) and (any(c.isalpha() for c in token) or any(c in token for c in "-:")):
        return True  # eu-west-1, t3.large, py311, gp3, 2026-03-01, 17:30
    if ("_" in token or "." in token) and token.lower().rstrip(".") not in _ABBREVIATIONS:
        return True  # snake_case, config.yaml, os.path
    if _CAMEL.search(token) and not _ACRONYM.fullmatch(token):
        return True  # camelCase, PascalCase with inner capitals (an acronym is a word: TTL, PRs, CI)
    return len(token) > 5 and token.isupper() and token.isalpha()  # LOGLEVEL-like constants


@lru_cache(maxsize=512)  # a memory takes part in several pairs; the texts may be long, so few are kept
def extract(text: str) -> Values:
    """The values `text` states (see the module's docstring)."""
    terms: set[str] = {" ".join(span.split()) for span in _CODE_SPAN.findall(text)}
    rest = _CODE_SPAN.sub(" ", text)
    numbers: set[str] = set()
    names: set[str] = set()
    openers: set[str] = set()
    environments: set[str] = set()
    contrasts: dict[str, set[str]] = {}
    words: list[str] = []
    negations = 0
    tokens = _TOKEN.findall(rest)
    sentence_start = True
    skip = -1
    for index, raw in enumerate(tokens):
        if raw == "\n" or not _ALNUM.search(raw):
            sentence_start = True  # a line break, a bullet, a dash: what follows starts afresh
            continue
        starts = sentence_start
        sentence_start = raw.rstrip("\"'“”‘’)]}*").endswith((".", "!", "?", ":", ";"))
        token = raw.strip(_EDGE).rstrip(".")
        if not token or index == skip:
            continue
        lower = token.lower().replace("’", "'")
        following = tokens[index + 1].strip(_EDGE + ".").lower() if index + 1 < len(tokens) else ""
        number = _NUMBER.match(token)
        if number and (not number.group(2) or number.group(2).lower() in _UNITS or len(number.group(2)) <= 2):
            unit = number.group(2) or (following if following in _UNITS and len(following) > 1 else "")
            numbers.add(_number(number.group(1), unit))
            skip = index + 1 if unit and not number.group(2) else skip
            continue
        if lower in _NUMBER_WORDS and (lower not in _WEAK_NUMBER_WORDS or following in _UNITS):
            unit = following if following in _UNITS and len(following) > 1 else ""
            numbers.add(_number(_NUMBER_WORDS[lower], unit))
            skip = index + 1 if unit else skip
            continue
        if _term(token):
            terms.add(lower)
            continue
        if _ACRONYM.fullmatch(token):  # a word, compared as the other words are ("PRs" is "PR")
            words.append(lower.removesuffix("s") if token.endswith("s") else lower)
            continue
        parts = [p for p in re.split(r"[-–]", lower) if p] if "-" in lower or "–" in lower else [lower]
        joined = "-".join(parts)
        if joined in _ENVIRONMENTS or "".join(parts) in _ENVIRONMENTS:
            environments.add(_ENVIRONMENTS.get(joined) or _ENVIRONMENTS["".join(parts)])
            continue
        if lower in _NEGATIONS or lower.endswith("n't") or (lower, following) in _CONTRARY:
            negations += 1
            continue
        if token[0].isupper() and lower not in _STOP:
            if not starts:
                names.add(stem(lower))
                continue
            if lower not in _OPENERS and lower not in _CONTRAST_OF:
                openers.add(stem(lower))
        for part in parts:
            for group, value in _CONTRAST_OF.get(part, ()):
                contrasts.setdefault(group, set()).add(value)
        # A compound is one word ("acme-analytics" is not "acme" and "analytics", nor is "pytest-xdist").
        word = "".join(parts)
        if word not in _STOP and word.isalpha() and stem(word) not in _LIGHT:
            words.append(stem(word))
    return Values(
        numbers=frozenset(numbers),
        terms=frozenset(terms),
        names=frozenset(names),
        openers=frozenset(openers),
        environments=frozenset(environments),
        negated=negations % 2 == 1,
        contrasts={group: frozenset(found) for group, found in contrasts.items()},
        words=tuple(words),
    )


def _differ(kind: str, a: frozenset[str], b: frozenset[str]) -> str | None:
    if a == b:
        return None
    only_a, only_b = sorted(a - b), sorted(b - a)
    return f"{kind}: {', '.join(only_a) or '-'} / {', '.join(only_b) or '-'}"


# Words one wording may add that the other lacks ("the staging *cluster*", "session cache *entries*").
MAX_ADDED = 1


def _unmatched(x: Values, y: Values) -> tuple[frozenset[str], frozenset[str]]:
    """Names and words of `x` that `y` states in no form (a name may be a plain word there: "Deploy" opens
    one sentence, "deploys" sits inside the other; a stem may be the start of the other's: "config" and
    "configuration")."""
    y_all = y.names | y.openers | frozenset(y.words)

    def stated(word: str) -> bool:
        return word in y_all or (len(word) >= 4 and any(
            len(other) >= 4 and (other.startswith(word) or word.startswith(other)) for other in y_all))

    return (
        frozenset(w for w in x.names | x.openers if not stated(w)),
        frozenset(w for w in x.words if not stated(w)),
    )


def differences(a: str, b: str) -> list[str]:
    """How the values of two texts differ, one line per kind ("numbers: 1.29 / 1.27"); [] when they state
    the same values, the condition for two near duplicates to be one fact."""
    x, y = extract(a), extract(b)
    found = [
        _differ("numbers", x.numbers, y.numbers),
        _differ("terms", x.terms, y.terms),
        _differ("environments", x.environments, y.environments),
    ]
    if x.negated != y.negated:
        found.append("negation: " + ("negated / not" if x.negated else "not / negated"))
    for group in sorted(set(x.contrasts) & set(y.contrasts)):
        found.append(_differ(group, x.contrasts[group], y.contrasts[group]))
    names_x, words_x = _unmatched(x, y)
    names_y, words_y = _unmatched(y, x)
    # A name inside a sentence is a value however it came (a person, a product, a weekday); a capitalised
    # sentence opener may be a plain word ("Please run …"), so it counts only against another in its place.
    if (names_x & x.names) or (names_y & y.names) or (names_x and names_y):
        found.append(_differ("names", names_x, names_y))
    # One wording's words that the other lacks, both ways: something was replaced ("the build" / "the test
    # suite"). More than MAX_ADDED words added on one side only: it says more than the other, which a
    # merge would drop with its text.
    if (words_x - names_y and words_y - names_x) or max(len(words_x), len(words_y)) > MAX_ADDED:
        found.append(_differ("words", words_x, words_y))
    return [line for line in found if line]


def same_values(a: str, b: str) -> bool:
    return not differences(a, b)


def one_command_in_more_detail(a: str, b: str) -> bool:
    """True when two texts say the same except that a command (a code span) of one is the other's with
    more words: "the tests run with `pytest`" / "… `pytest -v`" / "… `python3 -m pytest`". Not two facts
    for a reader, and two lines of a recall block for one: shown once, the better one. Consolidation does
    not use it (both memories stay stored). A code span that changes a word rather than adds one
    ("`node 18`" / "`node 20`", "`npm`" / "`pnpm`", "`pytest tests/unit`" / "`pytest tests/integration`")
    is another value."""
    x, y = extract(a), extract(b)
    only_x, only_y = x.terms - y.terms, y.terms - x.terms
    if not only_x or not only_y:
        return False

    def covered(terms: frozenset[str], others: frozenset[str]) -> bool:
        return all(any(_nested(term, other) for other in others) for term in terms)

    if not (covered(only_x, only_y) and covered(only_y, only_x)):
        return False
    # Everything outside the code spans must state the same values.
    return same_values(_CODE_SPAN.sub("`command`", a), _CODE_SPAN.sub("`command`", b))


def _nested(one: str, other: str) -> bool:
    """One command's words all among the other's, in order ("pytest" in "python3 -m pytest -v")."""
    # "./bin/test" is "bin/test".
    short, long = sorted(([w.removeprefix("./") for w in one.split()],
                          [w.removeprefix("./") for w in other.split()]), key=len)
    words = iter(long)
    return all(word in words for word in short)
