-- Teams on a shared PostgreSQL: identity from the database, isolation by row-level security, an audit trail,
-- quotas. On the embedded store CEMS connects as the cluster's superuser, which row-level security never
-- applies to: nothing here changes what a single user sees there (CEMS_USER still names them).
--
-- Who is who. A person connects with a login role of their own, a member of the group role `cems_app`
-- (no superuser, no BYPASSRLS). cems_user() is their CEMS user: the admin's mapping for the role
-- (cems_role_map), else the role's name. It is taken from session_user, the role that logged in: SET ROLE
-- changes privileges, not identity, and the SECURITY DEFINER functions below (which run as their owner,
-- where current_user is the owner) see the same identity as the policies. Teams and their admins are rows
-- (cems_teams, cems_team_members) that only SECURITY DEFINER functions write, each checking its caller.
--
-- Privileged sessions (superuser or BYPASSRLS: the embedded store, an administrator) bypass every policy.
-- Policies read the caller's user and teams through `(SELECT f())`: an InitPlan, evaluated once per
-- statement rather than once per row.

-- Roles ---------------------------------------------------------------------------------------------------
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cems_app') THEN
        CREATE ROLE cems_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    -- Members may create teams, manage any team's members, set quotas and read the whole audit trail.
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cems_admin') THEN
        CREATE ROLE cems_admin NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE EXCEPTION 'creating the roles cems_app and cems_admin needs CREATEROLE: run `cems admin init` as the database administrator'
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Identity and teams ----------------------------------------------------------------------------------------
CREATE TABLE cems_role_map (
    role_name  text PRIMARY KEY,
    user_id    text NOT NULL CHECK (user_id <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cems_teams (
    name       text PRIMARY KEY CHECK (btrim(name) <> '' AND length(name) <= 200),
    created_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cems_team_members (
    team_id  text NOT NULL REFERENCES cems_teams (name) ON DELETE CASCADE,
    user_id  text NOT NULL,
    is_admin boolean NOT NULL DEFAULT false,
    added_by text NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX cems_team_members_user ON cems_team_members (user_id);

CREATE FUNCTION cems_user() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce((SELECT m.user_id FROM cems_role_map m WHERE m.role_name = session_user), session_user::text)
$$;

-- Superuser or BYPASSRLS: row-level security does not apply to the session.
CREATE FUNCTION cems_privileged() RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce((SELECT r.rolsuper OR r.rolbypassrls FROM pg_roles r WHERE r.rolname = session_user), false)
$$;

CREATE FUNCTION cems_is_admin() RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT cems_privileged() OR pg_has_role(session_user, 'cems_admin', 'MEMBER')
$$;

CREATE FUNCTION cems_my_teams() RETURNS text[] LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce(array_agg(t.team_id ORDER BY t.team_id), '{}') FROM cems_team_members t
    WHERE t.user_id = cems_user()
$$;

CREATE FUNCTION cems_admin_teams() RETURNS text[] LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce(array_agg(t.team_id ORDER BY t.team_id), '{}') FROM cems_team_members t
    WHERE t.user_id = cems_user() AND t.is_admin
$$;

-- The CEMS user a role (or a user name given as is) stands for.
CREATE FUNCTION cems_user_of(p_member text) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce((SELECT m.user_id FROM cems_role_map m WHERE m.role_name = p_member), p_member)
$$;

CREATE FUNCTION cems_team_create(p_name text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NOT cems_is_admin() THEN
        RAISE EXCEPTION 'only a CEMS administrator (a member of cems_admin) can create teams'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_name IS NULL OR btrim(p_name) = '' OR length(p_name) > 200 OR p_name ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'a team name is 1 to 200 printable characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO cems_teams (name, created_by) VALUES (p_name, cems_user()) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'team % already exists', p_name USING ERRCODE = 'unique_violation';
    END IF;
    -- A person who creates a team administers it; a privileged session (the store's owner) is no person.
    IF NOT cems_privileged() THEN
        INSERT INTO cems_team_members (team_id, user_id, is_admin, added_by)
        VALUES (p_name, cems_user(), true, cems_user());
    END IF;
END
$$;

-- The team exists and the caller may change its members (a CEMS admin, or an admin of that team).
CREATE FUNCTION cems_require_member_admin(p_team text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM cems_teams WHERE name = p_team) THEN
        RAISE EXCEPTION 'no team %', p_team USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT (cems_is_admin() OR p_team = ANY (cems_admin_teams())) THEN
        RAISE EXCEPTION 'only an admin of team % can change its members', p_team
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

CREATE FUNCTION cems_team_add(p_team text, p_member text, p_admin boolean) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    member text := cems_user_of(p_member);
BEGIN
    PERFORM cems_require_member_admin(p_team);
    IF member IS NULL OR btrim(member) = '' THEN
        RAISE EXCEPTION 'a member is a database role or a CEMS user name' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO cems_team_members (team_id, user_id, is_admin, added_by)
    VALUES (p_team, member, coalesce(p_admin, false), cems_user())
    ON CONFLICT (team_id, user_id) DO UPDATE SET is_admin = excluded.is_admin, added_by = excluded.added_by;
    RETURN member;
END
$$;

CREATE FUNCTION cems_team_remove(p_team text, p_member text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    member text := cems_user_of(p_member);
BEGIN
    PERFORM cems_require_member_admin(p_team);
    DELETE FROM cems_team_members WHERE team_id = p_team AND user_id = member;
    IF NOT FOUND THEN
        RAISE EXCEPTION '% is not a member of team %', member, p_team USING ERRCODE = 'no_data_found';
    END IF;
    RETURN member;
END
$$;

-- Chunks carry their memory's owner, team and scope, so their policy is a column test the HNSW and GIN
-- scans filter with, not a lookup of the document per candidate. A trigger copies them from the document
-- on every insert (given values are ignored: a chunk cannot claim another owner); it runs as the inserting
-- role, so a document the inserter cannot see yields no owner and the insert fails.
ALTER TABLE memory_chunks ADD COLUMN user_id text, ADD COLUMN team_id text, ADD COLUMN scope text;

-- Filling the columns of an existing store rewrites every chunk row; maintaining the similarity and
-- full-text indexes row by row through that is far slower than building them again afterwards.
SET LOCAL maintenance_work_mem = '512MB';
DROP INDEX IF EXISTS memory_chunks_embedding;
DROP INDEX IF EXISTS memory_chunks_fts;
UPDATE memory_chunks c SET user_id = d.user_id, team_id = d.team_id, scope = d.scope
FROM memory_documents d WHERE d.id = c.document_id;
ALTER TABLE memory_chunks ALTER COLUMN user_id SET NOT NULL, ALTER COLUMN scope SET NOT NULL;
CREATE INDEX memory_chunks_embedding ON memory_chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memory_chunks_fts ON memory_chunks USING gin (search_vector);
CREATE INDEX memory_chunks_owner ON memory_chunks (user_id);
CREATE INDEX memory_chunks_team ON memory_chunks (team_id) WHERE scope = 'shared';

CREATE FUNCTION cems_chunk_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.user_id, d.team_id, d.scope INTO NEW.user_id, NEW.team_id, NEW.scope
    FROM memory_documents d WHERE d.id = NEW.document_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'memory % does not exist or is not yours', NEW.document_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER memory_chunks_owner BEFORE INSERT OR UPDATE OF document_id, user_id, team_id, scope
    ON memory_chunks FOR EACH ROW EXECUTE FUNCTION cems_chunk_owner();

-- Owner, team and scope are fixed once a memory exists (sharing makes a copy): an application role cannot
-- move a memory to another owner or team. Forgetting (archiving) a shared memory is for its author or an
-- admin of its team; the UPDATE policy lets members write shared rows because every search bumps the
-- access counters of what it finds.
CREATE FUNCTION cems_guard_document() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT row_security_active(TG_RELID) THEN
        RETURN NEW;
    END IF;
    IF NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.team_id IS DISTINCT FROM OLD.team_id
       OR NEW.scope IS DISTINCT FROM OLD.scope THEN
        RAISE EXCEPTION 'the owner, team and scope of a memory cannot change' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.archived IS DISTINCT FROM OLD.archived AND OLD.user_id <> cems_user()
       AND NOT (OLD.scope = 'shared' AND OLD.team_id = ANY (cems_admin_teams())) THEN
        RAISE EXCEPTION 'only its author or an admin of team % can forget or restore memory %', OLD.team_id, OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER memory_documents_guard BEFORE UPDATE OF user_id, team_id, scope, archived ON memory_documents
    FOR EACH ROW EXECUTE FUNCTION cems_guard_document();

-- A privileged session may still move a memory (an administrator's repair): its chunks follow.
CREATE FUNCTION cems_chunks_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_chunks SET user_id = NEW.user_id, team_id = NEW.team_id, scope = NEW.scope
    WHERE document_id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_documents_chunks_follow AFTER UPDATE OF user_id, team_id, scope ON memory_documents
    FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.team_id IS DISTINCT FROM NEW.team_id
                       OR OLD.scope IS DISTINCT FROM NEW.scope)
    EXECUTE FUNCTION cems_chunks_follow();

-- Policies ----------------------------------------------------------------------------------------------------
-- Memories: personal rows are their owner's alone. Shared rows are read by the team's members (and their
-- author), written by members, deleted by the author or a team admin. Shared rules (category 'rules') are
-- written and deleted only by the team's admins: one rule binds every teammate's tool calls.
ALTER TABLE memory_documents ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY documents_read ON memory_documents FOR SELECT USING (
    user_id = (SELECT cems_user())
    OR (scope = 'shared' AND team_id = ANY ((SELECT cems_my_teams())::text[])));
CREATE POLICY documents_insert ON memory_documents FOR INSERT WITH CHECK (
    user_id = (SELECT cems_user())
    AND (scope = 'personal'
         OR (category <> 'rules' AND team_id = ANY ((SELECT cems_my_teams())::text[]))
         OR (category = 'rules' AND team_id = ANY ((SELECT cems_admin_teams())::text[]))));
CREATE POLICY documents_update ON memory_documents FOR UPDATE
    USING ((scope = 'personal' AND user_id = (SELECT cems_user()))
           OR (scope = 'shared' AND category <> 'rules'
               AND (user_id = (SELECT cems_user()) OR team_id = ANY ((SELECT cems_my_teams())::text[])))
           OR (scope = 'shared' AND category = 'rules' AND team_id = ANY ((SELECT cems_admin_teams())::text[])))
    WITH CHECK ((scope = 'personal' AND user_id = (SELECT cems_user()))
           OR (scope = 'shared' AND category <> 'rules'
               AND (user_id = (SELECT cems_user()) OR team_id = ANY ((SELECT cems_my_teams())::text[])))
           OR (scope = 'shared' AND category = 'rules' AND team_id = ANY ((SELECT cems_admin_teams())::text[])));
CREATE POLICY documents_delete ON memory_documents FOR DELETE USING (
    (scope = 'personal' AND user_id = (SELECT cems_user()))
    OR (scope = 'shared' AND (team_id = ANY ((SELECT cems_admin_teams())::text[])
                              OR (user_id = (SELECT cems_user()) AND category <> 'rules'))));

-- Chunks: read as their memory; written only by its author (the document policy decided the rest).
ALTER TABLE memory_chunks ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY chunks_read ON memory_chunks FOR SELECT USING (
    user_id = (SELECT cems_user())
    OR (scope = 'shared' AND team_id = ANY ((SELECT cems_my_teams())::text[])));
CREATE POLICY chunks_insert ON memory_chunks FOR INSERT WITH CHECK (user_id = (SELECT cems_user()));
CREATE POLICY chunks_update ON memory_chunks FOR UPDATE
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));
CREATE POLICY chunks_delete ON memory_chunks FOR DELETE USING (
    user_id = (SELECT cems_user())
    OR (scope = 'shared' AND team_id = ANY ((SELECT cems_admin_teams())::text[])));

-- Rule specs: visible with their memory (the subquery is itself filtered by the document policy); written
-- by the owner of a personal rule or an admin of a shared rule's team.
ALTER TABLE rules ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY rules_read ON rules FOR SELECT USING (
    EXISTS (SELECT 1 FROM memory_documents d WHERE d.id = rules.document_id));
CREATE POLICY rules_write ON rules FOR ALL
    USING (EXISTS (SELECT 1 FROM memory_documents d WHERE d.id = rules.document_id
                   AND ((d.scope = 'personal' AND d.user_id = (SELECT cems_user()))
                        OR (d.scope = 'shared' AND d.team_id = ANY ((SELECT cems_admin_teams())::text[])))))
    WITH CHECK (EXISTS (SELECT 1 FROM memory_documents d WHERE d.id = rules.document_id
                   AND ((d.scope = 'personal' AND d.user_id = (SELECT cems_user()))
                        OR (d.scope = 'shared' AND d.team_id = ANY ((SELECT cems_admin_teams())::text[])))));

-- Per-user bookkeeping (what the observer read, captured sessions, maintenance): the user's own rows only.
ALTER TABLE observer_files ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON observer_files FOR ALL
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));
ALTER TABLE observer_backlog ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON observer_backlog FOR ALL
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));
ALTER TABLE observer_state ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON observer_state FOR ALL
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));
ALTER TABLE capture_sessions ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON capture_sessions FOR ALL
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));
ALTER TABLE maintenance_runs ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON maintenance_runs FOR ALL
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));

-- Stored settings: yours, and your team's (read by members, written by its admins); the row says who
-- wrote it, truthfully.
ALTER TABLE stored_settings ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY settings_read ON stored_settings FOR SELECT USING (
    (owner_kind = 'user' AND owner = (SELECT cems_user()))
    OR (owner_kind = 'team' AND owner = ANY ((SELECT cems_my_teams())::text[])));
CREATE POLICY settings_insert ON stored_settings FOR INSERT WITH CHECK (
    updated_by = (SELECT cems_user())
    AND ((owner_kind = 'user' AND owner = (SELECT cems_user()))
         OR (owner_kind = 'team' AND owner = ANY ((SELECT cems_admin_teams())::text[]))));
CREATE POLICY settings_update ON stored_settings FOR UPDATE
    USING ((owner_kind = 'user' AND owner = (SELECT cems_user()))
           OR (owner_kind = 'team' AND owner = ANY ((SELECT cems_admin_teams())::text[])))
    WITH CHECK (updated_by = (SELECT cems_user())
           AND ((owner_kind = 'user' AND owner = (SELECT cems_user()))
                OR (owner_kind = 'team' AND owner = ANY ((SELECT cems_admin_teams())::text[]))));
CREATE POLICY settings_delete ON stored_settings FOR DELETE USING (
    (owner_kind = 'user' AND owner = (SELECT cems_user()))
    OR (owner_kind = 'team' AND owner = ANY ((SELECT cems_admin_teams())::text[])));
-- The change counter is bumped by the trigger as the table's owner: application roles only read it.
ALTER FUNCTION stored_settings_changed() SECURITY DEFINER;

-- cems_meta holds the embedding model (read by everyone) and, per user, the mark that deleted text awaits
-- scrubbing (written by that user). Not forced: its owner (migrations, reindex) writes any key.
ALTER TABLE cems_meta ENABLE ROW LEVEL SECURITY;
CREATE POLICY meta_read ON cems_meta FOR SELECT USING (
    key NOT LIKE 'scrub\_pending:%' OR key = 'scrub_pending:' || (SELECT cems_user()));
CREATE POLICY meta_write ON cems_meta FOR ALL
    USING (key = 'scrub_pending:' || (SELECT cems_user()))
    WITH CHECK (key = 'scrub_pending:' || (SELECT cems_user()));

-- Teams: members see their teams, administrators all. Not forced: the SECURITY DEFINER functions that
-- write them run as the owner.
ALTER TABLE cems_teams ENABLE ROW LEVEL SECURITY;
CREATE POLICY teams_read ON cems_teams FOR SELECT USING (
    name = ANY ((SELECT cems_my_teams())::text[]) OR (SELECT cems_is_admin()));
ALTER TABLE cems_team_members ENABLE ROW LEVEL SECURITY;
CREATE POLICY members_read ON cems_team_members FOR SELECT USING (
    team_id = ANY ((SELECT cems_my_teams())::text[]) OR (SELECT cems_is_admin()));

-- Audit ---------------------------------------------------------------------------------------------------------
-- Append-only for application roles: they hold SELECT and nothing else on it; rows are written by SECURITY
-- DEFINER triggers and functions, which set the actor themselves. Writes to shared memories and rules are
-- recorded by triggers (so raw SQL is recorded too); searches by the application (cems_audit_search).
CREATE TABLE cems_audit (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor      text NOT NULL,                       -- the CEMS user
    db_role    text NOT NULL DEFAULT session_user,  -- the role that logged in
    action     text NOT NULL,
    team_id    text,
    memory_id  uuid,
    author     text,                                -- the memory's owner
    category   text,
    query_hash text,                                -- searches: SHA-256 of the normalised query, never the text
    detail     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX cems_audit_at ON cems_audit (at);
CREATE INDEX cems_audit_team_at ON cems_audit (team_id, at);
ALTER TABLE cems_audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_read ON cems_audit FOR SELECT USING (
    actor = (SELECT cems_user()) OR team_id = ANY ((SELECT cems_my_teams())::text[]) OR (SELECT cems_is_admin()));

-- Who acted: the session's CEMS user, or, for a privileged session (the embedded store, where everyone
-- connects as the superuser and CEMS_USER names the user), the owner of the row, whom CEMS acts for.
CREATE FUNCTION cems_audit_document() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    target memory_documents;
    act    text;
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
    INSERT INTO cems_audit (actor, action, team_id, memory_id, author, category, detail)
    VALUES (CASE WHEN cems_privileged() THEN target.user_id ELSE cems_user() END, act, target.team_id, target.id,
            target.user_id, target.category, jsonb_build_object('content_hash', target.content_hash));
    RETURN NULL;
END
$$;
-- WHEN clauses keep personal memories and the searches' access-count updates off this path.
CREATE TRIGGER memory_documents_audit_insert AFTER INSERT ON memory_documents
    FOR EACH ROW WHEN (NEW.scope = 'shared') EXECUTE FUNCTION cems_audit_document();
CREATE TRIGGER memory_documents_audit_update AFTER UPDATE ON memory_documents
    FOR EACH ROW WHEN (NEW.scope = 'shared' AND (
        OLD.content_hash IS DISTINCT FROM NEW.content_hash OR OLD.archived IS DISTINCT FROM NEW.archived
        OR OLD.pinned IS DISTINCT FROM NEW.pinned OR OLD.category IS DISTINCT FROM NEW.category
        OR OLD.title IS DISTINCT FROM NEW.title OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at))
    EXECUTE FUNCTION cems_audit_document();
CREATE TRIGGER memory_documents_audit_delete AFTER DELETE ON memory_documents
    FOR EACH ROW WHEN (OLD.scope = 'shared') EXECUTE FUNCTION cems_audit_document();

-- A search (or prompt recall) over a team's shared memories. p_actor is heard only from a privileged
-- session; anyone else is recorded as themselves, and only for a team they belong to.
CREATE FUNCTION cems_audit_search(p_action text, p_team text, p_query_hash text, p_results integer,
                                  p_shared uuid[], p_actor text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    privileged boolean := cems_privileged();
BEGIN
    IF p_action NOT IN ('search', 'recall') THEN
        RAISE EXCEPTION 'not a search action: %', p_action USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT privileged AND p_team IS NOT NULL AND NOT (p_team = ANY (cems_my_teams())) THEN
        RAISE EXCEPTION 'not a member of team %', p_team USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO cems_audit (actor, action, team_id, query_hash, detail)
    VALUES (CASE WHEN privileged THEN coalesce(p_actor, cems_user()) ELSE cems_user() END, p_action, p_team,
            left(p_query_hash, 128),
            jsonb_build_object('results', p_results, 'shared', to_jsonb(coalesce(p_shared, '{}'::uuid[]))));
END
$$;

-- Quotas ---------------------------------------------------------------------------------------------------------
-- Per user ('*': everyone's default; a user's own value wins column by column; NULL: no limit). Privileged
-- sessions are not limited. Memories count while live; searches per calendar minute.
CREATE TABLE cems_quotas (
    user_id             text PRIMARY KEY,
    max_memories        integer CHECK (max_memories >= 0),
    searches_per_minute integer CHECK (searches_per_minute >= 0),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE cems_quotas ENABLE ROW LEVEL SECURITY;
CREATE POLICY quotas_read ON cems_quotas FOR SELECT USING (
    user_id IN ((SELECT cems_user()), '*') OR (SELECT cems_is_admin()));

CREATE TABLE cems_search_usage (
    user_id  text NOT NULL,
    minute   timestamptz NOT NULL,
    searches integer NOT NULL,
    PRIMARY KEY (user_id, minute)
);

CREATE FUNCTION cems_quota_of(p_user text) RETURNS TABLE (max_memories integer, searches_per_minute integer)
LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce(u.max_memories, d.max_memories), coalesce(u.searches_per_minute, d.searches_per_minute)
    FROM (SELECT 1) one
    LEFT JOIN cems_quotas u ON u.user_id = p_user
    LEFT JOIN cems_quotas d ON d.user_id = '*'
$$;

-- (limit, live memories) of the caller; limit NULL when there is none.
CREATE FUNCTION cems_memory_usage() RETURNS TABLE (max_memories integer, stored bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER AS $$
DECLARE
    me  text := cems_user();
    cap integer;
BEGIN
    IF cems_privileged() THEN
        RETURN QUERY SELECT NULL::integer, 0::bigint;
        RETURN;
    END IF;
    SELECT q.max_memories INTO cap FROM cems_quota_of(me) q;
    IF cap IS NULL THEN
        RETURN QUERY SELECT NULL::integer, 0::bigint;
        RETURN;
    END IF;
    RETURN QUERY SELECT cap, (SELECT count(*) FROM memory_documents WHERE user_id = me AND NOT archived);
END
$$;

-- Counts one search of the caller; returns (limit, searches this minute including this one).
CREATE FUNCTION cems_take_search() RETURNS TABLE (searches_per_minute integer, used integer)
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    me   text := cems_user();
    cap  integer;
    n    integer;
    this timestamptz := date_trunc('minute', clock_timestamp());
BEGIN
    IF cems_privileged() THEN
        RETURN QUERY SELECT NULL::integer, 0;
        RETURN;
    END IF;
    SELECT q.searches_per_minute INTO cap FROM cems_quota_of(me) q;
    IF cap IS NULL THEN
        RETURN QUERY SELECT NULL::integer, 0;
        RETURN;
    END IF;
    INSERT INTO cems_search_usage AS s (user_id, minute, searches) VALUES (me, this, 1)
    ON CONFLICT (user_id, minute) DO UPDATE SET searches = s.searches + 1
    RETURNING s.searches INTO n;
    DELETE FROM cems_search_usage WHERE user_id = me AND minute < this;
    RETURN QUERY SELECT cap, n;
END
$$;

CREATE FUNCTION cems_set_quota(p_user text, p_max_memories integer, p_searches_per_minute integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NOT cems_is_admin() THEN
        RAISE EXCEPTION 'only a CEMS administrator (a member of cems_admin) can set quotas'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_max_memories IS NULL AND p_searches_per_minute IS NULL THEN
        DELETE FROM cems_quotas WHERE user_id = cems_user_of(p_user);
        RETURN;
    END IF;
    INSERT INTO cems_quotas (user_id, max_memories, searches_per_minute)
    VALUES (CASE WHEN p_user = '*' THEN '*' ELSE cems_user_of(p_user) END, p_max_memories, p_searches_per_minute)
    ON CONFLICT (user_id) DO UPDATE SET max_memories = excluded.max_memories,
        searches_per_minute = excluded.searches_per_minute, updated_at = now();
END
$$;

-- The database's own check of the memory quota, once per INSERT statement (the application checks first,
-- before embedding anything, with a friendlier message; this one holds for raw SQL too).
CREATE FUNCTION cems_enforce_memory_quota() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    usage record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM cems_quotas WHERE max_memories IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO usage FROM cems_memory_usage();
    IF usage.max_memories IS NOT NULL AND usage.stored > usage.max_memories THEN
        RAISE EXCEPTION 'memory quota reached: % may store % memories', cems_user(), usage.max_memories
            USING ERRCODE = 'configuration_limit_exceeded';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_documents_quota AFTER INSERT ON memory_documents
    FOR EACH STATEMENT EXECUTE FUNCTION cems_enforce_memory_quota();

-- SECURITY DEFINER functions resolve names in this schema only (pg_temp last: no temporary table of the
-- caller can stand in for one of ours), and only cems_app may call them.
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

-- Grants: what an application role may touch at all (the policies above then decide which rows).
DO $$
BEGIN
    EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO cems_app', current_database());
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO cems_app', current_schema());
    EXECUTE format('GRANT USAGE ON ALL SEQUENCES IN SCHEMA %I TO cems_app', current_schema());
END
$$;
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_documents, memory_chunks, rules, observer_files, observer_backlog,
    observer_state, capture_sessions, maintenance_runs, stored_settings, cems_meta TO cems_app;
GRANT SELECT ON schema_migrations, stored_settings_version, cems_role_map, cems_teams, cems_team_members,
    cems_audit, cems_quotas TO cems_app;

-- Full-text search under row-level security: a query's own conditions run after the policy's unless they are
-- LEAKPROOF, and a condition that must wait cannot drive an index scan, so `search_vector @@ query` would
-- scan every visible chunk instead of using the GIN index. ts_match_vq returns true or false and raises no
-- error that depends on the row, so it is marked leakproof here, in this database (a superuser's act; under
-- anyone else it is left for `cems admin init` run by a superuser, and lexical search scans the visible
-- chunks meanwhile). The HNSW scan needs nothing: its distance is an ORDER BY, not a condition.
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
    END IF;
END
$$;
