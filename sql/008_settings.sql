-- Live settings (`cems config set`): stored per user and per team, read by every search (the warm search
-- server included) without a restart. Precedence: environment > user > team > config.toml > default.
-- `value` is the JSON of a value already validated by the Settings model of the CEMS that stored it.
CREATE TABLE stored_settings (
    owner_kind text NOT NULL CHECK (owner_kind IN ('user', 'team')),
    owner      text NOT NULL,
    key        text NOT NULL,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text NOT NULL,
    PRIMARY KEY (owner_kind, owner, key)
);

-- One counter for every change: a search asks it (one row, one index-free read) before each request and
-- reloads the rows only when it moved. A statement trigger, so a multi-row change counts once.
CREATE TABLE stored_settings_version (
    id      integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO stored_settings_version (id, version) VALUES (1, 0);

CREATE FUNCTION stored_settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE stored_settings_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER stored_settings_changed AFTER INSERT OR UPDATE OR DELETE ON stored_settings
    FOR EACH STATEMENT EXECUTE FUNCTION stored_settings_changed();
