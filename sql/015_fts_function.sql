-- Full-text matching for members through a function (issue 27, item 1: reads, first step).
--
-- Since 013 the full-text match is not LEAKPROOF, so under row-level security `search_vector @@ q` waits for
-- the policy and cannot drive the GIN index: a member's lexical search read every chunk they can see (25 ms
-- against 16 ms at 10k memories, and linear in the store). This function runs as its owner, where the
-- index serves the match, and returns only the chunks the caller may read (their own, and the shared ones
-- of their teams): the policy's test, written out. A member sees its result, never its plan, so nothing of
-- the rows it passed over shows.
--
-- p_scope and p_team narrow the result as the application's own visibility clause does (store/memories.py
-- visibility_clause: personal, shared of p_team or the caller's own, or both), so a count of matches needs
-- no second pass over the table. The caller and their teams are read once per call, not per row.
CREATE FUNCTION {{SCHEMA}}.cems_fts_match(p_query tsquery, p_scope text DEFAULT 'both', p_team text DEFAULT NULL)
RETURNS SETOF uuid LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp
ROWS 200 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY
    SELECT c.id FROM {{SCHEMA}}.memory_chunks c
    WHERE c.search_vector @@ p_query
      AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
      AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
           OR (p_scope IN ('shared', 'both') AND c.scope = 'shared' AND (c.team_id = p_team OR c.user_id = me)));
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_fts_match(tsquery, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_fts_match(tsquery, text, text) TO cems_app;

-- The matching chunks themselves, for BM25 scoring: what the score reads (the lexemes and their weights)
-- comes back with the id, so the caller's query reads no chunk again (a second visit of each match, with
-- the policy's test on it, made a member's lexical search 1.6x the superuser's at 100k memories).
CREATE FUNCTION {{SCHEMA}}.cems_fts_chunks(p_query tsquery, p_scope text DEFAULT 'both', p_team text DEFAULT NULL)
RETURNS TABLE (id uuid, document_id uuid, chunk_index integer, search_vector tsvector)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 200 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    RETURN QUERY
    SELECT c.id, c.document_id, c.chunk_index, c.search_vector FROM {{SCHEMA}}.memory_chunks c
    WHERE c.search_vector @@ p_query
      AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
      AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
           OR (p_scope IN ('shared', 'both') AND c.scope = 'shared' AND (c.team_id = p_team OR c.user_id = me)));
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_fts_chunks(tsquery, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_fts_chunks(tsquery, text, text) TO cems_app;
