-- For the viewer (`cems ui`, cems_cli/ui/).
--
-- Its memories page lists the newest of a user's live memories, pinned first (`Memory.browse`, and `cems
-- list`): without an index that is a scan and a sort of all of them (27 ms at 10k memories), with it the
-- first 50 entries of the index (0.07 ms).
CREATE INDEX memory_documents_browse ON memory_documents (user_id, pinned DESC, created_at DESC, id)
    WHERE NOT archived;

-- Live updates: every write that changes what a memory shows (a new memory, new text, forgotten,
-- restored, pinned, shared, purged) sends a NOTIFY on channel `cems_memories` once its transaction commits.
-- The payload is the operation and the memory's id, never its text or its owner: any role on a team server
-- may LISTEN, so a reader learns only that some id changed and must still read the row, which row-level
-- security and the visibility rules filter as for any other read.
--
-- Searches update access counts and recall stamps last_recalled on every result: the WHEN clause leaves
-- those updates alone, so the hot paths pay nothing. A bulk insert (an import of thousands) sends one
-- `bulk` notification instead of one per row: PostgreSQL keeps every distinct payload of a transaction until
-- commit, and a reader that missed ids reloads anyway.

CREATE FUNCTION cems_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM inserted) > 100 THEN
        PERFORM pg_notify('cems_memories', 'bulk');
    ELSE
        PERFORM pg_notify('cems_memories', 'insert ' || id::text) FROM inserted;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION cems_notify_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM deleted) > 100 THEN
        PERFORM pg_notify('cems_memories', 'bulk');
    ELSE
        PERFORM pg_notify('cems_memories', 'delete ' || id::text) FROM deleted;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION cems_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cems_memories', 'update ' || NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_documents_notify_insert AFTER INSERT ON memory_documents
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION cems_notify_inserted();
CREATE TRIGGER memory_documents_notify_update AFTER UPDATE ON memory_documents FOR EACH ROW
    WHEN (OLD.content_hash IS DISTINCT FROM NEW.content_hash OR OLD.archived IS DISTINCT FROM NEW.archived
          OR OLD.pinned IS DISTINCT FROM NEW.pinned OR OLD.scope IS DISTINCT FROM NEW.scope
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION cems_notify_changed();
CREATE TRIGGER memory_documents_notify_delete AFTER DELETE ON memory_documents
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION cems_notify_deleted();
