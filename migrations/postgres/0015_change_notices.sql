-- Notices of committed changes (src/store/changes.rs; docs/events.md, "The stream"): a
-- session created or whose version moved, and events stored, notify the channel
-- `tvbo_changes` in the writing transaction, so PostgreSQL delivers them to every
-- replica's listener when, and only if, the transaction commits. The streams then sleep
-- until a notice concerns them instead of polling. No table changes: the release before
-- runs on this schema unchanged (its replicas poll; the notices go unheard).
--
-- Payload: `<session id> v<version> <tenant>` (the session's version after the change),
-- `<session id> e <tenant>` (events were stored), or `<key id> k <tenant>` for an API key
-- revoked, changed or deleted (by a replica or by `tvbo keys`), which ends its streams.
-- A replica also drops the snapshot it kept of a session that another replica changed
-- (src/session/service.rs). PostgreSQL sends identical notices of one transaction once.
CREATE FUNCTION tvbo_notify_session_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tvbo_changes', NEW.id || ' v' || NEW.version || ' ' || NEW.tenant);
    RETURN NULL;
END
$$;

CREATE TRIGGER sessions_notify_change
    AFTER INSERT OR UPDATE OF version ON sessions
    FOR EACH ROW EXECUTE FUNCTION tvbo_notify_session_change();

CREATE FUNCTION tvbo_notify_events_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tvbo_changes', NEW.session_id || ' e '
        || COALESCE((SELECT tenant FROM sessions WHERE id = NEW.session_id), ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify_stored
    AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION tvbo_notify_events_stored();

CREATE FUNCTION tvbo_notify_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tvbo_changes', OLD.id || ' k ' || OLD.tenant);
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_notify_change
    AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION tvbo_notify_key_change();
