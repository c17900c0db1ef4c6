-- The entity graph (retrieval plan step 11): what each memory names (code identifiers, file paths, package
-- and service names, proper nouns), extracted at write time by a deterministic function, so every write
-- path (insert, COPY, update, merge) and every client keeps it without code of its own. Two memories that
-- name the same entity are linked; a search lends score along those links (retrieval/entity_graph.py).
--
-- What counts as an entity (lower-cased, 2-60 characters):
--   `a code span`                    backticked commands and identifiers
--   src/a/b.py, internal/stream/x    paths (anything with a slash between names)
--   next.config.ts, nats.go          file names with a known source or config extension
--   ledger_entries, date-fns         snake_case and hyphenated names (packages, tables, services)
--   toLocaleDateString               lowerCamelCase identifiers
--   Redis, NATS, JetStream, Sweden   capitalised words not starting a sentence (names of things and people)
-- Month and day names are left out: they say when, not what.
CREATE FUNCTION cems_entities(body text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
AS $$
SELECT coalesce(array_agg(DISTINCT e ORDER BY e), '{}') FROM (
    SELECT lower(btrim(m[1])) AS e FROM regexp_matches(body, '`([^`\n]{2,60})`', 'g') AS m
    UNION ALL
    SELECT lower(m[1]) FROM regexp_matches(
        body, '((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_-]+(?:\.[A-Za-z0-9]+)?)', 'g') AS m
    UNION ALL
    SELECT lower(m[1]) FROM regexp_matches(
        body, '(?:^|[^A-Za-z0-9_.-])([A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:py|pyi|ts|tsx|js|jsx|mjs|go|rs|rb|java|kt'
              '|c|h|cpp|cs|sql|sh|ya?ml|toml|json|tf|tfvars|proto|css|scss|html|vue|svelte|lock|cfg|ini))\M',
        'g') AS m
    UNION ALL
    SELECT lower(m[1]) FROM regexp_matches(body, '\m([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)\M', 'g') AS m
    UNION ALL
    SELECT lower(m[1]) FROM regexp_matches(body, '\m([a-z]+[A-Z][A-Za-z0-9]*)\M', 'g') AS m
    UNION ALL
    SELECT lower(m[1]) FROM regexp_matches(
        body, '(?<![.!?:\]]\s)(?<!^)\m([A-Z][A-Za-z0-9]*[A-Za-z0-9])\M', 'g') AS m
) found
WHERE length(e) BETWEEN 2 AND 60
  AND e NOT IN ('january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september',
                'october', 'november', 'december', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday',
                'saturday', 'sunday', 'utc')
$$;

ALTER TABLE memory_documents ADD COLUMN entities text[] GENERATED ALWAYS AS (cems_entities(content)) STORED;
CREATE INDEX memory_documents_entities ON memory_documents USING gin (entities);
