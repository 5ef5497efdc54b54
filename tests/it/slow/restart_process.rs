//! A restart of the server binary (a new process over the same SQLite file) gives the
//! same next suggestion as the running process would have.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Process {
    child: Child,
    base: String,
}

impl Process {
    async fn start(db: &Path) -> Process {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_tvbo"))
            .arg("serve")
            .env("TVBO_BIND", format!("127.0.0.1:{port}"))
            .env("DATABASE_URL", format!("sqlite://{}", db.display()))
            // Keys are tested in tests/it/access.rs; this test is about the process.
            .env("TVBO_AUTH", "off")
            // Stopped at once: no balancer to drain for (tests/it/slow/drain.rs).
            .env("TVBO_DRAIN_PERIOD", "0")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the tvbo binary starts");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = reqwest::get(format!("{base}/readyz")).await
                && r.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "server did not become ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Process { child, base }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        response.json().await.unwrap()
    }

    /// SIGTERM, then wait for the graceful exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "graceful shutdown exits 0, got {status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_process_gives_the_same_next_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tvbo.db");
    let first = Process::start(&db).await;
    let session = json!({
        "parameters": [{"name": "x", "low": 0, "high": 1}, {"name": "y", "low": 0, "high": 1}],
        "model": {"warmup": 0},
        "time": {"source": "client"},
        "seed": 11
    });
    let a = first.post("/v1/sessions", session.clone()).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = first.post("/v1/sessions", session).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    for step in 0..10 {
        let t = f64::from(step);
        let x = (0.37 * t).sin().abs();
        let y = (0.91 * t).cos().abs();
        for id in [&a, &b] {
            first
                .post(
                    &format!("/v1/sessions/{id}/observations"),
                    json!({"params": {"x": x, "y": y}, "value": -(x - 0.5f64).powi(2) - y, "t": t}),
                )
                .await;
        }
    }
    let running = first
        .post(&format!("/v1/sessions/{a}/suggestions"), json!({"t": 10.0}))
        .await;
    first.stop();
    let second = Process::start(&db).await;
    let restarted = second
        .post(&format!("/v1/sessions/{b}/suggestions"), json!({"t": 10.0}))
        .await;
    assert_eq!(
        running["suggestions"][0]["params"],
        restarted["suggestions"][0]["params"]
    );
    second.stop();
}
