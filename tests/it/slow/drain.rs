//! The drain before a stop (docs/operations.md, "Stopping"), on the real binary and a
//! real SIGTERM: `/readyz` answers 503 at once, requests are still served during the drain
//! period (a kept-alive connection's answer closes it), a request longer than the drain
//! finishes, no new connection is accepted after it, and the process exits 0. Also the
//! logs of that process: probes are not logged at INFO, requests are, with their id.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The drain period the server is started with.
const DRAIN: Duration = Duration::from_secs(3);

/// An answer read off a raw connection.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// Reads one HTTP/1.1 answer (with a content-length) off `stream`.
async fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed before an answer's head");
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a content-length");
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed within an answer's body");
        buffer.extend_from_slice(&chunk[..n]);
    }
    let status = head[9..12].parse().unwrap();
    let body = String::from_utf8(buffer[head_end..head_end + length].to_vec()).unwrap();
    Answer { status, head, body }
}

/// Sends a GET on `stream` with the API key `key` and reads its answer.
async fn get(stream: &mut TcpStream, path: &str, key: &str) -> Answer {
    let request =
        format!("GET {path} HTTP/1.1\r\nhost: tvbo\r\nauthorization: Bearer {key}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    read_answer(stream).await
}

fn closes(answer: &Answer) -> bool {
    answer
        .head
        .to_ascii_lowercase()
        .contains("\r\nconnection: close\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_then_finishes_what_is_in_flight_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    // Keys on, as a deployment has them: the key made as an operator makes it.
    let database = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let made = Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .args(["keys", "create", "--name", "drain"])
        .env("DATABASE_URL", &database)
        .output()
        .expect("tvbo keys create runs");
    assert!(made.status.success(), "{made:?}");
    let key = String::from_utf8(made.stdout).unwrap().trim().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tvbo"))
        .arg("serve")
        .env("TVBO_BIND", &address)
        .env("DATABASE_URL", &database)
        .env("TVBO_DRAIN_PERIOD", DRAIN.as_secs().to_string())
        .env("TVBO_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the tvbo binary starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut kept_alive = loop {
        if let Ok(mut stream) = TcpStream::connect(&address).await
            && get(&mut stream, "/readyz", &key).await.status == 200
        {
            break stream;
        }
        assert!(Instant::now() < deadline, "the server did not become ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let logged = get(&mut kept_alive, "/v1/sessions", &key).await;
    assert_eq!(logged.status, 200);
    assert!(
        !closes(&logged),
        "connections are kept alive before the drain"
    );
    assert!(
        logged
            .head
            .to_ascii_lowercase()
            .contains("\r\nx-request-id: "),
        "{}",
        logged.head
    );

    // A request in flight across the whole drain: its body comes after it.
    let body = r#"{"parameters": [{"name": "x", "low": 0, "high": 1}], "name": "slow"}"#;
    let (first, rest) = body.split_at(20);
    let mut slow = TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /v1/sessions HTTP/1.1\r\nhost: tvbo\r\ncontent-type: application/json\r\n\
         authorization: Bearer {key}\r\ncontent-length: {}\r\n\r\n{first}",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let signalled = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());

    // Not ready at once: well within a balancer's check interval.
    let not_ready = loop {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        let answer = get(&mut stream, "/readyz", &key).await;
        if answer.status == 503 || signalled.elapsed() > Duration::from_secs(1) {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(not_ready.status, 503, "{}", not_ready.body);
    let problem: Value = serde_json::from_str(&not_ready.body).unwrap();
    assert_eq!(problem["type"], "https://tvbo.dev/problems/draining");
    assert!(signalled.elapsed() < Duration::from_secs(1));

    // Still served during the drain: on the kept-alive connection (whose answer now
    // closes it) and on a new one.
    let on_kept = get(&mut kept_alive, "/v1/sessions", &key).await;
    assert_eq!(on_kept.status, 200, "{}", on_kept.body);
    assert!(
        closes(&on_kept),
        "a drain answer closes its connection: {}",
        on_kept.head
    );
    let mut fresh = TcpStream::connect(&address).await.unwrap();
    let on_fresh = get(&mut fresh, "/healthz", &key).await;
    assert_eq!(on_fresh.status, 200);
    assert!(closes(&on_fresh));
    assert!(
        signalled.elapsed() < DRAIN,
        "the drain checks took the whole drain"
    );

    // After the drain: no new connections, but the slow request is still in flight.
    tokio::time::sleep(DRAIN + Duration::from_millis(700) - signalled.elapsed()).await;
    assert!(
        TcpStream::connect(&address).await.is_err(),
        "a connection was accepted after the drain"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited with a request in flight"
    );
    slow.write_all(rest.as_bytes()).await.unwrap();
    let created = read_answer(&mut slow).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(signalled.elapsed() > DRAIN);

    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            signalled.elapsed() < DRAIN + Duration::from_secs(10),
            "no exit after the request in flight finished"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "a drained stop exits 0, got {exit}");

    // The logs: every request but the probes at INFO, each with its request id.
    let mut logs = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut logs).unwrap();
    let lines: Vec<Value> = logs
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let answered: Vec<&Value> = lines
        .iter()
        .filter(|line| line["fields"]["message"] == "answered")
        .collect();
    let uris: Vec<&str> = answered
        .iter()
        .map(|line| line["span"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        ["/v1/sessions", "/v1/sessions", "/v1/sessions"],
        "{logs}"
    );
    assert!(
        answered
            .iter()
            .all(|line| line["span"]["request_id"].as_str().unwrap().len() == 32),
        "{logs}"
    );
    assert!(logs.contains("SIGTERM: draining"), "{logs}");
}
