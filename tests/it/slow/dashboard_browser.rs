//! The dashboard in real headless Chromium, driven over the DevTools protocol: against a
//! live server holding a BOLT session of a few hundred observations made through the API
//! in client time (with forgetting and some reported regret), an empty session, a
//! one-observation session, a 1-D session without reported regret, and an arm session
//! with priors. Each page loads without a console error, every chart that should have
//! data has it, hovering a chart reads a value out, and a new observation appears on an
//! open page without a reload, within 2 s.
//!
//! With keys required, the pages ask for one before any request, and signed in they show
//! only the key's tenant's sessions.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under CI).
//! With `TVBO_SCREENSHOT=path.png` it saves the BOLT session page (docs/dashboard.png).

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};
use tvbo::api::RouterSettings;

/// A drifting objective of two parameters: the best power follows a slow sine.
fn drifting(power: f64, channel: f64, t: f64) -> (f64, f64) {
    let best = 5.0 + 3.0 * (t / 600.0).sin();
    let value = -(power - best).powi(2) - 0.5 * (channel - 3.0).powi(2);
    (value, -value)
}

async fn observe(server: &TestServer, id: &str, body: Value) -> Value {
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/observations"), &body)
        .await;
    assert_eq!(status, 201, "{answer}");
    answer
}

async fn suggest(server: &TestServer, id: &str, t: f64) -> Value {
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
        .await;
    assert_eq!(status, 201, "{answer}");
    answer["suggestions"][0].clone()
}

/// A BOLT session of about 300 observations in client time: batches of client-chosen
/// settings (half with reported regret) between suggest/observe rounds; n* capped at
/// 60 so that BOLT forgets.
async fn bolt_session(server: &TestServer) -> String {
    let id = server
        .create(json!({
            "name": "radio-link",
            "parameters": [
                {"name": "power", "low": 0, "high": 10},
                {"name": "channel", "low": 1, "high": 5}
            ],
            "algorithm": {"name": "bolt", "max_dataset_size": 60},
            "model": {"warmup": 5},
            "time": {"source": "client"},
            "seed": 11
        }))
        .await;
    let mut t = 0.0;
    for round in 0..27 {
        let batch: Vec<Value> = (0..10)
            .map(|i| {
                t += 7.0;
                let power = ((round * 10 + i) as f64 * 0.618).fract() * 10.0;
                let channel = 1.0 + ((round * 10 + i) as f64 * 0.377).fract() * 4.0;
                let (value, regret) = drifting(power, channel, t);
                let mut o =
                    json!({"params": {"power": power, "channel": channel}, "value": value, "t": t});
                if i % 2 == 0 {
                    o["regret"] = json!(regret);
                }
                o
            })
            .collect();
        observe(server, &id, json!({"observations": batch})).await;
        t += 7.0;
        let s = suggest(server, &id, t).await;
        let (value, _) = drifting(
            s["params"]["power"].as_f64().unwrap(),
            s["params"]["channel"].as_f64().unwrap(),
            t,
        );
        observe(
            server,
            &id,
            json!({"suggestion_id": s["id"], "value": value, "t": t + 1.0}),
        )
        .await;
    }
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_draws_every_kind_of_session_live_in_chromium() {
    let Some(mut browser) = Browser::launch("dashboard_browser") else {
        return;
    };
    let server = TestServer::start().await;
    let bolt = bolt_session(&server).await;
    let (_, timeline) = server.get(&format!("/v1/sessions/{bolt}/timeline")).await;
    assert!(
        !timeline["forgotten"].as_array().unwrap().is_empty(),
        "BOLT forgot: {}",
        timeline["forgotten"]
    );
    let empty = server
        .create(json!({
            "name": "empty", "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "gp-ucb"}, "time": {"source": "client"}, "seed": 1
        }))
        .await;
    let single = server
        .create(json!({
            "name": "single", "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "w-dbo"}, "time": {"source": "client"}, "seed": 2
        }))
        .await;
    observe(
        &server,
        &single,
        json!({"params": {"x": 0.3}, "value": 1.0, "t": 1.0}),
    )
    .await;
    // 1-D, nothing reported: the regret is the model's estimate, and the posterior is drawn.
    let estimated = server
        .create(json!({
            "name": "one-dimension", "parameters": [{"name": "x", "low": -2, "high": 2}],
            "algorithm": {"name": "tv-gp-ucb"}, "model": {"warmup": 3},
            "time": {"source": "client"}, "seed": 3
        }))
        .await;
    for step in 0..12 {
        let t = step as f64 * 5.0;
        let s = suggest(&server, &estimated, t).await;
        let x = s["params"]["x"].as_f64().unwrap();
        observe(
            &server,
            &estimated,
            json!({"suggestion_id": s["id"], "value": -(x - 0.5).powi(2), "t": t + 1.0}),
        )
        .await;
    }
    // A failed measurement (its reason holds a comma, for the CSV) and an abandoned
    // suggestion: drawn on the parameter chart and listed.
    let s = suggest(&server, &estimated, 61.0).await;
    observe(
        &server,
        &estimated,
        json!({"suggestion_id": s["id"], "failed": true, "reason": "timeout, twice", "t": 62.0}),
    )
    .await;
    let s = suggest(&server, &estimated, 63.0).await;
    let abandon = axum::http::Request::delete(format!(
        "/v1/sessions/{estimated}/suggestions/{}",
        s["id"].as_str().unwrap()
    ))
    .body(axum::body::Body::empty())
    .unwrap();
    assert_eq!(server.send(abandon).await.status(), 204);
    let arms: Vec<Value> = (0..6)
        .map(|i| json!({"name": format!("arm-{i}"), "params": {"x": i as f64 / 5.0}}))
        .collect();
    let covariance: Vec<Vec<f64>> = (0..6)
        .map(|a| {
            (0..6)
                .map(|b| (-((a as f64 - b as f64) / 5.0).powi(2) / 0.18).exp())
                .collect()
        })
        .collect();
    let with_priors = server
        .create(json!({
            "name": "arms", "parameters": [{"name": "x", "low": 0, "high": 1}], "arms": arms,
            "algorithm": {"name": "hp-gp-ts", "priors": [
                {"name": "flat", "mean": vec![0.0; 6], "covariance": covariance},
                {"name": "high", "mean": vec![1.0; 6], "covariance": covariance}
            ]},
            "model": {"noise": 0.01}, "time": {"source": "client"}, "seed": 4
        }))
        .await;
    for step in 0..8 {
        let t = step as f64;
        let s = suggest(&server, &with_priors, t).await;
        let x = s["params"]["x"].as_f64().unwrap();
        observe(
            &server,
            &with_priors,
            json!({"suggestion_id": s["id"], "value": -(x - 0.6).abs(), "t": t + 0.5}),
        )
        .await;
    }

    // The list: every session, linked, no error.
    tokio::task::block_in_place(|| {
        browser.open(
            &server.url("/"),
            "document.querySelectorAll('#sessions tbody tr[data-session]').length === 5 && \
             !document.body.innerText.includes('…')",
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        let names = browser
            .eval("[...document.querySelectorAll('#sessions tbody tr a')].map(a => a.textContent)");
        for name in ["radio-link", "empty", "single", "one-dimension", "arms"] {
            assert!(names.as_array().unwrap().contains(&json!(name)), "{names}");
        }
        assert_eq!(
            browser.eval("document.querySelectorAll('#sessions svg.sparkline path').length >= 3"),
            json!(true)
        );
    });

    // Each session page: drawn, no error, charts with data, hover reads a value.
    let pages = [
        (&bolt, "radio-link", true),
        (&empty, "empty", false),
        (&single, "single", false),
        (&estimated, "one-dimension", true),
        (&with_priors, "arms", true),
    ];
    for (id, name, full) in pages {
        tokio::task::block_in_place(|| {
            browser.open(
                &server.url(&format!("/sessions/{id}")),
                "document.body.dataset.rendered !== undefined",
            );
            assert!(browser.errors.is_empty(), "{name}: {:?}", browser.errors);
            let charts = browser.eval(
                "[...document.querySelectorAll('[data-chart]')].map(c => [c.dataset.chart, \
                 c.querySelectorAll('circle').length + [...c.querySelectorAll('path')].filter(p => p.getAttribute('d')).length, \
                 !!c.querySelector('.empty')])",
            );
            let charts = charts.as_array().unwrap();
            assert!(charts.len() >= 5, "{name}: {charts:?}");
            if full {
                for chart in charts {
                    assert!(
                        chart[1].as_u64().unwrap() > 0 && chart[2] == json!(false),
                        "{name}: chart {} has no data",
                        chart[0]
                    );
                }
                let tip = browser.hover_first_chart();
                assert!(
                    tip.contains(": ") && tip.chars().any(|c| c.is_ascii_digit()),
                    "{name}: hover shows {tip:?}"
                );
            }
            if name == "one-dimension" {
                assert!(charts.iter().any(|c| c[0] == "posterior"), "{charts:?}");
                assert_eq!(
                    browser.eval(
                        "[...document.querySelectorAll('#ended-runs tbody tr')].map(r => r.className)"
                    ),
                    json!(["abandoned", "failed"])
                );
                assert_eq!(
                    browser.eval("document.querySelector('[data-chart=\"param-x\"]').textContent.includes('failed')"),
                    json!(true)
                );
                assert_eq!(
                    browser.eval("document.querySelector('[data-chart=regret] h2').textContent.endsWith('(estimated)')"),
                    json!(true)
                );
            }
            if name == "radio-link" {
                for heat_map in ["posterior-mean", "posterior-std"] {
                    assert!(charts.iter().any(|c| c[0] == heat_map), "{charts:?}");
                }
            }
            if name == "arms" {
                assert!(charts.iter().any(|c| c[0] == "priors"), "{charts:?}");
            }
            if name == "radio-link"
                && let Ok(path) = std::env::var("TVBO_SCREENSHOT")
            {
                browser.screenshot(&path);
            }
        });
        // Live: an observation made through the API shows without a reload.
        let seq = server.get(&format!("/v1/sessions/{id}")).await.1["observation_count"]
            .as_i64()
            .unwrap()
            + 1;
        let params = if name == "radio-link" {
            json!({"power": 4.0, "channel": 2.0})
        } else if name == "one-dimension" {
            json!({"x": 0.25})
        } else if name == "arms" {
            json!({"x": 0.4})
        } else {
            json!({"x": 0.75})
        };
        let t = 10_000.0;
        let made = Instant::now();
        observe(
            &server,
            id,
            json!({"params": params, "value": -1.5, "t": t}),
        )
        .await;
        tokio::task::block_in_place(|| {
            let shown = browser.wait_for(
                &format!("!!document.querySelector('#observations tr[data-seq=\"{seq}\"]')"),
                Duration::from_millis(2000).saturating_sub(made.elapsed()),
            );
            assert!(shown, "{name}: observation {seq} not shown within 2 s");
            assert!(browser.errors.is_empty(), "{name}: {:?}", browser.errors);
        });
    }
    server.stop().await;
}

/// A session of the tenant of `key`, made through the API.
async fn session_of(server: &TestServer, key: &str, name: &str) -> String {
    let response = server
        .client
        .post(server.url("/v1/sessions"))
        .bearer_auth(key)
        .json(&json!({"name": name, "parameters": [{"name": "x", "low": 0, "high": 1}]}))
        .send()
        .await
        .unwrap();
    let (status, session) = TestServer::read(response).await;
    assert_eq!(status, 201, "{session}");
    session["id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_asks_for_a_key_and_shows_only_its_tenant() {
    let Some(mut browser) = Browser::launch("dashboard_browser") else {
        return;
    };
    let server = TestServer::start_configured(RouterSettings::default(), Default::default()).await;
    let mut keys = Vec::new();
    for tenant in ["team-a", "team-b"] {
        let made = tvbo::keys::new_key(tenant, None, false).unwrap();
        server.store().insert_api_key(&made.row).await.unwrap();
        keys.push(made.key);
    }
    let mine = session_of(&server, &keys[0], "mine").await;
    let theirs = session_of(&server, &keys[1], "theirs").await;
    tokio::task::block_in_place(|| {
        // No key yet: the sign-in form, and no request for data.
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        assert!(
            browser
                .requests
                .iter()
                .all(|r| !r["url"].as_str().unwrap().contains("/v1/")),
            "{:?}",
            browser.requests
        );
        browser.eval(&format!(
            "(() => {{ document.getElementById('api-key').value = '{}'; \
             document.querySelector('form.login').requestSubmit(); }})()",
            keys[0]
        ));
        // The form keeps the key and reloads; the list then shows team A's session only.
        std::thread::sleep(Duration::from_secs(1));
        browser.open(
            &server.url("/"),
            "document.querySelector('#sessions tr[data-session]')",
        );
        let listed = browser.eval(
            "[...document.querySelectorAll('#sessions tr[data-session]')].map(r => r.dataset.session)",
        );
        assert_eq!(listed, json!([mine]));
        assert!(browser.wait_for(
            "document.getElementById('sign-out')",
            Duration::from_secs(2)
        ));
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        // Team B's session is not found for team A.
        browser.open(
            &server.url(&format!("/sessions/{theirs}")),
            "document.querySelector('h1')?.textContent === 'Session not found'",
        );
        // Signing out forgets the key.
        browser.eval("document.getElementById('sign-out').click()");
        std::thread::sleep(Duration::from_secs(1));
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        assert_eq!(
            browser.eval("localStorage.getItem('tvbo.apiKey')"),
            Value::Null
        );
    });
    server.stop().await;
}
