//! The schema migrations of both backends, embedded in the binary (`migrations/sqlite`,
//! `migrations/postgres`) and run by sqlx's `Migrator` as `sqlx::migrate!` ran them: the
//! same versions, descriptions and checksums (SHA-384 of each file's text), so that a
//! database migrated by an earlier binary reads on. Listed here, not found by a macro at
//! compile time: the macro needs sqlx's compile-time machinery (a second SQLite and sqlx
//! built for the compiler), the longest part of a clean build. A test checks that every
//! file of the directories is listed.

use std::borrow::Cow;

use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, SqlSafeStr};

use super::{Migrations, StoreError};

/// The table in which sqlx records the migrations applied.
const TABLE: &str = "_sqlx_migrations";

/// Applies `migrator`'s migrations to the database of `pool` (sqlx's lock serialising
/// concurrent replicas); under [`Migrations::Require`], checks that none is missing
/// instead. A database a newer release migrated further, whose applied
/// migrations include versions above this binary's newest, is accepted with a warning,
/// so that a rollback to the release before starts (docs/operations.md, "Upgrades and
/// rollbacks": each migration only adds, and what it replaces goes a release later). A
/// migration applied but unknown below this binary's newest, one whose text differs from
/// this binary's, or one left half applied (sqlx's `dirty`) is refused, as before.
pub(crate) async fn run<DB>(
    mut migrator: Migrator,
    pool: &sqlx::Pool<DB>,
    mode: Migrations,
) -> Result<(), StoreError>
where
    DB: sqlx::Database,
    DB::Connection: Migrate,
{
    let state = state(&migrator, pool).await?;
    if !state.newer.is_empty() {
        tracing::warn!(
            newer = ?state.newer,
            newest_known = migrator.iter().map(|m| m.version).max(),
            "the database holds migrations of a newer release than this binary: starting on \
             its schema as it is (a rollback of one release is supported; run the newer \
             release again before rolling back further)"
        );
        migrator.set_ignore_missing(true);
    }
    match mode {
        Migrations::Require if !state.pending.is_empty() => Err(StoreError::MigrationsPending {
            pending: state.pending,
        }),
        Migrations::Require => Ok(()),
        Migrations::Apply => Ok(migrator.run(pool).await?),
    }
}

/// Where a database stands against a binary's migrations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MigrationState {
    /// The binary's migrations the database lacks, oldest first.
    pub pending: Vec<i64>,
    /// Migrations the database has above the binary's newest (a newer release's).
    pub newer: Vec<i64>,
}

/// Where the database of `pool` stands against `migrator` (its migrations table made if
/// missing); an error for an applied migration unknown below the binary's newest.
async fn state<DB>(migrator: &Migrator, pool: &sqlx::Pool<DB>) -> Result<MigrationState, StoreError>
where
    DB: sqlx::Database,
    DB::Connection: Migrate,
{
    let applied: Vec<i64> = {
        let mut connection = pool.acquire().await?;
        connection.ensure_migrations_table(TABLE).await?;
        if let Some(version) = connection.dirty_version(TABLE).await? {
            return Err(MigrateError::Dirty(version).into());
        }
        connection
            .list_applied_migrations(TABLE)
            .await?
            .iter()
            .map(|m| m.version)
            .collect()
    };
    let newer = newer_than_known(migrator, &applied)?;
    let pending = migrator
        .iter()
        .map(|m| m.version)
        .filter(|version| !applied.contains(version))
        .collect();
    Ok(MigrationState { pending, newer })
}

/// The versions of `applied` above `migrator`'s newest (a newer release's); an error
/// naming the first applied version below it that `migrator` does not know.
fn newer_than_known(migrator: &Migrator, applied: &[i64]) -> Result<Vec<i64>, MigrateError> {
    let newest = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    let mut newer = Vec::new();
    for &version in applied {
        if version > newest {
            newer.push(version);
        } else if !migrator.iter().any(|m| m.version == version) {
            return Err(MigrateError::VersionMissing(version));
        }
    }
    Ok(newer)
}

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
    (
        "0013_session_regret.sql",
        include_str!("../../migrations/sqlite/0013_session_regret.sql"),
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
    (
        "0014_session_regret.sql",
        include_str!("../../migrations/postgres/0014_session_regret.sql"),
    ),
    (
        "0015_change_notices.sql",
        include_str!("../../migrations/postgres/0015_change_notices.sql"),
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

    /// Versions above the newest known are a newer release's; an unknown one below it is
    /// refused, naming it.
    #[test]
    fn only_migrations_newer_than_every_known_one_are_tolerated() {
        let migrator = sqlite();
        let newest = SQLITE.len() as i64;
        let known: Vec<i64> = (1..=newest).collect();
        assert_eq!(
            newer_than_known(&migrator, &known).unwrap(),
            Vec::<i64>::new()
        );
        let with_newer = [known.clone(), vec![newest + 1, newest + 7]].concat();
        assert_eq!(
            newer_than_known(&migrator, &with_newer).unwrap(),
            [newest + 1, newest + 7]
        );
        let with_unknown = [vec![0], known].concat();
        assert!(matches!(
            newer_than_known(&migrator, &with_unknown),
            Err(MigrateError::VersionMissing(0))
        ));
    }

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
