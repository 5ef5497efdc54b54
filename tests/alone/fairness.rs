//! Fair scheduling (docs/architecture.md, "Fair scheduling of model work"): one client's
//! backlog of big model jobs on its session (concurrent large predicts, suggests piling up
//! pending suggestions) must not push another session's suggest latency past twice its
//! solo latency. Measured as a ratio of medians within one run, not as an absolute time,
//! with keys required and the default limits.
//!
//! Alone in its test binary, so that no other test competes for the cores.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{Value, json};

/// Observations of the heavy session.
const HEAVY_OBSERVATIONS: usize = 600;
/// Points of each of the heavy client's predicts.
const HEAVY_PREDICT_POINTS: usize = 2000;
/// Concurrent predict loops of the heavy client.
const HEAVY_PREDICT_LOOPS: usize = 3;
/// Light suggests timed alone before and after the load, and at least as many under it.
const SAMPLES: usize = 9;
/// Heavy predicts that end while the light suggests under load are timed: more than one
/// round of the predict loops, so a whole cycle of the heavy session's queue (its jobs run
/// one at a time, in arrival order: the suggest loop's request between two rounds).
const HEAVY_PREDICTS_SAMPLED: usize = HEAVY_PREDICT_LOOPS + 1;
/// Pause between two light suggests under load.
const SAMPLE_PAUSE: Duration = Duration::from_millis(20);
/// Observations of each light session.
const LIGHT_OBSERVATIONS: usize = 30;

/// A gp-ucb client-time session over (x, y) with `n` observations of a smooth function.
async fn session_with(server: &TestServer, n: usize, seed: u64) -> String {
    let (status, session) = server
        .post_over_socket("/v1/sessions", &common::client_session("gp-ucb", seed))
        .await;
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    let observations: Vec<Value> = (0..n)
        .map(|i| {
            let x = (i as f64 * 0.618_033_988_75).fract();
            let y = (i as f64 * 0.754_877_666_25).fract();
            json!({
                "params": {"x": x, "y": y},
                "value": (6.0 * x).sin() + (4.0 * y).cos(),
                "t": i as f64,
            })
        })
        .collect();
    let (status, answer) = server
        .post_over_socket(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"observations": observations}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    id
}

/// Seconds of one suggest of a fresh light session ([`LIGHT_OBSERVATIONS`], same data and
/// seed every time, so every sample does the same work).
async fn light_suggest(server: &TestServer) -> f64 {
    let id = session_with(server, LIGHT_OBSERVATIONS, 7).await;
    let started = Instant::now();
    let (status, answer) = server
        .post_over_socket(
            &format!("/v1/sessions/{id}/suggestions"),
            &json!({"t": LIGHT_OBSERVATIONS as f64 + 1.0}),
        )
        .await;
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(status, 201, "{answer}");
    seconds
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sessions_backlog_does_not_starve_another() {
    let _alone = crate::ALONE.lock().await;
    // As users run it: keys required, the default limits.
    let server = TestServer::keys_required("fairness").await;
    let server = Arc::new(server);
    // Warm up (first connections, first fits), then time the light suggest alone.
    light_suggest(&server).await;
    let mut solo = Vec::new();
    for _ in 0..SAMPLES {
        solo.push(light_suggest(&server).await);
    }

    let heavy = session_with(&server, HEAVY_OBSERVATIONS, 3).await;
    let points: Vec<Value> = (0..HEAVY_PREDICT_POINTS)
        .map(|i| {
            let u = i as f64 / HEAVY_PREDICT_POINTS as f64;
            json!({"x": u, "y": (u * 7.0).fract()})
        })
        .collect();
    let predict = json!({"points": points, "t": HEAVY_OBSERVATIONS as f64});
    // The first predict builds the heavy model (a full fit): wait for it before timing.
    let (status, answer) = server
        .post_over_socket(&format!("/v1/sessions/{heavy}/predict"), &predict)
        .await;
    assert_eq!(status, 200, "{answer}");

    let running = Arc::new(AtomicBool::new(true));
    let heavy_predicts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut backlog = Vec::new();
    for _ in 0..HEAVY_PREDICT_LOOPS {
        let (server, running, predicts) = (server.clone(), running.clone(), heavy_predicts.clone());
        let (path, body) = (format!("/v1/sessions/{heavy}/predict"), predict.clone());
        backlog.push(tokio::spawn(async move {
            while running.load(Ordering::SeqCst) {
                let (status, answer) = server.post_over_socket(&path, &body).await;
                assert_eq!(status, 200, "{answer}");
                predicts.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    {
        // Suggests that never observe: a growing pending backlog, up to the cap.
        let (server, running) = (server.clone(), running.clone());
        let path = format!("/v1/sessions/{heavy}/suggestions");
        backlog.push(tokio::spawn(async move {
            let mut t = HEAVY_OBSERVATIONS as f64;
            while running.load(Ordering::SeqCst) {
                t += 1.0;
                let (status, answer) = server
                    .post_over_socket(&path, &json!({"count": 8, "t": t}))
                    .await;
                assert!(status == 201 || status == 409, "{status} {answer}");
            }
        }));
    }
    // Let the backlog build up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Loaded samples spread over a whole cycle of the heavy session's jobs (its predicts
    // and its suggest take turns, and so do their moments of JSON traffic): a window of a
    // few milliseconds would see only one of them.
    let predicts_before = heavy_predicts.load(Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut loaded = Vec::new();
    while loaded.len() < SAMPLES
        || (heavy_predicts.load(Ordering::SeqCst) < predicts_before + HEAVY_PREDICTS_SAMPLED
            && Instant::now() < deadline)
    {
        loaded.push(light_suggest(&server).await);
        tokio::time::sleep(SAMPLE_PAUSE).await;
    }
    let predicts = heavy_predicts.load(Ordering::SeqCst) - predicts_before;
    running.store(false, Ordering::SeqCst);
    for task in backlog {
        task.await.expect("a heavy client failed");
    }
    // Solo samples before and after the backlog: a transient load on the machine in
    // either phase does not decide the ratio.
    for _ in 0..SAMPLES {
        solo.push(light_suggest(&server).await);
    }

    let samples = loaded.len();
    let (solo, loaded) = (median(solo), median(loaded));
    let ratio = loaded / solo;
    eprintln!(
        "light suggest: median {:.1} ms alone, {:.1} ms beside the backlog \
         ({samples} samples while {predicts} heavy predicts ended): ratio {ratio:.2}",
        solo * 1e3,
        loaded * 1e3
    );
    assert!(
        predicts >= HEAVY_PREDICTS_SAMPLED,
        "the heavy client's predicts ended {predicts} times in a minute"
    );
    assert!(
        ratio <= 2.0,
        "another session's backlog slowed a suggest {ratio:.2}× (limit 2×)"
    );
}
