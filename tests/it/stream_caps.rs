//! One key, or one tenant, cannot hold every connection of a replica with event streams
//! (docs/security.md, "Event streams"): with keys on and the default limits, streams
//! beyond a key's or a tenant's cap are answered 429 `too-many-streams` with Retry-After,
//! and another tenant's streams and requests are served meanwhile. Behind a proxy
//! (`TVBO_MAX_CONNECTIONS_PER_PEER=0`, as docker/compose.yaml sets) as well as directly.

use crate::common::TestServer;

use reqwest::Response;
use tvbo::api::RouterSettings;
use tvbo::api::stream_slots::StreamLimits;
use tvbo::server::ConnectionSettings;

/// Opens `count` event streams with `key`, each on a connection of its own: the open
/// ones (kept, so that they stay open) and the refused answers.
async fn open_streams(
    server: &TestServer,
    key: &str,
    count: usize,
) -> (Vec<Response>, Vec<Response>) {
    let (mut open, mut refused) = (Vec::new(), Vec::new());
    for _ in 0..count {
        // One client per stream: a pool would queue requests behind open streams.
        let client = reqwest::Client::new();
        let response = client
            .get(server.url("/v1/events"))
            .bearer_auth(key)
            .send()
            .await
            .expect("the server answers");
        if response.status() == 200 {
            open.push(response);
        } else {
            refused.push(response);
        }
    }
    (open, refused)
}

/// Checks a refusal: 429 `too-many-streams`, with Retry-After, naming `setting`.
async fn assert_too_many(response: Response, setting: &str) {
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let problem: serde_json::Value = response.json().await.unwrap();
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("/too-many-streams"),
        "{problem}"
    );
    assert!(
        problem["detail"].as_str().unwrap().contains(setting),
        "{problem}"
    );
}

/// Another tenant's 20 new streams open, and its requests are answered.
async fn other_tenant_is_served(server: &TestServer) {
    let key = server.new_key("bystander").await;
    let (open, refused) = open_streams(server, &key, 20).await;
    assert_eq!((open.len(), refused.len()), (20, 0));
    let answer = reqwest::Client::new()
        .get(server.url("/v1/sessions"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
}

#[tokio::test]
async fn one_key_holds_at_most_its_share_of_streams() {
    let server = TestServer::keys_required("greedy").await;
    let key = server.key().unwrap().to_string();
    let (open, mut refused) = open_streams(&server, &key, 64).await;
    assert_eq!(open.len(), StreamLimits::DEFAULT_PER_KEY);
    assert_eq!(refused.len(), 64 - StreamLimits::DEFAULT_PER_KEY);
    assert_too_many(refused.pop().unwrap(), "TVBO_MAX_STREAMS_PER_KEY").await;
    other_tenant_is_served(&server).await;
    // A stream that ends gives its slot back (the server finds the connection closed at
    // the latest when its next keep-alive comment fails, 15 s on).
    drop(open);
    let (reopened, _) = open_streams(&server, &key, 1).await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut reopened = reopened;
    while reopened.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        reopened = open_streams(&server, &key, 1).await.0;
    }
    assert_eq!(reopened.len(), 1, "the closed streams' slots came back");
}

#[tokio::test]
async fn behind_a_proxy_one_tenant_holds_at_most_its_share() {
    let connections = ConnectionSettings {
        max_connections_per_peer: None,
        ..Default::default()
    };
    let server = TestServer::start_configured(RouterSettings::default(), connections).await;
    let keys_needed = StreamLimits::DEFAULT_PER_TENANT / StreamLimits::DEFAULT_PER_KEY + 1;
    let mut held = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..keys_needed {
        let key = server.new_key("greedy").await;
        let (open, more) = open_streams(&server, &key, StreamLimits::DEFAULT_PER_KEY).await;
        held.extend(open);
        refused.extend(more);
    }
    assert_eq!(held.len(), StreamLimits::DEFAULT_PER_TENANT);
    assert_eq!(refused.len(), StreamLimits::DEFAULT_PER_KEY);
    assert_too_many(refused.pop().unwrap(), "TVBO_MAX_STREAMS_PER_TENANT").await;
    other_tenant_is_served(&server).await;
}
