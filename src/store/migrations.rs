//! The schema migrations of both backends, embedded in the binary (`migrations/sqlite`,
//! `migrations/postgres`) and run by sqlx's `Migrator` as `sqlx::migrate!` ran them: the
//! same versions, descriptions and checksums (SHA-384 of each file's text), so that a
//! database migrated by an earlier binary reads on. Listed here, not found by a macro at
//! compile time: the macro needs sqlx's compile-time machinery (a second SQLite and sqlx
//! built for the compiler), the longest part of a clean build. A test checks that every
//! file of the directories is listed.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, SqlSafeStr};

/// A migration file: its name (`<version>_<description>.sql`) and its text.
type MigrationFile = (&'static str, &'static str);

const SQLITE: &[MigrationFile] = &[
    (
        "0001_initial.sql",
        include_str!("../../migrations/sqlite/0001_initial.sql"),
    ),
    (
        "0002_step_snapshots.sql",
        include_str!("../../migrations/sqlite/0002_step_snapshots.sql"),
    ),
    (
        "0003_api_keys.sql",
        include_str!("../../migrations/sqlite/0003_api_keys.sql"),
    ),
    (
        "0004_response_time_summaries.sql",
        include_str!("../../migrations/sqlite/0004_response_time_summaries.sql"),
    ),
    (
        "0005_api_key_rate.sql",
        include_str!("../../migrations/sqlite/0005_api_key_rate.sql"),
    ),
    (
        "0006_sessions_by_name.sql",
        include_str!("../../migrations/sqlite/0006_sessions_by_name.sql"),
    ),
    (
        "0007_ended_runs.sql",
        include_str!("../../migrations/sqlite/0007_ended_runs.sql"),
    ),
    (
        "0008_run_metadata.sql",
        include_str!("../../migrations/sqlite/0008_run_metadata.sql"),
    ),
    (
        "0009_session_listing.sql",
        include_str!("../../migrations/sqlite/0009_session_listing.sql"),
    ),
    (
        "0010_events.sql",
        include_str!("../../migrations/sqlite/0010_events.sql"),
    ),
    (
        "0011_webhooks.sql",
        include_str!("../../migrations/sqlite/0011_webhooks.sql"),
    ),
    (
        "0012_webhook_breaker.sql",
        include_str!("../../migrations/sqlite/0012_webhook_breaker.sql"),
    ),
];

const POSTGRES: &[MigrationFile] = &[
    (
        "0001_initial.sql",
        include_str!("../../migrations/postgres/0001_initial.sql"),
    ),
    (
        "0002_step_snapshots.sql",
        include_str!("../../migrations/postgres/0002_step_snapshots.sql"),
    ),
    (
        "0003_api_keys.sql",
        include_str!("../../migrations/postgres/0003_api_keys.sql"),
    ),
    (
        "0004_response_time_summaries.sql",
        include_str!("../../migrations/postgres/0004_response_time_summaries.sql"),
    ),
    (
        "0005_session_id_collation.sql",
        include_str!("../../migrations/postgres/0005_session_id_collation.sql"),
    ),
    (
        "0006_api_key_rate.sql",
        include_str!("../../migrations/postgres/0006_api_key_rate.sql"),
    ),
    (
        "0007_sessions_by_name.sql",
        include_str!("../../migrations/postgres/0007_sessions_by_name.sql"),
    ),
    (
        "0008_ended_runs.sql",
        include_str!("../../migrations/postgres/0008_ended_runs.sql"),
    ),
    (
        "0009_run_metadata.sql",
        include_str!("../../migrations/postgres/0009_run_metadata.sql"),
    ),
    (
        "0010_session_listing.sql",
        include_str!("../../migrations/postgres/0010_session_listing.sql"),
    ),
    (
        "0011_events.sql",
        include_str!("../../migrations/postgres/0011_events.sql"),
    ),
    (
        "0012_webhooks.sql",
        include_str!("../../migrations/postgres/0012_webhooks.sql"),
    ),
    (
        "0013_webhook_breaker.sql",
        include_str!("../../migrations/postgres/0013_webhook_breaker.sql"),
    ),
];

/// SQLite's migrations.
pub(crate) fn sqlite() -> Migrator {
    migrator(SQLITE)
}

/// PostgreSQL's migrations.
pub(crate) fn postgres() -> Migrator {
    migrator(POSTGRES)
}

/// The migrator of `files`, each read as sqlx reads a migration directory: version and
/// description from the name (`_` as spaces), outside a transaction if the text starts
/// with `-- no-transaction`.
fn migrator(files: &[MigrationFile]) -> Migrator {
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(name, sql)| {
                let (version, description) = name
                    .strip_suffix(".sql")
                    .and_then(|stem| stem.split_once('_'))
                    .expect("migration files are named <version>_<description>.sql");
                Migration::new(
                    version
                        .parse()
                        .expect("a migration's version is an integer"),
                    Cow::Owned(description.replace('_', " ")),
                    MigrationType::Simple,
                    AssertSqlSafe(sql).into_sql_str(),
                    sql.starts_with("-- no-transaction"),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.sql` file of a backend's directory is listed, in order, and read as sqlx's
    /// directory resolver reads it (version, description, checksum).
    #[test]
    fn every_migration_file_is_embedded_as_sqlx_reads_it() {
        for (dir, files) in [
            ("migrations/sqlite", SQLITE),
            ("migrations/postgres", POSTGRES),
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            let mut on_disk: Vec<String> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".sql"))
                .collect();
            on_disk.sort();
            let listed: Vec<&str> = files.iter().map(|(name, _)| *name).collect();
            assert_eq!(
                listed, on_disk,
                "{dir}: list every migration file in store/migrations.rs"
            );
            let resolved = sqlx::migrate::resolve_blocking(&path).unwrap();
            let embedded = migrator(files);
            assert_eq!(embedded.iter().len(), resolved.len());
            for (ours, (theirs, _)) in embedded.iter().zip(&resolved) {
                assert_eq!(ours.version, theirs.version);
                assert_eq!(ours.description, theirs.description);
                assert_eq!(
                    ours.checksum, theirs.checksum,
                    "{dir}: version {}",
                    ours.version
                );
                assert_eq!(ours.no_tx, theirs.no_tx);
            }
        }
    }
}
