"""Bulk transfer commands: `cems import FILE.jsonl` and `cems export [--out FILE]` (format: engine/bulk)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from cems_cli.cli.common import JsonOption, console, emit, emit_json, fail, service


def import_(
    # A Path, not text: a file name may be any bytes (the UTF-8 check of text arguments skips paths).
    file: Path = typer.Argument(..., help="A JSONL file, one memory per line, or - to read stdin."),
    team: str | None = typer.Option(
        None,
        "--team",
        help="Team of shared lines that name none (default CEMS_TEAM); a line's own team wins.",
    ),
    trusted: bool = typer.Option(
        False,
        "--trusted",
        help="Your own export: keep each line's source, source_ref, pin and date (by default a file cannot "
        "claim where a memory came from, pin it, or date it in the future).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import memories from JSONL (texts already remembered are skipped).

    Every line is checked before anything is stored; memories are then stored in batches, so an interrupted
    import, run again, resumes where it stopped. Shared memories keep the team their line names (as `cems
    export` writes it). Without --trusted a line's source becomes `import`, its source_ref, pin and vectors
    are dropped and a future created_at becomes now; the summary says how many lines lost what.
    """
    from cems_cli.cli.progress import progress_bar

    team = (team.strip() or None) if team is not None else None
    lines = _read_lines(file)
    with service() as svc:
        with progress_bar("importing", disabled=as_json, unit="memories") as progress, \
                progress_bar("indexing", disabled=as_json, unit="rows") as indexing:
            report = svc.import_jsonl(lines, default_team=team, trusted=trusted, progress=progress,
                                      index_progress=lambda _name, done, total: indexing(done, total))
    if as_json:
        emit_json(report.to_json())
        return
    skipped = f" ({report.duplicates:,} already remembered)" if report.duplicates else ""
    console.print(f"Imported {report.created:,} memories{skipped} in {report.seconds:.1f} s "
                  f"({report.per_second:,.0f} memories/s)")
    for name, count in sorted(report.teams.items()):
        console.print(f"  {count:,} shared with team {name}", markup=False)
    if report.dropped:
        console.print(f"  Not trusted (--trusted keeps them): {_dropped(report.dropped)}", markup=False)


_DROPPED = {"source": "source (now 'import')", "source_ref": "source_ref", "pinned": "pin",
            "embedding": "vectors (embedded again)",
            "created_at": "future created_at (now the import's time)"}


def _dropped(counts: dict[str, int]) -> str:
    """"source (now 'import') on 3 lines, pin on 1 line"."""
    return ", ".join(f"{_DROPPED.get(name, name)} on {n:,} line{'s' if n != 1 else ''}"
                     for name, n in sorted(counts.items()))


def _read_lines(file: Path) -> list[bytes]:
    if str(file) == "-":
        return sys.stdin.buffer.read().splitlines()
    path = file.expanduser()
    try:
        return path.read_bytes().splitlines()
    except FileNotFoundError:
        fail(f"no such file: {path}")
    except IsADirectoryError:
        fail(f"{path} is a directory, not a JSONL file")
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror or error}")


def export(
    out: Path = typer.Option(None, "--out", "-o", help="Write to this file instead of stdout."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON summary (needs --out: to stdout, the export itself is JSONL)."
    ),
    embeddings: bool = typer.Option(
        False, "--embeddings",
        help="Add each memory's vectors and model: `cems import --trusted` into a store of the same model "
        "then skips the model (about 2 KB more a memory).",
    ),
) -> None:
    """Export your memories as JSONL (stdout by default); `cems import` reads it back.

    To stdout the export is JSONL by design, one JSON document per memory, so --json needs --out.
    """
    if as_json and out is None:
        # stdout already carries one document per memory: a summary document there would break the JSONL.
        fail("--json needs --out FILE: to stdout, export writes JSONL (one JSON document per memory)")
    with service() as svc:
        if out is None:
            for line in svc.export_jsonl(embeddings=embeddings):
                sys.stdout.write(line)
            sys.stdout.flush()
            return
        count = _write_atomically(out.expanduser(), svc.export_jsonl(embeddings=embeddings))
    emit(as_json, {"exported": count, "path": str(out)}, f"Exported {count:,} memories to {out}")


def _write_atomically(path: Path, lines) -> int:
    """Write beside the target and rename: an interrupted export never leaves half a file behind."""
    if path.is_dir():
        fail(f"{path} is a directory")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    count = 0
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line)
                count += 1
        os.replace(temporary, path)
    except OSError as error:
        fail(f"cannot write {path}: {error.strerror or error}")
    finally:
        temporary.unlink(missing_ok=True)
    return count


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
    app.command("export")(export)
