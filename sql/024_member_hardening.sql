-- What an ordinary member could still do on a team server with raw SQL on their own login (issue 27, fourth
-- pass), closed where the database can close it. Names are schema-qualified under search_path =
-- pg_catalog, <schema>, pg_temp, as in 017-023.

-- 1. A pinned shared memory keeps the text its team's admin pinned. A pinned shared memory opens every
--    teammate's session ("pinned by <admin>"); its author could still rewrite it through
--    cems_update_memories, and the new text went out under the admin's name. A change of its text, title,
--    context or category is now for a privileged session or an admin of its team; its author may unpin
--    nothing and rewrite nothing while it is pinned (an admin unpins it first). The refusal is the record:
--    a refused statement leaves no row to audit.
CREATE OR REPLACE FUNCTION {{SCHEMA}}.cems_guard_authorship() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, {{SCHEMA}}, pg_temp AS $$
BEGIN
    IF {{SCHEMA}}.cems_privileged() THEN
        RETURN NEW;
    END IF;
    IF OLD.pinned AND NOT (OLD.team_id = ANY ({{SCHEMA}}.cems_admin_teams()))
       AND (NEW.content, NEW.content_hash, NEW.context, NEW.title, NEW.category)
           IS DISTINCT FROM (OLD.content, OLD.content_hash, OLD.context, OLD.title, OLD.category) THEN
        RAISE EXCEPTION 'memory % is pinned by an admin of team %: only they change its text', OLD.id, OLD.team_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.user_id = {{SCHEMA}}.cems_user() THEN
        RETURN NEW;
    END IF;
    IF (NEW.content, NEW.content_hash, NEW.context, NEW.title, NEW.tags, NEW.category, NEW.source,
        NEW.source_ref, NEW.created_at, NEW.expires_at, NEW.merged_into, NEW.merged_from)
       IS DISTINCT FROM
       (OLD.content, OLD.content_hash, OLD.context, OLD.title, OLD.tags, OLD.category, OLD.source,
        OLD.source_ref, OLD.created_at, OLD.expires_at, OLD.merged_into, OLD.merged_from) THEN
        RAISE EXCEPTION 'memory % is %''s: only its author changes its text, provenance or dates', OLD.id, OLD.user_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

-- Last: every SECURITY DEFINER function of the schema (those above included) runs with messages below
-- WARNING kept from its caller and the planner's debug output off. A member who SET client_min_messages =
-- log and debug_print_plan = on read the plan trees of the statements inside the functions, and with them
-- row estimates the planner takes from pg_statistic over every user's rows (how many chunks hold a word,
-- a tag, a team). A caller cannot override a function's SET clause. The log_*_stats and log_statement
-- settings that would also print plans are a superuser's to set.
DO $$
DECLARE
    fn text;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure::text FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef
                AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass
                                AND e.objid = p.oid AND e.deptype = 'e')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET client_min_messages = warning', fn);
        EXECUTE format('ALTER FUNCTION %s SET debug_print_plan = off', fn);
        EXECUTE format('ALTER FUNCTION %s SET debug_print_parse = off', fn);
        EXECUTE format('ALTER FUNCTION %s SET debug_print_rewritten = off', fn);
    END LOOP;
END
$$;
