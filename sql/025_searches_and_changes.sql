-- The two holes 024 left open (issue 27), closed in the database. Names are schema-qualified under
-- search_path = pg_catalog, <schema>, pg_temp, as in 017-024.
--
-- 1. Searches are recorded and counted by the database. The audit row of a search over a team's memories
--    and the per-minute search quota were the application's (cems_audit_search, cems_take_search, called
--    around its searches): a member calling cems_vector_hits or cems_fts_match with raw SQL searched
--    unrecorded and uncounted, and could call cems_audit_search at will, flooding the trail's search rows.
--    Now a search begins with cems_begin_search, which checks the quota, writes the one audit row and gives
--    the calling session a ticket; the functions that search (cems_vector_hits, cems_fts_chunks,
--    cems_fts_counts) refuse a session without a live ticket. cems_audit_search and cems_take_search are
--    gone, and cems_fts_match (matching chunk ids, an id oracle the application no longer needs: it counts
--    with cems_fts_counts) with them.
--
--    What a ticket is, and why each part:
--    - one row per backend (pg_backend_pid()), which no member may read or write;
--    - it must have been committed by an earlier transaction than the search's: a member who began a
--      search, searched and rolled back would take the audit row and the quota's count back with them;
--    - it allows at most 1000 calls of the search functions and lives 5 minutes (a search with LLM
--      expansions makes its last calls after them). Calls are counted with cems_search_calls, a sequence:
--      nextval is not undone by a rollback, so a member cannot search in a transaction, roll back and
--      search again on the same allowance, as they could with a counter in a table;
--    - the sequence also tells sessions apart. With CACHE 100000 each session draws its values from a
--      block of 100000 of its own ([1, 100000], [100001, 200000], …: PostgreSQL hands a session the next
--      whole block when it needs one), so a call whose value is not in the block of the ticket's first
--      value comes from another session: a later backend given the same pid finds the ticket dead. (No
--      pg_stat_activity: the functions' owner may not see a member's backend_start on a managed service.)
--      Members hold no privilege on the sequence; DISCARD SEQUENCES only starts the caller's next block,
--      which ends their own ticket. Both are UNLOGGED: nothing here outlives a crash, nor needs to (and
--      an unlogged sequence restarts at 1 after one, where a logged one would resume up to 32 values past
--      a block's end). Only nextval may move it: a setval or ALTER ... RESTART to a value that ends no
--      block would shift the blocks, and a search crossing the shifted boundary would be refused;
--    - it names the one team whose shared memories the search reads (none for a personal search, whose
--      only reads are the caller's own memories): a ticket for a personal search does not read a team's.
--    A privileged session (the embedded store, an administrator) reads the tables and needs no ticket.
--
-- 2. Change notifications are gone. Every write of a memory sent a NOTIFY on cems_memories naming the
--    memory's id; any role may LISTEN (PostgreSQL has no privilege for it), so a member learned the id of
--    every memory written, others' personal ones too, and the sending backend's pid, which
--    pg_stat_activity names (who wrote, when); any role could also NOTIFY on the channel. Now the triggers
--    append to cems_change_log, which members cannot read, and a reader asks cems_changes_since for the
--    changes it may see (its own memories, its teams' shared ones) since a cursor. Nothing is sent, so
--    nothing can be forged.

-- 1. Searches ---------------------------------------------------------------------------------------------

CREATE UNLOGGED TABLE {{SCHEMA}}.cems_search_tickets (
    backend    integer PRIMARY KEY,   -- pg_backend_pid() of the session that began the search
    user_id    text NOT NULL,
    team_id    text,                  -- the team whose shared memories it reads; NULL: the caller's own only
    first_call bigint NOT NULL,       -- cems_search_calls' value when it began
    began_in   xid8 NOT NULL,         -- the transaction that began it: searches wait for its commit
    audit_id   bigint,                -- its row in cems_audit (NULL: a search of the caller's own memories)
    expires_at timestamptz NOT NULL
);
CREATE INDEX cems_search_tickets_expiry ON {{SCHEMA}}.cems_search_tickets (expires_at);
ALTER TABLE {{SCHEMA}}.cems_search_tickets ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.cems_search_tickets FROM PUBLIC, cems_app;

-- The block size (100000) and the calls a ticket allows (1000) are written out in the functions below; a
-- ticket's first call is never in the last 1000 values of its block (cems_begin_search skips to the next).
CREATE UNLOGGED SEQUENCE {{SCHEMA}}.cems_search_calls AS bigint START 1 INCREMENT 1 MINVALUE 1 CACHE 100000;
REVOKE ALL ON SEQUENCE {{SCHEMA}}.cems_search_calls FROM PUBLIC, cems_app;

-- Begin a search (p_action 'search' or 'recall') of p_scope ('personal', 'shared', 'both') over p_team's
-- shared memories: counts it against the caller's searches-per-minute quota (refused past it, with nothing
-- written), writes its audit row when it reads a team's memories (p_query_hash: SHA-256 of the query), and
-- gives this session the ticket the search functions ask for, replacing any earlier one. Returns whether
-- the search is audited. p_actor is heard from a privileged session only (the user it acts for).
CREATE FUNCTION {{SCHEMA}}.cems_begin_search(p_action text, p_scope text, p_team text, p_query_hash text,
                                             p_actor text DEFAULT NULL)
RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    privileged boolean := {{SCHEMA}}.cems_privileged();
    me         text := {{SCHEMA}}.cems_user();
    team       text;
    cap        integer;
    used       integer;
    this_minute timestamptz := date_trunc('minute', clock_timestamp());
    audit      bigint;
    start_call bigint;
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('search', 'recall') THEN
        RAISE EXCEPTION 'not a search action: %', left(p_action, 40) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_scope IS NULL OR p_scope NOT IN ('personal', 'shared', 'both') THEN
        RAISE EXCEPTION 'a scope is personal, shared or both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_query_hash IS NULL OR p_query_hash !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION 'a query hash is a SHA-256 in 64 hexadecimal digits' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT privileged AND p_team IS NOT NULL AND NOT (p_team = ANY ({{SCHEMA}}.cems_my_teams())) THEN
        RAISE EXCEPTION 'not a member of team %', left(p_team, 200) USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF privileged THEN
        me := left(coalesce(p_actor, me), 200);
    ELSE
        SELECT q.searches_per_minute INTO cap FROM {{SCHEMA}}.cems_quota_of(me) q;
        IF cap IS NOT NULL THEN
            INSERT INTO {{SCHEMA}}.cems_search_usage AS s (user_id, minute, searches) VALUES (me, this_minute, 1)
            ON CONFLICT (user_id, minute) DO UPDATE SET searches = s.searches + 1
            RETURNING s.searches INTO used;
            DELETE FROM {{SCHEMA}}.cems_search_usage s WHERE s.user_id = me AND s.minute < this_minute;
            IF used > cap THEN
                RAISE EXCEPTION 'search quota reached: % may search % times a minute', me, cap
                    USING ERRCODE = 'configuration_limit_exceeded';
            END IF;
        END IF;
    END IF;
    team := CASE WHEN p_scope <> 'personal' THEN p_team END;
    IF team IS NOT NULL THEN
        -- Its results are added by cems_end_search, once; a search never ended keeps '{}'.
        INSERT INTO {{SCHEMA}}.cems_audit (actor, action, team_id, query_hash, detail)
        VALUES (me, p_action, team, p_query_hash, '{}') RETURNING id INTO audit;
    ELSE
        -- Nothing durable to wait for (a ticket, a count of this minute): the commit need not wait for the
        -- disk. An audit row does: the search reads only after it is committed.
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    start_call := nextval('{{SCHEMA}}.cems_search_calls');
    IF (start_call - 1) % 100000 >= 100000 - 1000 THEN
        -- Too near the end of this session's block for a whole allowance: on to the next block.
        PERFORM nextval('{{SCHEMA}}.cems_search_calls')
        FROM generate_series(1, 100000 - 1 - (start_call - 1) % 100000);
        start_call := nextval('{{SCHEMA}}.cems_search_calls');
    END IF;
    INSERT INTO {{SCHEMA}}.cems_search_tickets AS t
        (backend, user_id, team_id, first_call, began_in, audit_id, expires_at)
    VALUES (pg_backend_pid(), me, team, start_call, pg_current_xact_id(), audit, clock_timestamp() + interval '5 minutes')
    ON CONFLICT (backend) DO UPDATE SET user_id = excluded.user_id, team_id = excluded.team_id,
        first_call = excluded.first_call, began_in = excluded.began_in, audit_id = excluded.audit_id,
        expires_at = excluded.expires_at;
    -- Tickets of sessions that ended stay until they expire; a few are cleared each time.
    DELETE FROM {{SCHEMA}}.cems_search_tickets t WHERE t.backend IN (
        SELECT o.backend FROM {{SCHEMA}}.cems_search_tickets o WHERE o.expires_at < clock_timestamp()
        ORDER BY o.expires_at LIMIT 20 FOR UPDATE SKIP LOCKED);
    RETURN audit IS NOT NULL;
END
$$;

-- One call of a search function by p_user over p_team's memories (p_scope as the function was given):
-- refused unless this session holds a live ticket of p_user's for that team (any team for a personal
-- search or none named: those read the caller's own memories only), begun in a committed earlier
-- transaction, with calls left. For the search functions only; members do not call it.
CREATE FUNCTION {{SCHEMA}}.cems_search_step(p_user text, p_scope text, p_team text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    ticket {{SCHEMA}}.cems_search_tickets;
    this_call bigint;
BEGIN
    SELECT * INTO ticket FROM {{SCHEMA}}.cems_search_tickets t WHERE t.backend = pg_backend_pid();
    IF ticket.backend IS NOT NULL THEN
        this_call := nextval('{{SCHEMA}}.cems_search_calls');
        IF ticket.user_id = p_user AND ticket.expires_at > clock_timestamp()
           AND ticket.began_in IS DISTINCT FROM pg_current_xact_id_if_assigned()
           AND this_call > ticket.first_call AND this_call - ticket.first_call <= 1000
           AND (this_call - 1) / 100000 = (ticket.first_call - 1) / 100000
           AND (p_scope = 'personal' OR p_team IS NULL OR p_team = ticket.team_id) THEN
            RETURN;
        END IF;
    END IF;
    IF {{SCHEMA}}.cems_privileged() THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'no search under way in this session: begin one with cems_begin_search (in an earlier '
        'transaction; it allows 1000 calls for 5 minutes, over the team it names)'
        USING ERRCODE = 'object_not_in_prerequisite_state';
END
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_search_step(text, text, text) FROM PUBLIC, cems_app;

-- End the session's search: its audit row gets the number of results, the team's shared memories among
-- them (at most 1000; ids of anything else are dropped) and how many search calls it made; the ticket is
-- gone. Only once, and only the caller's own ticket's row: nothing else of the trail is written.
CREATE FUNCTION {{SCHEMA}}.cems_end_search(p_results integer, p_shared uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    ticket {{SCHEMA}}.cems_search_tickets;
    kept   uuid[];
    this_call bigint;
BEGIN
    IF p_results IS NULL OR p_results NOT BETWEEN 0 AND 10000 THEN
        RAISE EXCEPTION 'a search has 0 to 10000 results' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(cardinality(p_shared), 0) > 1000 THEN
        RAISE EXCEPTION 'at most 1000 shared results are recorded' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM {{SCHEMA}}.cems_search_tickets t
    WHERE t.backend = pg_backend_pid() AND (t.user_id = {{SCHEMA}}.cems_user() OR {{SCHEMA}}.cems_privileged())
    RETURNING * INTO ticket;
    IF ticket.audit_id IS NULL THEN
        RETURN;  -- no search under way, or one that read the caller's own memories only
    END IF;
    this_call := nextval('{{SCHEMA}}.cems_search_calls');
    -- The search is done and recorded: what is added to its row need not wait for the disk.
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT coalesce(array_agg(s.id ORDER BY s.n), '{}') INTO kept
    FROM unnest(coalesce(p_shared, '{}'::uuid[])) WITH ORDINALITY AS s (id, n)
    WHERE EXISTS (SELECT 1 FROM {{SCHEMA}}.memory_documents d
                  WHERE d.id = s.id AND d.scope = 'shared' AND d.team_id = ticket.team_id);
    UPDATE {{SCHEMA}}.cems_audit a
    SET detail = jsonb_build_object('results', p_results, 'shared', to_jsonb(kept), 'calls',
                                    CASE WHEN (this_call - 1) / 100000 = (ticket.first_call - 1) / 100000
                                         THEN this_call - ticket.first_call - 1 END)
    WHERE a.id = ticket.audit_id AND a.detail = '{}';
END
$$;

-- The chunks' document frequencies of BM25 (store/lexical.py collection_stats): for each of p_queries,
-- how many chunks the caller may read within p_scope match it (as cems_fts_chunks narrows them). One call
-- per search rather than one cems_fts_match per term: a long prompt has hundreds of terms.
CREATE FUNCTION {{SCHEMA}}.cems_fts_counts(p_queries tsquery[], p_scope text, p_team text) RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF p_scope IS NULL OR p_scope NOT IN ('personal', 'shared', 'both') THEN
        RAISE EXCEPTION 'a scope is personal, shared or both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(p_queries) > 1000 THEN
        RAISE EXCEPTION 'at most 1000 queries at a time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM {{SCHEMA}}.cems_search_step(me, p_scope, p_team);
    RETURN ARRAY(
        SELECT (SELECT count(*) FROM {{SCHEMA}}.memory_chunks c
                WHERE c.search_vector @@ q.q
                  AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
                  AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
                       OR (p_scope IN ('shared', 'both') AND c.scope = 'shared'
                           AND (c.team_id = p_team OR c.user_id = me))))
        FROM unnest(p_queries) WITH ORDINALITY AS q (q, i) ORDER BY q.i);
END
$$;

-- The search functions of 015 and 017, as they were, each call a step of the session's search (VOLATILE:
-- the step counts).
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_fts_chunks(p_query tsquery, p_scope text DEFAULT 'both',
                                                     p_team text DEFAULT NULL)
RETURNS TABLE (id uuid, document_id uuid, chunk_index integer, search_vector tsvector)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 200 AS $$
DECLARE
    me    text := {{SCHEMA}}.cems_user();
    teams text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    PERFORM {{SCHEMA}}.cems_search_step(me, p_scope, p_team);
    RETURN QUERY
    SELECT c.id, c.document_id, c.chunk_index, c.search_vector FROM {{SCHEMA}}.memory_chunks c
    WHERE c.search_vector @@ p_query
      AND (c.user_id = me OR (c.scope = 'shared' AND c.team_id = ANY (teams)))
      AND ((p_scope IN ('personal', 'both') AND c.scope = 'personal' AND c.user_id = me)
           OR (p_scope IN ('shared', 'both') AND c.scope = 'shared' AND (c.team_id = p_team OR c.user_id = me)));
END
$$;

CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_vector_hits(p_query vector, p_limit integer, p_scope text DEFAULT 'both',
                                                      p_team text DEFAULT NULL, p_category text DEFAULT NULL,
                                                      p_project text DEFAULT NULL)
RETURNS TABLE (id uuid, document_id uuid, chunk_index integer, similarity double precision)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp
SET plan_cache_mode = force_custom_plan ROWS 50 AS $$
DECLARE
    me   text := {{SCHEMA}}.cems_user();
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
    PERFORM {{SCHEMA}}.cems_search_step(me, p_scope, p_team);
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

DROP FUNCTION {{SCHEMA}}.cems_audit_search(text, text, text, integer, uuid[], text);
DROP FUNCTION {{SCHEMA}}.cems_take_search();
DROP FUNCTION {{SCHEMA}}.cems_fts_match(tsquery, text, text);

-- 2. Changes ----------------------------------------------------------------------------------------------

-- What changed, for readers that show memories live (the viewer): one row per memory stored, changed in what
-- it shows (text, archived, pinned, scope, expiry; not access counters or recall stamps), or deleted, with
-- who may see it; more than 100 rows of one statement are one `bulk` row per owner, team and scope.
-- Kept an hour. `xact` orders them for a reader (cems_changes_since).
CREATE UNLOGGED TABLE {{SCHEMA}}.cems_change_log (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xact      xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at        timestamptz NOT NULL DEFAULT now(),
    op        text NOT NULL CHECK (op IN ('insert', 'update', 'delete', 'bulk')),
    memory_id uuid,
    user_id   text NOT NULL,
    team_id   text,
    scope     text NOT NULL
);
CREATE INDEX cems_change_log_xact ON {{SCHEMA}}.cems_change_log (xact);
CREATE INDEX cems_change_log_at ON {{SCHEMA}}.cems_change_log (at);
ALTER TABLE {{SCHEMA}}.cems_change_log ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.cems_change_log FROM PUBLIC, cems_app;

-- Rows older than an hour, a hundred at a time, none another writer is removing (no writer waits).
CREATE FUNCTION {{SCHEMA}}.cems_prune_change_log() RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
    DELETE FROM {{SCHEMA}}.cems_change_log l WHERE l.seq IN (
        SELECT o.seq FROM {{SCHEMA}}.cems_change_log o WHERE o.at < now() - interval '1 hour'
        ORDER BY o.at LIMIT 100 FOR UPDATE SKIP LOCKED)
$$;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_prune_change_log() FROM PUBLIC, cems_app;

CREATE FUNCTION {{SCHEMA}}.cems_log_inserted() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF (SELECT count(*) FROM inserted) > 100 THEN
        INSERT INTO {{SCHEMA}}.cems_change_log (op, user_id, team_id, scope)
        SELECT DISTINCT 'bulk', i.user_id, i.team_id, i.scope FROM inserted i;
    ELSE
        INSERT INTO {{SCHEMA}}.cems_change_log (op, memory_id, user_id, team_id, scope)
        SELECT 'insert', i.id, i.user_id, i.team_id, i.scope FROM inserted i;
    END IF;
    PERFORM {{SCHEMA}}.cems_prune_change_log();
    RETURN NULL;
END
$$;

CREATE FUNCTION {{SCHEMA}}.cems_log_deleted() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF (SELECT count(*) FROM deleted) > 100 THEN
        INSERT INTO {{SCHEMA}}.cems_change_log (op, user_id, team_id, scope)
        SELECT DISTINCT 'bulk', d.user_id, d.team_id, d.scope FROM deleted d;
    ELSE
        INSERT INTO {{SCHEMA}}.cems_change_log (op, memory_id, user_id, team_id, scope)
        SELECT 'delete', d.id, d.user_id, d.team_id, d.scope FROM deleted d;
    END IF;
    PERFORM {{SCHEMA}}.cems_prune_change_log();
    RETURN NULL;
END
$$;

-- A memory that left a team (or came to one) is a change for those who saw it before, too.
CREATE FUNCTION {{SCHEMA}}.cems_log_changed() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    INSERT INTO {{SCHEMA}}.cems_change_log (op, memory_id, user_id, team_id, scope)
    VALUES ('update', NEW.id, NEW.user_id, NEW.team_id, NEW.scope);
    IF (OLD.user_id, OLD.team_id, OLD.scope) IS DISTINCT FROM (NEW.user_id, NEW.team_id, NEW.scope) THEN
        INSERT INTO {{SCHEMA}}.cems_change_log (op, memory_id, user_id, team_id, scope)
        VALUES ('update', OLD.id, OLD.user_id, OLD.team_id, OLD.scope);
    END IF;
    PERFORM {{SCHEMA}}.cems_prune_change_log();
    RETURN NULL;
END
$$;

DROP TRIGGER memory_documents_notify_insert ON {{SCHEMA}}.memory_documents;
DROP TRIGGER memory_documents_notify_update ON {{SCHEMA}}.memory_documents;
DROP TRIGGER memory_documents_notify_delete ON {{SCHEMA}}.memory_documents;
DROP FUNCTION {{SCHEMA}}.cems_notify_inserted();
DROP FUNCTION {{SCHEMA}}.cems_notify_deleted();
DROP FUNCTION {{SCHEMA}}.cems_notify_changed();

CREATE TRIGGER memory_documents_log_insert AFTER INSERT ON {{SCHEMA}}.memory_documents
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION {{SCHEMA}}.cems_log_inserted();
-- The same columns as the notifications' trigger had: the updates every search makes (access counters,
-- recall stamps) write nothing here.
CREATE TRIGGER memory_documents_log_update AFTER UPDATE ON {{SCHEMA}}.memory_documents FOR EACH ROW
    WHEN (OLD.content_hash IS DISTINCT FROM NEW.content_hash OR OLD.archived IS DISTINCT FROM NEW.archived
          OR OLD.pinned IS DISTINCT FROM NEW.pinned OR OLD.scope IS DISTINCT FROM NEW.scope
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION {{SCHEMA}}.cems_log_changed();
CREATE TRIGGER memory_documents_log_delete AFTER DELETE ON {{SCHEMA}}.memory_documents
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {{SCHEMA}}.cems_log_deleted();

-- The newest p_limit changes the caller may see (their own memories, their teams' shared ones; every change
-- for a privileged session) of transactions from p_since on, newest first. A reader's cursor is the xmin
-- of the snapshot it read them in (pg_snapshot_xmin(pg_current_snapshot()), in the same statement): a
-- change its snapshot did not show was made by a transaction still running then or begun later, whose id
-- is at least that, so the next call returns it (and some it has seen: the reader skips those by seq).
CREATE FUNCTION {{SCHEMA}}.cems_changes_since(p_since xid8, p_limit integer)
RETURNS TABLE (seq bigint, op text, memory_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 10 AS $$
DECLARE
    everything boolean := {{SCHEMA}}.cems_privileged();
    me         text := {{SCHEMA}}.cems_user();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF p_since IS NULL OR p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'changes since a transaction id, 1 to 10000 at a time'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT l.seq, l.op, l.memory_id FROM {{SCHEMA}}.cems_change_log l
    WHERE l.xact >= p_since
      AND (everything OR l.user_id = me OR (l.scope = 'shared' AND l.team_id = ANY (teams)))
    ORDER BY l.seq DESC LIMIT p_limit;
END
$$;

DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['cems_begin_search(text, text, text, text, text)', 'cems_end_search(integer, uuid[])',
                              'cems_fts_counts(tsquery[], text, text)', 'cems_changes_since(xid8, integer)']
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO cems_app', current_schema(), fn);
    END LOOP;
END
$$;

-- As 017: the distance operator is the vector extension's, which a managed service may keep in a schema of
-- its own (CREATE OR REPLACE above set cems_vector_hits' search_path back to ours alone).
DO $$
DECLARE
    vectors text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                     WHERE e.extname = 'vector');
BEGIN
    IF vectors IS DISTINCT FROM current_schema() THEN
        EXECUTE format('ALTER FUNCTION %I.cems_vector_hits(vector, integer, text, text, text, text) '
                       'SET search_path = pg_catalog, %I, %I, pg_temp',
                       current_schema(), current_schema(), vectors);
    END IF;
END
$$;

-- As 024, last: every SECURITY DEFINER function of the schema (those above included) keeps its plans and
-- messages below WARNING from its caller.
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
