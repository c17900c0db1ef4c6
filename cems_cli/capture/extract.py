"""Deterministic extraction: what a finished turn says that a developer wants back next week.

Works on what the turn model (`chunks.ChunkBuilder`) gathered, with no LLM:
* the real outcome of a tool call: ran, failed, denied by a rule (a PreToolUse hook), denied by the user;
* `decisions`: sentences of the prompt or the final answer that decide ("use X instead of Y", "from now on");
* `preferences`: what the user states about how things are to be done ("always…", "never…", "I prefer…");
* `patterns`: how the project is built, tested, linted, installed (the commands that succeeded, classified by
  `tool_patterns`, whose texts are the same whichever trigger saw the command, so they deduplicate).

Cue lists are hand-written: no library recognises "a sentence that states a preference" offline, and a
regex costs microseconds per turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cems_cli.capture.tool_patterns import Statement

RAN, FAILED, DENIED_RULE, DENIED_USER, NOT_RUN = "ran", "failed", "denied_rule", "denied_user", "not_run"

# A PreToolUse deny reaches the transcript as an is_error tool_result: "PreToolUse:Bash hook error: <reason>"
# (Claude Code 2.1), "<Tool> operation blocked by hook:\n- <reason>" (earlier 2.x), or CEMS's own wording.
_RULE_DENIAL = re.compile(
    r"^(?:PreToolUse:\S+ )?hook error:\s*(?P<a>.+)"
    r"|operation blocked by hook:?\s*(?:-\s*)?(?P<b>.+)"
    r"|^(?P<c>Blocked by (?:CEMS )?rule\b.+)",
    re.I | re.S,
)
# What Claude Code writes when the user rejects a permission prompt, or permission was never granted.
_USER_DENIAL = re.compile(
    r"The user doesn't want to (?:proceed with this tool use|take this action)"
    r"|requested permissions? to use \S+, but you haven't granted it"
    r"|Permission to use \S+ has been (?:auto-)?denied"
    r"|\buser (?:rejected|denied) (?:the|this) tool",
    re.I,
)
# The client failing before the command ran, on Windows: Claude Code turns the working folder into a POSIX
# path with cygpath first, its shell cannot fork (Cygwin's "child_copy: cygheap read copy failed"), or
# Windows cannot start the process (0xC0000142, DLL initialisation failed). Read as the command's failure,
# the retry that ran made a false "`X` failed …; `Y` worked instead" (58 such results in one Windows
# user's sessions).
_CLIENT_FAILURE = re.compile(
    r"\ACommand failed: cygpath\b|\bchild_copy: cygheap read copy failed\b|\bdofork: child -1\b"
    r"|\AExit code 3221225794\Z"
)
_CEMS_RULE_ID = re.compile(r"Blocked by CEMS rule [0-9a-f-]{8,}:\s*", re.I)
_RULE_PATTERN_NOTE = re.compile(r"\s*\(pattern '[^']*'\)\s*$")


def tool_outcome(text: str, is_error: bool) -> str:
    """ran / failed / denied_rule / denied_user / not_run (the client could not start it) for one
    tool_result. Only an is_error result is a denial: a successful `grep "hook error:"` must not read as
    one."""
    if not is_error:
        return RAN
    head = text.strip()[:2000]
    if _CLIENT_FAILURE.search(head):
        return NOT_RUN
    if _USER_DENIAL.search(head):
        return DENIED_USER
    if _RULE_DENIAL.search(head):
        return DENIED_RULE
    return FAILED


def denial_reason(text: str) -> str:
    """The rule's reason, without the hook plumbing around it: "force pushes rewrite shared history"."""
    match = _RULE_DENIAL.search(text.strip())
    reason = next((g for g in match.groups() if g), "") if match else text
    reason = _CEMS_RULE_ID.sub("", reason.strip().splitlines()[0] if reason.strip() else "")
    return _RULE_PATTERN_NOTE.sub("", reason).strip()


# --------------------------------------------------------------------------- sentences

# "I want …" and "I'd like …" ask for something ("I'd like a script that rotates the logs"), which the session
# then does: a request, not how things are to be done (65 of 94 'preferences' of a set of real sessions).
_PREFERENCE = re.compile(
    r"\b(?:always|never|i (?:really )?(?:prefer|like|hate|dislike|don't like|don't want|do not want)"
    r"|i'd (?:rather|prefer)"
    r"|please (?:don't|do not|always|never|use|avoid)|don't ever|do not ever|avoid using"
    r"|we (?:always|never|use|don't use|do not use|prefer)|in this (?:repo|repository|project|codebase) we"
    r"|make sure (?:to|you)|my (?:preference|favourite|favorite))\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision(?: is)? to"
    r"|we(?:'ll| will| are going to| should) (?:use|switch|move|go with|keep|stick with|drop|replace)"
    r"|let's (?:use|go with|switch|keep|move|stick with|drop|replace)"
    r"|chose|chosen|opted|from now on|going forward|settled on)\b",
    re.I,
)
# Words that compare two ways, and so say a choice only in the user's own voice: "Let's store amounts as cents
# instead of NUMERIC", "Use WeasyPrint rather than wkhtmltopdf". In text the user pasted they describe, as a
# changelog's "Fixed timer duration showing 11m 60s instead of 12m 0s" does (all 26 'decisions' of a set of
# real sessions came from a pasted changelog and a command's output), and a bug report's "using X instead of Y
# produces an error".
_COMPARED = re.compile(
    r"\b(?:switch(?:ed|ing)? (?:to|from|over)|instead of|rather than|go(?:ing)? with|replaced \S+ with)\b",
    re.I,
)
_OWN_VOICE = re.compile(
    r"\b(?:we|we'll|we've|we're|we'd|let's|let us|i|i'll|i'd|i'm|our|us|me|my)\b"
    r"|^(?:please )?(?:use|prefer|pick|choose|switch|replace|keep|store|put|move|stick|always|never|avoid"
    r"|drop)\b",
    re.I,
)
# A decision's words that decide nothing: moving through a plan ("let's move on to 3.2", "let's keep going")
# and taking an option named elsewhere ("let's go with option B", "… your recommendation", "switch to it").
# Of 86 'decisions' of a set of real sessions, 44 were these; removed before the cues are looked for.
_HOLLOW = re.compile(
    r"\b(?:mov(?:e|ing) (?:on|forward|ahead)"
    r"|keep(?:ing)? (?:going|moving|working|debugging|trying|iterating|pushing)"
    r"|go(?:ing)? with (?:(?:option|choice|number|approach|plan) [\w.#-]{1,3}|your|that|this|it"
    r"|a (?:completely )?different)"
    r"|switch(?:ed|ing)? (?:over )?to (?:it|them|that|this))\b",
    re.I,
)
# In the agent's own answer only what says a choice was made: "instead of", "rather than", "going with",
# "going forward" and "switched to" are how any explanation is worded there ("Root cause: using `test-key`
# instead of the real key", "a one-command health check going forward"), and stored as decisions they
# outranked the answers (188 'decisions' of a set of real sessions).
_AGENT_DECISION = re.compile(
    r"\b(?:decided|decide to|decision(?: is)? to"
    r"|we(?:'ll| will| are going to) (?:use|switch|move|go with|keep|stick with|drop|replace)"
    r"|we(?:'ve| have)? (?:switched|moved|chose|picked|went with|dropped|replaced)"
    r"|let's (?:use|go with|switch|keep|move|stick with|drop|replace)"
    r"|from now on|settled on|opted)\b",
    re.I,
)
# A sentence also ends before a symbol or an emoji that opens the next ("possible. ⚠️ Tests That Need Full
# Services: …", "Deployed! 🚀 Health: …"), 249 times in the turns of two sets of real sessions: as one
# sentence, the preference or fact ran on into what followed. (Arrows, technical symbols, dingbats, emoji.)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\u2190-\u2bff\U0001f300-\U0001faff])")
# A paragraph ends at a blank line, and before a list item, heading, quote, table row or a line that opens
# with a check mark (a progress report's items); a single line break inside a paragraph (or between two
# streamed blocks of one answer) is only a space.
_PARAGRAPH_END = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*•>#|]|\d+[.)])\s)|\n(?=\s*[✅❌☑✔])")
# A heading's line is a paragraph of its own, with no blank line around it too. The text right under it went
# with it (headings are not prose): "### Problem\nThe error occurred because `frontend/package.json` pinned …"
# left no finding; and "### Solution" right under a sentence was read as the sentence's last words.
_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.M)
_CHECKED = re.compile(r"\s*[✅❌☑✔]")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# The items under a question that offers ("Would you like me to:\n1. Investigate the Railway agent issue\n
# 2. Update the tasks.md with our current progress") are what the agent could do next, not what it found:
# 54 such lists (185 items) in the answers of two sets of real sessions, and one item, kept as a finding,
# ranked first for two questions it had nothing to say about.
_OFFER = re.compile(
    r"\b(?:would you like(?: me)? to|do you want(?: me)? to|want me to|should i|shall i|would you prefer"
    r"|what would you like)\b[^.!?\n]*[:?][*_\s]*$",
    re.I,
)
_MIN_WORDS, _MAX_CHARS = 4, 300


def _paragraphs(text: str) -> list[str]:
    """The prose paragraphs of a text, each on one line (code blocks, headings, table rows are not prose)."""
    text = re.sub(r"```.*?(?:```|\Z)", "\n\n", text, flags=re.S)
    text = _HEADING_LINE.sub(lambda heading: f"\n{heading.group(0)}\n", text)
    parts: list[str] = []
    for paragraph in _PARAGRAPH_END.split(text):
        if _CHECKED.match(paragraph) and "\n" in paragraph.strip():  # a check-marked item is its line
            parts += paragraph.strip().split("\n", 1)
        else:
            parts.append(paragraph)
    prose: list[str] = []
    offering = False
    for paragraph in map(str.strip, parts):
        if not paragraph or offering and _LIST_MARK.match(paragraph):
            continue
        if not _LIST_MARK.match(paragraph):
            offering = bool(_OFFER.search(paragraph))
        if not paragraph.startswith(("#", "|", ">")):
            prose.append(" ".join(_LIST_MARK.sub("", paragraph).split()))
    return prose


def sentences(text: str) -> list[str]:
    """Plain sentences of a prose text."""
    return [sentence for paragraph in _paragraphs(text) for sentence in _plain(paragraph)]


def _plain(paragraph: str) -> list[str]:
    found: list[str] = []
    for part in _SENTENCE_END.split(paragraph):
        part = part.strip()
        if not part:
            continue
        if len(part.split()) < _MIN_WORDS or part.endswith("?"):
            continue
        found.append(part if len(part) <= _MAX_CHARS else part[: _MAX_CHARS - 1].rstrip() + "…")
    return found


def preference_sentences(prompt: str) -> list[str]:
    """What the user said about how they want things done (only the user's words count)."""
    return [s for s in sentences(prompt) if _PREFERENCE.search(s)]


# A decision that gives its own reason needs nothing more; one that does not ("Let's switch to NATS.") is
# kept with the sentence before it, where the reason usually is ("Kafka is too heavy for our volume.").
_REASON = re.compile(r"\b(?:because|since|as|so that|so|to keep|to avoid|due to|given)\b", re.I)


def decision_sentences(text: str, *, by_agent: bool = False) -> list[str]:
    """The sentences of `text` that state a decision; `by_agent`: the agent's answer, where only words
    that say a choice was made count."""
    found: list[str] = []
    for paragraph in _paragraphs(text):
        previous = ""
        for sentence in _plain(paragraph):
            if _is_decision(_HOLLOW.sub(" ", sentence), by_agent):
                if previous and not _REASON.search(sentence) and len(previous) + len(sentence) < _MAX_CHARS:
                    sentence = f"{previous} {sentence}"
                found.append(sentence)
            previous = sentence if not sentence.endswith("…") else ""
    return found


def _is_decision(sentence: str, by_agent: bool) -> bool:
    if by_agent:
        return bool(_AGENT_DECISION.search(sentence))
    return bool(_DECISION.search(sentence) or _COMPARED.search(sentence) and _OWN_VOICE.search(sentence))


# --------------------------------------------------------------------------- patterns


def pattern_statements(
    project: str | None, session_id: str, cwd: str, commands: Iterable[str]
) -> list[Statement]:
    """`patterns` statements for the Bash commands of a turn that ran successfully, derived as the tool-event
    path derives them (tool_patterns.pattern_statements): both add them to the same rolls."""
    if not project:
        return []
    from cems_cli.capture.tool_patterns import ToolEvent
    from cems_cli.capture.tool_patterns import pattern_statements as derive

    events = [
        ToolEvent(
            tool_use_id=f"turn-{index}",
            session_id=session_id,
            tool_name="Bash",
            cwd=cwd,
            received_at=float(index),
            tool_input={"command": command},
            tool_response={"stdout": "", "stderr": ""},
        )
        for index, command in enumerate(commands)
    ]
    return derive(project, events)


# --------------------------------------------------------------------------- findings

# What the agent found out and said in its answer ("Flags are read from config/flags.yaml by app/flags.py"):
# a sentence is a finding when it names something of the project a later session can act on. Recognised
# by form, not by topic (hand-written: no library tags "a path, a config key, a version" in prose offline).
_FACT_TOKENS = re.compile(
    "|".join(
        (
            r"`[^`\n]{2,}`",  # inline code: a command, a file, a key, a value
            r"\bhttps?://[^\s)>\]]+",
            # a path: a/b.ext, ./x, ~/x, /etc/x, a/b/c (not "and/or", "CI/CD": one slash between two words)
            r"(?<![\w/])(?:~|\.{1,2})?/?[\w.@-]+(?:/[\w.@<>*-]+){2,}/?",
            r"(?<![\w/])(?:~|\.{1,2})/[\w.@<>*-]+",
            r"(?<![\w/])/?[\w@-]+/[\w@-]*[\w-]\.[A-Za-z]{1,10}\b",
            # a file name with an extension, a dotfile, the files without one
            r"\b[\w-]+\.(?:py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ya?ml|toml|ini|cfg|conf|env|lock|md|rst|"
            r"txt|sql|sh|bash|zsh|ps1|go|mod|rs|rb|java|kt|swift|c|h|cc|cpp|hpp|cs|php|tf|tfvars|hcl|proto|"
            r"graphql|css|scss|html|vue|svelte|xml|gradle|properties|plist|service|nix|csv|log)\b",
            r"(?<![\w.])\.[a-z][\w-]*(?:\.[\w-]+)*\b",
            r"\b(?:Dockerfile|Containerfile|Makefile|Justfile|Procfile|Gemfile|Rakefile|Jenkinsfile|"
            r"Vagrantfile|Caddyfile|Brewfile|Pipfile|CODEOWNERS)\b",
            r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b",  # an environment variable or constant: DOCKER_BUILDKIT
            r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b",  # an identifier: amount_cents, ledger_entries
            r"\b[a-z]+[A-Z]\w*\b",  # camelCase: waitForTimeout, useCart
            r"\b[A-Z]{2,}[a-z]{2,}\w*\b",  # OOMKilled, JSONSchema
            r"\b[\w.-]+=[\w./:@-]+",  # key=value: DOCKER_BUILDKIT=1, ENV=prod
            # a version (not a duration: "4.37s")
            r"\bv?\d+\.\d+(?:\.\d+)*(?:[-+][\w.]+)?\b(?!\s?(?:s|ms|sec|secs|seconds|minutes|%|x)\b)",
            r"\b(?:port|version|v)\s?\d+\b|(?<=[\w\]]):\d{2,5}\b",  # a port, a bare version number
            r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|[KMGT]i|[kKMG]B)\b",  # a size: 256Mi, 64 KiB
            r"\b\d{1,2}:\d{2}\s?UTC\b",
            # a command said without backticks, by a program that is no English word
            r"\b(?:npx|pnpm|npm|yarn|uv|uvx|pip3?|pipx|poetry|docker|docker-compose|kubectl|helm|terraform|"
            r"cargo|pytest|brew|apt-get|alembic|gh|ruff|mypy|tox|nox|rustup|nvm|pyenv|conda)\s+"
            r"(?!(?:is|are|was|were|and|or|the|a|an|to|for|of|in|on|with|that|this|it|by|as)\b)-{0,2}[a-z][\w:.-]*",
        )
    )
)
# Prose words that look like file names or dotted tokens: e.g, i.e, etc.
_NOT_FACTS = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m", ".e", ".g"})
# "X failed because Y", "the tests timed out since Playwright's browsers were missing": a cause, and its fix.
_CAUSE = re.compile(
    r"\b(?:because|caused by|due to|the cause|root cause|the reason|which is why|that is why|so that|"
    r"fixed (?:it |this )?(?:by|with)|the fix|only (?:builds?|works?|runs?|passes) (?:with|when|if|after))\b",
    re.I,
)
_PROBLEM = re.compile(
    r"\b(?:fail\w*|error\w*|timed? ?out|missing|crash\w*|broke\w*|broken|refused|denied|not found|"
    r"couldn't|can't|cannot|could not|won't|wouldn't|doesn't|didn't|does not|did not|only|need\w*|"
    r"requires?)\b",
    re.I,
)
# Talk about the conversation rather than the project.
_FILLER = re.compile(
    r"^(?:let me know|feel free|hope (?:this|that|it) helps|if you(?:'d| would)? (?:like|want|need|prefer)"
    r"|would you like|do you want|want me to|shall i|should i|happy to|glad to|let me|i'll|i will"
    r"|i'm going to|i am going to|i can also|i could|now i'll|now let me|next,? i'll|here(?:'s| is| are)"
    r"|below (?:is|are)"
    r"|as (?:requested|you asked)|you asked|your question|to answer your question|in summary|to summari[sz]e"
    r"|summary\b|done\b|all done|sure\b|great\b|perfect\b|got it|understood|noted\b|okay\b|ok\b|thanks?\b"
    r"|good (?:question|catch)|you're right|you are right|absolutely|certainly|of course"
    r"|i'm (?:currently |now )?(?:ready|here)\b|.*\bready to help\b"
    r"|api error\b)",  # the client's own message when the model's API failed
    re.I,
)
_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)")
_FINDING_SENTENCES, _FINDING_CHARS = 3, 320
_REQUEST_WORDS = 12
# What opens a reply to the agent before the request itself ("Yes.", "Awesome, now …", "ok thanks"): said
# alone, a prompt of these asks nothing, and a finding titled "Found: yes" names nothing.
_ACK_WORD = (r"(?:yes|yeah|yep|yup|no|nope|ok(?:ay)?|sure|great|awesome|perfect|nice|cool|good|"
             r"excellent|alright|all right|right|thanks?(?: you)?|thx|got it|sounds good|looks good|lgtm|"
             r"done|wow|amazing)")
# Punctuation or the end after them: "No tests may touch the network" is a request that starts with "No".
_ACKNOWLEDGEMENT = re.compile(
    rf"^(?:{_ACK_WORD}(?:\s+{_ACK_WORD})*\b(?:\s*[,.!;:)-]+\s*|\s*$))+",
    re.I,
)


def fact_tokens(sentence: str) -> set[str]:
    """The project-specific things a sentence names (paths, commands, keys, values, versions…), lowercased."""
    found = set()
    for match in _FACT_TOKENS.finditer(sentence):
        token = match.group(0).strip("`.,;:()").lower()
        if len(token) >= 2 and token not in _NOT_FACTS:
            found.add(token)
    return found


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][\w.-]*[a-z0-9]|[a-z0-9]", text.lower()) if len(w) > 2}


def near_duplicate(a: str, b: str, share: float = 0.7) -> bool:
    """`a` and `b` say the same thing: most of the shorter one's words are in the longer one (a decision the
    user gave in the prompt and the agent repeated in the answer, with a word or two changed)."""
    words_a, words_b = _words(a), _words(b)
    if not words_a or not words_b:
        return False
    shorter, longer = sorted((words_a, words_b), key=len)
    return len(shorter & longer) >= share * len(shorter)


def is_filler(sentence: str) -> bool:
    return bool(_FILLER.match(sentence.lstrip("*_ ").strip()))


def states_a_fact(sentence: str, request: str = "") -> bool:
    """A sentence that tells something about the project: it names something (path, command, key, value,
    version, port) the request did not already name, or gives the cause of a problem. Talk about the
    conversation, plans ("I'll now…") and the question said again are not facts."""
    if is_filler(sentence):
        return False
    new = fact_tokens(sentence) - fact_tokens(request)
    if new:
        return True
    causal = bool(_CAUSE.search(sentence) and _PROBLEM.search(sentence))
    return causal and not near_duplicate(sentence, request)


def request_gist(prompt: str) -> str:
    """The request an answer answers, in a few words: its first sentence, at most a dozen words. A
    notification the client typed in for the user (`<task-notification>…<summary>…`) is its summary."""
    summary = re.search(r"<summary>(.*?)</summary>", prompt, re.S)
    if summary:
        prompt = summary.group(1)
    elif prompt.lstrip().startswith("<"):
        prompt = re.sub(r"<[^>]+>", " ", _TAG_ELEMENT.sub(" ", prompt))
    text = _ACKNOWLEDGEMENT.sub("", " ".join(_EMPHASIS.sub("", prompt).split()))
    first = re.split(r"(?<=[.!?])\s+|\n", text, maxsplit=1)[0] if text else ""
    words = first.split()
    return " ".join(words[:_REQUEST_WORDS]) + ("…" if len(words) > _REQUEST_WORDS else "")


# What the agent did rather than how the project is ("Pushed feat/x to origin.", "Added httpx to the dev
# group."): the session record lists changes and commands; a finding keeps how things are, and a cause.
_VCS_REPORT = re.compile(
    r"^(?:I\s+)?(?:pushed|committed|amended|rebased|squashed|force-pushed)\b"
    r"|^(?:I\s+)?(?:merged|tagged|opened|created|updated|closed)\b"
    r"(?=.*\b(?:origin|remote|branch|commit|pull request|PR|merge request|MR|tag)\b|.*/pull/\d)",
    re.I,
)
_ACTION_REPORT = re.compile(
    r"^(?:I\s+|I've\s+|I have\s+)?(?:successfully\s+|also\s+|now\s+)?"
    r"(?:added|installed|reinstalled|created|updated|removed|deleted|moved|renamed|wrote|ran|"
    r"implemented|refactored|bumped|upgraded|changed|replaced|registered|configured|applied|generated|"
    r"reformatted|formatted|cleaned|copied|set up|completed|finished|checked off)\b",
    re.I,
)
# A status line of a progress report: check marks and the like, then maybe a short heading ("✅ Run Reuse
# Logic: Added `findOrCreateRun()`"). What follows is judged as the sentence: an action report stays one.
_STATUS_LEAD = re.compile(r"^(?:[✅☑✔✓🎉🚀🔧📝✨]\ufe0f?\s*)+(?:[^:`]{1,40}:\s+)?")
# A sentence that starts with a number ("141 tests pass.") after one that ends: the prose splitter waits
# for a capital letter, which a count is not.
_NUMBER_START = re.compile(r"(?<=[.!?])\s+(?=\d)")


# A one-line code block after a colon ("Install it with:" + ```brew install 1password-cli```) is what the
# sentence says: it becomes inline code, where the prose splitter drops code blocks.
_ONE_LINE_BLOCK = re.compile(r":[ \t]*\n+[ \t]*```[\w+-]*[ \t]*\n([^\n`]{1,200})\n[ \t]*```")
# Decoration: rules of box-drawing characters, "★ Insight" banners (an output style), emoji bullets.
_DECORATION = re.compile(r"`?[★☆✅❌⚠️]*\s*(?:Insight\s*)?[─━═]{3,}`?|[★☆]\s*Insight\b")
_TAG_ELEMENT = re.compile(r"<([\w-]+)>.*?</\1>", re.S)


def finding_sentences(answer: str, request: str = "", known: Iterable[str] = ()) -> list[str]:
    """The fact-bearing sentences of an answer, in order, without those another memory of the turn already
    holds (`known`: its decisions, fixes, blocked commands): at most three, about 320 characters."""
    answer = _DECORATION.sub(" ", _ONE_LINE_BLOCK.sub(lambda m: f": `{m.group(1).strip()}`.", answer))
    known = list(known)
    known_tokens: set[str] = set()
    for text in known:
        known_tokens |= fact_tokens(text)
    kept: list[str] = []
    used = 0
    for raw in (part for whole in sentences(answer) for part in _NUMBER_START.split(whole)):
        sentence = _EMPHASIS.sub("", raw).strip()
        if len(sentence.split()) < _MIN_WORDS or not states_a_fact(sentence, request):
            continue
        said = _STATUS_LEAD.sub("", sentence)
        if _VCS_REPORT.match(said) or (_ACTION_REPORT.match(said) and not _CAUSE.search(sentence)):
            continue
        tokens = fact_tokens(sentence)
        if any(near_duplicate(sentence, text) for text in known) or (tokens and tokens <= known_tokens):
            continue  # said already by a decision, a fix or a blocked command of the same turn
        if used + len(sentence) > _FINDING_CHARS and kept:
            break
        kept.append(sentence)
        used += len(sentence) + 1
        if len(kept) >= _FINDING_SENTENCES:
            break
    return kept
