-- Summaries of groups of memories (retrieval plan step 14.5, RAPTOR): per user and project, level 1 sums up
-- one group of alike memories, level 2 the project from its groups. An overview question ("what have we done
-- on billing this month?") is answered from them; cems_cli/summaries.py builds them, `cems maintain` and the
-- observer's daily run keep them current.
--
-- A summary is made of its owner's own memories only and is read by its owner only: it quotes what it
-- summarises, so a teammate's memory (which its author may delete, or the reader lose access to by leaving
-- the team) never ends up in a row its author cannot reach.
CREATE TABLE memory_summaries (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id       text NOT NULL,
    project       text NOT NULL DEFAULT '',  -- 'project:name', or '' for memories of no project
    level         smallint NOT NULL CHECK (level IN (1, 2)),
    title         text NOT NULL,
    content       text NOT NULL,
    members       uuid[] NOT NULL,           -- the memories it was made from (level 2: all its groups')
    member_key    text NOT NULL,             -- a hash of the sorted members: a group that did not change keeps its text
    period_start  timestamptz NOT NULL,
    period_end    timestamptz NOT NULL,
    method        text NOT NULL CHECK (method IN ('extractive', 'llm')),
    embedding     vector({{EMBEDDING_DIM}}) NOT NULL,
    search_vector tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || content)) STORED,
    built_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_summaries_owner ON memory_summaries (user_id, project, level);
CREATE INDEX memory_summaries_members ON memory_summaries USING gin (members);

-- A summary goes with any of its memories: forgotten, archived (expired, merged), moved or rewritten, the
-- memory's text must not live on in a summary. Deleting here rather than at the next rebuild means
-- `cems forget` leaves no copy behind. SECURITY DEFINER: a team admin deleting a teammate's shared memory
-- cannot see the teammate's summaries, yet they must go too.
CREATE FUNCTION cems_summaries_forget() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    DELETE FROM memory_summaries WHERE members @> ARRAY[OLD.id];
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_documents_summaries_delete AFTER DELETE ON memory_documents
    FOR EACH ROW EXECUTE FUNCTION cems_summaries_forget();
CREATE TRIGGER memory_documents_summaries_update
    AFTER UPDATE OF content, archived, user_id, scope, team_id ON memory_documents
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.archived IS DISTINCT FROM NEW.archived
                       OR OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.scope IS DISTINCT FROM NEW.scope
                       OR OLD.team_id IS DISTINCT FROM NEW.team_id)
    EXECUTE FUNCTION cems_summaries_forget();

-- Each user's own rows. Enabled, not forced: the trigger above runs as the table's owner.
ALTER TABLE memory_summaries ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON memory_summaries FOR ALL
    USING (user_id = (SELECT cems_user())) WITH CHECK (user_id = (SELECT cems_user()));
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_summaries TO cems_app;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION cems_summaries_forget() SET search_path = pg_catalog, %I, pg_temp',
                   current_schema());
END
$$;
REVOKE ALL ON FUNCTION cems_summaries_forget() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cems_summaries_forget() TO cems_app;
