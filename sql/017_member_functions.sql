-- Search reads for members through functions (issue 27, item 1: reads, second step).
--
-- A member who may SELECT the tables learns which hidden ids exist: the id test (uuid_eq) is LEAKPROOF, so
-- it runs before the policy, and EXPLAIN ANALYZE shows "Rows Removed by Filter: 1" for a row the member
-- cannot read and nothing for an id no row has. The way out is that members read memory data only through
-- SECURITY DEFINER functions, whose plans they never see. These are the reads of a search: the nearest
-- chunks by vector, the chunks and memories of its candidates. The application calls them for members of a
-- team server (store/search.py); the table grants stay until every read and write a member runs has its
-- function.
--
-- Each function returns only what the caller may read: their own rows, and the shared rows of their teams
-- (the policies' test, written out, on the chunks' owner columns the trigger copies from their memory).
-- Identity comes from session_user (cems_user), never from an argument. Sizes are bounded.

-- The `p_limit` chunks nearest to `p_query`, among the live memories the caller may read that match the
-- application's filters (store/search.py filter_clause): scope ('personal', 'shared' or 'both'; shared of
-- p_team or the caller's own), category (none: anything but rules), project (store/memories.py
-- project_clause). As the owner, the filters are the only ones the planner sees, so it chooses as for a
-- single user's store (under the policies it multiplied the selectivities of two filters of the same rows
-- and, at 100k memories, sorted exact distances instead of the HNSW scan: 100 ms, not 6). Planned per call
-- with the arguments as constants (plan_cache_mode): a generic plan would keep every optional filter.
CREATE FUNCTION {{SCHEMA}}.cems_vector_hits(p_query vector, p_limit integer, p_scope text DEFAULT 'both',
                                            p_team text DEFAULT NULL, p_category text DEFAULT NULL,
                                            p_project text DEFAULT NULL)
RETURNS TABLE (id uuid, document_id uuid, chunk_index integer, similarity double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp
SET plan_cache_mode = force_custom_plan ROWS 50 AS $$
DECLARE
    me   text := {{SCHEMA}}.cems_user();
    -- The team asked for, when the caller is one of its members: the policies' test folded into the
    -- application's own (a shared memory is readable by its author and its team's members), so the planner
    -- sees one filter of the rows, not two it would take for independent.
    team text := CASE WHEN p_team = ANY ({{SCHEMA}}.cems_my_teams()) THEN p_team END;
BEGIN
    IF p_query IS NULL THEN
        RAISE EXCEPTION 'a query vector is needed' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'a limit is 1 to 10000 chunks' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_scope IS NULL OR p_scope NOT IN ('personal', 'shared', 'both') THEN
        RAISE EXCEPTION 'a scope is personal, shared or both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT c.id, c.document_id, c.chunk_index, 1 - (c.embedding <=> p_query)
    FROM {{SCHEMA}}.memory_chunks c JOIN {{SCHEMA}}.memory_documents d ON d.id = c.document_id
    WHERE ((p_scope IN ('personal', 'both') AND d.scope = 'personal' AND d.user_id = me)
           OR (p_scope IN ('shared', 'both') AND d.scope = 'shared' AND (d.team_id = team OR d.user_id = me)))
      AND NOT d.archived AND (d.expires_at IS NULL OR d.expires_at > now())
      AND ((p_category IS NULL AND d.category <> 'rules') OR d.category = p_category)
      AND (p_project IS NULL OR d.source_ref = p_project
           OR left(d.source_ref, length(p_project) + 1) = p_project || ':')
    ORDER BY c.embedding <=> p_query LIMIT p_limit;
END
$$;

-- The memories among `p_ids` the caller may read (archived ones too: `cems show` shows them).
CREATE FUNCTION {{SCHEMA}}.cems_documents(p_ids uuid[]) RETURNS SETOF {{SCHEMA}}.memory_documents
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 50 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT d.* FROM {{SCHEMA}}.memory_documents d
    WHERE d.id = ANY (p_ids) AND (d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams)));
END
$$;

-- The chunks among `p_ids` the caller may read.
CREATE FUNCTION {{SCHEMA}}.cems_chunks(p_ids uuid[]) RETURNS SETOF {{SCHEMA}}.memory_chunks
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 50 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 chunks at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT c.* FROM {{SCHEMA}}.memory_chunks c
    WHERE c.id = ANY (p_ids) AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)));
END
$$;

-- The candidates of a search in one call: each chunk among `p_ids` the caller may read, its text, its cosine
-- similarity to `p_query` (computed here: no vector travels), and its memory.
CREATE FUNCTION {{SCHEMA}}.cems_candidates(p_ids uuid[], p_query vector)
RETURNS TABLE (chunk_id uuid, content text, similarity double precision, document {{SCHEMA}}.memory_documents)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 50 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 chunks at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT c.id, c.content, 1 - (c.embedding <=> p_query), d
    FROM {{SCHEMA}}.memory_chunks c JOIN {{SCHEMA}}.memory_documents d ON d.id = c.document_id
    WHERE c.id = ANY (p_ids) AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)));
END
$$;

-- The stored vectors of the chunks among `p_ids` the caller may read that were embedded on their own text
-- (semantic dedup compares them; store/search.py fetch_embeddings). Only the two columns travel.
CREATE FUNCTION {{SCHEMA}}.cems_chunk_embeddings(p_ids uuid[]) RETURNS TABLE (id uuid, embedding vector)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 50 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 chunks at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT c.id, c.embedding FROM {{SCHEMA}}.memory_chunks c
    WHERE c.id = ANY (p_ids) AND c.context IS NULL
      AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)));
END
$$;

-- The chunks of one memory the caller may read, `p_from` to `p_to` by index (a candidate's neighbours).
CREATE FUNCTION {{SCHEMA}}.cems_document_chunks(p_document uuid, p_from integer, p_to integer)
RETURNS SETOF {{SCHEMA}}.memory_chunks
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 3 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY
    SELECT c.* FROM {{SCHEMA}}.memory_chunks c
    WHERE c.document_id = p_document AND c.chunk_index BETWEEN p_from AND p_to
      AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
    ORDER BY c.chunk_index;
END
$$;

REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_vector_hits(vector, integer, text, text, text, text),
    {{SCHEMA}}.cems_candidates(uuid[], vector), {{SCHEMA}}.cems_chunk_embeddings(uuid[]),
    {{SCHEMA}}.cems_documents(uuid[]), {{SCHEMA}}.cems_chunks(uuid[]),
    {{SCHEMA}}.cems_document_chunks(uuid, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_vector_hits(vector, integer, text, text, text, text),
    {{SCHEMA}}.cems_candidates(uuid[], vector), {{SCHEMA}}.cems_chunk_embeddings(uuid[]),
    {{SCHEMA}}.cems_documents(uuid[]), {{SCHEMA}}.cems_chunks(uuid[]),
    {{SCHEMA}}.cems_document_chunks(uuid, integer, integer) TO cems_app;

-- The distance operator is the vector extension's, which a managed service may keep in a schema of its own
-- (Supabase: extensions): named after ours, so nothing a member can create comes first.
DO $$
DECLARE
    vectors text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                     WHERE e.extname = 'vector');
BEGIN
    IF vectors IS DISTINCT FROM current_schema() THEN
        EXECUTE format('ALTER FUNCTION %I.cems_vector_hits(vector, integer, text, text, text, text) '
                       'SET search_path = pg_catalog, %I, %I, pg_temp',
                       current_schema(), current_schema(), vectors);
        EXECUTE format('ALTER FUNCTION %I.cems_candidates(uuid[], vector) '
                       'SET search_path = pg_catalog, %I, %I, pg_temp',
                       current_schema(), current_schema(), vectors);
    END IF;
END
$$;

-- A quota is its user's to read, their team admins' and a CEMS administrator's, and everyone may read the
-- default ('*'): 009's version answered for any user name, so any member could read anyone's limits.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_quota_of(p_user text)
RETURNS TABLE (max_memories integer, searches_per_minute integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF p_user IS DISTINCT FROM {{SCHEMA}}.cems_user() AND p_user IS DISTINCT FROM '*'
       AND NOT {{SCHEMA}}.cems_is_admin()
       AND NOT EXISTS (SELECT 1 FROM {{SCHEMA}}.cems_team_members m
                       WHERE m.user_id = p_user AND m.team_id = ANY ({{SCHEMA}}.cems_admin_teams())) THEN
        RAISE EXCEPTION 'the quota of % is for them, the admins of their teams and CEMS administrators '
            'to read', p_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY
    SELECT coalesce(u.max_memories, d.max_memories), coalesce(u.searches_per_minute, d.searches_per_minute)
    FROM (SELECT 1) one
    LEFT JOIN {{SCHEMA}}.cems_quotas u ON u.user_id = p_user
    LEFT JOIN {{SCHEMA}}.cems_quotas d ON d.user_id = '*';
END
$$;

-- No member locks the other tables every session reads either: memory_summaries, stored_settings (every
-- hook reads the live settings), the observer's and capture's bookkeeping, maintenance runs, cems_meta (every
-- connection reads the embedding model). As 016 did for the memory tables: table-wide UPDATE, DELETE and
-- TRUNCATE (what PostgreSQL asks of LOCK ... IN SHARE MODE and above) give way to UPDATE on the columns, and
-- members delete through the functions below, which apply the DELETE policies' test. What a member can
-- still lock (ROW EXCLUSIVE, through INSERT and column UPDATE) blocks no reader. A later migration that adds
-- a column to one of these tables grants UPDATE on it to cems_app if members may write it.
DO $$
DECLARE
    t       text;
    columns text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_summaries', 'stored_settings', 'observer_files', 'observer_backlog',
                             'observer_state', 'capture_sessions', 'maintenance_runs', 'cems_meta']
    LOOP
        EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON %I.%I FROM cems_app', current_schema(), t);
        SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO columns
        FROM information_schema.columns c
        WHERE c.table_schema = current_schema() AND c.table_name = t
          AND c.is_generated = 'NEVER' AND c.is_identity = 'NO';
        EXECUTE format('GRANT UPDATE (%s) ON %I.%I TO cems_app', columns, current_schema(), t);
    END LOOP;
END
$$;

-- Each deletes the rows of one user: the caller's own (a privileged session, the embedded store, names the
-- user it acts for). Returns how many went.
CREATE FUNCTION {{SCHEMA}}.cems_owner_for(p_user text) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    SELECT CASE WHEN {{SCHEMA}}.cems_privileged() THEN p_user ELSE {{SCHEMA}}.cems_user() END
$$;

CREATE FUNCTION {{SCHEMA}}.cems_delete_summaries(p_user text, p_ids uuid[]) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (DELETE FROM {{SCHEMA}}.memory_summaries s
                  WHERE s.user_id = {{SCHEMA}}.cems_owner_for(p_user) AND s.id = ANY (p_ids) RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- The summaries of every project but `p_keep`.
CREATE FUNCTION {{SCHEMA}}.cems_delete_summaries_except(p_user text, p_keep text[]) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (DELETE FROM {{SCHEMA}}.memory_summaries s
                  WHERE s.user_id = {{SCHEMA}}.cems_owner_for(p_user)
                    AND NOT (s.project = ANY (coalesce(p_keep, '{}'))) RETURNING 1)
    SELECT count(*) FROM gone
$$;

CREATE FUNCTION {{SCHEMA}}.cems_delete_observer_file(p_user text, p_path text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (DELETE FROM {{SCHEMA}}.observer_files f
                  WHERE f.user_id = {{SCHEMA}}.cems_owner_for(p_user) AND f.path = p_path RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- The backlog items among `p_ids` still there (fewer than asked: another process took them).
CREATE FUNCTION {{SCHEMA}}.cems_delete_backlog(p_user text, p_ids bigint[]) RETURNS SETOF bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    DELETE FROM {{SCHEMA}}.observer_backlog b
    WHERE b.user_id = {{SCHEMA}}.cems_owner_for(p_user) AND b.id = ANY (p_ids) RETURNING b.id
$$;

CREATE FUNCTION {{SCHEMA}}.cems_delete_capture_sessions(p_user text, p_memories uuid[]) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (DELETE FROM {{SCHEMA}}.capture_sessions s
                  WHERE s.user_id = {{SCHEMA}}.cems_owner_for(p_user) AND s.memory_id = ANY (p_memories)
                  RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- A stored setting: a user's own, or a team's by one of its admins (the policy settings_delete).
CREATE FUNCTION {{SCHEMA}}.cems_delete_setting(p_kind text, p_owner text, p_key text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (DELETE FROM {{SCHEMA}}.stored_settings s
                  WHERE s.owner_kind = p_kind AND s.owner = p_owner AND s.key = p_key
                    AND ((SELECT {{SCHEMA}}.cems_privileged())
                         OR (s.owner_kind = 'user' AND s.owner = (SELECT {{SCHEMA}}.cems_user()))
                         OR (s.owner_kind = 'team'
                             AND s.owner = ANY ((SELECT {{SCHEMA}}.cems_admin_teams())::text[])))
                  RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- cems_meta pairs (key, value) that are still as read: a member's own scrub mark only (the policy
-- meta_write); a privileged session any.
CREATE FUNCTION {{SCHEMA}}.cems_delete_meta(p_keys text[], p_values text[]) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (DELETE FROM {{SCHEMA}}.cems_meta m
                  WHERE (m.key, m.value) IN (SELECT * FROM unnest(p_keys, p_values))
                    AND ((SELECT {{SCHEMA}}.cems_privileged())
                         OR m.key = 'scrub_pending:' || (SELECT {{SCHEMA}}.cems_user()))
                  RETURNING 1)
    SELECT count(*) FROM gone
$$;

DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['cems_owner_for(text)', 'cems_delete_summaries(text, uuid[])',
                              'cems_delete_summaries_except(text, text[])',
                              'cems_delete_observer_file(text, text)', 'cems_delete_backlog(text, bigint[])',
                              'cems_delete_capture_sessions(text, uuid[])',
                              'cems_delete_setting(text, text, text)', 'cems_delete_meta(text[], text[])']
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO cems_app', current_schema(), fn);
    END LOOP;
END
$$;

-- Who the caller is, in PL/pgSQL: the same answers as 009's SQL functions, but their statements' plans are
-- kept for the session, where a SQL function (not inlined: SECURITY DEFINER) plans its statement on every
-- call. Every member function above and every policy asks them: cems_documents over 30 ids took 1.06 ms a
-- call with the SQL versions, 0.50 ms with these.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_user() RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    RETURN coalesce((SELECT m.user_id FROM {{SCHEMA}}.cems_role_map m WHERE m.role_name = session_user),
                    session_user::text);
END
$$;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_privileged() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    RETURN coalesce((SELECT r.rolsuper OR r.rolbypassrls FROM pg_catalog.pg_roles r
                     WHERE r.rolname = session_user), false);
END
$$;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_my_teams() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(t.team_id ORDER BY t.team_id), '{}') FROM {{SCHEMA}}.cems_team_members t
            WHERE t.user_id = {{SCHEMA}}.cems_user());
END
$$;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_admin_teams() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(t.team_id ORDER BY t.team_id), '{}') FROM {{SCHEMA}}.cems_team_members t
            WHERE t.user_id = {{SCHEMA}}.cems_user() AND t.is_admin);
END
$$;
