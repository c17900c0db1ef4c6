-- Lifecycle maintenance (`cems maintain`, and the observer once a day): consolidation of near-duplicates,
-- expiry, and pruning of what has been archived for longer than the grace period.

-- archived_at: when a memory was archived, so pruning can wait out the grace period. A trigger sets it on
-- every path that archives or restores (forget, consolidation, expiry, any later command), so no writer has
-- to remember to. Memories archived before this migration count from the upgrade: when they were archived
-- is unknown (updated_at may be years old), and the first maintenance after an upgrade, which the observer
-- runs on its own, must not delete what the user may still want back before they had a chance to look.
-- merged_into: on a memory archived by consolidation, the memory it was merged into.
-- merged_from: on the memory that survived, the provenance (id, source, source_ref) of each memory merged
-- into it; source and source_ref hold one origin only, and a merge must not lose the other.
-- last_recalled: when prompt recall last injected the memory. Recall is not an access (counting it raised
-- the priority of whatever was injected, a feedback loop), but it is use: the expiry of captured context
-- memories counts it, or a record injected every day would expire as unused. Not indexed: stamping it
-- changes no index, so it can be a HOT update.
ALTER TABLE memory_documents
    ADD COLUMN archived_at timestamptz,
    ADD COLUMN merged_into uuid,
    ADD COLUMN merged_from jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN last_recalled timestamptz;
-- No foreign key on merged_into: pruning deletes in bulk, and a key would need an index on merged_into to
-- check each deleted row; a dangling reference after the survivor itself is pruned is only history.

UPDATE memory_documents SET archived_at = now() WHERE archived;

CREATE FUNCTION cems_stamp_archived_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT NEW.archived THEN
        NEW.archived_at := NULL;                           -- restored
    ELSIF TG_OP = 'INSERT' THEN
        NEW.archived_at := coalesce(NEW.archived_at, now());
    ELSE
        NEW.archived_at := now();                          -- archived just now
    END IF;
    RETURN NEW;
END
$$;

-- The WHEN clauses keep the function off the hot paths: explicit searches update access counts on every
-- result, and prompt recall stamps last_recalled on what it injects.
CREATE TRIGGER memory_documents_archived_at_update BEFORE UPDATE OF archived ON memory_documents
    FOR EACH ROW WHEN (OLD.archived IS DISTINCT FROM NEW.archived) EXECUTE FUNCTION cems_stamp_archived_at();
CREATE TRIGGER memory_documents_archived_at_insert BEFORE INSERT ON memory_documents
    FOR EACH ROW WHEN (NEW.archived) EXECUTE FUNCTION cems_stamp_archived_at();

CREATE INDEX memory_documents_archived_at ON memory_documents (user_id, archived_at) WHERE archived;
CREATE INDEX memory_documents_expiring ON memory_documents (user_id, expires_at)
    WHERE NOT archived AND expires_at IS NOT NULL;

-- One row per user: when maintenance last ran (the observer runs it when a day has passed) and what it did.
CREATE TABLE maintenance_runs (
    user_id     text PRIMARY KEY,
    last_run_at timestamptz NOT NULL,
    report      jsonb NOT NULL
);
