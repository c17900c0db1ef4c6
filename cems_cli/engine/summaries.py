"""Building the summaries an overview question is answered from (retrieval plan step 14.5, RAPTOR).

Per project of one user: the memories are grouped (retrieval/raptor.py), each group of two or more gets a
level-1 summary, and a project of two or more groups a level-2 summary of them. With an LLM configured a
summary is the model's (asked once per group: a group whose members did not change keeps its text), else
or when the model fails, extractive. `cems maintain` runs this as its last step, so the observer's daily
maintenance keeps them current; `cems summaries --rebuild` runs it alone.

Written in two phases so that no transaction is held open while a model answers: the summaries are made
first, then written in one transaction that locks their memories (FOR SHARE) and leaves out any summary
whose memories changed meanwhile. A memory forgotten after that takes its summaries with it (the trigger of
sql/011_summaries.sql).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from cems_cli import defaults
from cems_cli.retrieval import raptor
from cems_cli.retrieval.raptor import Member, Summary

if TYPE_CHECKING:
    import numpy as np
    import psycopg

    from cems_cli.config import Settings
    from cems_cli.embedding import Embedder
    from cems_cli.llm import JsonChat

log = logging.getLogger("cems.summaries")

_LLM_MEMORY_CHARS = 400
_LLM_GROUP_PROMPT = (
    "You summarise one topic of a software developer's memories of a project, for a later session to recall. "
    'Answer with a JSON object: {"title": "at most 6 words naming the topic", "summary": "2 to 4 sentences: '
    'what was decided, done and learned, in time order"}. Keep commands, file names, packages and error '
    "messages exactly as written. Use only what the memories say."
)
_LLM_PROJECT_PROMPT = (
    "You write the overview of a software project from summaries of its topics, for a later session to "
    'recall. Answer with a JSON object: {"title": "at most 6 words", "summary": "3 to 6 sentences: the '
    'main topics, what was decided and where things stand, latest last"}. Use only what the summaries say.'
)


@dataclass
class SummaryReport:
    projects: int = 0
    groups: int = 0  # level-1 summaries now in place
    overviews: int = 0  # level-2 summaries now in place
    written: int = 0  # rows inserted (new or changed groups)
    deleted: int = 0  # rows of groups that no longer exist
    by_llm: int = 0  # of the rows written, how many the LLM wrote
    skipped: int = 0  # left out because a memory changed while they were made

    def describe(self, dry_run: bool = False) -> str:
        """"4 written (2 by the LLM), 1 removed; 9 groups and 3 projects summarised"."""
        verb = "would be" if dry_run else "were"
        llm = f" ({self.by_llm} by the LLM)" if self.by_llm else ""
        return (f"{self.written} {verb} written{llm}, {self.deleted} {verb} removed; "
                f"{_count(self.groups, 'group')} and {_count(self.overviews, 'project')} summarised")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


@dataclass
class _Plan:
    project: str
    summaries: list[Summary] = field(default_factory=list)
    new: list[Summary] = field(default_factory=list)  # those not already stored with the same members


def build_summaries(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    dry_run: bool = False,
    embedder: Embedder | None = None,
    llm: JsonChat | None = None,
    transaction: Callable[[], Any] | None = None,
) -> SummaryReport:
    """Bring `settings.user`'s summaries up to date. `embedder`/`llm` default to the configured ones (the
    embedder is loaded only when a summary is new). `transaction`: a context manager factory for the write
    (the maintenance lock's), by default conn.transaction(). A dry run plans from the memories as they are
    (maintenance's own dry run has merged and expired nothing) and asks no LLM."""
    from cems_cli.store import summaries as store

    user = settings.user
    projects = store.project_members(conn, user)
    if llm is None:
        from cems_cli.llm import background_client

        llm = background_client(settings)
    report = SummaryReport()
    plans = []
    for project, (members, vectors) in sorted(projects.items()):
        plan = _plan_project(conn, user, project, members, vectors, None if dry_run else llm)
        if plan.summaries:
            plans.append(plan)
    report.projects = len(plans)
    report.groups = sum(1 for p in plans for s in p.summaries if s.level == 1)
    report.overviews = sum(1 for p in plans for s in p.summaries if s.level == 2)
    new = [s for p in plans for s in p.new]
    report.by_llm = sum(1 for s in new if s.method == "llm")
    if dry_run:
        report.written = len(new)
        existing = {(s.project, s.level, s.member_key) for s in store.list_summaries(conn, user)}
        wanted = {(p.project, s.level, s.member_key) for p in plans for s in p.summaries}
        report.deleted = len(existing - wanted)
        return report
    vectors_of = _embed(new, embedder or _embedder(settings)) if new else {}
    with (transaction or conn.transaction)():
        # Only what is written needs its memories locked: a stored summary goes with them by the trigger.
        alive = _lock_live(conn, {m for s in new for m in s.members})
        kept_projects = []
        for plan in plans:
            fresh = {id(s) for s in plan.new}
            live = [s for s in plan.summaries if id(s) not in fresh or alive.issuperset(s.members)]
            report.skipped += len(plan.summaries) - len(live)
            inserted, deleted = store.replace_project(
                conn, user, plan.project, [(s, vectors_of.get(id(s))) for s in live]
            )
            report.written += inserted
            report.deleted += deleted
            kept_projects.append(plan.project)
        report.deleted += store.drop_projects(conn, user, kept_projects)
    return report


def _plan_project(
    conn: psycopg.Connection,
    user: str,
    project: str,
    members: list[Member],
    vectors: np.ndarray,
    llm: JsonChat | None,
) -> _Plan:
    from cems_cli.store.summaries import kept_keys

    plan = _Plan(project)
    groups = [g for g in raptor.group_memories(vectors) if g.size >= 2]
    if not groups:
        return plan
    stored = kept_keys(conn, user, project)

    def place(extractive: Summary, prompt: Callable[[], str]) -> Summary:
        kept = _reuse(stored, extractive)
        if kept is not None:
            plan.summaries.append(kept)
            return kept
        made = _by_llm(llm, extractive, prompt)
        plan.summaries.append(made)
        plan.new.append(made)
        return made

    titles = raptor.group_titles(members, groups, project)
    level_one = [
        place(raptor.summarise_group(members, vectors, group, title, project),
              functools.partial(_group_prompt, members, group, project))
        for group, title in zip(groups, titles, strict=True)
    ]
    if len(level_one) >= 2:
        place(raptor.summarise_project(project, level_one, len(members)),
              lambda: _project_prompt(level_one, project))
    return plan


def _reuse(stored: dict[tuple[int, str], tuple[str, str, str]], made: Summary) -> Summary | None:
    """The stored summary of the same members, if there is one: its text is kept as it is."""
    found = stored.get((made.level, made.member_key))
    if found is None:
        return None
    title, content, method = found
    return Summary(made.level, title, content, made.members, made.period_start, made.period_end, method)


def _group_prompt(members: list[Member], group: raptor.Group, project: str) -> str:
    lines = [f"Project: {project.removeprefix('project:') or '(none)'}", "Memories (date, category, text):"]
    for index in sorted(group.members)[: defaults.SUMMARY_GROUP_SIZE]:
        member = members[index]
        text = " ".join(member.text.split())[:_LLM_MEMORY_CHARS]
        lines.append(f"- {member.created_at.date().isoformat()} {member.category}: {text}")
    return "\n".join(lines)


def _project_prompt(groups: list[Summary], project: str) -> str:
    lines = [f"Project: {project.removeprefix('project:') or '(none)'}", "Topic summaries:"]
    lines += [f"- {summary.title}: {' '.join(summary.content.split())[:_LLM_MEMORY_CHARS * 2]}"
              for summary in sorted(groups, key=lambda s: s.period_start)[: raptor.PROJECT_GROUPS * 2]]
    return "\n".join(lines)


def _by_llm(llm: JsonChat | None, extractive: Summary, prompt: Callable[[], str]) -> Summary:
    """The model's summary, under the extractive one's head (project, size, period); the extractive one
    when there is no model or its answer is unusable. Both are redacted like every stored field."""
    from cems_cli.text.redact import sanitize_for_storage

    if llm is None:
        return extractive
    system = _LLM_GROUP_PROMPT if extractive.level == 1 else _LLM_PROJECT_PROMPT
    answer = llm.chat_json(system, prompt(), max_tokens=400, stage="summaries")
    title = answer.get("title") if answer else None
    text = answer.get("summary") if answer else None
    if not isinstance(title, str) or not isinstance(text, str) or not title.strip() or not text.strip():
        return extractive
    # "ledger-api — redis, memcached (7 memories, 2026-09-11 – 2026-10-10)", "ledger-api: 40 memories in 6
    # topics, 2026-09-05 – 2026-11-20": what the model is not asked to say.
    separator = ": " if extractive.level == 1 else ". "
    head = extractive.content.split(separator, 1)[0]
    title = sanitize_for_storage(" ".join(title.split()))[:80]
    content = sanitize_for_storage(f"{head}: {' '.join(text.split())}")
    return Summary(extractive.level, title, content, extractive.members, extractive.period_start,
                   extractive.period_end, "llm")


def _embedder(settings: Settings) -> Embedder:
    from cems_cli.embedding import get_embedder

    return get_embedder(settings)


def _embed(summaries: list[Summary], embedder: Embedder) -> dict[int, np.ndarray]:
    vectors = embedder.embed([f"{s.title}. {s.content}" for s in summaries])
    return {id(s): vectors[i] for i, s in enumerate(summaries)}


def _lock_live(conn: psycopg.Connection, members: set[str]) -> set[str]:
    """Which of `members` are still there and live, locked until the write commits (in id order, one
    statement: writers lock rows one at a time, in any order). A memory forgotten meanwhile waits for the
    commit, and its trigger then deletes the new summary."""
    if not members:
        return set()
    from cems_cli.store.member_access import is_restricted, lock_memories

    if is_restricted(conn):  # a member locks through the function and reads what was committed last
        lock_memories(conn, sorted(members), share=True)
        rows = conn.execute("SELECT id FROM cems_visible_documents(%s::uuid[]) WHERE NOT archived",
                            (sorted(members),)).fetchall()
        return {str(row[0]) for row in rows}
    rows = conn.execute(
        "SELECT id FROM memory_documents WHERE id = ANY(%s::uuid[]) AND NOT archived ORDER BY id FOR SHARE",
        (sorted(members),),
    ).fetchall()
    return {str(row[0]) for row in rows}
