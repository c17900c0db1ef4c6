"""A team server on a managed PostgreSQL (RDS, Cloud SQL, Azure, Neon, Supabase): no superuser, only a role
with CREATEROLE that owns the database. The session's embedded server plays the service: the test makes such
an owner and its database, and `cems admin init`, `cems admin grant`, teams, and members' writes and searches
run as that owner and its members, never as the superuser."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from tests.integration.test_teams_rls import _url


@pytest.fixture
def managed(env: dict[str, str], cli: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    from cems_cli.config import load_settings
    from cems_cli.paths import pgdata_path
    from cems_cli.store.embedded import ensure_server

    superuser = ensure_server(pgdata_path(load_settings().home)).conninfo()
    tag = uuid.uuid4().hex[:8]
    owner, database, password = f"owner_{tag}", f"cems_managed_{tag}", f"pw-{uuid.uuid4().hex}"
    admin = psycopg.connect(superuser, autocommit=True)
    created: list[str] = []
    try:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE NOSUPERUSER NOBYPASSRLS PASSWORD {}").format(
            sql.Identifier(owner), sql.Literal(password)))
        created.append(owner)
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database),
                                                                   sql.Identifier(owner)))
        # pgvector: a service installs it (its allow-list); this build is not marked trusted, so the
        # superuser plays the service here, and only here.
        on_database = psycopg.conninfo.conninfo_to_dict(superuser)
        on_database["dbname"] = database
        with psycopg.connect(psycopg.conninfo.make_conninfo(**on_database), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        # The group roles are the cluster's: an earlier test's superuser made them. On a service the owner
        # creates them and so holds ADMIN OPTION on them (PostgreSQL 16+): give it what it would have.
        for group in ("cems_app", "cems_admin"):
            if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (group,)).fetchone():
                admin.execute(sql.SQL("GRANT {} TO {} WITH ADMIN OPTION, INHERIT FALSE, SET FALSE").format(
                    sql.Identifier(group), sql.Identifier(owner)))
        info = psycopg.conninfo.conninfo_to_dict(_url(superuser, owner, password))
        info["dbname"] = database
        url = psycopg.conninfo.make_conninfo(**info)

        def run(role_url: str, *args: str, stdin: bytes | None = None, team: str | None = None) -> Any:
            monkeypatch.setenv("CEMS_DATABASE_URL", role_url)
            if team:
                monkeypatch.setenv("CEMS_TEAM", team)
            else:
                monkeypatch.delenv("CEMS_TEAM", raising=False)
            result = cli(*args, "--json", stdin=stdin)
            assert result.code == 0, (args, result.stderr)
            return result.json()

        yield {"url": url, "owner": owner, "database": database, "run": run, "created": created,
               "admin": admin}
    finally:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
        for role in created:  # members first: the owner granted their memberships
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        admin.close()


def test_admin_init_and_a_team_without_a_superuser(managed):
    run, url = managed["run"], managed["url"]
    report = run(url, "admin", "init")
    assert report["superuser"] is False and report["bypassrls"] is False
    assert report["schema_version"] >= 16 and report["fts_leakproof"] is False
    members = {}
    for name in ("ann", "ben"):
        role = f"{name}_{uuid.uuid4().hex[:6]}"
        managed["created"].insert(0, role)  # dropped before the owner, who granted its membership
        password = f"pw-{uuid.uuid4().hex}"
        granted = run(url, "admin", "grant", role, "--create", "--password-stdin",
                      stdin=(password + "\n").encode())
        assert granted["created"] and granted["password_set"]
        info = psycopg.conninfo.conninfo_to_dict(url)
        info.update(user=role, password=password)
        members[name] = (role, psycopg.conninfo.make_conninfo(**info))
    team = f"green-{uuid.uuid4().hex[:6]}"
    run(url, "team", "create", team)
    run(url, "team", "add", team, members["ann"][0], "--admin")
    run(url, "team", "add", team, members["ben"][0])
    ann, ben = members["ann"][1], members["ben"][1]
    shared = run(ann, "remember", "green deploys with argo every morning", "--scope", "shared",
                 team=team)["id"]
    secret = run(ann, "remember", "ann's own note about the argo admin password")["id"]
    run(ann, "pin", shared, team=team)
    found = [r["id"] for r in run(ben, "search", "how does green deploy with argo", team=team)["results"]]
    assert shared in found and secret not in found
    # The walls hold here too: no temporary table, a teammate's row is not ben's to write, limits are set.
    with psycopg.connect(ben, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TEMP TABLE memory_documents (id uuid)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # no privilege on the memory tables
            conn.execute("UPDATE memory_documents SET content = 'x' WHERE id = %s", (shared,))
        written = conn.execute("SELECT count(*) FROM cems_update_memories(%s::uuid[], %s)",
                               ([shared], Jsonb({"content": "x"}))).fetchone()[0]
        assert written == 0
        assert conn.execute("SELECT count(*) FROM cems_visible_documents(%s::uuid[])",
                            ([secret],)).fetchone()[0] == 0
        limit = conn.execute("SELECT setting FROM pg_settings WHERE name = 'lock_timeout'").fetchone()[0]
        assert limit != "0"
    entries = run(ann, "audit", "--team", team)["entries"]
    assert {(e["action"], e["memory_id"]) for e in entries} >= {("share", shared), ("pin", shared)}
