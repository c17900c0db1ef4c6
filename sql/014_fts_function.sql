-- Full-text matching for members through a function (issue 27, item 1: reads, first step).
--
-- Since 012 the full-text match is not LEAKPROOF, so under row-level security `search_vector @@ q` waits for
-- the policy and cannot drive the GIN index: a member's lexical search read every chunk they can see (25 ms
-- against 16 ms at 10k memories, and linear in the store). This function runs as its owner, where the
-- index serves the match, and returns only the chunks the caller may read (their own, and the shared ones
-- of their teams): the policy's test, written out. A member sees its result, never its plan, so nothing of
-- the rows it passed over shows.
CREATE FUNCTION {{SCHEMA}}.cems_fts_match(p_query tsquery) RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 200 AS $$
    SELECT c.id FROM {{SCHEMA}}.memory_chunks c
    WHERE c.search_vector @@ p_query
      AND (c.user_id = {{SCHEMA}}.cems_user()
           OR (c.scope = 'shared' AND c.team_id = ANY ({{SCHEMA}}.cems_my_teams())))
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_fts_match(tsquery) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_fts_match(tsquery) TO cems_app;
