-- A member can no longer lock the tables every search reads (issue 27: `LOCK TABLE memory_documents IN
-- ACCESS EXCLUSIVE MODE` in an open transaction held every teammate's search for as long as it lasted).
--
-- PostgreSQL lets a role take the locks that block readers (SHARE and above) when it holds UPDATE, DELETE
-- or TRUNCATE on the whole table; column privileges do not count. So application roles keep UPDATE on the
-- columns of memory_documents (their own rows, as the policies and guards say) but no table-wide UPDATE,
-- and delete memories and chunks through two SECURITY DEFINER functions that apply the DELETE policies'
-- test. memory_chunks and rules are written by INSERT only (chunks are replaced by deleting them through
-- the function; a rule's spec goes with its memory). What a member can still lock (their INSERT allows
-- ROW EXCLUSIVE) blocks no reader; the rest is bounded by the roles' lock_timeout (013).
--
-- A later migration that adds a column to memory_documents grants UPDATE on it to cems_app if members may
-- write it.
REVOKE UPDATE, DELETE, TRUNCATE ON {{SCHEMA}}.memory_documents, {{SCHEMA}}.memory_chunks FROM cems_app;
REVOKE DELETE, TRUNCATE ON {{SCHEMA}}.rules FROM cems_app;
DO $$
DECLARE
    columns text;
BEGIN
    SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO columns
    FROM information_schema.columns c
    WHERE c.table_schema = current_schema() AND c.table_name = 'memory_documents'
      AND c.is_generated = 'NEVER' AND c.is_identity = 'NO' AND c.column_name NOT IN ('id', 'user_id');
    EXECUTE format('GRANT UPDATE (%s) ON %I.memory_documents TO cems_app', columns, current_schema());
END
$$;

-- Delete these memories where the caller may (their own personal ones; a shared one when they are an admin
-- of its team, or its author and it is no rule; anything for a privileged session). Returns what went.
CREATE FUNCTION {{SCHEMA}}.cems_delete_memories(p_ids uuid[]) RETURNS TABLE (id uuid, category text)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    DELETE FROM {{SCHEMA}}.memory_documents d
    WHERE d.id = ANY (p_ids)
      AND ((SELECT {{SCHEMA}}.cems_privileged())
           OR (d.scope = 'personal' AND d.user_id = (SELECT {{SCHEMA}}.cems_user()))
           OR (d.scope = 'shared'
               AND (d.team_id = ANY ((SELECT {{SCHEMA}}.cems_admin_teams())::text[])
                    OR (d.user_id = (SELECT {{SCHEMA}}.cems_user()) AND d.category <> 'rules'))))
    RETURNING d.id, d.category
$$;

-- Delete the chunks of one of the caller's memories (before its new text's chunks go in).
CREATE FUNCTION {{SCHEMA}}.cems_delete_chunks(p_document uuid) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    WITH gone AS (
        DELETE FROM {{SCHEMA}}.memory_chunks c
        WHERE c.document_id = p_document
          AND ((SELECT {{SCHEMA}}.cems_privileged()) OR c.user_id = (SELECT {{SCHEMA}}.cems_user()))
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_delete_memories(uuid[]), {{SCHEMA}}.cems_delete_chunks(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_delete_memories(uuid[]), {{SCHEMA}}.cems_delete_chunks(uuid) TO cems_app;

-- A search bumps the counters of what it found; a row a member holds locked (their own shared memory,
-- SELECT … FOR UPDATE in an open transaction) is skipped rather than waited for, like the recall stamp.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_record_access(p_ids uuid[]) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me text := {{SCHEMA}}.cems_user();
    privileged boolean := {{SCHEMA}}.cems_privileged();
BEGIN
    IF coalesce(cardinality(p_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_ids) > 1000 THEN
        RAISE EXCEPTION 'at most 1000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE {{SCHEMA}}.memory_documents d
    SET access_count = d.access_count + 1, last_accessed = now(),
        priority = 1.0 + least((d.access_count + 1) * 0.05, 1.0)
    WHERE d.id IN (
        SELECT v.id FROM {{SCHEMA}}.memory_documents v
        WHERE v.id = ANY (p_ids)
          AND (privileged OR v.user_id = me OR (v.scope = 'shared' AND v.team_id = ANY ({{SCHEMA}}.cems_my_teams())))
        FOR NO KEY UPDATE SKIP LOCKED);
END
$$;
