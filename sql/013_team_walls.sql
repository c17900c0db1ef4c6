-- Team server, second pass: what a member could still do with raw SQL through 009 (issue 27), closed.
-- {{SCHEMA}} is the schema CEMS lives in, quoted, put in by the migration runner: the functions below name
-- every table with it, and run with search_path = pg_catalog, <schema>, pg_temp, so neither a temporary
-- table nor an object in another schema can stand in for one of ours. pg_temp is named last on purpose:
-- left out, it would be searched first.

-- The full-text match is no longer LEAKPROOF. 009 marked it so that `search_vector @@ q` could drive the GIN
-- index under row-level security; it also let the match run on rows before the policy hid them, and
-- EXPLAIN ANALYZE showed whether a hidden row matched. Only a superuser can undo the marking (it is
-- pg_catalog's); under anyone else `cems admin init` says that a superuser must.
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
       AND (SELECT proleakproof FROM pg_proc WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure)
    THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF;
    END IF;
END
$$;

-- Members create nothing: no temporary table (one named memory_documents stood in for ours in the chunk
-- trigger), no object in our schema. PUBLIC holds TEMPORARY on every database by default.
DO $$
BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, cems_app', current_database());
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC, cems_app', current_schema());
END
$$;

-- A rule's spec is never edited in place (CEMS removes and adds): an UPDATE left the memory's text showing
-- the old pattern, unaudited.
REVOKE UPDATE ON {{SCHEMA}}.rules FROM cems_app;

-- Settings that choose where prompts or memories are sent are each user's own, never a team's: a team admin
-- could otherwise post every teammate's prompts to an endpoint on the teammate's machine. The same list is
-- cems_cli/live_settings.py's USER_ONLY_KEYS.
DELETE FROM {{SCHEMA}}.stored_settings
WHERE owner_kind = 'team' AND key IN ('rerank_backend', 'llm_backend', 'embedding_backend');
ALTER TABLE {{SCHEMA}}.stored_settings ADD CONSTRAINT stored_settings_user_only_keys
    CHECK (owner_kind = 'user' OR key NOT IN ('rerank_backend', 'llm_backend', 'embedding_backend'));

-- Who pinned a memory: a pinned shared memory opens every teammate's session, and the profile says whose
-- guideline it is. Set by the guard below, never by the caller (a privileged session names the user it acts
-- for, else the owner).
ALTER TABLE {{SCHEMA}}.memory_documents ADD COLUMN pinned_by text;
UPDATE {{SCHEMA}}.memory_documents SET pinned_by = user_id WHERE pinned;

-- Triggers --------------------------------------------------------------------------------------------------
-- Every trigger runs as its owner with a fixed search_path and schema-qualified names: a trigger that runs
-- as the caller resolves names through the caller's search_path (and temporary tables).

-- A chunk takes its memory's owner, team and scope; an application role adds chunks to its own memories only.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_chunk_owner() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    SELECT d.user_id, d.team_id, d.scope INTO NEW.user_id, NEW.team_id, NEW.scope
    FROM {{SCHEMA}}.memory_documents d WHERE d.id = NEW.document_id;
    IF NOT FOUND OR (NEW.user_id IS DISTINCT FROM {{SCHEMA}}.cems_user() AND NOT {{SCHEMA}}.cems_privileged()) THEN
        RAISE EXCEPTION 'memory % does not exist or is not yours', NEW.document_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END
$$;

-- Owner, team and scope are fixed; forgetting a shared memory is for its author or a team admin; pinning a
-- shared memory (it opens every teammate's session) is for the team's admins only. 009's version asked
-- row_security_active(), which in a SECURITY DEFINER function answers for the owner: identity comes from
-- session_user (cems_privileged) instead.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_guard_document() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    privileged  boolean := {{SCHEMA}}.cems_privileged();
    pin_changed boolean := true;  -- an insert (this trigger fires on inserts of pinned rows only)
BEGIN
    IF TG_OP = 'UPDATE' AND NOT privileged THEN
        IF NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.team_id IS DISTINCT FROM OLD.team_id
           OR NEW.scope IS DISTINCT FROM OLD.scope THEN
            RAISE EXCEPTION 'the owner, team and scope of a memory cannot change' USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.archived IS DISTINCT FROM OLD.archived AND OLD.user_id <> {{SCHEMA}}.cems_user()
           AND NOT (OLD.scope = 'shared' AND OLD.team_id = ANY ({{SCHEMA}}.cems_admin_teams())) THEN
            RAISE EXCEPTION 'only its author or an admin of team % can forget or restore memory %', OLD.team_id, OLD.id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        pin_changed := (NEW.pinned, NEW.pin_reason, NEW.pin_category)
                       IS DISTINCT FROM (OLD.pinned, OLD.pin_reason, OLD.pin_category);
        IF NOT pin_changed AND NOT privileged THEN
            NEW.pinned_by := OLD.pinned_by;  -- who pinned is the guard's to say, never the writer's
        END IF;
    END IF;
    IF pin_changed THEN
        IF NOT privileged AND NEW.scope = 'shared' AND NOT (NEW.team_id = ANY ({{SCHEMA}}.cems_admin_teams())) THEN
            RAISE EXCEPTION 'only an admin of team % can pin its shared memories', NEW.team_id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.pinned_by := CASE WHEN NOT NEW.pinned THEN NULL
                              WHEN privileged THEN coalesce(NEW.pinned_by, NEW.user_id)
                              ELSE {{SCHEMA}}.cems_user() END;
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER memory_documents_guard ON {{SCHEMA}}.memory_documents;
CREATE TRIGGER memory_documents_guard
    BEFORE UPDATE OF user_id, team_id, scope, archived, pinned, pin_reason, pin_category, pinned_by
    ON {{SCHEMA}}.memory_documents
    FOR EACH ROW EXECUTE FUNCTION {{SCHEMA}}.cems_guard_document();
CREATE TRIGGER memory_documents_guard_insert BEFORE INSERT ON {{SCHEMA}}.memory_documents
    FOR EACH ROW WHEN (NEW.pinned) EXECUTE FUNCTION {{SCHEMA}}.cems_guard_document();

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_chunks_follow() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    UPDATE {{SCHEMA}}.memory_chunks SET user_id = NEW.user_id, team_id = NEW.team_id, scope = NEW.scope
    WHERE document_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.stored_settings_changed() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    UPDATE {{SCHEMA}}.stored_settings_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_summaries_forget() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    DELETE FROM {{SCHEMA}}.memory_summaries WHERE members @> ARRAY[OLD.id];
    RETURN NULL;
END
$$;

-- The memory quota, checked after an insert and after a restore (archived rows inserted, then restored,
-- went round it). A restore is rare: a row trigger, only on rows that come back.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_enforce_memory_quota() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    usage record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {{SCHEMA}}.cems_quotas WHERE max_memories IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO usage FROM {{SCHEMA}}.cems_memory_usage();
    IF usage.max_memories IS NOT NULL AND usage.stored > usage.max_memories THEN
        RAISE EXCEPTION 'memory quota reached: % may store % memories', {{SCHEMA}}.cems_user(), usage.max_memories
            USING ERRCODE = 'configuration_limit_exceeded';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_documents_quota_restore AFTER UPDATE OF archived ON {{SCHEMA}}.memory_documents
    FOR EACH ROW WHEN (OLD.archived AND NOT NEW.archived) EXECUTE FUNCTION {{SCHEMA}}.cems_enforce_memory_quota();

-- Audit ------------------------------------------------------------------------------------------------------
-- Rows are bounded (new rows; old ones are as they are) and a query hash is a SHA-256 in hex, nothing else.
ALTER TABLE {{SCHEMA}}.cems_audit
    ADD CONSTRAINT cems_audit_bounded CHECK (
        pg_column_size(detail) <= 16384 AND length(actor) <= 200 AND length(db_role) <= 200
        AND length(action) <= 40 AND coalesce(length(team_id), 0) <= 200 AND coalesce(length(author), 0) <= 200
        AND coalesce(length(category), 0) <= 40) NOT VALID,
    ADD CONSTRAINT cems_audit_query_hash CHECK (query_hash IS NULL OR query_hash ~ '^[0-9a-f]{64}$') NOT VALID;

-- Every change of a shared memory's text, provenance, dates, category, pinning or state is one row, naming
-- what changed (never the text). Access counters and recall stamps are not changes.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_audit_document() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    target  {{SCHEMA}}.memory_documents;
    act     text;
    detail  jsonb;
BEGIN
    IF TG_OP = 'DELETE' THEN
        target := OLD;
        act := CASE WHEN OLD.category = 'rules' THEN 'rule_remove' ELSE 'purge' END;
    ELSIF TG_OP = 'INSERT' THEN
        target := NEW;
        act := CASE WHEN NEW.category = 'rules' THEN 'rule_add' ELSE 'share' END;
    ELSE
        target := NEW;
        act := CASE
            WHEN NEW.archived AND NOT OLD.archived THEN CASE WHEN NEW.merged_into IS NULL THEN 'forget' ELSE 'merge' END
            WHEN OLD.archived AND NOT NEW.archived THEN 'restore'
            WHEN NEW.pinned AND NOT OLD.pinned THEN 'pin'
            WHEN OLD.pinned AND NOT NEW.pinned THEN 'unpin'
            ELSE 'change' END;
    END IF;
    detail := jsonb_build_object('content_hash', target.content_hash);
    IF TG_OP = 'UPDATE' THEN
        detail := detail || jsonb_build_object('changed', to_jsonb(array_remove(ARRAY[
            CASE WHEN OLD.content IS DISTINCT FROM NEW.content THEN 'content' END,
            CASE WHEN OLD.content_hash IS DISTINCT FROM NEW.content_hash THEN 'content_hash' END,
            CASE WHEN OLD.context IS DISTINCT FROM NEW.context THEN 'context' END,
            CASE WHEN OLD.title IS DISTINCT FROM NEW.title THEN 'title' END,
            CASE WHEN OLD.tags IS DISTINCT FROM NEW.tags THEN 'tags' END,
            CASE WHEN OLD.category IS DISTINCT FROM NEW.category THEN 'category' END,
            CASE WHEN OLD.source IS DISTINCT FROM NEW.source THEN 'source' END,
            CASE WHEN OLD.source_ref IS DISTINCT FROM NEW.source_ref THEN 'source_ref' END,
            CASE WHEN OLD.created_at IS DISTINCT FROM NEW.created_at THEN 'created_at' END,
            CASE WHEN OLD.updated_at IS DISTINCT FROM NEW.updated_at THEN 'updated_at' END,
            CASE WHEN OLD.expires_at IS DISTINCT FROM NEW.expires_at THEN 'expires_at' END,
            CASE WHEN OLD.pinned IS DISTINCT FROM NEW.pinned THEN 'pinned' END,
            CASE WHEN OLD.pin_reason IS DISTINCT FROM NEW.pin_reason THEN 'pin_reason' END,
            CASE WHEN OLD.pin_category IS DISTINCT FROM NEW.pin_category THEN 'pin_category' END,
            CASE WHEN OLD.archived IS DISTINCT FROM NEW.archived THEN 'archived' END,
            CASE WHEN OLD.merged_into IS DISTINCT FROM NEW.merged_into THEN 'merged_into' END,
            CASE WHEN OLD.priority IS DISTINCT FROM NEW.priority THEN 'priority' END], NULL)));
    END IF;
    INSERT INTO {{SCHEMA}}.cems_audit (actor, action, team_id, memory_id, author, category, detail)
    VALUES (CASE WHEN {{SCHEMA}}.cems_privileged() THEN target.user_id ELSE {{SCHEMA}}.cems_user() END, act,
            target.team_id, target.id, target.user_id, target.category, detail);
    RETURN NULL;
END
$$;
DROP TRIGGER memory_documents_audit_update ON {{SCHEMA}}.memory_documents;
CREATE TRIGGER memory_documents_audit_update AFTER UPDATE ON {{SCHEMA}}.memory_documents
    FOR EACH ROW WHEN (NEW.scope = 'shared' AND (
        OLD.content IS DISTINCT FROM NEW.content OR OLD.content_hash IS DISTINCT FROM NEW.content_hash
        OR OLD.context IS DISTINCT FROM NEW.context OR OLD.title IS DISTINCT FROM NEW.title
        OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.category IS DISTINCT FROM NEW.category
        OR OLD.source IS DISTINCT FROM NEW.source OR OLD.source_ref IS DISTINCT FROM NEW.source_ref
        OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.updated_at IS DISTINCT FROM NEW.updated_at
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.pinned IS DISTINCT FROM NEW.pinned
        OR OLD.pin_reason IS DISTINCT FROM NEW.pin_reason OR OLD.pin_category IS DISTINCT FROM NEW.pin_category
        OR OLD.archived IS DISTINCT FROM NEW.archived OR OLD.merged_into IS DISTINCT FROM NEW.merged_into))
    EXECUTE FUNCTION {{SCHEMA}}.cems_audit_document();

-- A rule's spec changed in place (only a privileged session can now): on the record, whatever its scope.
CREATE FUNCTION {{SCHEMA}}.cems_audit_rule() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    d {{SCHEMA}}.memory_documents;
BEGIN
    SELECT * INTO d FROM {{SCHEMA}}.memory_documents WHERE id = NEW.document_id;
    INSERT INTO {{SCHEMA}}.cems_audit (actor, action, team_id, memory_id, author, category, detail)
    VALUES (CASE WHEN {{SCHEMA}}.cems_privileged() THEN coalesce(d.user_id, '?') ELSE {{SCHEMA}}.cems_user() END,
            'rule_change', d.team_id, NEW.document_id, d.user_id, 'rules',
            jsonb_build_object('changed', to_jsonb(array_remove(ARRAY[
                CASE WHEN OLD.tool IS DISTINCT FROM NEW.tool THEN 'tool' END,
                CASE WHEN OLD.pattern IS DISTINCT FROM NEW.pattern THEN 'pattern' END,
                CASE WHEN OLD.field IS DISTINCT FROM NEW.field THEN 'field' END,
                CASE WHEN OLD.action IS DISTINCT FROM NEW.action THEN 'action' END,
                CASE WHEN OLD.reason IS DISTINCT FROM NEW.reason THEN 'reason' END,
                CASE WHEN OLD.is_regex IS DISTINCT FROM NEW.is_regex THEN 'is_regex' END,
                CASE WHEN OLD.project IS DISTINCT FROM NEW.project THEN 'project' END,
                CASE WHEN OLD.document_id IS DISTINCT FROM NEW.document_id THEN 'document_id' END], NULL))));
    RETURN NULL;
END
$$;
CREATE TRIGGER rules_audit_update AFTER UPDATE ON {{SCHEMA}}.rules
    FOR EACH ROW EXECUTE FUNCTION {{SCHEMA}}.cems_audit_rule();

-- A search over a team's memories: the hash is a SHA-256, the results a bounded list of that team's shared
-- memories (ids of anything else are dropped), the count a count. An 8 MB array or any text as a "hash"
-- is refused.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_audit_search(p_action text, p_team text, p_query_hash text,
                                                      p_results integer, p_shared uuid[], p_actor text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    privileged boolean := {{SCHEMA}}.cems_privileged();
    kept       uuid[];
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('search', 'recall') THEN
        RAISE EXCEPTION 'not a search action: %', left(p_action, 40) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_query_hash IS NULL OR p_query_hash !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION 'a query hash is a SHA-256 in 64 hexadecimal digits' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_results IS NULL OR p_results NOT BETWEEN 0 AND 10000 THEN
        RAISE EXCEPTION 'a search has 0 to 10000 results' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(cardinality(p_shared), 0) > 1000 THEN
        RAISE EXCEPTION 'at most 1000 shared results are recorded' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT privileged AND p_team IS NOT NULL AND NOT (p_team = ANY ({{SCHEMA}}.cems_my_teams())) THEN
        RAISE EXCEPTION 'not a member of team %', left(p_team, 200) USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT coalesce(array_agg(s.id ORDER BY s.n), '{}') INTO kept
    FROM unnest(coalesce(p_shared, '{}'::uuid[])) WITH ORDINALITY AS s (id, n)
    WHERE EXISTS (SELECT 1 FROM {{SCHEMA}}.memory_documents d
                  WHERE d.id = s.id AND d.scope = 'shared' AND d.team_id = p_team);
    INSERT INTO {{SCHEMA}}.cems_audit (actor, action, team_id, query_hash, detail)
    VALUES (CASE WHEN privileged THEN left(coalesce(p_actor, {{SCHEMA}}.cems_user()), 200) ELSE {{SCHEMA}}.cems_user() END,
            p_action, p_team, p_query_hash, jsonb_build_object('results', p_results, 'shared', to_jsonb(kept)));
END
$$;

-- The trail is kept until a CEMS administrator prunes what is older than a date; the pruning is recorded.
CREATE FUNCTION {{SCHEMA}}.cems_audit_prune(p_before timestamptz) RETURNS bigint LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF NOT {{SCHEMA}}.cems_is_admin() THEN
        RAISE EXCEPTION 'only a CEMS administrator (a member of cems_admin) can prune the audit trail'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_before IS NULL THEN
        RAISE EXCEPTION 'prune the audit trail before which time?' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM {{SCHEMA}}.cems_audit WHERE at < p_before;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO {{SCHEMA}}.cems_audit (actor, action, detail)
    VALUES ({{SCHEMA}}.cems_user(), 'audit_prune', jsonb_build_object('before', p_before, 'deleted', n));
    RETURN n;
END
$$;

-- Every trigger function of the schema runs as its owner (those not rewritten above, such as archived_at's
-- stamp and the viewer's notifications, touch no table of ours, but no trigger should run with the caller's
-- search_path); every SECURITY DEFINER function (those above, 009's, 011's, 012's) gets a fixed search_path
-- and is callable by cems_app only.
DO $$
DECLARE
    fn text;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure::text FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace AND p.prorettype = 'trigger'::regtype
                AND NOT p.prosecdef
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', fn);
    END LOOP;
END
$$;
DO $$
DECLARE
    fn text;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure::text FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', fn, current_schema());
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO cems_app', fn);
    END LOOP;
END
$$;
