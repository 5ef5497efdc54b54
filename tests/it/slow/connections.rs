//! Limits on the connections themselves: a request head sent byte by byte, or never, and
//! an idle kept-alive connection, are closed at the header-read timeout; past the
//! connection cap a new connection is answered 503 and closed; past the cap per peer
//! address, so is a new connection from that address, and others are still served.

use crate::common;

use std::time::{Duration, Instant};

use common::{TestServer, open_settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tvbo::server::ConnectionSettings;

const HEADER_TIMEOUT: Duration = Duration::from_millis(800);

async fn server(max_connections: usize) -> TestServer {
    let connections = ConnectionSettings {
        max_connections,
        header_read_timeout: HEADER_TIMEOUT,
        ..ConnectionSettings::default()
    };
    TestServer::start_configured(open_settings(Default::default()), connections).await
}

async fn connect(server: &TestServer) -> TcpStream {
    TcpStream::connect(server.base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads until the server closes the connection (or `limit` passes); what it sent and
/// when it closed.
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&answer).into(),
                    Some(started.elapsed()),
                );
            }
            Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
            Err(_) => return (String::from_utf8_lossy(&answer).into(), None),
        }
    }
}

#[tokio::test]
async fn a_half_sent_request_head_is_closed_at_the_header_timeout() {
    let server = server(64).await;
    // Slowloris: a head that never ends, one byte at a time.
    let mut slow = connect(&server).await;
    let dripping = tokio::spawn(async move {
        for byte in b"GET /v1/sessions HTTP/1.1\r\nhost: tvbo\r\nx-slow: "
            .iter()
            .cycle()
        {
            if slow.write_all(&[*byte]).await.is_err() {
                return slow;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        unreachable!()
    });
    // A connection that sends nothing.
    let mut silent = connect(&server).await;
    let (_, closed) = read_to_close(&mut silent, Duration::from_secs(10)).await;
    let closed = closed.expect("a silent connection is closed");
    assert!(
        closed >= HEADER_TIMEOUT - Duration::from_millis(100) && closed < Duration::from_secs(3),
        "closed after {closed:?}"
    );
    let mut slow = tokio::time::timeout(Duration::from_secs(5), dripping)
        .await
        .expect("the dripping connection is cut within the timeout")
        .unwrap();
    let (_, closed) = read_to_close(&mut slow, Duration::from_secs(2)).await;
    assert!(closed.is_some());
    server.stop().await;
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_at_the_header_timeout() {
    let server = server(64).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: tvbo\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let n = stream.read(&mut buffer).await.unwrap();
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
    let (_, closed) = read_to_close(&mut stream, Duration::from_secs(10)).await;
    let closed = closed.expect("an idle kept-alive connection is closed");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");
    server.stop().await;
}

#[tokio::test]
async fn past_the_connection_cap_a_connection_is_answered_503() {
    let server = server(2).await;
    let _held = [connect(&server).await, connect(&server).await];
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = connect(&server).await;
    let (answer, closed) = read_to_close(&mut third, Duration::from_secs(5)).await;
    assert!(closed.is_some(), "closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let problem: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(problem["status"], 503);
    // Once the held connections close (at the header timeout), there is room again.
    tokio::time::sleep(HEADER_TIMEOUT + Duration::from_millis(500)).await;
    let (status, _) = server.get("/healthz").await;
    assert_eq!(status, 200);
    server.stop().await;
}

/// A connection from `source` (a loopback address: all of 127.0.0.0/8 is on Linux).
async fn connect_from(server: &TestServer, source: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let address = server.base.trim_start_matches("http://").parse().unwrap();
    socket.connect(address).await.unwrap()
}

/// Sends `GET /healthz` on `stream`; the answer's status line.
async fn health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: tvbo\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let (answer, _) = read_to_close(stream, Duration::from_secs(5)).await;
    answer.lines().next().unwrap_or_default().to_string()
}

/// One address holding half-sent request heads used to take every connection (1,024 of
/// them locked everyone out for the header timeout); now it holds at most its cap per
/// peer, and another address is served.
#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let connections = ConnectionSettings {
        max_connections: 16,
        max_connections_per_peer: Some(8),
        header_read_timeout: Duration::from_secs(30),
    };
    let server = TestServer::start_configured(open_settings(Default::default()), connections).await;
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut stream = connect_from(&server, "127.0.0.1").await;
        // A head that never ends.
        let _ = stream
            .write_all(b"GET /v1/sessions HTTP/1.1\r\nhost: tvbo\r\nx-slow: ")
            .await;
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The first 8 are held open; the others were answered 503 and closed.
    let mut refused = 0;
    for stream in &mut held[8..] {
        let (answer, closed) = read_to_close(stream, Duration::from_secs(2)).await;
        assert!(closed.is_some(), "closed");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("TVBO_MAX_CONNECTIONS_PER_PEER"), "{answer}");
        refused += 1;
    }
    assert_eq!(refused, 12);
    for stream in &mut held[..8] {
        let (answer, closed) = read_to_close(stream, Duration::from_millis(50)).await;
        assert!(closed.is_none() && answer.is_empty(), "{answer}");
    }
    // Another address is served, on several connections at once.
    let mut others = Vec::new();
    for _ in 0..4 {
        others.push(connect_from(&server, "127.0.0.2").await);
    }
    for stream in &mut others {
        assert_eq!(health(stream).await, "HTTP/1.1 200 OK");
    }
    // When the first address's connections close, it has room again.
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = connect_from(&server, "127.0.0.1").await;
    assert_eq!(health(&mut again).await, "HTTP/1.1 200 OK");
    server.stop().await;
}
