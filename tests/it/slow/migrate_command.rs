//! Migrations run apart from the replicas, as a Kubernetes Job or an init step would run
//! them, on both backends: `tvbo migrate --check` reports what a new database lacks
//! (exit 1) and applies nothing; a server started with `TVBO_MIGRATE=require` refuses
//! that database, naming the command; `tvbo migrate` applies the migrations, after which
//! `--check` passes (exit 0) and the `require` server starts and answers. And a rollback:
//! once the database holds a migration of a newer release, this binary's server (either
//! way of migrating) still starts and answers, and `--check` still passes.

use crate::common;

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `tvbo ARGS` on `database_url`, to its end.
fn tvbo(database_url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .expect("the tvbo binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A server on `database_url` with `TVBO_MIGRATE=migrate` (`apply` or `require`): whether
/// it answered `/readyz` (then it is stopped), or its exit and what it said.
async fn serve(database_url: &str, migrate: &str) -> Result<(), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("TVBO_BIND", format!("127.0.0.1:{port}"))
        .env("TVBO_MIGRATE", migrate)
        .env("TVBO_DRAIN_PERIOD", "0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tvbo binary starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            return Err(format!("{status}: {}", stderr(&output)));
        }
        if let Ok(r) = reqwest::get(format!("http://127.0.0.1:{port}/readyz")).await
            && r.status().is_success()
        {
            child.kill().unwrap();
            child.wait().unwrap();
            return Ok(());
        }
        assert!(
            Instant::now() < deadline,
            "the server neither started nor exited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn check_migrations_apart_from_the_replicas(
    database_url: &str,
    record_newer: impl AsyncFnOnce(),
) {
    let checked = tvbo(database_url, &["migrate", "--check"], &[]);
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert!(
        stderr(&checked).contains("lacks migrations [1, 2,"),
        "{}",
        stderr(&checked)
    );
    let refused = serve(database_url, "require").await.unwrap_err();
    assert!(
        refused.contains("lacks this binary's migrations") && refused.contains("tvbo migrate"),
        "{refused}"
    );
    let applied = tvbo(database_url, &["migrate"], &[]);
    assert!(applied.status.success(), "{}", stderr(&applied));
    assert!(
        stderr(&applied).contains("applying migrations [1, 2,"),
        "{}",
        stderr(&applied)
    );
    let checked = tvbo(database_url, &["migrate", "--check"], &[]);
    assert!(checked.status.success(), "{}", stderr(&checked));
    serve(database_url, "require").await.unwrap();
    // Rolled back from a release with a migration of its own.
    record_newer().await;
    let checked = tvbo(database_url, &["migrate", "--check"], &[]);
    assert!(checked.status.success(), "{}", stderr(&checked));
    serve(database_url, "require").await.unwrap();
    serve(database_url, "apply").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_migrations_run_apart_from_the_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    check_migrations_apart_from_the_replicas(&url, async || {
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(common::newer_migration_row(
            9000, true, "X'00'",
        )))
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrations_run_apart_from_the_replicas() {
    let Some(db) =
        common::PgDatabase::create("postgres_migrations_run_apart_from_the_replicas").await
    else {
        return;
    };
    check_migrations_apart_from_the_replicas(&db.url, async || {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(common::newer_migration_row(
            9000,
            true,
            "'\\x00'::bytea",
        )))
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    })
    .await;
}
