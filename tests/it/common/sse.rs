//! The SSE messages of `GET /v1/events`, read over the server's socket.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

use super::TestServer;

/// The SSE messages of a stream, parsed: (id, event, data) each.
pub struct Messages {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buffer: String,
}

impl Messages {
    /// The stream `/v1/events{query}` with the server's client (its key), resumed after
    /// `last_event_id` if given.
    pub async fn open(server: &TestServer, query: &str, last_event_id: Option<&str>) -> Messages {
        let mut request = server.client.get(server.url(&format!("/v1/events{query}")));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        Self::from(request).await
    }

    /// The stream `/v1/events{query}` opened with `key`.
    pub async fn open_as(server: &TestServer, query: &str, key: &str) -> Messages {
        let request = server.client.get(server.url(&format!("/v1/events{query}")));
        Self::from(request.bearer_auth(key)).await
    }

    /// The stream `request` opens.
    pub async fn from(request: reqwest::RequestBuilder) -> Messages {
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Messages {
            body: Box::pin(
                response
                    .bytes_stream()
                    .map(|chunk| chunk.map(|b| b.to_vec())),
            ),
            buffer: String::new(),
        }
    }

    /// The next message that has an `event:` line, or None within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<(Option<i64>, String, Value)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (None, None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_string());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if let Some(event) = event {
                    return Some((id, event, serde_json::from_str(&data).unwrap()));
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.next())
                .await
                .ok()??;
            self.buffer
                .push_str(&String::from_utf8(chunk.unwrap()).unwrap());
        }
    }
}

/// How long a stream of a new key of `tenant` lasted after the key was revoked; None if it
/// was still open 8 s later.
pub async fn lasts_after_its_key_is_revoked(server: &TestServer, tenant: &str) -> Option<Duration> {
    let made = tvbo::keys::new_key("watcher", Some(tenant), false).unwrap();
    server.store().insert_api_key(&made.row).await.unwrap();
    let response = reqwest::Client::new()
        .get(server.url("/v1/events"))
        .bearer_auth(&made.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut body = response.bytes_stream();
    assert!(
        body.next().await.is_some(),
        "the stream opens with its retry line"
    );
    server.store().revoke_api_key(made.row.id).await.unwrap();
    let started = std::time::Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(8), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    ended.ok().map(|()| started.elapsed())
}
