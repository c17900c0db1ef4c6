-- Observer: how far each transcript has been read, and the material read but not yet turned into memories.
-- A file's row, the memories made from its bytes and its pending material change in one transaction, so a
-- crash at any moment neither loses nor repeats anything.

CREATE TABLE observer_files (
    user_id         text    NOT NULL,
    path            text    NOT NULL,
    device          bigint  NOT NULL DEFAULT 0,
    inode           bigint  NOT NULL DEFAULT 0,
    read_offset     bigint  NOT NULL DEFAULT 0 CHECK (read_offset >= 0),  -- just past the last line consumed
    size_seen       bigint  NOT NULL DEFAULT 0,
    mtime           double precision NOT NULL DEFAULT 0,                 -- file mtime when last read
    -- SHA-256 of the first fingerprint_len bytes: a file replaced by different content is detected even
    -- when it is as large as the old one and kept its inode.
    fingerprint     text    NOT NULL DEFAULT '',
    fingerprint_len integer NOT NULL DEFAULT 0,
    pending         jsonb,          -- the open chunk (already redacted), see cems_cli/capture/observations.py
    ignored         text,           -- why this transcript is not observed (no feedback loops), or NULL
    lines           bigint  NOT NULL DEFAULT 0,
    malformed       bigint  NOT NULL DEFAULT 0,
    resets          integer NOT NULL DEFAULT 0,  -- times it was truncated or replaced and read again from 0
    -- Bumped by every write: a writer checks that it is unchanged since it read the row, so two observers
    -- never both store the same bytes or both flush the same open chunk.
    version         bigint  NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, path)
);

CREATE INDEX observer_files_pending ON observer_files (user_id) WHERE pending IS NOT NULL;

-- Closed chunks waiting for LLM extraction (only used when an LLM is configured).
CREATE TABLE observer_backlog (
    id          bigserial PRIMARY KEY,
    user_id     text    NOT NULL,
    path        text    NOT NULL,
    chunk       jsonb   NOT NULL,     -- rendering for the model + deterministic digest (fallback)
    chars       integer NOT NULL,
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX observer_backlog_user_path ON observer_backlog (user_id, path, id);

-- One row per observing user: what `cems observe status` reports beyond the files.
CREATE TABLE observer_state (
    user_id       text PRIMARY KEY,
    last_run_at   timestamptz,
    last_error    text,
    last_error_at timestamptz,
    llm_failures  integer NOT NULL DEFAULT 0,
    llm_retry_at  timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
