"""The package's layers, checked on the source (every import, function-level ones included):

    front ends   cli/ · server/ · mcp/ · hookhandlers/ · evaluation/ · capture/ · ui/
        │  go through
    library      api.py (`import cems`)
        │
    engine       service.py · rules/manage.py · bulk.py · maintain.py · recall.py
        │
    core         retrieval/ · store/ · text/ · embedding/ · rules/ · results.py · errors.py · defaults.py …

A layer imports only from the layers under it, so there is no cycle (the service does not reach the rules
front door, the pipeline takes what it uses as arguments instead of looking it up in the service), and a
front end cannot skip the library to call the pipeline or the store the way the search server once did.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "cems_cli"

FRONT_ENDS = ("cli", "server", "mcp", "hookhandlers", "evaluation", "ui")
LIBRARY = ("api",)
# The capture engine (capture/: the Stop worker and the observer over one transcript reader and extraction)
# writes memories and its own bookkeeping tables in one transaction, so it works beside the service.
ENGINE = ("service", "rules.manage", "bulk", "maintain", "recall", "capture", "lookup")
# Front ends allowed to reach the engine, and why.
EXEMPT = {
    # Replays sessions through the capture engine on a controlled clock; its questions go through the real
    # prompt hook, and its store statistics read the tables the engine wrote.
    # Summaries are made once the sessions are in, as the observer's daily maintenance would.
    "evaluation.sessions": ("service", "store.observer", "capture", "summaries"),
}
# What a front end may import besides the library: settings, project names, the hooks' stdlib helpers, the
# database server's lifecycle (`cems db start/stop`, the demo's own server) and the error types it shows.
# Installing hooks and formatting what they inject are front-end work too (hookentry, hooks_install).
FRONT_END_MAY_USE = (
    "", "__version__", "api", "config", "defaults", "errors", "results", "project", "paths", "hookio",
    "hookentry", "hooks_install", "models", "resources", "private_dir", "procinfo", "procs", "store.server",
    "store.db.StoreError", "store.db.locate", "text", "embedding.limits", "embedding.base.EmbeddingError",
    "embedding.EmbeddingError", "recall.format_recall", "rules.model", "rules.parse", "rules.matcher",
    "rules.snapshot", "rules.refresh", "rules.regex_safety", "rules.guard", "rules.guard_bash",
    "rules.timeout_policy", "rules.hits",
    # The hooks' stdlib paths (the spool the PostToolUse/Stop hooks write, the worker the Stop hook starts)
    # and the observer daemon `cems observe` runs.
    "command.plain", "command.tree", "command.model",
    "capture.spool", "capture.worker.spawn_worker", "capture.observer_daemon", "capture.observer_settings",
    # What a session's profile already showed (the prompt hook leaves those ids out): the hooks' stdlib file.
    "injected",
    # The compact index, timeline and full-text shapes of progressive recall, which every front end shows.
    "progressive",
)


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE).with_suffix("")
    parts = [p for p in relative.parts if p != "__init__"]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every `cems_cli.x.y` (and `cems_cli.x.y.Name` for `from … import Name`) the module imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cems_cli"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cems_cli"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {name.removeprefix("cems_cli").lstrip(".") for name in found}


def _modules() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py") if "_data" not in p.parts}


def _in(module: str, layer: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in layer)


def test_the_core_and_the_engine_never_import_a_front_end_or_the_library():
    offences = {
        module: sorted(i for i in imports if _in(i, FRONT_ENDS + LIBRARY))
        for module, imports in _modules().items()
        if not _in(module, FRONT_ENDS + LIBRARY) and module not in ("", "cli")
    }
    assert {m: i for m, i in offences.items() if i} == {}


def test_the_core_never_imports_the_engine():
    # rules.manage is the engine's; the rest of rules/ is core (the PreToolUse hook reads it without a DB).
    offences = {
        module: sorted(i for i in imports if _in(i, ENGINE))
        for module, imports in _modules().items()
        if not _in(module, FRONT_ENDS + LIBRARY + ENGINE)
    }
    assert {m: i for m, i in offences.items() if i} == {}


def test_the_service_does_not_reach_up_to_rules_or_the_library():
    imports = _modules()["service"]
    assert not any(_in(i, ("rules.manage", "api", "bulk", "maintain")) for i in imports), sorted(imports)


def test_front_ends_go_through_the_library():
    offences: dict[str, list[str]] = {}
    for module, imports in _modules().items():
        if not _in(module, FRONT_ENDS):
            continue
        below = sorted(
            i for i in imports
            if not _in(i, FRONT_ENDS + FRONT_END_MAY_USE + EXEMPT.get(module, ()))
            and not any(i == allowed.rsplit(".", 1)[0] and allowed.count(".") > i.count(".")
                        for allowed in FRONT_END_MAY_USE)
        )
        if below:
            offences[module] = below
    assert offences == {}
