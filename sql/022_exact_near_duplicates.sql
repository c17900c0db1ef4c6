-- Near duplicates of a small store are found exactly, not through the HNSW index.
--
-- The index is approximate, and on a shared server most of it is other users' vectors: a probe could end
-- before it reached the caller's own copy (many users holding identical texts crowd the graph), and a merge
-- was missed. Up to 1000 mergeable memories, every pair of the caller's own is compared instead; measured
-- here at 0.4 s for 1000 unpinned memories of one category (1.8 s for 2000, 11 s for 4000: n², so larger stores keep
-- the index). cems_cli/store/lifecycle.py runs the same two queries for the tables' owner.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_near_duplicates(p_probes uuid[], p_neighbours integer,
                                                           p_threshold double precision)
RETURNS TABLE (probe uuid, document_id uuid, similarity double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me text := {{SCHEMA}}.cems_user();
BEGIN
    IF cardinality(p_probes) > 10000 OR p_neighbours IS NULL OR p_neighbours < 1 OR p_neighbours > 1000 THEN
        RAISE EXCEPTION 'at most 10000 probes and 1 to 1000 neighbours' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT count(*) FROM {{SCHEMA}}.memory_documents o
        WHERE o.user_id = me AND NOT o.archived AND (o.expires_at IS NULL OR o.expires_at > now())
          AND o.category <> 'rules' AND o.context IS NULL AND NOT o.pinned) <= 1000 THEN
        RETURN QUERY
        WITH own AS MATERIALIZED (
            SELECT d.id, d.scope, coalesce(d.team_id, '') AS team, d.category,
                   coalesce(substring(d.source_ref from '^project:[^:]*'), '') AS project, c.embedding
            FROM {{SCHEMA}}.memory_documents d
            JOIN {{SCHEMA}}.memory_chunks c ON c.document_id = d.id AND c.chunk_index = 0
            WHERE d.user_id = me AND NOT d.archived AND (d.expires_at IS NULL OR d.expires_at > now())
              AND d.category <> 'rules' AND d.context IS NULL)
        SELECT m.id, n.id, n.similarity FROM own m CROSS JOIN LATERAL (
            SELECT o.id, 1 - (o.embedding <=> m.embedding) AS similarity FROM own o
            WHERE o.id <> m.id AND o.scope = m.scope AND o.team = m.team AND o.category = m.category
              AND o.project = m.project
            ORDER BY o.embedding <=> m.embedding LIMIT p_neighbours) n
        WHERE m.id = ANY (p_probes) AND n.similarity >= p_threshold;
        RETURN;
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

-- CREATE OR REPLACE set the search_path anew: the vector extension's own schema again, as 019 did.
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
