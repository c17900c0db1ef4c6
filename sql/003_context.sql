-- Context: text that situates a memory (the surrounding conversation, the file or task it came from).
-- It is indexed with the memory — at a lower full-text weight — but never shown as its content.
ALTER TABLE memory_documents ADD COLUMN context text;
ALTER TABLE memory_chunks ADD COLUMN context text;

-- Content lexemes carry weight A, context lexemes weight D, so ranking can tell "said here" from
-- "said nearby". Dropping the column drops its GIN index; both are rebuilt.
ALTER TABLE memory_chunks DROP COLUMN search_vector;
ALTER TABLE memory_chunks ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', content), 'A')
    || setweight(to_tsvector('english', coalesce(context, '')), 'D')
) STORED;
CREATE INDEX memory_chunks_fts ON memory_chunks USING gin (search_vector);
