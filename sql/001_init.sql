-- Core schema: memories as documents split into embedded, full-text-indexed chunks.
-- {{EMBEDDING_DIM}} is replaced by the configured model's dimension when this migration is applied.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE cems_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE memory_documents (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    content       text NOT NULL,
    content_hash  text NOT NULL,
    user_id       text NOT NULL,
    team_id       text,
    scope         text NOT NULL DEFAULT 'personal' CHECK (scope IN ('personal', 'shared')),
    category      text NOT NULL DEFAULT 'general' CHECK (category IN
                  ('preferences', 'decisions', 'patterns', 'context', 'learnings', 'general', 'rules')),
    title         text,
    tags          text[] NOT NULL DEFAULT '{}',
    source        text,
    source_ref    text,
    pinned        boolean NOT NULL DEFAULT false,
    pin_reason    text,
    pin_category  text CHECK (pin_category IN
                  ('guideline', 'convention', 'architecture', 'standard', 'documentation')),
    priority      real NOT NULL DEFAULT 1.0 CHECK (priority BETWEEN 1.0 AND 2.0),
    access_count  integer NOT NULL DEFAULT 0,
    last_accessed timestamptz,
    expires_at    timestamptz,
    archived      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (scope = 'personal' OR team_id IS NOT NULL)
);

-- Dedup: one live copy of a text per owner and scope (and team, for shared memories).
CREATE UNIQUE INDEX memory_documents_live_hash
    ON memory_documents (user_id, scope, coalesce(team_id, ''), content_hash) WHERE NOT archived;
CREATE INDEX memory_documents_owner ON memory_documents (user_id, scope, category) WHERE NOT archived;
CREATE INDEX memory_documents_team ON memory_documents (team_id, scope) WHERE NOT archived;
CREATE INDEX memory_documents_created ON memory_documents (created_at DESC);

CREATE TABLE memory_chunks (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    document_id   uuid NOT NULL REFERENCES memory_documents (id) ON DELETE CASCADE,
    chunk_index   integer NOT NULL,
    content       text NOT NULL,
    embedding     vector({{EMBEDDING_DIM}}) NOT NULL,
    search_vector tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (document_id, chunk_index)
);

CREATE INDEX memory_chunks_embedding ON memory_chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memory_chunks_fts ON memory_chunks USING gin (search_vector);
