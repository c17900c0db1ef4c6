-- Tool-call rules. A rule is a memory of category 'rules' (so it is listed, searched, shared and
-- forgotten like any memory) plus the structured spec the PreToolUse hook enforces.
CREATE TABLE rules (
    document_id uuid PRIMARY KEY REFERENCES memory_documents (id) ON DELETE CASCADE,
    tool        text NOT NULL CHECK (tool <> ''),
    pattern     text NOT NULL CHECK (pattern <> ''),
    field       text,
    action      text NOT NULL CHECK (action IN ('block', 'ask', 'warn')),
    reason      text NOT NULL DEFAULT '',
    is_regex    boolean NOT NULL DEFAULT false,
    project     text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
