//! Checking keys' secrets (Argon2id) is bounded, on SQLite and PostgreSQL: a flood of wrong
//! secrets against one key id runs Argon2id no more than the id's allowance
//! (`keys::ATTEMPT_BURST`, then `keys::ATTEMPT_REFILL` per second) and is answered 429
//! beyond it, while the key itself, checked before, is served without delay (and checked
//! once when many requests present it at once); unknown,
//! revoked and wrong-secret keys are answered in about the same time. The flood against
//! the release binary, with its memory and a legitimate client's latency, is
//! `examples/key_flood.rs`.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use tvbo::api::RouterSettings;
use tvbo::api::auth::AccessSettings;
use tvbo::keys::{ATTEMPT_BURST, ATTEMPT_REFILL, KEY_ROW_TTL, KeyError, KeyVerifier};

/// Keys required, the default rates.
fn secured() -> RouterSettings {
    RouterSettings {
        access: AccessSettings::default(),
        ..Default::default()
    }
}

backend_tests!(
    settings = super::secured();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    wrong_secrets_run_argon2_at_most_the_allowance,
    a_flood_of_wrong_secrets_is_answered_429_and_the_key_still_works,
    invalid_keys_take_the_same_time_whatever_makes_them_invalid,
);

/// Makes a key in the server's database, as `tvbo keys create` does.
async fn key(server: &TestServer, name: &str) -> String {
    let made = tvbo::keys::new_key(name, None, false).unwrap();
    server.store().insert_api_key(&made.row).await.unwrap();
    made.key
}

/// `key` with another (well-formed) secret.
fn wrong_secret(key: &str, n: u64) -> String {
    format!("{}{:064x}", &key[..key.len() - 64], n)
}

async fn wrong_secrets_run_argon2_at_most_the_allowance(server: TestServer) {
    let key = key(&server, "alice").await;
    let verifier = KeyVerifier::with_threads(server.store(), 2);
    // A client's 40 threads start at once with a key new to the replica: they share one
    // check (one attempt of the id's allowance, one Argon2id run), and it is remembered.
    let starting: Vec<_> = (0..40)
        .map(|_| {
            let (verifier, key) = (verifier.clone(), key.clone());
            tokio::spawn(async move { verifier.caller(&key).await })
        })
        .collect();
    for caller in starting {
        assert_eq!(caller.await.unwrap().unwrap().tenant, "alice");
    }
    assert_eq!(verifier.hash_runs(), 1);

    let started = Instant::now();
    let flood: Vec<_> = (0..200u64)
        .map(|n| {
            let verifier = verifier.clone();
            let wrong = wrong_secret(&key, n);
            tokio::spawn(async move { verifier.caller(&wrong).await })
        })
        .collect();
    let (mut invalid, mut throttled, mut busy) = (0u64, 0u64, 0u64);
    for answer in flood {
        match answer.await.unwrap() {
            Err(KeyError::Invalid) => invalid += 1,
            Err(KeyError::Throttled { retry_after }) => {
                assert!(retry_after <= Duration::from_secs(1), "{retry_after:?}");
                throttled += 1;
            }
            Err(KeyError::Busy) => busy += 1,
            other => panic!("a wrong secret got {other:?}"),
        }
    }
    let elapsed = started.elapsed().as_secs();
    // The burst, plus what refilled while the flood ran.
    let allowed = u64::from(ATTEMPT_BURST) + u64::from(ATTEMPT_REFILL) * (elapsed + 1);
    let hashed = verifier.hash_runs() - 1;
    assert!(
        hashed <= allowed,
        "{hashed} Argon2id runs for {invalid} refused secrets; at most {allowed} allowed"
    );
    assert!(
        invalid <= allowed && invalid + busy >= 1,
        "{invalid} {busy}"
    );
    assert!(throttled >= 200 - allowed, "{throttled} throttled");

    // The key itself, checked before, is neither slowed nor hashed again.
    let runs = verifier.hash_runs();
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(verifier.caller(&key).await.unwrap().tenant, "alice");
    }
    assert_eq!(verifier.hash_runs(), runs);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    // Unknown ids are counted per id too: each has its own allowance.
    let unknown = tvbo::keys::new_key("ghost", None, false).unwrap().key;
    assert!(matches!(
        verifier.caller(&unknown).await,
        Err(KeyError::Invalid)
    ));
    server.stop().await;
}

async fn a_flood_of_wrong_secrets_is_answered_429_and_the_key_still_works(server: TestServer) {
    let key = key(&server, "alice").await;
    let get = |key: String| {
        let request = server
            .client
            .get(server.url("/v1/sessions"))
            .bearer_auth(key)
            .send();
        async move { request.await.unwrap() }
    };
    assert_eq!(get(key.clone()).await.status(), 200);
    let flood: Vec<_> = (0..60u64).map(|n| get(wrong_secret(&key, n))).collect();
    let answers = futures_join(flood).await;
    let mut limited = 0;
    for response in answers {
        match response.status().as_u16() {
            401 | 503 => {}
            429 => {
                let retry_after: u64 = response.headers()["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(retry_after, 1);
                let (_, problem) = TestServer::read(response).await;
                assert!(problem["type"].as_str().unwrap().ends_with("/rate-limited"));
                limited += 1;
            }
            other => panic!("a wrong secret got {other}"),
        }
    }
    assert!(limited >= 60 - 2 * ATTEMPT_BURST, "{limited} answered 429");
    // The key, checked before the flood, still passes at once.
    let started = Instant::now();
    for _ in 0..10 {
        assert_eq!(get(key.clone()).await.status(), 200);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    server.stop().await;
}

/// Awaits every future, concurrently.
async fn futures_join<F: Future + Send + 'static>(futures: Vec<F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut outputs = Vec::new();
    for handle in handles {
        outputs.push(handle.await.unwrap());
    }
    outputs
}

async fn invalid_keys_take_the_same_time_whatever_makes_them_invalid(server: TestServer) {
    let live = key(&server, "alice").await;
    let revoked = key(&server, "bob").await;
    assert!(
        server
            .store()
            .revoke_api_key(tvbo::keys::key_id(&revoked).unwrap())
            .await
            .unwrap()
    );
    // Fewer tries per id than its allowance, so that every one is checked.
    let tries = ATTEMPT_BURST as usize - 1;
    let mut times: [Vec<Duration>; 3] = Default::default();
    for n in 0..tries {
        let unknown = tvbo::keys::new_key("ghost", None, false).unwrap().key;
        let keys = [unknown, revoked.clone(), wrong_secret(&live, n as u64)];
        for (state, key) in keys.iter().enumerate() {
            let started = Instant::now();
            let response = server
                .client
                .get(server.url("/v1/sessions"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 401, "state {state}");
            times[state].push(started.elapsed());
        }
    }
    let medians: Vec<Duration> = times
        .iter_mut()
        .map(|times| {
            times.sort();
            times[times.len() / 2]
        })
        .collect();
    let fastest = *medians.iter().min().unwrap();
    let slowest = *medians.iter().max().unwrap();
    assert!(
        slowest < fastest * 2,
        "medians of unknown, revoked, wrong secret: {medians:?}"
    );
    server.stop().await;
}

/// A key revoked through one replica is refused by another within `KEY_ROW_TTL`, the
/// bound docs/security.md states, though that replica had checked it and kept its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_is_refused_within_the_bound_on_a_second_replica() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tvbo.db");
    let first = TestServer::start_on_configured(path.clone(), secured()).await;
    let second = TestServer::start_on_configured(path, secured()).await;
    let key = key(&first, "carol").await;
    let status = |server: &TestServer| {
        let request = reqwest::Client::new()
            .get(server.url("/v1/sessions"))
            .bearer_auth(&key);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(&first).await, 200);
    assert_eq!(status(&second).await, 200);
    // The second replica uses the key meanwhile: its row is fresh in its memory.
    assert_eq!(status(&second).await, 200);
    let id = tvbo::keys::key_id(&key).unwrap();
    assert!(first.store().revoke_api_key(id).await.unwrap());
    let revoked = Instant::now();
    while status(&second).await == 200 {
        assert!(
            revoked.elapsed() < KEY_ROW_TTL + Duration::from_millis(300),
            "still accepted {:?} after the revocation",
            revoked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "refused by the second replica {:?} after the revocation",
        revoked.elapsed()
    );
    assert_eq!(status(&first).await, 401);
}
