//! What differs between the backends: the timeline's backfill, PostgreSQL's indexes,
//! the choice of backend by URL; and sessions stored by an earlier binary.

use super::*;

use tvbo::store::{SessionQuery, SessionSort, TimelineBudget};

/// A history committed in a few changes, with regrets reported and estimated, for the
/// backfill test; its timeline at a budget small enough to downsample.
async fn history_for_backfill(store: &dyn Store) -> (Uuid, StoredTimeline) {
    let row = created(store, "backfilled", 1).await;
    for version in 0..5 {
        let mut change = ChangeSet::default();
        for i in 0..100 {
            let seq = version * 100 + i + 1;
            let mut o = observation(seq, None, seq as f64);
            o.value = (seq as f64 * 0.37).sin() * seq as f64;
            change.new_observations.push(o);
            let mut c = call("suggest", 0.1);
            c.dataset_size = (seq * 7919) % 101;
            change.calls.push(c);
        }
        change.response_time = Some(ResponseTimeSample {
            n: version,
            seconds: 1.0 + version as f64,
        });
        store.commit(row.id, version, &change, None).await.unwrap();
    }
    let timeline = store
        .timeline(row.id, &TimelineBudget::points(120))
        .await
        .unwrap();
    assert!(timeline.observations.len() < 500, "downsampled");
    (row.id, timeline)
}

/// The part of migration 0002 that summarises existing history.
fn backfill_sql(backend: &str) -> String {
    let path = format!(
        "{}/migrations/{backend}/0002_step_snapshots.sql",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    text[text.find("-- Existing history").unwrap()..].to_string()
}

/// Migration 0002's backfill summarises a history written before it exactly as commits
/// would have: with the summaries and counts wiped and rebuilt by it, the timeline is
/// the same.
async fn check_backfill_matches_commits(store: &dyn Store, wipe_and_backfill: impl AsyncFnOnce()) {
    let (id, before) = history_for_backfill(store).await;
    wipe_and_backfill().await;
    let after = store
        .timeline(id, &TimelineBudget::points(120))
        .await
        .unwrap();
    assert_eq!(after, before);
}

const WIPE: &str =
    "DELETE FROM timeline_buckets; UPDATE sessions SET call_count = 0, sample_count = 0;";

#[tokio::test]
async fn the_sqlite_backfill_matches_commits() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store = SqliteStore::connect(&url, &PoolSettings::default())
        .await
        .unwrap();
    let pool = store.pool().clone();
    check_backfill_matches_commits(&store, async || {
        let sql = format!("{WIPE}{}", backfill_sql("sqlite"));
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .unwrap();
    })
    .await;
    store.pool().close().await;
}

/// Every `session_id` column has the collation of `sessions.id`, and the session row's
/// counts (a correlated subquery per child table) look the session up in an index: with a
/// collation that differs, PostgreSQL compared in the other one, which no index serves,
/// and read every session's rows at every call, so a call's cost grew with the whole
/// database's history. With sequential scans switched off the planner shows the index it
/// would use, and the session must be its key (an `Index Cond`), not a filter over all rows.
#[tokio::test]
async fn postgres_joins_on_session_id_use_the_indexes() {
    let Some(db) = common::PgDatabase::create("postgres_joins_on_session_id_use_the_indexes").await
    else {
        return;
    };
    let store = PostgresStore::connect(&db.url, &PoolSettings::default())
        .await
        .unwrap();
    let pool = store.pool().clone();
    let collations: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT table_name::text, collation_name::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND (column_name = 'session_id' \
         OR (table_name = 'sessions' AND column_name = 'id')) ORDER BY table_name",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(collations.len() >= 8, "{collations:?}");
    for (table, collation) in &collations {
        assert_eq!(collation.as_deref(), Some("C"), "{table}: {collations:?}");
    }
    let mut connection = pool.acquire().await.unwrap();
    sqlx::query("SET enable_seqscan = off")
        .execute(&mut *connection)
        .await
        .unwrap();
    for (table, condition) in [
        ("observations", "TRUE"),
        ("observations", "o.active"),
        ("suggestions", "o.status = 'pending'"),
    ] {
        let sql = format!(
            "EXPLAIN SELECT s.id, (SELECT COUNT(*) FROM {table} o \
             WHERE o.session_id = s.id AND {condition}) FROM sessions s WHERE s.id = 'x'"
        );
        let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_all(&mut *connection)
            .await
            .unwrap();
        let keyed = plan
            .iter()
            .any(|line| line.contains("Index Cond") && line.contains("session_id = s.id"));
        let plan = plan.join("\n");
        assert!(keyed, "{table} where {condition}:\n{plan}");
    }
    drop(connection);
    store.pool().close().await;
}

#[tokio::test]
async fn the_postgres_backfill_matches_commits() {
    let Some(db) = common::PgDatabase::create("the_postgres_backfill_matches_commits").await else {
        return;
    };
    let store = PostgresStore::connect(&db.url, &PoolSettings::default())
        .await
        .unwrap();
    let pool = store.pool().clone();
    check_backfill_matches_commits(&store, async || {
        let sql = format!("{WIPE}{}", backfill_sql("postgres"));
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .unwrap();
    })
    .await;
    store.pool().close().await;
}

/// The parts of the session listing's migrations that fill in the columns of existing
/// sessions (SQLite's 0009 and 0013, PostgreSQL's 0010 and 0014), after wiping them.
fn listing_backfill_sql(backend: &str) -> String {
    let (listing, regret) = match backend {
        "sqlite" => ("0009_session_listing.sql", "0013_session_regret.sql"),
        _ => ("0010_session_listing.sql", "0014_session_regret.sql"),
    };
    let backfill = |file: &str, end: &str| {
        let path = format!("{}/migrations/{backend}/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        let start = text.find("-- Existing sessions").unwrap();
        text[start..text.find(end).unwrap()].to_string()
    };
    format!(
        "UPDATE sessions SET algorithm = NULL, observation_count = 0, \
         last_activity_micros = 0, last_activity_t = NULL, regret_total = 0, \
         regret_count = 0, average_regret = NULL; {} {}",
        backfill(listing, "-- A tenant's sessions"),
        backfill(regret, "CREATE INDEX")
    )
}

/// What a listing says of each session in every order: position, activity, id.
async fn listings(store: &dyn Store) -> Vec<String> {
    let mut seen = Vec::new();
    for sort in SessionSort::ALL {
        for algorithm in [None, Some("gp-ucb")] {
            let query = SessionQuery {
                sort,
                algorithm,
                ..SessionQuery::newest_first(100, None, None)
            };
            for listed in store.list_sessions(&query).await.unwrap() {
                seen.push(format!(
                    "{sort:?} {algorithm:?} {:?} {} {:?} {}",
                    listed.cursor.key,
                    listed.last_activity_at,
                    listed.last_activity_t,
                    listed.cursor.id
                ));
            }
        }
    }
    seen
}

/// The listing migration's backfill gives existing sessions the columns commits keep: with
/// them wiped and filled in again, every listing reads the same.
async fn check_listing_backfill_matches_commits(
    store: &dyn Store,
    wipe_and_backfill: impl AsyncFnOnce(),
) {
    history_for_backfill(store).await;
    let idle = created(store, "idle", 7).await;
    let before = listings(store).await;
    assert!(before.iter().any(|l| l.contains(&idle.id.to_string())));
    wipe_and_backfill().await;
    assert_eq!(listings(store).await, before);
}

#[tokio::test]
async fn the_sqlite_listing_backfill_matches_commits() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store = SqliteStore::connect(&url, &PoolSettings::default())
        .await
        .unwrap();
    let pool = store.pool().clone();
    check_listing_backfill_matches_commits(&store, async || {
        sqlx::raw_sql(sqlx::AssertSqlSafe(listing_backfill_sql("sqlite")))
            .execute(&pool)
            .await
            .unwrap();
    })
    .await;
    store.pool().close().await;
}

#[tokio::test]
async fn the_postgres_listing_backfill_matches_commits() {
    let test = "the_postgres_listing_backfill_matches_commits";
    let Some(db) = common::PgDatabase::create(test).await else {
        return;
    };
    let store = PostgresStore::connect(&db.url, &PoolSettings::default())
        .await
        .unwrap();
    let pool = store.pool().clone();
    check_listing_backfill_matches_commits(&store, async || {
        sqlx::raw_sql(sqlx::AssertSqlSafe(listing_backfill_sql("postgres")))
            .execute(&pool)
            .await
            .unwrap();
    })
    .await;
    store.pool().close().await;
}

/// `open_store` opens SQLite for `sqlite:` URLs, PostgreSQL for `postgres://` and
/// `postgresql://`, and rejects other schemes.
#[tokio::test]
async fn open_store_picks_the_backend_by_scheme() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    open_store(&sqlite, &PoolSettings::default())
        .await
        .unwrap()
        .ping()
        .await
        .unwrap();
    let unsupported = open_store("mysql://root@127.0.0.1/tvbo", &PoolSettings::default()).await;
    assert!(unsupported.is_err());
    let Some(db) = common::PgDatabase::create("open_store_picks_the_backend_by_scheme").await
    else {
        return;
    };
    let (_, rest) = db.url.split_once("://").unwrap();
    for scheme in ["postgres", "postgresql"] {
        let store = open_store(&format!("{scheme}://{rest}"), &PoolSettings::default())
            .await
            .unwrap();
        store.ping().await.unwrap();
    }
}

/// Stored data is a contract. `tests/fixtures/stored/sessions.sqlite3` holds a session
/// of every algorithm, 20 suggest/observe rounds each, written by an earlier binary (the
/// commit named in the fixture's README). Under today's code every one still reads (the
/// session, its model, steps, timeline, regret and best) and continues (a suggest and an
/// observe): a change that would make an old row unreadable fails here. Set
/// `TVBO_WRITE_STORED_FIXTURE=1` to write the fixture anew, only with a deliberate,
/// migrated format change (and name the commit in the README).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_stored_by_an_earlier_binary_read_and_continue() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stored/sessions.sqlite3");
    if std::env::var_os("TVBO_WRITE_STORED_FIXTURE").is_some() {
        write_stored_fixture(&fixture).await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("tvbo.db");
    std::fs::copy(&fixture, &copy).expect("the fixture exists");
    let server = common::TestServer::start_on(copy).await;
    let (status, list) = server.get("/v1/sessions?limit=100").await;
    assert_eq!(status, 200, "{list}");
    assert!(
        list["unreadable"].as_array().is_none_or(Vec::is_empty),
        "{list}"
    );
    let sessions = list["sessions"].as_array().unwrap();
    let mut names: Vec<&str> = sessions
        .iter()
        .map(|s| s["algorithm"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = tvbo_bench::algorithms::session_algorithms()
        .map(|a| a.name)
        .collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    for session in sessions {
        let id = session["id"].as_str().unwrap();
        let algorithm = &session["algorithm"]["name"];
        for read in ["", "/model", "/steps", "/timeline", "/regret", "/best"] {
            let (status, body) = server.get(&format!("/v1/sessions/{id}{read}")).await;
            assert_eq!(status, 200, "{algorithm} {read}: {body}");
        }
        // The listing's migration filled in what its filters, orders and summary read.
        let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
        let summary = &session["summary"];
        for count in ["reported_regrets", "estimated_regrets"] {
            assert_eq!(summary[count], timeline[count], "{algorithm} {count}");
        }
        let newest = timeline["steps"].as_array().unwrap().last().unwrap();
        assert_eq!(summary["last_activity_t"], newest["t"], "{algorithm}");
        let (_, same) = server
            .get(&format!(
                "/v1/sessions?algorithm={}",
                algorithm.as_str().unwrap()
            ))
            .await;
        assert_eq!(
            same["sessions"][0]["id"], session["id"],
            "{algorithm}: {same}"
        );
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/suggestions"),
                &json!({"t": 100.0}),
            )
            .await;
        assert_eq!(status, 201, "{algorithm}: {body}");
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": body["suggestions"][0]["id"], "value": 0.5, "t": 100.5}),
            )
            .await;
        assert_eq!(status, 201, "{algorithm}: {body}");
    }
    server.stop().await;
}

/// Writes the fixture of [`sessions_stored_by_an_earlier_binary_read_and_continue`]: one
/// client-time session per algorithm (the prior-selection rules over 8 arms with two
/// kernel priors and a known noise), 20 rounds on a smooth drifting function.
async fn write_stored_fixture(path: &std::path::Path) {
    for stale in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", path.display()));
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let server = common::TestServer::start_on(path.to_path_buf()).await;
    for entry in tvbo_bench::algorithms::session_algorithms() {
        let algorithm = entry.request(None);
        let body = if entry.needs_priors() {
            let arms: Vec<_> = (0..8)
                .map(|i| json!({"name": format!("a{i}"), "params": {"x": f64::from(i) / 7.0, "y": 0.5}}))
                .collect();
            let mut algorithm = algorithm;
            algorithm["priors"] = json!([
                {"kernel": "rbf", "lengthscale": 0.3},
                {"kernel": "matern52", "lengthscale": 0.6, "variance": 2.0}
            ]);
            json!({
                "name": entry.name,
                "parameters": [{"name": "x", "low": 0, "high": 1}, {"name": "y", "low": 0, "high": 1}],
                "arms": arms,
                "algorithm": algorithm,
                "model": {"noise": 0.01},
                "time": {"source": "client"},
                "seed": 1,
            })
        } else {
            let mut body = common::client_session(entry.name, 1);
            body["algorithm"] = algorithm;
            body
        };
        let id = server.create(body).await;
        for round in 0..20 {
            let t = f64::from(round);
            let (status, answer) = server
                .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
                .await;
            assert_eq!(status, 201, "{}: {answer}", entry.name);
            let suggestion = &answer["suggestions"][0];
            let (x, y) = (
                suggestion["params"]["x"].as_f64().unwrap(),
                suggestion["params"]["y"].as_f64().unwrap(),
            );
            let value = (-((x - 0.5 - 0.01 * t).powi(2) + (y - 0.4).powi(2)) / 0.1).exp();
            let (status, answer) = server
                .post(
                    &format!("/v1/sessions/{id}/observations"),
                    &json!({"suggestion_id": suggestion["id"], "value": value, "t": t + 0.5}),
                )
                .await;
            assert_eq!(status, 201, "{}: {answer}", entry.name);
        }
    }
    server.stop().await;
    // The store's writer thread closes its connection, and with it checkpoints the
    // write-ahead log into the file, shortly after the pool closes.
    let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
    for _ in 0..100 {
        if !wal.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        !wal.exists(),
        "the write-ahead log was not folded into the fixture"
    );
}

/// A rollback of one release: the database holds a migration of a newer release than this
/// binary (version 9000, recorded as sqlx records one); the store opens on it, reads its
/// sessions and commits on. A newer migration left half applied (`success` false) is
/// refused, as sqlx refuses any.
async fn check_a_newer_releases_schema_is_accepted<S: Store>(
    connect: impl AsyncFn() -> Result<S, tvbo::store::StoreError>,
    record: impl AsyncFn(bool),
) {
    let store = connect().await.unwrap();
    let row = created(&store, "before the rollback", 1).await;
    drop(store);
    record(true).await;
    let store = connect()
        .await
        .expect("a newer release's schema is accepted");
    let mut change = ChangeSet::default();
    change.new_observations.push(observation(1, None, 1.0));
    store.commit(row.id, 0, &change, None).await.unwrap();
    assert_eq!(
        store
            .get_session(row.id)
            .await
            .unwrap()
            .unwrap()
            .observation_count,
        1
    );
    drop(store);
    record(false).await;
    let refused = connect()
        .await
        .err()
        .expect("a half-applied migration is refused");
    assert!(refused.to_string().contains("9001"), "{refused}");
}

#[tokio::test]
async fn sqlite_opens_on_a_newer_releases_schema() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let connect = async || SqliteStore::connect(&url, &PoolSettings::default()).await;
    check_a_newer_releases_schema_is_accepted(connect, async |success| {
        let store = SqliteStore::connect(&url, &PoolSettings::default()).await;
        let pool = match store {
            Ok(store) => store.pool().clone(),
            // Already refused (a dirty row is in): write through a plain connection.
            Err(_) => sqlx::SqlitePool::connect(&url).await.unwrap(),
        };
        let version = if success { 9000 } else { 9001 };
        let sql = common::newer_migration_row(version, success, "X'00'");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    })
    .await;
}

#[tokio::test]
async fn postgres_opens_on_a_newer_releases_schema() {
    let Some(db) = common::PgDatabase::create("postgres_opens_on_a_newer_releases_schema").await
    else {
        return;
    };
    let connect = async || PostgresStore::connect(&db.url, &PoolSettings::default()).await;
    check_a_newer_releases_schema_is_accepted(connect, async |success| {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let version = if success { 9000 } else { 9001 };
        let sql = common::newer_migration_row(version, success, "'\\x00'::bytea");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    })
    .await;
}
