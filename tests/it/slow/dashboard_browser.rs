//! The dashboard in real headless Chromium, driven over the DevTools protocol: against a
//! live server holding a BOLT session of about 350 observations made through the API in
//! client time (forgetting at about 310 steps, with some reported regret), an empty
//! session, a one-observation session, a 1-D session without reported regret, an arm
//! session with priors, a session of four parameters (two on a log scale) and one with
//! a categorical parameter. Each page loads without a console error, every chart that
//! should have data has it, forgetting is drawn as a strip of a few marks, hovering a
//! chart reads a value out, a new observation appears on an open page without a reload
//! within 2 s and without moving the page, and at 400 px nothing scrolls sideways.
//!
//! With keys required, the pages ask for one before any request, signed in they show
//! only the key's tenant's sessions, the exports download with the key, and a revoked
//! key brings the sign-in form back.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under CI).
//! With `TVBO_SCREENSHOTS=dir` it saves the pages docs/dashboard.md shows there.

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

/// A BOLT session of about 350 observations in client time: client-chosen settings one
/// per observe (half with reported regret) between suggest/observe rounds; n* capped at
/// 40, so that BOLT forgets at nearly every observe past the first 40.
async fn bolt_session(server: &TestServer) -> String {
    let id = server
        .create(json!({
            "name": "radio-link",
            "parameters": [
                {"name": "power", "low": 0, "high": 10},
                {"name": "channel", "low": 1, "high": 5}
            ],
            "algorithm": {"name": "bolt", "max_dataset_size": 40},
            "model": {"warmup": 5},
            "time": {"source": "client"},
            "seed": 11
        }))
        .await;
    let mut t = 0.0;
    for round in 0..32 {
        for i in 0..10 {
            t += 7.0;
            let power = ((round * 10 + i) as f64 * 0.618).fract() * 10.0;
            let channel = 1.0 + ((round * 10 + i) as f64 * 0.377).fract() * 4.0;
            let (value, regret) = drifting(power, channel, t);
            let mut o =
                json!({"params": {"power": power, "channel": channel}, "value": value, "t": t});
            if i % 2 == 0 {
                o["regret"] = json!(regret);
            }
            observe(server, &id, o).await;
        }
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

/// A session tuned by its own suggestions for `rounds` rounds in client time, measuring
/// `objective`.
async fn tuned_session(
    server: &TestServer,
    request: Value,
    rounds: usize,
    objective: impl Fn(&Value, f64) -> f64,
) -> String {
    let id = server.create(request).await;
    for round in 0..rounds {
        let t = round as f64 * 10.0;
        let s = suggest(server, &id, t).await;
        let value = objective(&s["params"], t);
        observe(
            server,
            &id,
            json!({"suggestion_id": s["id"], "value": value, "t": t + 1.0}),
        )
        .await;
    }
    id
}

/// Four knobs, two on a log scale, whose best thread count drifts.
async fn four_knob_session(server: &TestServer) -> String {
    let request = json!({
        "name": "four-knobs",
        "parameters": [
            {"name": "threads", "type": "int", "low": 1, "high": 64, "scale": "log"},
            {"name": "cache_mb", "low": 16, "high": 4096, "scale": "log"},
            {"name": "ratio", "low": 0, "high": 1},
            {"name": "batch", "type": "int", "low": 1, "high": 100}
        ],
        "algorithm": {"name": "bolt"},
        "model": {"warmup": 8},
        "time": {"source": "client"},
        "seed": 5
    });
    tuned_session(server, request, 40, |p, t| {
        let number = |name: &str| p[name].as_f64().unwrap();
        let best_threads = 8.0 + 6.0 * (t / 200.0).sin();
        -(number("threads").ln() - best_threads.ln()).powi(2)
            - 0.3 * (number("cache_mb").ln() - 6.0).powi(2)
            - (number("ratio") - 0.3).powi(2)
            - 1e-4 * (number("batch") - 40.0).powi(2)
    })
    .await
}

/// A codec (categorical) and its level, minimising a cost.
async fn codec_session(server: &TestServer) -> String {
    let request = json!({
        "name": "codec",
        "goal": "minimize",
        "parameters": [
            {"name": "codec", "type": "categorical", "choices": ["zstd", "lz4", "gzip", "none"]},
            {"name": "level", "type": "int", "low": 1, "high": 9}
        ],
        "algorithm": {"name": "gp-ucb"},
        "model": {"warmup": 6},
        "time": {"source": "client"},
        "seed": 6
    });
    tuned_session(server, request, 30, |p, _| {
        let base = match p["codec"].as_str().unwrap() {
            "zstd" => 1.0,
            "lz4" => 1.4,
            "gzip" => 1.8,
            _ => 3.0,
        };
        base + 0.05 * (p["level"].as_f64().unwrap() - 4.0).powi(2)
    })
    .await
}

/// Every chart of the page: [id, how many drawn marks of data, whether it says empty].
const CHARTS: &str = "[...document.querySelectorAll('[data-chart]')].map(c => [c.dataset.chart, \
     c.querySelectorAll('circle, polyline').length + [...c.querySelectorAll('path')].filter(p => p.getAttribute('d')).length, \
     !!c.querySelector('.empty')])";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_draws_every_kind_of_session_live_in_chromium() {
    let Some(mut browser) = Browser::launch("dashboard_browser") else {
        return;
    };
    let server = TestServer::start().await;
    let bolt = bolt_session(&server).await;
    let (_, timeline) = server.get(&format!("/v1/sessions/{bolt}/timeline")).await;
    let forgetting_steps = timeline["forgotten"].as_array().unwrap().len();
    assert!(
        forgetting_steps >= 300,
        "BOLT forgot at {forgetting_steps} steps"
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

    let four = four_knob_session(&server).await;
    let codec = codec_session(&server).await;

    // The list: every session, linked, no error.
    tokio::task::block_in_place(|| {
        browser.open(
            &server.url("/"),
            "document.querySelectorAll('#sessions tbody tr[data-session]').length === 7",
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        let names = browser
            .eval("[...document.querySelectorAll('#sessions tbody tr a')].map(a => a.textContent)");
        for name in [
            "radio-link",
            "empty",
            "single",
            "one-dimension",
            "arms",
            "four-knobs",
            "codec",
        ] {
            assert!(names.as_array().unwrap().contains(&json!(name)), "{names}");
        }
        assert_eq!(
            browser.eval("document.querySelectorAll('#sessions svg.sparkline path').length >= 3"),
            json!(true)
        );
        // The algorithm filter offers the server's algorithms, in its order.
        let offered = "[...document.querySelectorAll('select[aria-label=\"filter by algorithm\"] option')]\
             .map(o => o.value).filter(v => v)";
        assert!(
            browser.wait_for(&format!("{offered}.length > 0"), Duration::from_secs(5)),
            "no algorithm offered"
        );
        let names: Vec<Value> = tvbo::domain::algorithm::AlgorithmName::ALL
            .iter()
            .map(|a| json!(a.as_str()))
            .collect();
        assert_eq!(browser.eval(offered), json!(names));
        browser.keep_screenshot("dashboard-list.png", 520);
    });

    // Each session page: drawn, no error, charts with data, hover reads a value.
    let pages = [
        (&bolt, "radio-link", true),
        (&empty, "empty", false),
        (&single, "single", false),
        (&estimated, "one-dimension", true),
        (&with_priors, "arms", true),
        (&four, "four-knobs", true),
        (&codec, "codec", true),
    ];
    for (id, name, full) in pages {
        tokio::task::block_in_place(|| {
            browser.open(
                &server.url(&format!("/sessions/{id}")),
                "document.body.dataset.rendered !== undefined",
            );
            assert!(browser.errors.is_empty(), "{name}: {:?}", browser.errors);
            let charts = browser.eval(CHARTS);
            let charts = charts.as_array().unwrap();
            // A session without a step shows its id and a first client instead of
            // empty charts.
            let expected = if name == "empty" {
                0..=0
            } else {
                5..=usize::MAX
            };
            assert!(expected.contains(&charts.len()), "{name}: {charts:?}");
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
                assert!(charts.iter().any(|c| c[0] == "slice-x"), "{charts:?}");
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
                // About 310 forgetting steps, drawn as a strip of a few paths (one per
                // reason and chart), not a line per step.
                let marks =
                    browser.eval("document.querySelectorAll('.forget-mark, line.mark').length");
                assert!(marks.as_u64().unwrap() < 50, "{marks} forgetting marks");
                assert!(
                    browser.eval("document.querySelectorAll('.forget-mark').length > 0")
                        == json!(true)
                );
            }
            if name == "four-knobs" {
                assert!(charts.iter().any(|c| c[0] == "parallel"), "{charts:?}");
                // Brushing: a drag along the threads axis (log, 1 to 64) from 0.45 of it
                // to its top keeps the lines of 7 threads or more (64^0.45 = 6.5); a
                // double-click lets the range go.
                let (_, timeline) = tokio::runtime::Handle::current()
                    .block_on(server.get(&format!("/v1/sessions/{id}/timeline")));
                let many = timeline["observations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|o| o["params"]["threads"].as_f64().unwrap() >= 7.0)
                    .count();
                let drag = "(() => { const svg = document.querySelector('[data-chart=\"parallel\"] svg'); \
                     const r = svg.getBoundingClientRect(), x = r.left + 40, at = u => r.top + 280 - 30 - u * 226; \
                     const fire = (kind, u) => svg.dispatchEvent(new MouseEvent(kind, { clientX: x, clientY: at(u), bubbles: true })); \
                     fire('mousedown', 0.45); fire('mousemove', 1); fire('mouseup', 1); \
                     return [svg.dataset.kept, [...svg.querySelectorAll('polyline')].filter(l => +l.getAttribute('stroke-opacity') > 0.05).length]; })()";
                assert_eq!(browser.eval(drag), json!([many.to_string(), many]));
                assert!(many > 0 && many < 40, "{many} of 40 with 7 threads or more");
                browser.eval(
                    "(() => { const svg = document.querySelector('[data-chart=\"parallel\"] svg'); const r = svg.getBoundingClientRect(); \
                     svg.dispatchEvent(new MouseEvent('dblclick', { clientX: r.left + 40, clientY: r.top + 100, bubbles: true })); })()",
                );
                assert_eq!(
                    browser.eval(
                        "document.querySelector('[data-chart=\"parallel\"] svg').dataset.kept"
                    ),
                    json!("40")
                );
                // Hover reads out the line nearest the pointer.
                let tip = browser.eval(
                    "(() => { const svg = document.querySelector('[data-chart=\"parallel\"] svg'); const r = svg.getBoundingClientRect(); \
                     svg.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + 60, clientY: r.top + 140, bubbles: true })); \
                     const tip = document.getElementById('tooltip'); return tip.hidden ? '' : tip.textContent; })()",
                );
                let tip = tip.as_str().unwrap();
                assert!(
                    tip.starts_with("seq ") && tip.contains("threads = "),
                    "{tip}"
                );
                // The posterior over a pair of its four parameters, the others at the
                // recommendation: the first two by default, any two picked.
                let title =
                    "document.querySelector('[data-chart=\"posterior-mean\"] h2').textContent";
                assert_eq!(
                    browser.eval(title),
                    json!("Posterior mean over threads and cache_mb now")
                );
                let requests = browser.requests.len();
                browser.eval(
                    "(() => { const [x, y] = document.querySelectorAll('[data-chart=\"posterior-mean\"] select'); \
                     x.value = 'ratio'; y.value = 'batch'; y.dispatchEvent(new Event('change')); })()",
                );
                assert!(
                    browser.wait_for(
                        "document.querySelector('[data-chart=\"posterior-std\"] h2').textContent === 'Posterior standard deviation over ratio and batch now'",
                        Duration::from_secs(10)
                    ),
                    "{}",
                    browser.eval(title)
                );
                let cells = browser.eval(
                    "(() => { const card = document.querySelector('[data-chart=\"posterior-mean\"]'); \
                     card.querySelector('.table-toggle').click(); \
                     const heads = [...card.querySelectorAll('th')].map(th => th.textContent); \
                     const rows = card.querySelectorAll('tbody tr').length; \
                     card.querySelector('.table-toggle').click(); return [heads, rows]; })()",
                );
                assert_eq!(cells, json!([["ratio", "batch", "posterior mean"], 576]));
                // One predict for the new pair.
                let predicts = browser.requests[requests..]
                    .iter()
                    .filter(|r| r["url"].as_str().unwrap().ends_with("/predict"))
                    .count();
                assert_eq!(predicts, 1);
                // A log-scale parameter's axis is logarithmic: its ticks are powers of ten.
                let ticks = browser.eval(
                    "[...document.querySelectorAll('[data-chart=\"param-cache_mb\"] .axis text')].map(t => t.textContent)",
                );
                for tick in ["100", "1000"] {
                    assert!(ticks.as_array().unwrap().contains(&json!(tick)), "{ticks}");
                }
            }
            if name == "codec" {
                // The categorical parameter's axis names its choices.
                let ticks = browser.eval(
                    "[...document.querySelectorAll('[data-chart=\"slice-codec\"] .axis text')].map(t => t.textContent)",
                );
                for choice in ["zstd", "lz4", "gzip", "none"] {
                    assert!(
                        ticks.as_array().unwrap().contains(&json!(choice)),
                        "{ticks}"
                    );
                }
            }
            if name == "empty" {
                assert_eq!(
                    browser.eval(&format!("document.body.innerText.includes('{id}')")),
                    json!(true),
                    "an empty session shows its id"
                );
            }
            let shot = match name {
                "radio-link" => Some("dashboard.png"),
                "codec" => Some("dashboard-categorical.png"),
                _ => None,
            };
            if let Some(shot) = shot {
                browser.keep_screenshot(shot, 2000);
            }
            if name == "radio-link" {
                keep_dark_screenshot(&mut browser, "dashboard-dark.png", 2000);
            }
            if name == "four-knobs"
                && let Ok(dir) = std::env::var("TVBO_SCREENSHOTS")
            {
                // Its model views: the slices and the parallel coordinates.
                let path = format!("{dir}/dashboard-four-parameters.png");
                browser.screenshot_from(&path, "[data-chart=\"slice-threads\"]", 1100);
            }
            if name == "arms" {
                assert!(charts.iter().any(|c| c[0] == "priors"), "{charts:?}");
            }
            // The heat maps' and the parallel coordinates' numbers as tables too.
            let cards: &[&str] = match name {
                "radio-link" => &["posterior-mean", "posterior-std"],
                "four-knobs" => &["parallel"],
                _ => &[],
            };
            for card in cards {
                let table = browser.eval(&format!(
                    "(() => {{ const c = document.querySelector('[data-chart=\"{card}\"]'); \
                     c.querySelector('.table-toggle').click(); \
                     return [[...c.querySelectorAll('.chart-table th')].map(h => h.textContent), \
                     c.querySelectorAll('.chart-table tbody tr').length]; }})()"
                ));
                let headers = table[0].as_array().unwrap();
                assert!(
                    headers.len() >= 3 && headers.iter().all(|h| h != ""),
                    "{name} {card}: {table}"
                );
                assert!(table[1].as_u64().unwrap() >= 20, "{name} {card}: {table}");
            }
        });
        // Scrolled down the page, before the update.
        let layout = "[document.documentElement.scrollHeight, window.scrollY, \
             [...document.querySelectorAll('main > *, .grid > .card')] \
             .map(c => (c.dataset.chart || c.id || c.className) + ':' + c.offsetHeight).join(' ')]";
        let before = tokio::task::block_in_place(|| {
            // The observation table loads on its own: measured once it has (its rows, or
            // the row saying there are none), not while it is still empty.
            assert!(
                browser.wait_for(
                    "!!document.querySelector('#observations tbody tr')",
                    Duration::from_secs(5)
                ),
                "{name}: the observation table did not load within 5 s"
            );
            browser.eval("window.scrollTo(0, 1200)");
            browser.eval(layout)
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
        } else if name == "four-knobs" {
            json!({"threads": 8, "cache_mb": 256.0, "ratio": 0.5, "batch": 10})
        } else if name == "codec" {
            json!({"codec": "lz4", "level": 3})
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
            // Updated in place: the page keeps its height and the reader's place (an
            // empty session's page becomes a full one).
            if name != "empty" {
                let after = browser.eval(layout);
                assert_eq!(
                    (&after[0], &after[1]),
                    (&before[0], &before[1]),
                    "{name}: the page moved: card heights {} before, {} after",
                    before[2],
                    after[2]
                );
            }
        });
    }
    // A phone's width: nothing scrolls sideways, the list nor a session.
    tokio::task::block_in_place(|| {
        browser.viewport(400, 900);
        for (path, drawn) in [
            (
                format!("/sessions/{bolt}"),
                "document.body.dataset.rendered !== undefined",
            ),
            (
                format!("/sessions/{four}"),
                "document.body.dataset.rendered !== undefined",
            ),
            (
                "/".to_string(),
                "document.querySelectorAll('#sessions tbody tr[data-session]').length === 7",
            ),
        ] {
            browser.open(&server.url(&path), drawn);
            std::thread::sleep(Duration::from_millis(300));
            // No two labels of a chart's axes overlap (a log axis's ticks included).
            let clashes = browser.eval(
                "[...document.querySelectorAll('.chart svg')].flatMap(svg => { \
                 const boxes = [...svg.querySelectorAll('.axis text')].map(t => [t.textContent, t.getBoundingClientRect()]); \
                 const clashes = []; \
                 boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => { \
                   const w = Math.min(p.right, q.right) - Math.max(p.left, q.left), h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top); \
                   if (w > 1 && h > 1) clashes.push(svg.closest('[data-chart]').dataset.chart + ': ' + a + ' / ' + b); })); \
                 return clashes; })",
            );
            assert_eq!(clashes, json!([]), "{path} at 400 px: axis labels overlap");
            let widths = browser.eval("[document.documentElement.scrollWidth, window.innerWidth]");
            assert!(
                widths[0].as_u64() <= widths[1].as_u64(),
                "{path} at 400 px: {widths}"
            );
            assert!(browser.errors.is_empty(), "{path}: {:?}", browser.errors);
            // The list's cells keep their words whole: each on one line but the name's.
            let broken = browser.eval(
                "[...document.querySelectorAll('#sessions td:not(.name)')].filter(td => { \
                 const r = document.createRange(); r.selectNodeContents(td); \
                 return r.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(td).lineHeight); \
                 }).map(td => td.textContent)",
            );
            assert_eq!(broken, json!([]), "{path}: cells broken across lines");
            let shot = if path == "/" {
                "dashboard-list-narrow"
            } else if path.ends_with(bolt.as_str()) {
                "dashboard-narrow"
            } else {
                continue;
            };
            browser.keep_screenshot(&format!("{shot}.png"), 900);
            keep_dark_screenshot(&mut browser, &format!("{shot}-dark.png"), 900);
        }
        browser.viewport(1280, 2600);
    });
    server.stop().await;
}

/// The page in dark mode: its background dark and its charts' text light (the relative
/// luminance of each, 0 black to 1 white), kept as `name` (`TVBO_SCREENSHOTS`); then light
/// again.
fn keep_dark_screenshot(browser: &mut Browser, name: &str, height: u32) {
    const LUMINANCE: &str = "(() => {          const lum = c => { const [r, g, b] = c.match(/[0-9.]+/g).map(Number); return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; };          const text = document.querySelector('.chart .axis text') || document.querySelector('main td');          return [lum(getComputedStyle(document.body).backgroundColor), lum(getComputedStyle(text)[text.closest('svg') ? 'fill' : 'color'])]; })()";
    browser.dark_mode(true);
    std::thread::sleep(Duration::from_millis(300));
    let luminance = browser.eval(LUMINANCE);
    let (background, text) = (
        luminance[0].as_f64().unwrap(),
        luminance[1].as_f64().unwrap(),
    );
    assert!(
        background < 0.2 && text > 0.5,
        "{name}: background {background}, text {text}"
    );
    browser.keep_screenshot(name, height);
    browser.dark_mode(false);
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
    let mut key_ids = Vec::new();
    for tenant in ["team-a", "team-b"] {
        let made = tvbo::keys::new_key(tenant, None, false).unwrap();
        server.store().insert_api_key(&made.row).await.unwrap();
        keys.push(made.key);
        key_ids.push(made.row.id);
    }
    let mine = session_of(&server, &keys[0], "mine").await;
    let theirs = session_of(&server, &keys[1], "theirs").await;
    // Three observations, one with metadata holding a comma and a quote (for the CSV).
    let observations = json!({"observations": [
        {"params": {"x": 0.25}, "value": 1.0},
        {"params": {"x": 0.5}, "value": 2.0, "metadata": {"host": "a, \"b\""}},
        {"params": {"x": 0.75}, "value": 1.5}
    ]});
    let response = server
        .client
        .post(server.url(&format!("/v1/sessions/{mine}/observations")))
        .bearer_auth(&keys[0])
        .json(&observations)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let downloads = tempfile::tempdir().unwrap();
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
        // The exports fetch with the key and save files a person can open.
        browser.download_to(downloads.path());
        browser.open(
            &server.url(&format!("/sessions/{mine}")),
            "document.body.dataset.rendered !== undefined",
        );
        let exported = browser.download("#export-json", downloads.path(), "mine-timeline.json");
        let exported: Value = serde_json::from_str(&exported).unwrap();
        assert_eq!(exported["observation_count"], json!(3), "{exported}");
        assert_eq!(exported["observations"].as_array().unwrap().len(), 3);
        let csv = browser.download("#export-csv", downloads.path(), "mine-observations.csv");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "{csv}");
        assert!(
            lines[0].starts_with(
                "kind,seq,t,recorded_at,measured_at,x,value,regret,estimated_regret,active,removed_t,removed_at"
            ),
            "{csv}"
        );
        // The metadata {"host":"a, \"b\""} as one CSV field: quoted, quotes doubled.
        let field = r#""{""host"":""a, \""b\""""}""#;
        assert!(lines[2].ends_with(field), "metadata quoted: {csv}");
        // Every row carries the wall-clock time the server recorded it at.
        let recorded_at = lines[1].split(',').nth(3).unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(recorded_at).is_ok(),
            "recorded_at {recorded_at:?}: {csv}"
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        // Signing out forgets the key.
        browser.eval("document.getElementById('sign-out').click()");
        std::thread::sleep(Duration::from_secs(1));
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        assert_eq!(
            browser.eval("localStorage.getItem('tvbo.apiKey')"),
            Value::Null
        );
        // Signed in again, watching a session, when the key is revoked: the page asks
        // for a key instead of polling on as "offline".
        browser.eval(&format!(
            "localStorage.setItem('tvbo.apiKey', '{}')",
            keys[0]
        ));
        browser.open(
            &server.url(&format!("/sessions/{mine}")),
            "document.body.dataset.rendered !== undefined",
        );
    });
    server.store().revoke_api_key(key_ids[0]).await.unwrap();
    // Live on the event stream, the page makes its next request when the session changes
    // (here through another key of the tenant); refused, it asks for a key.
    let other = tvbo::keys::new_key("team-a", None, false).unwrap();
    server.store().insert_api_key(&other.row).await.unwrap();
    let response = server
        .client
        .post(server.url(&format!("/v1/sessions/{mine}/observations")))
        .bearer_auth(&other.key)
        .json(&json!({"params": {"x": 0.4}, "value": 1.2}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    tokio::task::block_in_place(|| {
        assert!(
            browser.wait_for(
                "document.querySelector('#api-key') && document.body.innerText.includes('refused')",
                Duration::from_secs(5)
            ),
            "no sign-in form after the key was revoked: {}",
            browser.eval("document.body.innerText.slice(0, 300)")
        );
        // And no live indicator left behind (its dot is drawn by its class).
        assert_eq!(
            browser.eval(
                "(() => { const live = document.getElementById('live');                  return [live.className, getComputedStyle(live, '::before').content]; })()"
            ),
            json!(["live", "none"])
        );
    });
    server.stop().await;
}
