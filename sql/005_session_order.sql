-- Session order: the place of each memory among those of its session (the `session:<id>` tag), so search
-- can weigh a memory by its neighbours. created_at orders memories recorded at different times; seq, the
-- insertion order, orders those that share a timestamp (an import of a conversation whose turns carry
-- only the session's date). Existing rows are numbered in physical order by ADD COLUMN.
ALTER TABLE memory_documents ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE INDEX memory_documents_tags ON memory_documents USING gin (tags) WHERE NOT archived;
