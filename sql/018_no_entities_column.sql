-- The entity-link search stage is gone (it hurt both benchmarks, bench/RESULTS.md "Entity graph"): the
-- generated `entities` column and its GIN index cost every write (the extraction runs in SQL on insert,
-- COPY, update and merge) for no reader. Summaries still title their groups with what memories name: they
-- call cems_entities(content) when they read their members (cems_cli/store/summaries.py), so the function
-- stays.
DROP INDEX IF EXISTS memory_documents_entities;
ALTER TABLE memory_documents DROP COLUMN IF EXISTS entities;
