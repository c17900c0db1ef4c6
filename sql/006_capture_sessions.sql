-- Capture: one running record per agent session (what was asked, done, blocked, what failed), and the
-- `context` memory rendered from it. Both triggers (the Stop hook's worker and the observer) update it in
-- the transaction that advances the transcript's read offset, so each turn is folded in exactly once and a
-- session has one context memory, kept up to date, instead of one per turn.
CREATE TABLE capture_sessions (
    user_id     text  NOT NULL,
    session_id  text  NOT NULL,
    record      jsonb NOT NULL,
    memory_id   uuid,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, session_id)
);
