-- Members reach memories, chunks and rules through functions only (issue 27, item 1: the last tables).
--
-- While a member may SELECT memory_documents, even under row-level security, an id test shows which hidden
-- memories exist: uuid_eq is LEAKPROOF, so `WHERE id = '…'` runs before the policy and EXPLAIN ANALYZE says
-- "Rows Removed by Filter: 1" for a row the member cannot read and nothing for an id no row has; an INSERT
-- with a chosen id says the same through a unique violation. Members therefore hold no privilege on the
-- three tables. They read and write through the SECURITY DEFINER functions of 015, 016 and 017 (search,
-- deletes) and the general ones below; a function's plan is not the caller's to see, and every id a member
-- writes is generated inside. Row-level security stays on as the second wall (the owner is subject to it
-- on a server where it is no superuser: FORCE ROW LEVEL SECURITY).
--
-- Each function takes identity from session_user (cems_user), applies the policies' test written out, and
-- names every object with {{SCHEMA}} under search_path = pg_catalog, <schema>, pg_temp.

-- Reads ---------------------------------------------------------------------------------------------------

-- The memories the caller may read (their own, and the shared ones of their teams), archived ones too:
-- every read of a member's session is a query over this, with its own filters on top (nothing it filters
-- out was ever the member's to see). Narrowed, when given, to `p_ids` (by primary key), or to the unarchived
-- memories carrying one of `p_tags` (the tags index: a search places its candidates in their sessions).
-- One statement per case, so each keeps its plan for the session (planning one per call, with the ids as
-- constants, made a member's lexical search 1.5x the owner's at 10k memories).
CREATE FUNCTION {{SCHEMA}}.cems_visible_documents(p_ids uuid[] DEFAULT NULL, p_tags text[] DEFAULT NULL)
RETURNS SETOF {{SCHEMA}}.memory_documents
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 1000 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF cardinality(p_ids) > 100000 OR cardinality(p_tags) > 10000 THEN
        RAISE EXCEPTION 'at most 100000 memories or 10000 tags at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_ids IS NOT NULL AND p_tags IS NOT NULL THEN
        RETURN QUERY
        SELECT d.* FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = ANY (p_ids) AND d.tags && p_tags AND NOT d.archived
          AND (d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams)));
    ELSIF p_ids IS NOT NULL THEN
        RETURN QUERY
        SELECT d.* FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = ANY (p_ids) AND (d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams)));
    ELSIF p_tags IS NOT NULL THEN
        RETURN QUERY
        SELECT d.* FROM {{SCHEMA}}.memory_documents d
        WHERE d.tags && p_tags AND NOT d.archived
          AND (d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams)));
    ELSE
        RETURN QUERY
        SELECT d.* FROM {{SCHEMA}}.memory_documents d
        WHERE d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams));
    END IF;
END
$$;

-- Which of the memories `p_ids` pass a search's filters, as cems_vector_hits applies them (scope, team,
-- live, category, project): a lexical search joins its best-scored chunks to this (store/lexical.py). Only
-- ids travel: returning the whole memories for the same test made a member's lexical search 2x the owner's.
CREATE FUNCTION {{SCHEMA}}.cems_matching_documents(p_ids uuid[], p_scope text DEFAULT 'both',
                                                   p_team text DEFAULT NULL, p_category text DEFAULT NULL,
                                                   p_project text DEFAULT NULL)
RETURNS SETOF uuid LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp
ROWS 50 AS $$
DECLARE
    me   text := {{SCHEMA}}.cems_user();
    team text := CASE WHEN p_team = ANY ({{SCHEMA}}.cems_my_teams()) THEN p_team END;
BEGIN
    IF cardinality(p_ids) > 100000 THEN
        RAISE EXCEPTION 'at most 100000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_scope IS NULL OR p_scope NOT IN ('personal', 'shared', 'both') THEN
        RAISE EXCEPTION 'a scope is personal, shared or both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT d.id FROM {{SCHEMA}}.memory_documents d
    WHERE d.id = ANY (p_ids)
      AND ((p_scope IN ('personal', 'both') AND d.scope = 'personal' AND d.user_id = me)
           OR (p_scope IN ('shared', 'both') AND d.scope = 'shared' AND (d.team_id = team OR d.user_id = me)))
      AND NOT d.archived AND (d.expires_at IS NULL OR d.expires_at > now())
      AND ((p_category IS NULL AND d.category <> 'rules') OR d.category = p_category)
      AND (p_project IS NULL OR d.source_ref = p_project
           OR left(d.source_ref, length(p_project) + 1) = p_project || ':');
END
$$;

-- The chunks the caller may read, of the memories `p_documents` (all of them when NULL).
CREATE FUNCTION {{SCHEMA}}.cems_visible_chunks(p_documents uuid[] DEFAULT NULL)
RETURNS SETOF {{SCHEMA}}.memory_chunks
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 1000 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF cardinality(p_documents) > 100000 THEN
        RAISE EXCEPTION 'at most 100000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_documents IS NULL THEN
        RETURN QUERY
        SELECT c.* FROM {{SCHEMA}}.memory_chunks c
        WHERE c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams));
    ELSE
        RETURN QUERY
        SELECT c.* FROM {{SCHEMA}}.memory_chunks c
        WHERE c.document_id = ANY (p_documents)
          AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)));
    END IF;
END
$$;

-- The rule specs of the memories the caller may read.
CREATE FUNCTION {{SCHEMA}}.cems_visible_rules() RETURNS SETOF {{SCHEMA}}.rules
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 100 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY
    SELECT r.* FROM {{SCHEMA}}.rules r JOIN {{SCHEMA}}.memory_documents d ON d.id = r.document_id
    WHERE d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams));
END
$$;

-- What BM25 needs of the chunks a lexical search may match (store/lexical.py collection_stats): how many
-- the caller may read within `p_scope` (as cems_fts_match narrows them), and the mean count of their
-- distinct content lexemes, from a fixed sample of the table's pages past `p_sample_from` chunks (the same
-- sample each time: a search stays reproducible).
CREATE FUNCTION {{SCHEMA}}.cems_chunk_stats(p_scope text, p_team text, p_sample_from integer,
                                            p_sample_chunks integer)
RETURNS TABLE (chunks bigint, average_length double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me      text := {{SCHEMA}}.cems_user();
    teams   text[] := {{SCHEMA}}.cems_my_teams();
    visible bigint;
    mean    double precision;
BEGIN
    IF p_scope IS NULL OR p_scope NOT IN ('personal', 'shared', 'both') THEN
        RAISE EXCEPTION 'a scope is personal, shared or both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT count(*) INTO visible FROM {{SCHEMA}}.memory_chunks c
    WHERE (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
      AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
           OR (p_scope IN ('shared', 'both') AND c.scope = 'shared' AND (c.team_id = p_team OR c.user_id = me)));
    IF visible > greatest(coalesce(p_sample_from, 0), 1) AND coalesce(p_sample_chunks, 0) > 0 THEN
        SELECT avg(length(ts_filter(c.search_vector, '{a}'))) INTO mean
        FROM {{SCHEMA}}.memory_chunks c TABLESAMPLE SYSTEM (least(100.0, 100.0 * p_sample_chunks / visible))
             REPEATABLE (0)
        WHERE (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
          AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
               OR (p_scope IN ('shared', 'both') AND c.scope = 'shared' AND (c.team_id = p_team OR c.user_id = me)));
    END IF;
    IF mean IS NULL THEN
        SELECT avg(length(ts_filter(c.search_vector, '{a}'))) INTO mean FROM {{SCHEMA}}.memory_chunks c
        WHERE (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
          AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
               OR (p_scope IN ('shared', 'both') AND c.scope = 'shared' AND (c.team_id = p_team OR c.user_id = me)));
    END IF;
    RETURN QUERY SELECT visible, coalesce(mean, 0.0);
END
$$;

-- Writes --------------------------------------------------------------------------------------------------

-- A new memory of the caller's (the policy documents_insert's test: personal, or shared with a team of
-- theirs, a rule only by its admins). Its id is the table's default, never the caller's: a chosen id that
-- clashed told whether a hidden memory had it. NULL when a live memory of the caller's in the same place
-- already holds this text (the caller reads which, through cems_visible_documents). The guard, quota and
-- audit triggers fire as on any insert.
CREATE FUNCTION {{SCHEMA}}.cems_insert_memory(
    p_content text, p_content_hash text, p_team text, p_scope text, p_category text, p_title text,
    p_tags text[], p_source text, p_source_ref text, p_pinned boolean, p_pin_reason text, p_pin_category text,
    p_expires_at timestamptz, p_created_at timestamptz, p_context text)
RETURNS uuid LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me  text := {{SCHEMA}}.cems_user();
    new_id uuid;
BEGIN
    -- NULL-safe: an unknown is a no (coalesce), never a pass.
    IF NOT {{SCHEMA}}.cems_privileged() AND NOT coalesce(
        (p_scope = 'personal' AND p_team IS NULL)
        OR (p_scope = 'shared' AND p_category IS DISTINCT FROM 'rules' AND p_team = ANY ({{SCHEMA}}.cems_my_teams()))
        OR (p_scope = 'shared' AND p_category = 'rules' AND p_team = ANY ({{SCHEMA}}.cems_admin_teams())), false) THEN
        RAISE EXCEPTION 'you may not add memories to team %', p_team USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO {{SCHEMA}}.memory_documents AS d (
        content, content_hash, user_id, team_id, scope, category, title, tags, source, source_ref, pinned,
        pin_reason, pin_category, expires_at, created_at, updated_at, context)
    VALUES (p_content, p_content_hash, me, p_team, p_scope, p_category, p_title, coalesce(p_tags, '{}'),
            p_source, p_source_ref, coalesce(p_pinned, false), p_pin_reason, p_pin_category, p_expires_at,
            coalesce(p_created_at, now()), coalesce(p_created_at, now()), p_context)
    ON CONFLICT (user_id, scope, coalesce(team_id, ''), content_hash) WHERE NOT archived DO NOTHING
    RETURNING d.id INTO new_id;
    RETURN new_id;
END
$$;

-- A chunk of one of the caller's memories (the chunk trigger copies its owner, team and scope and refuses
-- another's memory). Its id is the table's default.
CREATE FUNCTION {{SCHEMA}}.cems_insert_chunk(p_document uuid, p_index integer, p_content text,
                                             p_embedding vector, p_context text)
RETURNS void LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF NOT {{SCHEMA}}.cems_privileged() AND NOT EXISTS (
        SELECT 1 FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = p_document AND d.user_id = {{SCHEMA}}.cems_user()) THEN
        RAISE EXCEPTION 'memory % does not exist or is not yours', p_document
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    INSERT INTO {{SCHEMA}}.memory_chunks (document_id, chunk_index, content, embedding, context)
    VALUES (p_document, p_index, p_content, p_embedding, p_context);
END
$$;

-- The spec of a rule memory: the owner's personal rule, or a shared rule of a team the caller administers
-- (the policy rules_write). False when the memory has its spec already.
CREATE FUNCTION {{SCHEMA}}.cems_insert_rule(p_document uuid, p_tool text, p_pattern text, p_field text,
                                            p_action text, p_reason text, p_is_regex boolean, p_project text)
RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF NOT {{SCHEMA}}.cems_privileged() AND NOT EXISTS (
        SELECT 1 FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = p_document AND d.category = 'rules'
          AND ((d.scope = 'personal' AND d.user_id = {{SCHEMA}}.cems_user())
               OR (d.scope = 'shared' AND d.team_id = ANY ({{SCHEMA}}.cems_admin_teams())))) THEN
        RAISE EXCEPTION 'rule memory % does not exist or is not yours to write', p_document
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO {{SCHEMA}}.rules (document_id, tool, pattern, field, action, reason, is_regex, project)
    VALUES (p_document, p_tool, p_pattern, p_field, p_action, p_reason, coalesce(p_is_regex, false), p_project)
    ON CONFLICT (document_id) DO NOTHING;
    RETURN FOUND;  -- false: the memory has its spec already
END
$$;

-- Set the columns named in `p_set` (a JSON object: column → new value, as the column's type reads it;
-- 'now' is the transaction's time) on the memories among `p_ids` the caller may change, and return them as
-- they are now. Which memories: the policy documents_update's test (their own, rules of a shared scope
-- aside; a team admin's the team's shared memories), before and after. Which columns: any but the id, the
-- owner and what the table computes; the guard triggers keep team, scope, pinning and a teammate's text to
-- those they belong to, and the audit trigger records the change. One general function rather than one
-- per change: every UPDATE the application runs is such a set of values.
CREATE FUNCTION {{SCHEMA}}.cems_update_memories(p_ids uuid[], p_set jsonb)
RETURNS SETOF {{SCHEMA}}.memory_documents
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me          text := {{SCHEMA}}.cems_user();
    admin_teams text[] := {{SCHEMA}}.cems_admin_teams();
    privileged  boolean := {{SCHEMA}}.cems_privileged();
    assignments text;
    unknown     text;
    changed     {{SCHEMA}}.memory_documents;
BEGIN
    IF coalesce(cardinality(p_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_set IS NULL OR jsonb_typeof(p_set) <> 'object' OR p_set = '{}' THEN
        RAISE EXCEPTION 'the change is a JSON object of columns and values' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Column names are checked against the table's own before they reach the statement, and quoted.
    SELECT string_agg(k, ', ') INTO unknown FROM jsonb_object_keys(p_set) k
    WHERE k IN ('id', 'user_id') OR NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = '{{SCHEMA}}.memory_documents'::regclass AND a.attname = k AND a.attnum > 0
          AND NOT a.attisdropped AND a.attgenerated = '' AND a.attidentity = '');
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'no column to change: %', left(unknown, 200) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(format('%I = r.%I', k, k), ', ') INTO assignments FROM jsonb_object_keys(p_set) k;
    FOR changed IN EXECUTE format(
        'UPDATE {{SCHEMA}}.memory_documents d SET %s '
        'FROM pg_catalog.jsonb_populate_record(NULL::{{SCHEMA}}.memory_documents, $1) r '
        'WHERE d.id = ANY ($2) AND ($3 OR (d.user_id = $4 AND (d.scope = ''personal'' OR d.category <> ''rules'')) '
        '  OR (d.scope = ''shared'' AND d.team_id = ANY ($5))) RETURNING d.*', assignments)
        USING p_set, p_ids, privileged, me, admin_teams
    LOOP
        IF NOT coalesce(privileged OR (changed.user_id = me AND (changed.scope = 'personal' OR changed.category <> 'rules'))
                        OR (changed.scope = 'shared' AND changed.team_id = ANY (admin_teams)), false) THEN
            RAISE EXCEPTION 'memory % may not become what was asked', changed.id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEXT changed;
    END LOOP;
END
$$;

-- Lock the memories among `p_ids` the caller may change (the test of cems_update_memories), in id order,
-- until the caller's transaction ends: maintenance and summaries lock what they are about to rewrite, and
-- a member may not lock a table row of their own (no privilege). FOR NO KEY UPDATE, or FOR SHARE with
-- `p_share`. Returns the ids locked.
CREATE FUNCTION {{SCHEMA}}.cems_lock_memories(p_ids uuid[], p_share boolean DEFAULT false) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me          text := {{SCHEMA}}.cems_user();
    admin_teams text[] := {{SCHEMA}}.cems_admin_teams();
    privileged  boolean := {{SCHEMA}}.cems_privileged();
BEGIN
    IF cardinality(p_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(p_share, false) THEN
        RETURN QUERY
        SELECT d.id FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = ANY (p_ids) AND (privileged OR (d.user_id = me AND (d.scope = 'personal' OR d.category <> 'rules'))
                                      OR (d.scope = 'shared' AND d.team_id = ANY (admin_teams)))
        ORDER BY d.id FOR SHARE;
    ELSE
        RETURN QUERY
        SELECT d.id FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = ANY (p_ids) AND (privileged OR (d.user_id = me AND (d.scope = 'personal' OR d.category <> 'rules'))
                                      OR (d.scope = 'shared' AND d.team_id = ANY (admin_teams)))
        ORDER BY d.id FOR NO KEY UPDATE;
    END IF;
END
$$;

-- Maintenance's search of near duplicates among the caller's own memories (store/lifecycle.py
-- near_duplicate_pairs, the same query): for each of `p_probes`, the `p_neighbours` nearest first chunks by
-- the HNSW index of the caller's live mergeable memories of the same scope, team, category and project, at
-- least `p_threshold` alike. The caller's SET LOCALs (ef_search, iterative scan, no sort) hold in here.
CREATE FUNCTION {{SCHEMA}}.cems_near_duplicates(p_probes uuid[], p_neighbours integer,
                                                p_threshold double precision)
RETURNS TABLE (probe uuid, document_id uuid, similarity double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me text := {{SCHEMA}}.cems_user();
BEGIN
    IF cardinality(p_probes) > 10000 OR p_neighbours IS NULL OR p_neighbours < 1 OR p_neighbours > 1000 THEN
        RAISE EXCEPTION 'at most 10000 probes and 1 to 1000 neighbours' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH mine AS MATERIALIZED (
        SELECT d.id, d.scope, coalesce(d.team_id, '') AS team, d.category,
               coalesce(substring(d.source_ref from '^project:[^:]*'), '') AS project, c.embedding
        FROM {{SCHEMA}}.memory_documents d
        JOIN {{SCHEMA}}.memory_chunks c ON c.document_id = d.id AND c.chunk_index = 0
        WHERE d.id = ANY (p_probes) AND d.user_id = me)
    SELECT m.id, n.document_id, n.similarity FROM mine m CROSS JOIN LATERAL (
        SELECT c.document_id, 1 - (c.embedding <=> m.embedding) AS similarity FROM {{SCHEMA}}.memory_chunks c
        WHERE c.chunk_index = 0 AND c.document_id <> m.id
          AND coalesce((SELECT o.user_id = me AND NOT o.archived AND (o.expires_at IS NULL OR o.expires_at > now())
                               AND o.category <> 'rules' AND o.context IS NULL AND o.scope = m.scope
                               AND coalesce(o.team_id, '') = m.team AND o.category = m.category
                               AND coalesce(substring(o.source_ref from '^project:[^:]*'), '') = m.project
                        FROM {{SCHEMA}}.memory_documents o WHERE o.id = c.document_id), false)
        ORDER BY c.embedding <=> m.embedding LIMIT p_neighbours) n
    WHERE n.similarity >= p_threshold;
END
$$;

DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['cems_visible_documents(uuid[], text[])',
                              'cems_matching_documents(uuid[], text, text, text, text)', 'cems_visible_chunks(uuid[])',
                              'cems_visible_rules()', 'cems_chunk_stats(text, text, integer, integer)',
                              'cems_insert_memory(text, text, text, text, text, text, text[], text, text, '
                              'boolean, text, text, timestamptz, timestamptz, text)',
                              'cems_insert_chunk(uuid, integer, text, vector, text)',
                              'cems_insert_rule(uuid, text, text, text, text, text, boolean, text)',
                              'cems_update_memories(uuid[], jsonb)', 'cems_lock_memories(uuid[], boolean)',
                              'cems_near_duplicates(uuid[], integer, double precision)']
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO cems_app', current_schema(), fn);
    END LOOP;
END
$$;

-- The distance operator is the vector extension's, which a managed service may keep in a schema of its own
-- (as 017 does for the search functions).
DO $$
DECLARE
    vectors text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                     WHERE e.extname = 'vector');
BEGIN
    IF vectors IS DISTINCT FROM current_schema() THEN
        EXECUTE format('ALTER FUNCTION %I.cems_near_duplicates(uuid[], integer, double precision) '
                       'SET search_path = pg_catalog, %I, %I, pg_temp',
                       current_schema(), current_schema(), vectors);
    END IF;
END
$$;

-- The wall: no privilege at all on the three tables (table-wide revokes take the column grants of 016
-- with them). A later migration grants nothing on them to cems_app: a member's new read or write is a
-- function here.
REVOKE ALL ON {{SCHEMA}}.memory_documents, {{SCHEMA}}.memory_chunks, {{SCHEMA}}.rules FROM cems_app;
-- Nor on the sequence that numbers memories (009 granted every sequence): its value counted every user's
-- memories stored so far.
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM cems_app',
                   pg_get_serial_sequence(format('%I.memory_documents', current_schema()), 'seq'));
END
$$;
