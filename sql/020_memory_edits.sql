-- A record of edits, for a memory's history (`cems show`, the viewer's memory page): each change of what a
-- person sees of a memory (its text, title, context, category, tags, project, expiry, pin) is one row naming
-- the fields that changed, who changed it, and the text before when the text changed.
--
-- Written by a trigger, so an edit through raw SQL is recorded too. The previous text is the stored text,
-- which CEMS redacted when it stored it (every write goes through MemoryService.prepare); the reader
-- redacts it again (store/browse.py), for a text some other client wrote. A purge takes the memory's
-- edits with it (ON DELETE CASCADE): a forgotten secret leaves no copy behind.
--
-- Members of a team server get no privilege on the table (and it has row-level security with no policy, in
-- case one is granted by mistake): they read it through cems_memory_edits(), which returns the edits of a
-- memory the caller may read only, with the visibility test of the policies (sql/009, 013, 017).
--
-- Bounded: the newest 20 edits of each memory are kept (EDITS_KEPT in cems_cli/defaults.py); a session's
-- context record, rewritten as the session goes on, keeps its last twenty versions, not every one.

CREATE TABLE {{SCHEMA}}.memory_edits (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory_id uuid NOT NULL REFERENCES {{SCHEMA}}.memory_documents (id) ON DELETE CASCADE,
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text NOT NULL,
    db_role   text NOT NULL DEFAULT session_user,
    fields    text[] NOT NULL,
    old_text  text
);
CREATE INDEX memory_edits_memory ON {{SCHEMA}}.memory_edits (memory_id, seq DESC);
ALTER TABLE {{SCHEMA}}.memory_edits ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {{SCHEMA}}.memory_edits FROM PUBLIC, cems_app;

CREATE FUNCTION {{SCHEMA}}.cems_record_edit() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
DECLARE
    kept   constant integer := 20;  -- EDITS_KEPT (cems_cli/defaults.py)
    oldest bigint;
BEGIN
    INSERT INTO {{SCHEMA}}.memory_edits (memory_id, actor, db_role, fields, old_text)
    VALUES (NEW.id,
            -- As the audit names its actor: a privileged session (the embedded store) acts for the owner.
            CASE WHEN {{SCHEMA}}.cems_privileged() THEN NEW.user_id ELSE {{SCHEMA}}.cems_user() END,
            session_user,
            array_remove(ARRAY[
                CASE WHEN OLD.content IS DISTINCT FROM NEW.content THEN 'text' END,
                CASE WHEN OLD.title IS DISTINCT FROM NEW.title THEN 'title' END,
                CASE WHEN OLD.context IS DISTINCT FROM NEW.context THEN 'context' END,
                CASE WHEN OLD.category IS DISTINCT FROM NEW.category THEN 'category' END,
                CASE WHEN OLD.tags IS DISTINCT FROM NEW.tags THEN 'tags' END,
                CASE WHEN OLD.source_ref IS DISTINCT FROM NEW.source_ref THEN 'project' END,
                CASE WHEN OLD.expires_at IS DISTINCT FROM NEW.expires_at THEN 'expiry' END,
                CASE WHEN OLD.pinned IS DISTINCT FROM NEW.pinned THEN 'pinned' END,
                CASE WHEN OLD.pin_reason IS DISTINCT FROM NEW.pin_reason THEN 'pin reason' END], NULL),
            CASE WHEN OLD.content IS DISTINCT FROM NEW.content THEN OLD.content END);
    SELECT e.seq INTO oldest FROM {{SCHEMA}}.memory_edits e WHERE e.memory_id = NEW.id
    ORDER BY e.seq DESC OFFSET kept LIMIT 1;
    IF FOUND THEN
        DELETE FROM {{SCHEMA}}.memory_edits e WHERE e.memory_id = NEW.id AND e.seq <= oldest;
    END IF;
    RETURN NULL;
END
$$;
-- The columns a person sees; access counters, recall stamps, embeddings and the archive flag are not edits
-- (forget, restore and merges have their own lines in the history).
CREATE TRIGGER memory_documents_record_edit
    AFTER UPDATE OF content, title, context, category, tags, source_ref, expires_at, pinned, pin_reason
    ON {{SCHEMA}}.memory_documents FOR EACH ROW
    WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.title IS DISTINCT FROM NEW.title
          OR OLD.context IS DISTINCT FROM NEW.context OR OLD.category IS DISTINCT FROM NEW.category
          OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.source_ref IS DISTINCT FROM NEW.source_ref
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.pinned IS DISTINCT FROM NEW.pinned
          OR OLD.pin_reason IS DISTINCT FROM NEW.pin_reason)
    EXECUTE FUNCTION {{SCHEMA}}.cems_record_edit();

-- The newest `p_limit` edits of one memory, if the caller may read it: a privileged session (the embedded
-- store, where the application has already applied CEMS_USER's visibility) any; a member their own
-- memories and their teams' shared ones. Nothing (not an error) for any other id, so a caller learns
-- nothing of which hidden ids exist.
CREATE FUNCTION {{SCHEMA}}.cems_memory_edits(p_memory uuid, p_limit integer DEFAULT 20)
RETURNS TABLE (at timestamptz, actor text, fields text[], old_text text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp ROWS 20 AS $$
DECLARE
    privileged boolean := {{SCHEMA}}.cems_privileged();
    me         text := {{SCHEMA}}.cems_user();
    teams      text[] := {{SCHEMA}}.cems_my_teams();
BEGIN
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'a limit is 1 to 1000 edits' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {{SCHEMA}}.memory_documents d
                   WHERE d.id = p_memory
                     AND (privileged OR d.user_id = me OR (d.scope = 'shared' AND d.team_id = ANY (teams)))) THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT e.at, e.actor, e.fields, e.old_text FROM {{SCHEMA}}.memory_edits e
    WHERE e.memory_id = p_memory ORDER BY e.seq DESC LIMIT p_limit;
END
$$;

REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_record_edit() FROM PUBLIC;
REVOKE ALL ON FUNCTION {{SCHEMA}}.cems_memory_edits(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_record_edit() TO cems_app;
GRANT EXECUTE ON FUNCTION {{SCHEMA}}.cems_memory_edits(uuid, integer) TO cems_app;
