"""The rules snapshot file: atomic, private, versioned, and tolerant of single bad records."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cems_cli import paths
from cems_cli.rules.model import make_rule
from cems_cli.rules.snapshot import (
    REFRESH_FAILED_SUFFIX,
    SNAPSHOT_FIELDS,
    SnapshotError,
    SnapshotRule,
    SnapshotUntrusted,
    default_snapshot_path,
    load_rule_views,
    load_snapshot,
    read_records,
    write_snapshot,
)


@pytest.fixture
def rules():
    return [
        make_rule("git push --force*", "Bash", reason="rewrites history"),
        make_rule(r"^rm\s", "Bash", action="warn", regex=True),
        make_rule("*.env", "Edit", action="ask", project="org/repo", scope="shared", team_id="t"),
    ]


def test_write_then_load_round_trip(tmp_path, rules):
    path = tmp_path / "deep" / "dir" / "rules.snapshot.json"
    assert write_snapshot(rules, path) == str(path)
    assert load_snapshot(path) == rules
    views = load_rule_views(path)
    assert [(v.id, v.tool, v.pattern, v.action, v.regex, v.project) for v in views] == [
        (r.id, r.tool, r.pattern, r.action, r.regex, r.project) for r in rules
    ]


def test_file_format(tmp_path, rules):
    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    text = path.read_text(encoding="utf-8")
    document = json.loads(text)
    assert document["version"] == 2
    assert document["generated_at"].endswith("+00:00")
    assert document["fields"] == list(SNAPSHOT_FIELDS)
    assert document["rules"] == [[r.to_dict()[name] for name in SNAPSHOT_FIELDS] for r in rules]
    assert len(text.splitlines()) == len(rules) + 2  # the header, a rule a line, the end


def test_rows_hold_every_field_of_a_rule():
    from dataclasses import fields

    from cems_cli.rules.model import Rule

    assert SNAPSHOT_FIELDS == tuple(field.name for field in fields(Rule))


def test_a_version_1_snapshot_is_still_read(tmp_path, rules):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"version": 1, "rules": [r.to_dict() for r in rules]}), encoding="utf-8")
    assert load_snapshot(path) == rules
    assert [v.id for v in load_rule_views(path, verify=False)] == [r.id for r in rules]


def test_file_is_private_and_no_temp_files_are_left(tmp_path, rules):
    path = tmp_path / "home" / "s.json"
    write_snapshot(rules, path)
    write_snapshot(rules[:1], path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(os.listdir(path.parent)) == ["s.json", "s.json.sha256"]
    assert len(load_snapshot(path)) == 1


def test_failed_write_keeps_the_old_snapshot(tmp_path, rules):
    path = tmp_path / "s.json"
    write_snapshot(rules, path)

    class Exploding:
        def to_dict(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_snapshot([rules[0], Exploding()], path)
    assert load_snapshot(path) == rules
    assert sorted(os.listdir(tmp_path)) == ["s.json", "s.json.sha256"]


def test_empty_snapshot_is_valid(tmp_path):
    path = tmp_path / "s.json"
    write_snapshot([], path)
    assert load_snapshot(path) == [] and load_rule_views(path) == []


def test_write_clears_refresh_backoff_marker(tmp_path, rules):
    path = tmp_path / "s.json"
    marker = Path(str(path) + REFRESH_FAILED_SUFFIX)
    marker.write_text("1")
    write_snapshot(rules, path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"not json",
        b"[]",
        b'{"version": 2, "rules": []}',  # rows without the fields they hold
        b'{"version": 2, "fields": ["id", "tool"], "rules": []}',
        b'{"version": 3, "rules": []}',
        b'{"version": true, "rules": []}',
        b'{"version": 1}',
        b'{"version": 1, "rules": {}}',
        b"\xff\xfe\x00",
    ],
)
def test_corrupt_snapshot_raises(tmp_path, content):
    path = tmp_path / "s.json"
    path.write_bytes(content)
    with pytest.raises(SnapshotError, match="corrupt rules snapshot"):
        load_rule_views(path, verify=False)
    with pytest.raises(SnapshotError):
        load_snapshot(path)


def test_missing_snapshot_raises(tmp_path):
    with pytest.raises(SnapshotError, match="cannot read rules snapshot"):
        load_rule_views(tmp_path / "absent.json")


def test_bad_records_are_dropped_not_fatal(tmp_path):
    good = make_rule("git push*", "Bash").to_dict()
    records = [
        good,
        "not an object",
        {**good, "action": "nuke"},
        {**good, "action": ["block"]},  # unhashable: must not crash the membership test
        {**good, "field": 3},
        {**good, "project": {"x": 1}},
        {**good, "pattern": ""},
        {**good, "tool": 3},
        {**good, "reason": ["x"]},
        {k: v for k, v in good.items() if k != "id"},
    ]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"version": 1, "rules": records}), encoding="utf-8")
    assert read_records(path) == [good]
    assert [v.id for v in load_rule_views(path, verify=False)] == [good["id"]]


def test_bad_rows_are_dropped_not_fatal(tmp_path):
    good = [make_rule("git push*", "Bash").to_dict()[name] for name in SNAPSHOT_FIELDS]
    rows = [
        good,
        "not a row",
        {"id": "x"},
        good[:-1],
        [*good, "one too many"],
        [*good[:3], "nuke", *good[4:]],
        [*good[:3], ["block"], *good[4:]],  # unhashable: must not crash the membership test
        [*good[:5], 3, *good[6:]],
        [*good[:7], {"x": 1}, *good[8:]],
        [good[0], good[1], "", *good[3:]],
        [good[0], 3, *good[2:]],
        [*good[:4], ["x"], *good[5:]],
        [None, *good[1:]],
    ]
    path = tmp_path / "s.json"
    document = {"version": 2, "fields": list(SNAPSHOT_FIELDS), "rules": rows}
    path.write_text(json.dumps(document), encoding="utf-8")
    assert read_records(path) == [dict(zip(SNAPSHOT_FIELDS, good, strict=True))]
    assert [v.id for v in load_rule_views(path, verify=False)] == [good[0]]


def test_load_snapshot_drops_records_that_fail_rule_validation(tmp_path):
    good = make_rule("x", "Bash").to_dict()
    bad_regex = {**good, "id": "bad", "pattern": "x(", "regex": True}
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"version": 1, "rules": [bad_regex, good]}), encoding="utf-8")
    assert [r.id for r in load_snapshot(path)] == [good["id"]]
    # The matcher skips it at match time.
    assert [v.id for v in load_rule_views(path, verify=False)] == ["bad", good["id"]]


def test_snapshot_rule_defaults():
    view = SnapshotRule({"id": "r", "tool": "Bash", "pattern": "x", "action": "warn", "regex": "true"})
    assert (view.reason, view.field, view.regex, view.project) == ("", None, False, None)


@pytest.mark.parametrize(
    "env",
    [
        {"CEMS_HOME": "/tmp/cems-a"},
        {"CEMS_HOME": "/tmp/cems-b/"},
        {"CEMS_HOME": "  /tmp/cems-c  "},
        {"CEMS_HOME": "~/cems-d"},
        {"XDG_DATA_HOME": "/tmp/xdg"},
        {"XDG_DATA_HOME": "~/xdg"},
        {"CEMS_HOME": "", "XDG_DATA_HOME": ""},
        {},
    ],
)
def test_default_path_is_the_same_as_paths_module(monkeypatch, env):
    monkeypatch.delenv("CEMS_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert Path(default_snapshot_path()) == paths.rules_snapshot_path()


def test_default_path_is_used_when_no_path_given(monkeypatch, tmp_path, rules):
    monkeypatch.setenv("CEMS_HOME", str(tmp_path / "home"))
    written = write_snapshot(rules)
    assert Path(written) == paths.rules_snapshot_path()
    assert load_snapshot() == rules


# --- the digest: the hook trusts only the snapshot CEMS wrote ----------------------------------------------

EMPTY = b'{"version": 1, "rules": []}'


def test_a_snapshot_rewritten_outside_cems_is_untrusted(tmp_path, rules):
    # What an agent would write to lift every rule: a valid, empty snapshot.
    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    path.write_bytes(EMPTY)
    with pytest.raises(SnapshotUntrusted, match="does not match its digest"):
        load_rule_views(path)
    assert load_rule_views(path, verify=False) == []  # what the hook used to enforce: nothing


def test_a_snapshot_without_its_digest_is_untrusted(tmp_path, rules):
    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    os.unlink(str(path) + ".sha256")
    with pytest.raises(SnapshotUntrusted, match="has no digest"):
        load_rule_views(path)


def test_an_edited_rule_is_untrusted(tmp_path, rules):
    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    path.write_text(path.read_text().replace('"block"', '"warn"'))
    with pytest.raises(SnapshotUntrusted):
        load_rule_views(path)


def test_digest_is_the_sha256_of_the_file_and_its_identity(tmp_path, rules):
    import hashlib

    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    digest, identity = Path(str(path) + ".sha256").read_text().splitlines()
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    stat_now = path.stat()
    assert identity == f"{stat_now.st_ino} {stat_now.st_size} {stat_now.st_mtime_ns} {stat_now.st_ctime_ns}"
    assert stat.S_IMODE(Path(str(path) + ".sha256").stat().st_mode) == 0o600
    assert [v.id for v in load_rule_views(path)] == [r.id for r in rules]


def test_an_edit_that_keeps_size_and_mtime_is_still_caught(tmp_path, rules):
    # Same length, mtime set back: only the ctime (which no unprivileged process can set) tells.
    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    before = path.stat()
    text = path.read_text()
    with open(path, "r+") as handle:  # in place: same inode
        handle.write(text.replace('"block"', '"warn "', 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(SnapshotUntrusted):
        load_rule_views(path)


def test_a_snapshot_restored_whole_is_trusted_by_its_hash(tmp_path, rules):
    import shutil

    path = tmp_path / "s.json"
    write_snapshot(rules, path)
    copy = tmp_path / "copy.json"
    shutil.copy(path, copy)
    os.replace(copy, path)  # a new inode and ctime, the same bytes
    assert [v.id for v in load_rule_views(path)] == [r.id for r in rules]
