-- Members write a teammate's shared memory through functions only (issue 27, item 1, first step).
--
-- 009 let every member UPDATE any shared row of their teams, because every search bumps the access counters
-- of what it finds and prompt recall stamps last_recalled. That one grant also let a member rewrite a
-- teammate's text, provenance and dates. The two bookkeeping writes are now SECURITY DEFINER functions that
-- change those columns and nothing else, on memories the caller can read; the UPDATE policy is narrowed to
-- what a person may change by hand: their own memories, and, for a team's admins, its shared memories
-- (forget, restore, pin; the guard trigger keeps the rest for their authors).

-- A search returned these memories: access count, last access and priority (memory-model formula). Ids the
-- caller cannot read are skipped, not refused: a search's results are the caller's to name.
CREATE FUNCTION {{SCHEMA}}.cems_record_access(p_ids uuid[]) RETURNS void LANGUAGE plpgsql
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
    WHERE d.id = ANY (p_ids)
      AND (privileged OR d.user_id = me
           OR (d.scope = 'shared' AND d.team_id = ANY ({{SCHEMA}}.cems_my_teams())));
END
$$;

-- Prompt recall injected these memories: last_recalled only. Rows another transaction holds are skipped
-- (the prompt hook has a time budget; see store/memories.record_recall).
CREATE FUNCTION {{SCHEMA}}.cems_record_recall(p_ids uuid[]) RETURNS void LANGUAGE plpgsql
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
    UPDATE {{SCHEMA}}.memory_documents SET last_recalled = now() WHERE id IN (
        SELECT d.id FROM {{SCHEMA}}.memory_documents d
        WHERE d.id = ANY (p_ids)
          AND (privileged OR d.user_id = me
               OR (d.scope = 'shared' AND d.team_id = ANY ({{SCHEMA}}.cems_my_teams())))
        FOR NO KEY UPDATE SKIP LOCKED);
END
$$;

REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_record_access(uuid[]), {{SCHEMA}}.cems_record_recall(uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_record_access(uuid[]), {{SCHEMA}}.cems_record_recall(uuid[]) TO cems_app;

-- By hand: your own memories (personal, and those you shared, rules aside), and a team admin's its shared
-- memories and rules. A plain member no longer writes a teammate's row at all.
DROP POLICY documents_update ON {{SCHEMA}}.memory_documents;
CREATE POLICY documents_update ON {{SCHEMA}}.memory_documents FOR UPDATE
    USING ((user_id = (SELECT {{SCHEMA}}.cems_user()) AND (scope = 'personal' OR category <> 'rules'))
           OR (scope = 'shared' AND team_id = ANY ((SELECT {{SCHEMA}}.cems_admin_teams())::text[])))
    WITH CHECK ((user_id = (SELECT {{SCHEMA}}.cems_user()) AND (scope = 'personal' OR category <> 'rules'))
           OR (scope = 'shared' AND team_id = ANY ((SELECT {{SCHEMA}}.cems_admin_teams())::text[])));

-- A team admin changes a teammate's shared memory only to forget, restore or pin it: its text, provenance
-- and dates stay its author's (bookkeeping columns aside, which the functions above write as the owner).
CREATE FUNCTION {{SCHEMA}}.cems_guard_authorship() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF {{SCHEMA}}.cems_privileged() OR OLD.user_id = {{SCHEMA}}.cems_user() THEN
        RETURN NEW;
    END IF;
    IF (NEW.content, NEW.content_hash, NEW.context, NEW.title, NEW.tags, NEW.category, NEW.source,
        NEW.source_ref, NEW.created_at, NEW.expires_at, NEW.merged_into, NEW.merged_from)
       IS DISTINCT FROM
       (OLD.content, OLD.content_hash, OLD.context, OLD.title, OLD.tags, OLD.category, OLD.source,
        OLD.source_ref, OLD.created_at, OLD.expires_at, OLD.merged_into, OLD.merged_from) THEN
        RAISE EXCEPTION 'memory % is %''s: only its author changes its text, provenance or dates', OLD.id, OLD.user_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_guard_authorship() FROM PUBLIC;
CREATE TRIGGER memory_documents_guard_authorship BEFORE UPDATE ON {{SCHEMA}}.memory_documents
    FOR EACH ROW WHEN (OLD.scope = 'shared') EXECUTE FUNCTION {{SCHEMA}}.cems_guard_authorship();
