-- What a member's own writes could still do to others on a team server (issue 27, third pass).
--
-- 1. Row ids are the database's. Members INSERT and UPDATE their own rows of observer_backlog and
--    memory_summaries, and could name the id: an id that clashed told whether another user's row had it,
--    and backlog ids come from a sequence every member may advance, so a member who inserted the next
--    hundred ids (nextval, then id + 1 …) made every teammate's observer fail on a unique violation. The
--    application never names these ids: the id column is left out of the grants.
DO $$
DECLARE
    t       text;
    columns text;
BEGIN
    FOREACH t IN ARRAY ARRAY['observer_backlog', 'memory_summaries']
    LOOP
        EXECUTE format('REVOKE INSERT, UPDATE ON %I.%I FROM cems_app', current_schema(), t);
        SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO columns
        FROM information_schema.columns c
        WHERE c.table_schema = current_schema() AND c.table_name = t AND c.column_name <> 'id'
          AND c.is_generated = 'NEVER' AND c.is_identity = 'NO';
        EXECUTE format('GRANT INSERT (%s), UPDATE (%s) ON %I.%I TO cems_app', columns, columns, current_schema(), t);
    END LOOP;
END
$$;
-- The audit's numbering is written by SECURITY DEFINER code only; a member's nextval() counted every team's
-- audited actions (009 granted USAGE on every sequence).
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM cems_app',
                   pg_get_serial_sequence(format('%I.cems_audit', current_schema()), 'id'));
END
$$;

-- 2. A chunk says what its memory says. Recall shows a memory's chunks, the viewer, the audit and the edit
--    history its text: a member who replaced the chunks of their shared memory (cems_delete_chunks, then
--    cems_insert_chunk with other words) had teammates recalling text no audit row, edit or page showed.
--    A chunk is a window of its memory's text (cems_cli/text/chunking.py), so its text must occur in the
--    memory's, and it carries the memory's context. (Its vector cannot be checked here: a member can make
--    their own memory rank high, as by writing it so.)
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_insert_chunk(p_document uuid, p_index integer, p_content text,
                                                        p_embedding vector, p_context text)
RETURNS void LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    doc {{SCHEMA}}.memory_documents;
BEGIN
    IF NOT {{SCHEMA}}.cems_privileged() THEN
        SELECT * INTO doc FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = p_document AND d.user_id = {{SCHEMA}}.cems_user();
        IF NOT FOUND THEN
            RAISE EXCEPTION 'memory % does not exist or is not yours', p_document
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF p_content IS NULL OR strpos(doc.content, p_content) = 0
           OR p_context IS DISTINCT FROM doc.context THEN
            RAISE EXCEPTION 'a chunk of memory % is a piece of its text, with its context', p_document
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    INSERT INTO {{SCHEMA}}.memory_chunks (document_id, chunk_index, content, embedding, context)
    VALUES (p_document, p_index, p_content, p_embedding, p_context);
END
$$;

-- 3. Maintenance locks that only their user can hold. `cems maintain` and the observer's daily run
--    serialised a user's maintenance with pg_advisory_xact_lock(CEML, hashtext(user)); advisory locks are
--    the whole database's, so any member who took that key (pg_advisory_lock, held by an idle session)
--    stopped another user's expiry, merges and summaries for as long as they liked. The lock is now the
--    user's row here, locked through the function below: a member locks their own row only, and holds no
--    privilege on the table.
CREATE TABLE {{SCHEMA}}.cems_maintenance_locks (user_id text PRIMARY KEY);
ALTER TABLE {{SCHEMA}}.cems_maintenance_locks ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.cems_maintenance_locks FROM PUBLIC, cems_app;

-- Lock maintenance of `p_user` (a member: themselves, whatever they name) until the transaction ends;
-- true when held, false when `p_wait` is false and another transaction holds it. Waiting obeys the
-- session's lock_timeout. A user's first lock creates their row (a second first-ever caller waits for it).
CREATE FUNCTION {{SCHEMA}}.cems_lock_maintenance(p_user text, p_wait boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    owner text := {{SCHEMA}}.cems_owner_for(p_user);
BEGIN
    IF owner IS NULL THEN
        RAISE EXCEPTION 'whose maintenance?' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{SCHEMA}}.cems_maintenance_locks (user_id) VALUES (owner) ON CONFLICT DO NOTHING;
    IF coalesce(p_wait, true) THEN
        PERFORM 1 FROM {{SCHEMA}}.cems_maintenance_locks l WHERE l.user_id = owner FOR UPDATE;
        RETURN true;
    END IF;
    PERFORM 1 FROM {{SCHEMA}}.cems_maintenance_locks l WHERE l.user_id = owner FOR UPDATE SKIP LOCKED;
    RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_lock_maintenance(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_lock_maintenance(text, boolean) TO cems_app;

-- 4. A settings change bumps its writer's own counter. Every change bumped the one row of
--    stored_settings_version, so a member who changed a setting of theirs in a transaction left open (and
--    a member sets their own idle_in_transaction_session_timeout) held that row: every other user's `cems
--    config set` waited for lock_timeout and failed, for as long as the member liked. One row per writer
--    now, and the counter a reader compares is their sum (it moves whenever any row does; a few rows, one
--    per user who ever stored a setting), read through cems_settings_version(): the rows name every user
--    who ever stored a setting, which is not every member's to list.
CREATE TABLE {{SCHEMA}}.stored_settings_changes (
    writer  text PRIMARY KEY,
    version bigint NOT NULL
);
INSERT INTO {{SCHEMA}}.stored_settings_changes (writer, version)
SELECT '', v.version FROM {{SCHEMA}}.stored_settings_version v WHERE v.id = 1;
DROP TABLE {{SCHEMA}}.stored_settings_version;
ALTER TABLE {{SCHEMA}}.stored_settings_changes ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.stored_settings_changes FROM PUBLIC, cems_app;

CREATE FUNCTION {{SCHEMA}}.cems_settings_version() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    SELECT coalesce(sum(c.version), 0)::bigint FROM {{SCHEMA}}.stored_settings_changes c
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_settings_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_settings_version() TO cems_app;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.stored_settings_changed() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    INSERT INTO {{SCHEMA}}.stored_settings_changes AS c (writer, version) VALUES ({{SCHEMA}}.cems_user(), 1)
    ON CONFLICT (writer) DO UPDATE SET version = c.version + 1;
    RETURN NULL;
END
$$;

-- 5. Members read their summaries through a function. A member who may SELECT a table under row-level
--    security reads the text of other users' rows through EXPLAIN ANALYZE: a LEAKPROOF test of theirs
--    (starts_with, text comparisons) runs before the policy's, and the policy's InitPlan shows "never
--    executed" when no hidden row passed it. A summary quotes its owner's personal memories, so character
--    by character the member read them. Members keep INSERT (their own rows, the id the database's) and
--    delete through 017's functions; every read is cems_my_summaries(), whose plan they never see.
CREATE FUNCTION {{SCHEMA}}.cems_my_summaries() RETURNS SETOF {{SCHEMA}}.memory_summaries
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 100 AS $$
BEGIN
    RETURN QUERY
    SELECT s.* FROM {{SCHEMA}}.memory_summaries s WHERE s.user_id = {{SCHEMA}}.cems_user();
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_my_summaries() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_my_summaries() TO cems_app;
REVOKE SELECT, UPDATE ON {{SCHEMA}}.memory_summaries FROM cems_app;

-- 6. The same for the tables members only read: teams, their members, quotas and the audit trail. Their
--    policies hid other teams' rows, yet the trick above read them: the names of other teams and of their
--    members, every user's quota (which cems_quota_of keeps to its user and their admins, 017), and other
--    teams' audit entries (who acted on what, when). Each is read through a function with the policy's
--    test written out (a privileged session, the embedded store, reads every row), and members hold no
--    privilege on the tables.
CREATE FUNCTION {{SCHEMA}}.cems_visible_teams() RETURNS SETOF {{SCHEMA}}.cems_teams
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 10 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged() OR {{SCHEMA}}.cems_is_admin();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY SELECT t.* FROM {{SCHEMA}}.cems_teams t WHERE everything OR t.name = ANY (teams);
END
$$;

CREATE FUNCTION {{SCHEMA}}.cems_visible_team_members() RETURNS SETOF {{SCHEMA}}.cems_team_members
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 50 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged() OR {{SCHEMA}}.cems_is_admin();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY SELECT m.* FROM {{SCHEMA}}.cems_team_members m WHERE everything OR m.team_id = ANY (teams);
END
$$;

CREATE FUNCTION {{SCHEMA}}.cems_visible_quotas() RETURNS SETOF {{SCHEMA}}.cems_quotas
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 10 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged() OR {{SCHEMA}}.cems_is_admin();
    me         text := {{SCHEMA}}.cems_user();
BEGIN
    RETURN QUERY SELECT q.* FROM {{SCHEMA}}.cems_quotas q WHERE everything OR q.user_id IN (me, '*');
END
$$;

-- The newest `p_limit` audit entries the caller may read (their own actions, their teams', everything for
-- an administrator), narrowed to a team, a time and a memory when given: the filters are applied here, so
-- the trail is never read whole for a page of it.
CREATE FUNCTION {{SCHEMA}}.cems_visible_audit(p_team text, p_since timestamptz, p_memory uuid, p_limit integer)
RETURNS SETOF {{SCHEMA}}.cems_audit
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 200 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged() OR {{SCHEMA}}.cems_is_admin();
    me         text := {{SCHEMA}}.cems_user();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 100000 THEN  -- `cems audit --limit`'s range
        RAISE EXCEPTION 'a limit is 1 to 100000 entries' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT a.* FROM {{SCHEMA}}.cems_audit a
    WHERE (everything OR a.actor = me OR a.team_id = ANY (teams))
      AND (p_team IS NULL OR a.team_id = p_team) AND (p_since IS NULL OR a.at >= p_since)
      AND (p_memory IS NULL OR a.memory_id = p_memory)
    ORDER BY a.at DESC, a.id DESC LIMIT p_limit;
END
$$;

DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['cems_visible_teams()', 'cems_visible_team_members()', 'cems_visible_quotas()',
                              'cems_visible_audit(text, timestamptz, uuid, integer)']
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO cems_app', current_schema(), fn);
    END LOOP;
END
$$;
REVOKE ALL ON {{SCHEMA}}.cems_teams, {{SCHEMA}}.cems_team_members, {{SCHEMA}}.cems_quotas, {{SCHEMA}}.cems_audit
    FROM cems_app;
