//! A shared registry's tables, created and migrated by the tool in the URL's schema, with the
//! layout's version in `meta`. Sealed runs are kept immutable by the database itself:
//! triggers refuse to change a run line at all, or to delete one of a sealed run, or to
//! unseal, rename or delete a sealed run, whoever asks.

use postgres::Client;

/// The layout this build reads and writes.
pub(crate) const SCHEMA_VERSION: i32 = 1;

/// The SQLSTATE the triggers raise (a class of our own), so refusals read as refusals.
pub(crate) const SEALED_STATE: &str = "MCK01";

/// Version 1, `{s}` the quoted schema.
const LAYOUT_1: &str = r#"
CREATE TABLE {s}.addresses(
    address text PRIMARY KEY,
    local_name text NOT NULL,
    key text NOT NULL,
    digest text NOT NULL,
    state text NOT NULL,
    run text NOT NULL,
    updated_ms bigint NOT NULL,
    record text NOT NULL
);
CREATE TABLE {s}.runs(
    run text PRIMARY KEY,
    created_ms bigint NOT NULL,
    sealed_ms bigint
);
CREATE TABLE {s}.run_lines(
    id bigserial PRIMARY KEY,
    run text NOT NULL REFERENCES {s}.runs(run),
    address text NOT NULL,
    key text NOT NULL,
    digest text NOT NULL,
    state text NOT NULL,
    time_ms bigint NOT NULL,
    conflict_with text
);
CREATE INDEX run_lines_by_run ON {s}.run_lines(run, address);
CREATE INDEX run_lines_by_digest ON {s}.run_lines(digest);
CREATE TABLE {s}.running(
    address text PRIMARY KEY,
    run text NOT NULL,
    key text NOT NULL,
    host text NOT NULL,
    pid bigint NOT NULL,
    started_ms bigint NOT NULL,
    lease_until timestamptz NOT NULL
);
CREATE FUNCTION {s}.keep_sealed_runs() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_TABLE_NAME = 'runs' THEN
        IF OLD.sealed_ms IS NOT NULL THEN
            RAISE EXCEPTION 'run % is sealed: its record is immutable', OLD.run
                USING ERRCODE = 'MCK01';
        END IF;
        IF TG_OP = 'UPDATE' AND (NEW.run <> OLD.run OR NEW.created_ms <> OLD.created_ms) THEN
            RAISE EXCEPTION 'run %: only sealing changes a run', OLD.run USING ERRCODE = 'MCK01';
        END IF;
    ELSIF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'run lines are append-only (run %)', OLD.run USING ERRCODE = 'MCK01';
    ELSIF EXISTS (SELECT 1 FROM {s}.runs r
                  WHERE r.run = (CASE TG_OP WHEN 'DELETE' THEN OLD.run ELSE NEW.run END)
                    AND r.sealed_ms IS NOT NULL) THEN
        RAISE EXCEPTION 'run % is sealed: its record is immutable',
            (CASE TG_OP WHEN 'DELETE' THEN OLD.run ELSE NEW.run END) USING ERRCODE = 'MCK01';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$body$;
CREATE FUNCTION {s}.refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF EXISTS (SELECT 1 FROM {s}.runs WHERE sealed_ms IS NOT NULL) THEN
        RAISE EXCEPTION 'sealed runs are immutable: % cannot be emptied', TG_TABLE_NAME
            USING ERRCODE = 'MCK01';
    END IF;
    RETURN NULL;
END
$body$;
CREATE TRIGGER keep_sealed_runs BEFORE UPDATE OR DELETE ON {s}.runs
    FOR EACH ROW EXECUTE FUNCTION {s}.keep_sealed_runs();
CREATE TRIGGER keep_sealed_lines BEFORE INSERT OR UPDATE OR DELETE ON {s}.run_lines
    FOR EACH ROW EXECUTE FUNCTION {s}.keep_sealed_runs();
CREATE TRIGGER keep_sealed_runs_whole BEFORE TRUNCATE ON {s}.runs
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.refuse_truncate();
CREATE TRIGGER keep_sealed_lines_whole BEFORE TRUNCATE ON {s}.run_lines
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.refuse_truncate();
"#;

/// The steps from each version to the next; `LAYOUTS[v]` brings version `v` to `v + 1`.
const LAYOUTS: [&str; SCHEMA_VERSION as usize] = [LAYOUT_1];

/// Creates the schema's tables or brings them up to date, and says the version they are at (a
/// newer tool's layout stays as it is: the caller refuses it). One round trip when they are
/// current; otherwise under a session lock on the schema's name, so that hosts starting
/// together migrate once.
pub(crate) fn prepare(client: &mut Client, schema: &str) -> Result<i32, postgres::Error> {
    let s = quoted(schema);
    if let Some(found) = version(client, &s)?
        && found >= SCHEMA_VERSION
    {
        return Ok(found);
    }
    let lock = format!("mlir-cache-key schema {schema}");
    client.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", &[&lock])?;
    let result = migrate(client, &s);
    let unlocked = client.execute(
        "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
        &[&lock],
    );
    let found = result?;
    unlocked?;
    Ok(found)
}

/// The version in `meta`, or `None` when there is no schema or no `meta` yet.
fn version(client: &mut Client, s: &str) -> Result<Option<i32>, postgres::Error> {
    use postgres::error::SqlState;
    match client.query_opt(&format!("SELECT version FROM {s}.meta"), &[]) {
        Ok(row) => Ok(row.map(|r| r.get(0))),
        Err(e)
            if e.code() == Some(&SqlState::UNDEFINED_TABLE)
                || e.code() == Some(&SqlState::INVALID_SCHEMA_NAME) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn migrate(client: &mut Client, s: &str) -> Result<i32, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.meta(
             one boolean PRIMARY KEY DEFAULT true CHECK (one),
             version integer NOT NULL);"
    ))?;
    let found: Option<i32> = tx
        .query_opt(&format!("SELECT version FROM {s}.meta"), &[])?
        .map(|r| r.get(0));
    let from = found.unwrap_or(0);
    if from >= SCHEMA_VERSION {
        tx.commit()?;
        return Ok(from);
    }
    for step in &LAYOUTS[from as usize..] {
        tx.batch_execute(&step.replace("{s}", s))?;
    }
    tx.execute(
        &format!(
            "INSERT INTO {s}.meta(one, version) VALUES (true, $1)
             ON CONFLICT (one) DO UPDATE SET version = excluded.version"
        ),
        &[&SCHEMA_VERSION],
    )?;
    tx.commit()?;
    Ok(SCHEMA_VERSION)
}

/// The schema's name quoted for SQL (it is checked to be a plain identifier first).
pub(crate) fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}
