-- What an ordinary member could still do on a team server with raw SQL on their own login (issue 27, fourth
-- pass), closed where the database can close it. Names are schema-qualified under search_path =
-- pg_catalog, <schema>, pg_temp, as in 017-023.

-- 1. A pinned shared memory keeps the text its team's admin pinned. A pinned shared memory opens every
--    teammate's session ("pinned by <admin>"); its author could still rewrite it through
--    cems_update_memories, and the new text went out under the admin's name. A change of its text, title,
--    context or category is now for a privileged session or an admin of its team; its author may unpin
--    nothing and rewrite nothing while it is pinned (an admin unpins it first). The refusal is the record:
--    a refused statement leaves no row to audit.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_guard_authorship() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF {{SCHEMA}}.cems_privileged() THEN
        RETURN NEW;
    END IF;
    IF OLD.pinned AND NOT (OLD.team_id = ANY ({{SCHEMA}}.cems_admin_teams()))
       AND (NEW.content, NEW.content_hash, NEW.context, NEW.title, NEW.category)
           IS DISTINCT FROM (OLD.content, OLD.content_hash, OLD.context, OLD.title, OLD.category) THEN
        RAISE EXCEPTION 'memory % is pinned by an admin of team %: only they change its text', OLD.id, OLD.team_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.user_id = {{SCHEMA}}.cems_user() THEN
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

-- 2. A member's shared memory climbs no teammate's session by its counters or its dates. Session profiles
--    order Preferences by priority and access count, Recent context by creation date. A member set
--    priority 2.0 and access_count 2^31 on their shared memories through cems_update_memories (unaudited),
--    stored one created on 2099-12-31, and called cems_record_access on a teammate's shared memory 26
--    times to raise it to priority 2.0. Now:
--    - dates a member writes (created_at, updated_at, last_accessed, last_recalled) are at most now();
--    - on a shared memory a member's cems_update_memories leaves priority, access_count, last_accessed and
--      last_recalled as they are (only cems_record_access and cems_record_recall move them), and
--      archived_at is the stamp trigger's on any memory. Maintenance merging two of a member's own shared
--      memories therefore keeps the kept one's counters rather than adding the other's: a small loss of
--      ranking signal, on shared memories only;
--    - cems_record_access counts a caller's access to someone else's shared memory once a day at most (a
--      row per caller and memory says when it last did); their own memories count every time, as before;
--    - merged_from and a priority changed by hand (not with the access count) are audited on shared
--      memories, with the rest of a change.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_insert_memory(
    p_content text, p_content_hash text, p_team text, p_scope text, p_category text, p_title text,
    p_tags text[], p_source text, p_source_ref text, p_pinned boolean, p_pin_reason text, p_pin_category text,
    p_expires_at timestamptz, p_created_at timestamptz, p_context text)
RETURNS uuid LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me         text := {{SCHEMA}}.cems_user();
    privileged boolean := {{SCHEMA}}.cems_privileged();
    created    timestamptz := coalesce(p_created_at, now());
    new_id     uuid;
BEGIN
    -- NULL-safe: an unknown is a no (coalesce), never a pass.
    IF NOT privileged AND NOT coalesce(
        (p_scope = 'personal' AND p_team IS NULL)
        OR (p_scope = 'shared' AND p_category IS DISTINCT FROM 'rules' AND p_team = ANY ({{SCHEMA}}.cems_my_teams()))
        OR (p_scope = 'shared' AND p_category = 'rules' AND p_team = ANY ({{SCHEMA}}.cems_admin_teams())), false) THEN
        RAISE EXCEPTION 'you may not add memories to team %', p_team USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT privileged AND (octet_length(p_content) > 2097152 OR octet_length(p_title) > 65536
                           OR octet_length(p_context) > 65536 OR cardinality(p_tags) > 1000) THEN
        RAISE EXCEPTION 'a memory holds at most 2 MB of text, 64 kB of title and of context and 1000 tags'
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF NOT privileged AND created > now() THEN
        created := now();  -- a memory is not from the future: "Recent context" would show it first for ever
    END IF;
    INSERT INTO {{SCHEMA}}.memory_documents AS d (
        content, content_hash, user_id, team_id, scope, category, title, tags, source, source_ref, pinned,
        pin_reason, pin_category, expires_at, created_at, updated_at, context)
    VALUES (p_content, p_content_hash, me, p_team, p_scope, p_category, p_title, coalesce(p_tags, '{}'),
            p_source, p_source_ref, coalesce(p_pinned, false), p_pin_reason, p_pin_category, p_expires_at,
            created, created, p_context)
    ON CONFLICT (user_id, scope, coalesce(team_id, ''), content_hash) WHERE NOT archived DO NOTHING
    RETURNING d.id INTO new_id;
    RETURN new_id;
END
$$;

-- As 019's, with the member's assignments bounded as said above (a privileged session's are as given).
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_update_memories(p_ids uuid[], p_set jsonb)
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
    IF NOT privileged AND (octet_length(p_set ->> 'content') > 2097152 OR octet_length(p_set ->> 'title') > 65536
                           OR octet_length(p_set ->> 'context') > 65536
                           OR pg_column_size(p_set -> 'merged_from') > 1048576
                           OR pg_column_size(p_set -> 'tags') > 65536) THEN
        RAISE EXCEPTION 'a memory holds at most 2 MB of text, 64 kB of title, of context and of tags and 1 MB '
            'of merge history' USING ERRCODE = 'program_limit_exceeded';
    END IF;
    -- $3 is privileged: a member's counters of a shared memory stay, their dates stop at now().
    SELECT string_agg(CASE
        WHEN k IN ('priority', 'access_count') THEN
            format('%I = CASE WHEN $3 OR d.scope = ''personal'' THEN r.%I ELSE d.%I END', k, k, k)
        WHEN k IN ('last_accessed', 'last_recalled') THEN
            format('%I = CASE WHEN $3 THEN r.%I WHEN d.scope <> ''personal'' THEN d.%I '
                   'WHEN r.%I > now() THEN now() ELSE r.%I END', k, k, k, k, k)
        WHEN k IN ('created_at', 'updated_at') THEN
            format('%I = CASE WHEN NOT $3 AND r.%I > now() THEN now() ELSE r.%I END', k, k, k)
        WHEN k = 'archived_at' THEN
            format('%I = CASE WHEN $3 THEN r.%I ELSE d.%I END', k, k, k)
        ELSE format('%I = r.%I', k, k) END, ', ') INTO assignments
    FROM jsonb_object_keys(p_set) k;
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

-- When a caller last counted as an access to someone else's shared memory. Members hold no privilege on
-- it; it goes with its memory.
CREATE TABLE {{SCHEMA}}.cems_access_marks (
    user_id   text NOT NULL,
    memory_id uuid NOT NULL REFERENCES {{SCHEMA}}.memory_documents (id) ON DELETE CASCADE,
    at        timestamptz NOT NULL,
    PRIMARY KEY (user_id, memory_id)
);
CREATE INDEX cems_access_marks_memory ON {{SCHEMA}}.cems_access_marks (memory_id);
ALTER TABLE {{SCHEMA}}.cems_access_marks ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.cems_access_marks FROM PUBLIC, cems_app;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_record_access(p_ids uuid[]) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me         text := {{SCHEMA}}.cems_user();
    privileged boolean := {{SCHEMA}}.cems_privileged();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
    counted    uuid[];
BEGIN
    IF coalesce(cardinality(p_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_ids) > 1000 THEN
        RAISE EXCEPTION 'at most 1000 memories at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF privileged THEN
        counted := p_ids;
    ELSE
        -- Own memories count every time; a teammate's shared memory once a day per caller.
        SELECT coalesce(array_agg(v.id), '{}') INTO counted FROM {{SCHEMA}}.memory_documents v
        WHERE v.id = ANY (p_ids) AND v.user_id = me;
        WITH theirs AS (
            SELECT DISTINCT v.id FROM {{SCHEMA}}.memory_documents v
            WHERE v.id = ANY (p_ids) AND v.user_id <> me AND v.scope = 'shared' AND v.team_id = ANY (teams)),
        marked AS (
            INSERT INTO {{SCHEMA}}.cems_access_marks AS m (user_id, memory_id, at)
            SELECT me, t.id, now() FROM theirs t
            ON CONFLICT (user_id, memory_id) DO UPDATE SET at = excluded.at
            WHERE m.at <= now() - interval '1 day'
            RETURNING m.memory_id)
        SELECT counted || coalesce(array_agg(marked.memory_id), '{}') INTO counted FROM marked;
    END IF;
    UPDATE {{SCHEMA}}.memory_documents d
    SET access_count = d.access_count + 1, last_accessed = now(),
        priority = 1.0 + least((d.access_count + 1) * 0.05, 1.0)
    WHERE d.id IN (
        SELECT v.id FROM {{SCHEMA}}.memory_documents v
        WHERE v.id = ANY (counted)
          AND (privileged OR v.user_id = me OR (v.scope = 'shared' AND v.team_id = ANY (teams)))
        FOR NO KEY UPDATE SKIP LOCKED);
END
$$;

-- The audit of a shared memory's changes names merged_from, and a priority changed without its access count
-- (by hand; a search's bump of both is bookkeeping, not a change).
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
            CASE WHEN OLD.merged_from IS DISTINCT FROM NEW.merged_from THEN 'merged_from' END,
            CASE WHEN OLD.priority IS DISTINCT FROM NEW.priority THEN 'priority' END,
            CASE WHEN OLD.access_count IS DISTINCT FROM NEW.access_count THEN 'access_count' END], NULL)));
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
        OR OLD.archived IS DISTINCT FROM NEW.archived OR OLD.merged_into IS DISTINCT FROM NEW.merged_into
        OR OLD.merged_from IS DISTINCT FROM NEW.merged_from
        OR (OLD.priority IS DISTINCT FROM NEW.priority AND OLD.access_count IS NOT DISTINCT FROM NEW.access_count)))
    EXECUTE FUNCTION {{SCHEMA}}.cems_audit_document();

-- 3. Which role is which user is not a member's to list. cems_user_of(role), callable by every member, gave
--    the CEMS user of any role (`SELECT rolname, cems_user_of(rolname) FROM pg_roles` dumped the role map).
--    Only SECURITY DEFINER functions (team membership, quotas) use it, as its owner; `cems admin grant`
--    calls it as the owner.
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_user_of(text) FROM PUBLIC, cems_app;

-- 4. Team names are not confirmed to strangers. cems_team_add and cems_team_remove answered "no team X" to
--    a member who was no admin of X and "only an admin of team X" when X existed. Rights are checked first,
--    in one message whether the team exists or not; only a CEMS administrator, who may list every team,
--    hears that one does not. Members no longer call the check directly (it is the two functions').
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_require_member_admin(p_team text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF NOT ({{SCHEMA}}.cems_is_admin() OR p_team = ANY ({{SCHEMA}}.cems_admin_teams())) THEN
        RAISE EXCEPTION 'only an admin of team % can change its members', left(p_team, 200)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {{SCHEMA}}.cems_teams WHERE name = p_team) THEN
        RAISE EXCEPTION 'no team %', left(p_team, 200) USING ERRCODE = 'no_data_found';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_require_member_admin(text) FROM PUBLIC, cems_app;

-- 5. The memory quota holds against concurrent inserts. The quota trigger counted the caller's live
--    memories in its own snapshot: six transactions that each inserted one past the quota all saw the
--    others' rows uncommitted, passed, and committed. The check now first bumps the user's row here (no
--    member holds any privilege on it, nor may lock it: no advisory lock, which any role could take), so a
--    user's checks run one at a time: a second transaction waits for the first to end, then counts what it
--    committed (a new statement, a new snapshot, under READ COMMITTED; under REPEATABLE READ the bump of a
--    row another transaction changed is a serialization failure, retried by the caller). Only when some
--    quota is set: a server without quotas pays nothing.
CREATE TABLE {{SCHEMA}}.cems_quota_locks (
    user_id text PRIMARY KEY,
    checks  bigint NOT NULL DEFAULT 0
);
ALTER TABLE {{SCHEMA}}.cems_quota_locks ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.cems_quota_locks FROM PUBLIC, cems_app;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_enforce_memory_quota() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me    text;
    usage record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {{SCHEMA}}.cems_quotas WHERE max_memories IS NOT NULL)
       OR {{SCHEMA}}.cems_privileged() THEN
        RETURN NULL;
    END IF;
    me := {{SCHEMA}}.cems_user();
    INSERT INTO {{SCHEMA}}.cems_quota_locks AS l (user_id, checks) VALUES (me, 1)
    ON CONFLICT (user_id) DO UPDATE SET checks = l.checks + 1;
    SELECT * INTO usage FROM {{SCHEMA}}.cems_memory_usage();
    IF usage.max_memories IS NOT NULL AND usage.stored > usage.max_memories THEN
        RAISE EXCEPTION 'memory quota reached: % may store % memories', me, usage.max_memories
            USING ERRCODE = 'configuration_limit_exceeded';
    END IF;
    RETURN NULL;
END
$$;

-- 6. Sizes. The database took a 20 MB memory, any number of 20 MB chunks of it (chunk_index was free),
--    16 MB of backlog per call without end, 1 MB summaries without end. The application's largest memory
--    is CEMS_MAX_MEMORY_BYTES (16 kB by default, at most 1 MB: cems_cli/embedding/limits.py), cut into
--    800-token windows overlapping by 15% (cems_cli/text/chunking.py). A member's writes are now bounded a
--    little above that, with a clear error (program_limit_exceeded, configuration_limit_exceeded):
--    - a memory's text at most 2 MB, title and context 64 kB each (above, in the insert and update
--      functions);
--    - a memory at most 5000 chunks (index 0 to 4999) whose texts add up to at most twice its own plus
--      64 kB (the windows overlap);
--    - per user at most 50000 backlog items, 100000 read positions, capture sessions and summaries, and
--      256 MB of each table's large column (backlog chunks, pending material, session records, summary
--      texts), counted after each write of theirs.
--    How many memories a user stores is the memory quota's to bound (`cems admin quota`).
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
        IF p_index IS NULL OR p_index NOT BETWEEN 0 AND 4999
           OR (SELECT count(*) >= 5000 OR coalesce(sum(octet_length(c.content)), 0) + octet_length(p_content)
                      > 2 * octet_length(doc.content) + 65536
               FROM {{SCHEMA}}.memory_chunks c WHERE c.document_id = p_document) THEN
            RAISE EXCEPTION 'a memory has at most 5000 chunks, numbered 0 to 4999, of twice its text at most'
                USING ERRCODE = 'program_limit_exceeded';
        END IF;
    END IF;
    INSERT INTO {{SCHEMA}}.memory_chunks (document_id, chunk_index, content, embedding, context)
    VALUES (p_document, p_index, p_content, p_embedding, p_context);
END
$$;

-- After a member's write to a bookkeeping table: their rows there (TG_ARGV[0] at most) and the stored size
-- of its large column (TG_ARGV[1], TG_ARGV[2] bytes at most). Members write only their own rows.
CREATE FUNCTION {{SCHEMA}}.cems_enforce_bookkeeping_caps() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me    text;
    rows  bigint;
    bytes bigint;
BEGIN
    IF {{SCHEMA}}.cems_privileged() THEN
        RETURN NULL;
    END IF;
    me := {{SCHEMA}}.cems_user();
    EXECUTE format('SELECT count(*), coalesce(sum(pg_column_size(t.%I)), 0) FROM %I.%I t WHERE t.user_id = $1',
                   TG_ARGV[1], TG_TABLE_SCHEMA, TG_TABLE_NAME)
        INTO rows, bytes USING me;
    IF rows > TG_ARGV[0]::bigint OR bytes > TG_ARGV[2]::bigint THEN
        RAISE EXCEPTION '% holds at most % rows and % MB of % per user: % has % rows and % MB',
            TG_TABLE_NAME, TG_ARGV[0], TG_ARGV[2]::bigint / 1048576, TG_ARGV[1], me, rows, bytes / 1048576
            USING ERRCODE = 'configuration_limit_exceeded';
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_enforce_bookkeeping_caps() FROM PUBLIC;
CREATE TRIGGER observer_backlog_caps AFTER INSERT OR UPDATE ON {{SCHEMA}}.observer_backlog
    FOR EACH STATEMENT EXECUTE FUNCTION {{SCHEMA}}.cems_enforce_bookkeeping_caps('50000', 'chunk', '268435456');
CREATE TRIGGER observer_files_caps AFTER INSERT OR UPDATE ON {{SCHEMA}}.observer_files
    FOR EACH STATEMENT EXECUTE FUNCTION {{SCHEMA}}.cems_enforce_bookkeeping_caps('100000', 'pending', '268435456');
CREATE TRIGGER capture_sessions_caps AFTER INSERT OR UPDATE ON {{SCHEMA}}.capture_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION {{SCHEMA}}.cems_enforce_bookkeeping_caps('100000', 'record', '268435456');
CREATE TRIGGER memory_summaries_caps AFTER INSERT OR UPDATE ON {{SCHEMA}}.memory_summaries
    FOR EACH STATEMENT EXECUTE FUNCTION {{SCHEMA}}.cems_enforce_bookkeeping_caps('100000', 'content', '268435456');

-- Large objects are the database's, outside any CEMS table: any role may create them (lo_from_bytea,
-- lo_create, lo_put …) by default, 20 MB a call. Only a superuser (or pg_catalog's owner) may revoke that
-- from PUBLIC; under anyone else this is skipped, and the server's administrator should do it by hand.
DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['lo_from_bytea(oid, bytea)', 'lo_create(oid)', 'lo_creat(integer)',
                              'lo_put(oid, bigint, bytea)', 'lowrite(integer, bytea)', 'lo_import(text)',
                              'lo_import(text, oid)']
    LOOP
        BEGIN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION pg_catalog.%s FROM PUBLIC', fn);
        EXCEPTION WHEN insufficient_privilege OR undefined_function THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- Last: every SECURITY DEFINER function of the schema (those above included) runs with messages below
-- WARNING kept from its caller and the planner's debug output off. A member who SET client_min_messages =
-- log and debug_print_plan = on read the plan trees of the statements inside the functions, and with them
-- row estimates the planner takes from pg_statistic over every user's rows (how many chunks hold a word,
-- a tag, a team). A caller cannot override a function's SET clause. The log_*_stats and log_statement
-- settings that would also print plans are a superuser's to set.
DO $$
DECLARE
    fn text;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure::text FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef
                AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass
                                AND e.objid = p.oid AND e.deptype = 'e')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET client_min_messages = warning', fn);
        EXECUTE format('ALTER FUNCTION %s SET debug_print_plan = off', fn);
        EXECUTE format('ALTER FUNCTION %s SET debug_print_parse = off', fn);
        EXECUTE format('ALTER FUNCTION %s SET debug_print_rewritten = off', fn);
    END LOOP;
END
$$;
