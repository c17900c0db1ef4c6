-- Members reach their bookkeeping through functions only (issue 27, item 1: the last tables).
--
-- Members still SELECTed, INSERTed and UPDATEd their own rows of the observer's tables (read positions,
-- backlog, state), capture's session records, maintenance runs, stored settings and cems_meta under the
-- policies, and read cems_role_map whole. A table a member may query, even under its policy, tells them
-- about the rows it hides: a LEAKPROOF test of theirs (starts_with, text comparisons) runs before the
-- policy's, and EXPLAIN ANALYZE shows by "Rows Removed by Filter" or an InitPlan "never executed" whether
-- a hidden row passed it. Bisecting, a member spelled out other users' transcript paths, error lines and
-- setting values. As 019 and 021 did for the memory tables, members now hold no privilege on these
-- tables: every read and write is one of the SECURITY DEFINER functions below, whose plans they never see.
--
-- Each function takes identity from session_user (cems_user), never from an argument: it reads, locks
-- and writes the caller's own rows only (and, for settings, their teams' as the policies say). Sizes are
-- bounded; a wrong argument is refused in one line (invalid_parameter_value) or touches nothing. Row-level
-- security stays on as the second wall. Names are schema-qualified under search_path = pg_catalog,
-- <schema>, pg_temp.

-- Observer: read positions --------------------------------------------------------------------------------

-- The caller's transcripts' read positions, all of them or those of `p_paths`.
CREATE FUNCTION {{SCHEMA}}.cems_my_observer_files(p_paths text[] DEFAULT NULL)
RETURNS SETOF {{SCHEMA}}.observer_files
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 100 AS $$
DECLARE
    me text := {{SCHEMA}}.cems_user();
BEGIN
    IF cardinality(p_paths) > 100000 THEN
        RAISE EXCEPTION 'at most 100000 paths at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_paths IS NULL THEN
        RETURN QUERY SELECT f.* FROM {{SCHEMA}}.observer_files f WHERE f.user_id = me;
    ELSE
        RETURN QUERY SELECT f.* FROM {{SCHEMA}}.observer_files f WHERE f.user_id = me AND f.path = ANY (p_paths);
    END IF;
END
$$;

-- The caller's row of one transcript, locked until the transaction ends (none when there is none): a
-- second observer of the same user waits, then sees that the version moved.
CREATE FUNCTION {{SCHEMA}}.cems_lock_observer_file(p_path text) RETURNS SETOF {{SCHEMA}}.observer_files
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 1 AS $$
BEGIN
    RETURN QUERY
    SELECT f.* FROM {{SCHEMA}}.observer_files f
    WHERE f.user_id = {{SCHEMA}}.cems_user() AND f.path = p_path FOR UPDATE;
END
$$;

-- A row for a transcript the caller starts reading (nothing when it has one). True when added.
CREATE FUNCTION {{SCHEMA}}.cems_add_observer_file(p_path text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF p_path IS NULL OR length(p_path) NOT BETWEEN 1 AND 4096 THEN
        RAISE EXCEPTION 'a transcript path is 1 to 4096 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{SCHEMA}}.observer_files (user_id, path) VALUES ({{SCHEMA}}.cems_user(), p_path)
    ON CONFLICT DO NOTHING;
    RETURN FOUND;
END
$$;

-- Where the caller's observer stands in one transcript (the columns of store/observer.py save_file). True
-- when the caller has that row.
CREATE FUNCTION {{SCHEMA}}.cems_save_observer_file(
    p_path text, p_device bigint, p_inode bigint, p_offset bigint, p_size_seen bigint, p_mtime double precision,
    p_fingerprint text, p_fingerprint_len integer, p_pending jsonb, p_ignored text, p_lines bigint,
    p_malformed bigint, p_resets integer, p_version bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    -- The application's values are far smaller: a SHA-256 in hex, a one-line reason, an open chunk of a
    -- few thousand characters (cems_cli/capture/chunks.py clips every part).
    IF length(p_fingerprint) > 128 OR length(p_ignored) > 2000 OR pg_column_size(p_pending) > 1048576 THEN
        RAISE EXCEPTION 'a read position has a fingerprint of at most 128 characters, a reason of at most '
            '2000 and pending material of at most 1 MB' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE {{SCHEMA}}.observer_files f
    SET device = p_device, inode = p_inode, read_offset = p_offset, size_seen = p_size_seen, mtime = p_mtime,
        fingerprint = p_fingerprint, fingerprint_len = p_fingerprint_len, pending = p_pending,
        ignored = p_ignored, lines = p_lines, malformed = p_malformed, resets = p_resets, version = p_version,
        updated_at = now()
    WHERE f.user_id = {{SCHEMA}}.cems_user() AND f.path = p_path;
    RETURN FOUND;
END
$$;

-- Observer: the LLM backlog -------------------------------------------------------------------------------

-- Closed chunks of one transcript (a JSON array of objects), in their order; each item's size is its
-- text's length, counted here. Returns how many were added. Ids are the sequence's (no member may take it).
CREATE FUNCTION {{SCHEMA}}.cems_add_backlog(p_path text, p_chunks jsonb) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    added integer;
BEGIN
    IF p_path IS NULL OR length(p_path) NOT BETWEEN 1 AND 4096 THEN
        RAISE EXCEPTION 'a transcript path is 1 to 4096 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A CASE, not OR: the array's length is asked of an array only.
    IF (CASE WHEN jsonb_typeof(p_chunks) = 'array'
             THEN jsonb_array_length(p_chunks) > 1000 OR pg_column_size(p_chunks) > 16777216
             ELSE true END) THEN
        RAISE EXCEPTION 'the backlog takes a JSON array of at most 1000 chunks and 16 MB'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_chunks) c (value)
               WHERE jsonb_typeof(c.value) <> 'object' OR pg_column_size(c.value) > 1048576) THEN
        RAISE EXCEPTION 'a backlog chunk is a JSON object of at most 1 MB'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{SCHEMA}}.observer_backlog (user_id, path, chunk, chars)
    SELECT {{SCHEMA}}.cems_user(), p_path, c.value, length(coalesce(c.value ->> 'text', ''))
    FROM jsonb_array_elements(p_chunks) WITH ORDINALITY AS c (value, n) ORDER BY c.n;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END
$$;

-- The caller's backlog per transcript: its items, their characters, the most attempts any had, its
-- oldest item's id (the order in which transcripts are worked through).
CREATE FUNCTION {{SCHEMA}}.cems_my_backlog_groups()
RETURNS TABLE (path text, items bigint, chars bigint, attempts integer, first_id bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 10 AS $$
BEGIN
    RETURN QUERY
    SELECT b.path, count(*), coalesce(sum(b.chars), 0)::bigint, coalesce(max(b.attempts), 0), min(b.id)
    FROM {{SCHEMA}}.observer_backlog b WHERE b.user_id = {{SCHEMA}}.cems_user() GROUP BY b.path;
END
$$;

-- The oldest items of one of the caller's transcripts, as many as fit in `p_max_chars` (always at least
-- one): store/observer.py backlog_batch's choice, made here so that only the batch travels.
CREATE FUNCTION {{SCHEMA}}.cems_backlog_batch(p_path text, p_max_chars integer)
RETURNS TABLE (id bigint, path text, chunk jsonb, chars integer, attempts integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 10 AS $$
BEGIN
    RETURN QUERY
    SELECT q.id, q.path, q.chunk, q.chars, q.attempts FROM (
        SELECT b.id, b.path, b.chunk, b.chars, b.attempts, row_number() OVER w AS n, sum(b.chars) OVER w AS total
        FROM {{SCHEMA}}.observer_backlog b
        WHERE b.user_id = {{SCHEMA}}.cems_user() AND b.path = p_path
        WINDOW w AS (ORDER BY b.id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) q
    WHERE q.n = 1 OR q.total <= p_max_chars
    ORDER BY q.id;
END
$$;

-- One more failed attempt on the caller's items among `p_ids`, and why (its first 2000 characters).
-- Returns how many were the caller's.
CREATE FUNCTION {{SCHEMA}}.cems_backlog_failed(p_ids bigint[], p_error text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    changed bigint;
BEGIN
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 backlog items at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE {{SCHEMA}}.observer_backlog b SET attempts = b.attempts + 1, last_error = left(p_error, 2000)
    WHERE b.user_id = {{SCHEMA}}.cems_user() AND b.id = ANY (p_ids);
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END
$$;

-- Observer: its state -------------------------------------------------------------------------------------

CREATE FUNCTION {{SCHEMA}}.cems_my_observer_state() RETURNS SETOF {{SCHEMA}}.observer_state
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 1 AS $$
BEGIN
    RETURN QUERY SELECT s.* FROM {{SCHEMA}}.observer_state s WHERE s.user_id = {{SCHEMA}}.cems_user();
END
$$;

-- The caller's observer ran now.
CREATE FUNCTION {{SCHEMA}}.cems_note_observer_run() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    INSERT INTO {{SCHEMA}}.observer_state AS s (user_id, last_run_at) VALUES ({{SCHEMA}}.cems_user(), now())
    ON CONFLICT (user_id) DO UPDATE SET last_run_at = now(), updated_at = now();
END
$$;

-- The caller's observer failed now, and why (its first 2000 characters).
CREATE FUNCTION {{SCHEMA}}.cems_note_observer_error(p_error text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    INSERT INTO {{SCHEMA}}.observer_state AS s (user_id, last_error, last_error_at)
    VALUES ({{SCHEMA}}.cems_user(), left(p_error, 2000), now())
    ON CONFLICT (user_id) DO UPDATE SET last_error = excluded.last_error, last_error_at = now(),
        updated_at = now();
END
$$;

-- The caller's LLM failures in a row, and when their observer tries it again.
CREATE FUNCTION {{SCHEMA}}.cems_note_observer_llm(p_failures integer, p_retry_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF p_failures IS NULL OR p_failures < 0 THEN
        RAISE EXCEPTION 'a count of failures is 0 or more' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{SCHEMA}}.observer_state AS s (user_id, llm_failures, llm_retry_at)
    VALUES ({{SCHEMA}}.cems_user(), p_failures, p_retry_at)
    ON CONFLICT (user_id) DO UPDATE SET llm_failures = excluded.llm_failures,
        llm_retry_at = excluded.llm_retry_at, updated_at = now();
END
$$;

-- Capture: session records --------------------------------------------------------------------------------

-- The caller's session records, all of them or those of `p_sessions`.
CREATE FUNCTION {{SCHEMA}}.cems_my_capture_sessions(p_sessions text[] DEFAULT NULL)
RETURNS SETOF {{SCHEMA}}.capture_sessions
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 100 AS $$
DECLARE
    me text := {{SCHEMA}}.cems_user();
BEGIN
    IF cardinality(p_sessions) > 100000 THEN
        RAISE EXCEPTION 'at most 100000 sessions at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_sessions IS NULL THEN
        RETURN QUERY SELECT s.* FROM {{SCHEMA}}.capture_sessions s WHERE s.user_id = me;
    ELSE
        RETURN QUERY SELECT s.* FROM {{SCHEMA}}.capture_sessions s
        WHERE s.user_id = me AND s.session_id = ANY (p_sessions);
    END IF;
END
$$;

-- The caller's record of one session, locked until the transaction ends (none when there is none).
CREATE FUNCTION {{SCHEMA}}.cems_lock_capture_session(p_session text) RETURNS SETOF {{SCHEMA}}.capture_sessions
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 1 AS $$
BEGIN
    RETURN QUERY
    SELECT s.* FROM {{SCHEMA}}.capture_sessions s
    WHERE s.user_id = {{SCHEMA}}.cems_user() AND s.session_id = p_session FOR UPDATE;
END
$$;

-- The caller's record of one session and its context memory. A memory that is not one of the caller's
-- (gone since, or never theirs) is recorded as none: the session's next context memory is then a new one,
-- as when the old one is gone.
CREATE FUNCTION {{SCHEMA}}.cems_save_capture_session(p_session text, p_record jsonb, p_memory uuid) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me     text := {{SCHEMA}}.cems_user();
    memory uuid;
BEGIN
    IF p_session IS NULL OR length(p_session) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'a session id is 1 to 500 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- cems_cli/capture/sessions.py caps every list of a record: a few kilobytes.
    IF p_record IS NULL OR jsonb_typeof(p_record) <> 'object' OR pg_column_size(p_record) > 1048576 THEN
        RAISE EXCEPTION 'a session record is a JSON object of at most 1 MB'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT d.id INTO memory FROM {{SCHEMA}}.memory_documents d WHERE d.id = p_memory AND d.user_id = me;
    INSERT INTO {{SCHEMA}}.capture_sessions AS s (user_id, session_id, record, memory_id)
    VALUES (me, p_session, p_record, memory)
    ON CONFLICT (user_id, session_id) DO UPDATE SET record = excluded.record, memory_id = excluded.memory_id,
        updated_at = now();
END
$$;

-- Maintenance runs ----------------------------------------------------------------------------------------

CREATE FUNCTION {{SCHEMA}}.cems_my_maintenance_run() RETURNS SETOF {{SCHEMA}}.maintenance_runs
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 1 AS $$
BEGIN
    RETURN QUERY SELECT r.* FROM {{SCHEMA}}.maintenance_runs r WHERE r.user_id = {{SCHEMA}}.cems_user();
END
$$;

-- The caller's maintenance ran now and did what `p_report` says (ids and counts, never texts).
CREATE FUNCTION {{SCHEMA}}.cems_record_maintenance_run(p_report jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF p_report IS NULL OR jsonb_typeof(p_report) <> 'object' OR pg_column_size(p_report) > 8388608 THEN
        RAISE EXCEPTION 'a maintenance report is a JSON object of at most 8 MB'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{SCHEMA}}.maintenance_runs AS r (user_id, last_run_at, report)
    VALUES ({{SCHEMA}}.cems_user(), now(), p_report)
    ON CONFLICT (user_id) DO UPDATE SET last_run_at = now(), report = excluded.report;
END
$$;

-- Stored settings -----------------------------------------------------------------------------------------

-- The stored settings the caller may read (the policy settings_read): their own and their teams'.
CREATE FUNCTION {{SCHEMA}}.cems_visible_settings() RETURNS SETOF {{SCHEMA}}.stored_settings
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 20 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged();
    me         text := {{SCHEMA}}.cems_user();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY
    SELECT s.* FROM {{SCHEMA}}.stored_settings s
    WHERE everything OR (s.owner_kind = 'user' AND s.owner = me)
       OR (s.owner_kind = 'team' AND s.owner = ANY (teams));
END
$$;

-- Store a setting: the caller's own (`p_owner` NULL or the caller), or a team's by one of its admins (the
-- policies settings_insert and settings_update). The row names its writer, the caller. Settings that
-- choose where data goes stay per user (the table's check, 013).
CREATE FUNCTION {{SCHEMA}}.cems_put_setting(p_kind text, p_owner text, p_key text, p_value jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me       text := {{SCHEMA}}.cems_user();
    owned_by text;
BEGIN
    IF p_kind = 'user' AND coalesce(p_owner, me) = me THEN
        owned_by := me;
    ELSIF p_kind = 'team' AND p_owner = ANY ({{SCHEMA}}.cems_admin_teams()) THEN
        owned_by := p_owner;
    ELSIF p_kind = 'team' THEN
        RAISE EXCEPTION 'only an admin of team % can change its settings', left(p_owner, 200)
            USING ERRCODE = 'insufficient_privilege';
    ELSE
        RAISE EXCEPTION 'a stored setting is your own or your team''s' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Keys are cems_cli/live_settings.py's names; a value is one setting's JSON.
    IF p_key IS NULL OR p_key !~ '^[a-z][a-z0-9_]{0,99}$' THEN
        RAISE EXCEPTION 'a setting''s name is 1 to 100 lower-case letters, digits and _'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_value IS NULL OR pg_column_size(p_value) > 65536 THEN
        RAISE EXCEPTION 'a setting''s value is JSON of at most 64 kB' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{SCHEMA}}.stored_settings AS s (owner_kind, owner, key, value, updated_by)
    VALUES (p_kind, owned_by, p_key, p_value, me)
    ON CONFLICT (owner_kind, owner, key) DO UPDATE
    SET value = excluded.value, updated_at = now(), updated_by = excluded.updated_by;
END
$$;

-- cems_meta -----------------------------------------------------------------------------------------------

-- The keys the caller may read (the policy meta_read): the store's own (its embedding model, search
-- indexes a load left to build), and the caller's scrub mark, never another user's.
CREATE FUNCTION {{SCHEMA}}.cems_visible_meta() RETURNS SETOF {{SCHEMA}}.cems_meta
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 5 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged();
    me         text := {{SCHEMA}}.cems_user();
BEGIN
    RETURN QUERY
    SELECT m.* FROM {{SCHEMA}}.cems_meta m
    WHERE everything OR m.key NOT LIKE 'scrub\_pending:%' OR m.key = 'scrub_pending:' || me;
END
$$;

-- The caller deleted memories whose text is still in the database's files (store/scrub.py).
CREATE FUNCTION {{SCHEMA}}.cems_mark_scrub_pending() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    INSERT INTO {{SCHEMA}}.cems_meta AS m (key, value)
    VALUES ('scrub_pending:' || {{SCHEMA}}.cems_user(), clock_timestamp()::text)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
END
$$;

-- Summaries -----------------------------------------------------------------------------------------------

-- A summary of the caller's: made of their own live memories only (a summary quotes what it sums up, and
-- goes when any of them goes), its id the table's. Returns it.
CREATE FUNCTION {{SCHEMA}}.cems_insert_summary(
    p_project text, p_level integer, p_title text, p_content text, p_members uuid[], p_member_key text,
    p_period_start timestamptz, p_period_end timestamptz, p_method text, p_embedding vector)
RETURNS uuid LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me     text := {{SCHEMA}}.cems_user();
    new_id uuid;
BEGIN
    IF length(p_project) > 1000 OR length(p_title) > 1000 OR octet_length(p_content) > 1048576
       OR length(p_member_key) > 200 OR coalesce(cardinality(p_members), 0) NOT BETWEEN 1 AND 10000
       OR array_position(p_members, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'a summary has a project and a title of at most 1000 characters, at most 1 MB of text, '
            'a member key of at most 200 and 1 to 10000 memories, none NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT count(*) FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = ANY (p_members) AND d.user_id = me AND NOT d.archived)
       <> (SELECT count(DISTINCT m) FROM unnest(p_members) m) THEN
        RAISE EXCEPTION 'a summary is made of your own live memories' USING ERRCODE = 'foreign_key_violation';
    END IF;
    INSERT INTO {{SCHEMA}}.memory_summaries AS s (user_id, project, level, title, content, members, member_key,
                                                  period_start, period_end, method, embedding)
    VALUES (me, p_project, p_level, p_title, p_content, p_members, p_member_key, p_period_start, p_period_end,
            p_method, p_embedding)
    RETURNING s.id INTO new_id;
    RETURN new_id;
END
$$;

DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['cems_my_observer_files(text[])', 'cems_lock_observer_file(text)',
                              'cems_add_observer_file(text)',
                              'cems_save_observer_file(text, bigint, bigint, bigint, bigint, double precision, '
                              'text, integer, jsonb, text, bigint, bigint, integer, bigint)',
                              'cems_add_backlog(text, jsonb)', 'cems_my_backlog_groups()',
                              'cems_backlog_batch(text, integer)', 'cems_backlog_failed(bigint[], text)',
                              'cems_my_observer_state()', 'cems_note_observer_run()',
                              'cems_note_observer_error(text)', 'cems_note_observer_llm(integer, timestamptz)',
                              'cems_my_capture_sessions(text[])', 'cems_lock_capture_session(text)',
                              'cems_save_capture_session(text, jsonb, uuid)', 'cems_my_maintenance_run()',
                              'cems_record_maintenance_run(jsonb)', 'cems_visible_settings()',
                              'cems_put_setting(text, text, text, jsonb)', 'cems_visible_meta()',
                              'cems_mark_scrub_pending()',
                              'cems_insert_summary(text, integer, text, text, uuid[], text, timestamptz, '
                              'timestamptz, text, vector)']
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO cems_app', current_schema(), fn);
    END LOOP;
END
$$;

-- The wall: no privilege at all on the bookkeeping tables (table-wide revokes take 017's and 021's column
-- grants with them), nor on cems_role_map (which role is which user is the functions' to use, not every
-- member's to list), nor on the backlog's sequence (its value counted every user's backlog). What a member
-- holds is SELECT on schema_migrations (each connection asks whether the schema is current) and EXECUTE on
-- the functions. A later migration grants nothing on a table to cems_app: a member's new read or write is a
-- function.
REVOKE ALL ON {{SCHEMA}}.observer_files, {{SCHEMA}}.observer_backlog, {{SCHEMA}}.observer_state,
    {{SCHEMA}}.capture_sessions, {{SCHEMA}}.maintenance_runs, {{SCHEMA}}.stored_settings, {{SCHEMA}}.cems_meta,
    {{SCHEMA}}.memory_summaries, {{SCHEMA}}.cems_role_map FROM cems_app;
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM cems_app',
                   pg_get_serial_sequence(format('%I.observer_backlog', current_schema()), 'id'));
END
$$;
