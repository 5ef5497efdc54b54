//! SQLite at the edges, with the real binary (docs/operations.md):
//!
//! - after a clean stop (SIGTERM) the database file alone holds every acknowledged
//!   observation: the write-ahead log was checkpointed when the pool closed;
//! - a database created new, or found empty (0 bytes), is announced with a warning;
//! - a file damaged past page 1 is refused at start, with a message that says what to do;
//! - `tvbo backup PATH` writes a consistent copy while the server runs, refuses to
//!   overwrite, and sends PostgreSQL users to pg_dump.

use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A `tvbo serve` child on a SQLite file, with its log lines collected.
struct Server {
    child: Child,
    base: Option<String>,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts the binary on `sqlite://path`; waits until it listens or exits.
    fn start(path: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tvbo"))
            .arg("serve")
            .env("TVBO_BIND", "127.0.0.1:0")
            .env("DATABASE_URL", format!("sqlite://{}", path.display()))
            // Keys are tested in tests/it/access.rs; this test is about the process.
            .env("TVBO_AUTH", "off")
            // Stopped at once: no balancer to drain for (tests/it/slow/drain.rs).
            .env("TVBO_DRAIN_PERIOD", "0")
            .env("TVBO_LOG_FORMAT", "json")
            .env("RUST_LOG", "warn,tvbo=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the tvbo binary starts");
        let logs = Arc::new(Mutex::new(Vec::new()));
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let logs = logs.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[tvbo] {line}");
                    logs.lock().unwrap().push(line);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut server = Server {
            child,
            base: None,
            logs,
        };
        while Instant::now() < deadline {
            let address = server.logs.lock().unwrap().iter().find_map(|line| {
                let log: Value = serde_json::from_str(line).ok()?;
                (log["fields"]["message"] == "tvbo listening")
                    .then(|| log["fields"]["address"].as_str().map(str::to_string))?
            });
            if let Some(address) = address {
                server.base = Some(format!("http://{address}"));
                return server;
            }
            if server.child.try_wait().unwrap().is_some() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the server neither listened nor exited");
    }

    fn base(&self) -> &str {
        self.base.as_deref().expect("the server listens")
    }

    fn log_text(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }

    /// SIGTERM, then waits for the exit: the graceful stop an operator makes.
    fn terminate(mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.child.wait().unwrap()
    }

    /// Waits for a server that refused to start to exit.
    fn exit_status(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the log threads drain the pipes.
                std::thread::sleep(Duration::from_millis(100));
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates a client-time session and records `n` observations in one call each; returns
/// the session id.
async fn fill(base: &str, n: usize) -> String {
    let client = reqwest::Client::new();
    let session: Value = client
        .post(format!("{base}/v1/sessions"))
        .json(&json!({
            "name": "durability",
            "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
            "algorithm": {"name": "random"},
            "time": {"source": "client"},
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().unwrap().to_string();
    for i in 0..n {
        let response = client
            .post(format!("{base}/v1/sessions/{id}/observations"))
            .json(&json!({"params": {"x": i as f64 / n as f64}, "value": i, "t": i}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
    }
    id
}

/// Observations in the database file at `path`, read with SQLite alone (no WAL beside it).
fn observations_in(path: &Path) -> i64 {
    let output = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; \
             print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM observations').fetchone()[0])",
        ])
        .arg(path)
        .output()
        .expect("python3 reads the copy");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn backup(database: &str, path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .args(["backup"])
        .arg(path)
        .env("DATABASE_URL", database)
        .output()
        .unwrap()
}

#[tokio::test]
async fn a_clean_stop_leaves_everything_in_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tvbo.db");
    let server = Server::start(&path);
    fill(server.base(), 40).await;
    let status = server.terminate();
    assert!(status.success(), "{status}");
    // What a naive backup does: copy the database file, not its -wal and -shm.
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    assert_eq!(observations_in(&copy), 40);
}

#[tokio::test]
async fn a_new_or_empty_database_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let server = Server::start(&missing);
    assert!(
        server.log_text().contains("NEW, EMPTY database"),
        "{}",
        server.log_text()
    );
    drop(server);
    let empty = dir.path().join("empty.db");
    std::fs::File::create(&empty).unwrap();
    let server = Server::start(&empty);
    assert!(
        server.log_text().contains("was EMPTY (0 bytes)"),
        "{}",
        server.log_text()
    );
    // A database that held data starts without a word of warning.
    fill(server.base(), 1).await;
    server.terminate();
    let server = Server::start(&empty);
    assert!(
        !server.log_text().contains("EMPTY"),
        "{}",
        server.log_text()
    );
}

#[tokio::test]
async fn a_damaged_database_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tvbo.db");
    let server = Server::start(&path);
    fill(server.base(), 300).await;
    assert!(server.terminate().success());
    let pages = std::fs::metadata(&path).unwrap().len() / 4096;
    assert!(pages > 8, "the database has {pages} pages");
    // Garbage over pages 3 to 6: page 1 (the header and schema root) stays intact.
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.seek(SeekFrom::Start(2 * 4096)).unwrap();
    file.write_all(&vec![0xA5; 4 * 4096]).unwrap();
    file.sync_all().unwrap();
    drop(file);
    let mut server = Server::start(&path);
    assert!(server.base.is_none(), "a damaged database was served");
    let status = server.exit_status();
    assert!(!status.success());
    let logs = server.log_text();
    assert!(logs.contains("is damaged"), "{logs}");
    assert!(
        logs.contains("tvbo backup") && logs.contains(".recover"),
        "{logs}"
    );
}

#[tokio::test]
async fn backups_are_consistent_copies_made_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tvbo.db");
    let database = format!("sqlite://{}", path.display());
    let server = Server::start(&path);
    fill(server.base(), 25).await;
    let copy = dir.path().join("backup.db");
    let output = backup(&database, &copy);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(observations_in(&copy), 25);
    // The server goes on serving; the backup does not overwrite.
    fill(server.base(), 1).await;
    let output = backup(&database, &copy);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("exists"));
    assert_eq!(observations_in(&copy), 25);
    // A restored backup serves: stop, put the copy in place, start.
    assert!(server.terminate().success());
    std::fs::rename(&copy, &path).unwrap();
    let _ = std::fs::remove_file(dir.path().join("tvbo.db-wal"));
    let _ = std::fs::remove_file(dir.path().join("tvbo.db-shm"));
    let restored = Server::start(&path);
    let sessions: Value = reqwest::get(format!("{}/v1/sessions", restored.base()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sessions["sessions"][0]["observation_count"], json!(25));
    // PostgreSQL: pg_dump, said so.
    let output = backup("postgres://postgres@127.0.0.1/tvbo", &dir.path().join("x"));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("pg_dump"));
}
