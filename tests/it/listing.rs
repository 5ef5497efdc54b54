//! The listings the dashboard pages through: sessions filtered by name and algorithm and
//! sorted four ways, each with its summary (regret as the timeline says it, a sparkline,
//! the last activity); a session's observations by state, sorted four ways, with their
//! total. Every order is paged to its end and must give each match exactly once, in order.

use crate::common;

use std::cmp::Ordering;
use std::collections::HashSet;

use common::{TestServer, client_session};
use serde_json::{Value, json};
use tvbo::api::RouterSettings;
use tvbo::engine::Limits;

backend_tests!(
    settings = super::listing_settings();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_listed_summary_says_what_the_timeline_says,
    sessions_filter_and_sort_and_page_through_every_match_once,
    bad_listing_parameters_are_refused_naming_them,
    observations_filter_and_sort_and_page_through_every_match_once,
);

/// Open access, and room for a long history in one session without forgetting.
fn listing_settings() -> RouterSettings {
    common::open_settings(Limits {
        max_active_observations: 5000,
        ..Limits::default()
    })
}

/// A client-time session of `algorithm` named `name`.
async fn session(server: &TestServer, name: &str, algorithm: &str) -> String {
    let mut body = client_session(algorithm, 3);
    body["name"] = json!(name);
    server.create(body).await
}

/// Observes `count` settings of the client's own, at seq `first`, `first + 1`, ...: the
/// value, time and reported regret (if any) of each given by `of(seq)`.
async fn observe(
    server: &TestServer,
    id: &str,
    first: i64,
    count: i64,
    of: impl Fn(i64) -> (f64, f64, Option<f64>),
) {
    for chunk in (first..first + count).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|&seq| {
                let (value, t, regret) = of(seq);
                let x = (seq % 97) as f64 / 97.0;
                let mut o = json!({"params": {"x": x, "y": 0.5}, "value": value, "t": t});
                if let Some(regret) = regret {
                    o["regret"] = json!(regret);
                }
                o
            })
            .collect();
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"observations": batch}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
}

/// Every page of `path` (which takes `&cursor=`), limit 5: the sessions in order.
async fn every_page(server: &TestServer, path: &str) -> Vec<Value> {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page_path = match &cursor {
            Some(c) => format!("{path}&limit=5&cursor={c}"),
            None => format!("{path}&limit=5"),
        };
        let (status, page) = server.get(&page_path).await;
        assert_eq!(status, 200, "{page_path}: {page}");
        let sessions = page["sessions"].as_array().unwrap();
        assert!(sessions.len() <= 5);
        listed.extend(sessions.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return listed,
        }
    }
}

/// The listed session whose id is `id`.
async fn listed(server: &TestServer, id: &str) -> Value {
    let (status, page) = server.get("/v1/sessions?limit=1000").await;
    assert_eq!(status, 200, "{page}");
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .expect("listed")
}

/// Every observation of the session, active or forgotten, in seq order.
async fn all_observations(server: &TestServer, id: &str) -> Vec<Value> {
    let path = format!("/v1/sessions/{id}/observations?state=all&limit=10000");
    let (status, page) = server.get(&path).await;
    assert_eq!(status, 200, "{page}");
    page["observations"].as_array().unwrap().clone()
}

/// The regret of a listed observation: reported, else estimated.
fn regret(o: &Value) -> Option<f64> {
    o["regret"]
        .as_f64()
        .or_else(|| o["estimated_regret"].as_f64())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// Two sessions: a long one (3,000 observations, the first 700 without a regret, so that
/// the sparkline's early slices are empty) with reported regrets, and a short GP-UCB one
/// whose regrets the model estimates. Each listed summary says what its timeline says;
/// the sparkline has at most 40 points, each the mean of the regrets of a run of whole
/// 64-observation buckets, as a brute force over the observations finds them.
async fn a_listed_summary_says_what_the_timeline_says(server: TestServer) {
    let long = session(&server, "long", "random").await;
    let regret_of = |seq: i64| (seq > 700).then(|| ((seq * 7919) % 1000) as f64 / 250.0);
    observe(&server, &long, 1, 3000, |seq| {
        (seq as f64, seq as f64, regret_of(seq))
    })
    .await;
    let short = session(&server, "short", "gp-ucb").await;
    for round in 0..12 {
        let t = f64::from(round);
        let path = format!("/v1/sessions/{short}/suggestions");
        let (status, body) = server.post(&path, &json!({"t": t})).await;
        assert_eq!(status, 201, "{body}");
        let suggestion = &body["suggestions"][0];
        let x = suggestion["params"]["x"].as_f64().unwrap();
        let mut o = json!({"suggestion_id": suggestion["id"], "value": x * (1.0 - x), "t": t});
        if round % 3 == 0 {
            o["regret"] = json!(0.25 - x * (1.0 - x));
        }
        let path = format!("/v1/sessions/{short}/observations");
        let (status, body) = server.post(&path, &o).await;
        assert_eq!(status, 201, "{body}");
    }
    // A session whose newest regrets rose far above the ones before: lagging.
    let worsening = session(&server, "worsening", "random").await;
    observe(&server, &worsening, 1, 200, |seq| {
        let regret = if seq > 136 {
            1.0 + (seq % 3) as f64 * 0.01
        } else {
            0.1
        };
        (-regret, seq as f64, Some(regret))
    })
    .await;
    for id in [&long, &short, &worsening] {
        let entry = listed(&server, id).await;
        let summary = &entry["summary"];
        let (status, timeline) = server
            .get(&format!("/v1/sessions/{id}/timeline?points=100"))
            .await;
        assert_eq!(status, 200, "{timeline}");
        // The status now, as the session's page says it.
        assert_eq!(
            summary["tracking"], timeline["tracking"]["status"],
            "{id}: {summary}"
        );
        assert_eq!(
            summary["tracking_reason"], timeline["tracking"]["reason"],
            "{id}: {summary}"
        );
        for count in ["reported_regrets", "estimated_regrets"] {
            assert_eq!(summary[count], timeline[count], "{id} {count}: {summary}");
        }
        let (mine, theirs) = (&summary["average_regret"], &timeline["average_regret"]);
        assert!(
            close(mine.as_f64().unwrap(), theirs.as_f64().unwrap()),
            "{mine} {theirs}"
        );
        // The brute force: buckets of 64 by seq, bucket b in slice b·40/B; at most 128
        // observations, observation seq in slice (seq − 1)·40/n.
        let observations = all_observations(&server, id).await;
        let n = observations.len() as i64;
        let buckets = (n + 63) / 64;
        let mut slices = vec![(0.0, 0); 40];
        for o in &observations {
            let seq = o["seq"].as_i64().unwrap();
            let at = if n <= 128 {
                (seq - 1) * 40 / n
            } else {
                (seq - 1) / 64 * 40 / buckets
            };
            if let Some(r) = regret(o) {
                let slice = &mut slices[at as usize];
                slice.0 += r;
                slice.1 += 1;
            }
        }
        let expected: Vec<f64> = slices
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(sum, n)| sum / f64::from(*n))
            .collect();
        let sparkline: Vec<f64> = summary["sparkline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(sparkline.len() <= 40, "{}", sparkline.len());
        assert_eq!(
            sparkline.len(),
            expected.len(),
            "{sparkline:?} {expected:?}"
        );
        for (a, b) in sparkline.iter().zip(&expected) {
            assert!(close(*a, *b), "{sparkline:?} {expected:?}");
        }
        // The last activity is the newest step's.
        let (_, steps) = server
            .get(&format!("/v1/sessions/{id}/steps?limit=10000"))
            .await;
        let newest = steps["steps"].as_array().unwrap().last().unwrap();
        assert_eq!(summary["last_activity_t"], newest["t"], "{summary}");
        let at = micros(&summary["last_activity_at"]);
        assert!(at >= micros(&entry["created_at"]), "{summary}");
        assert_eq!(entry["tenant"], "default", "open access lists as an admin");
    }
    assert_eq!(
        listed(&server, &worsening).await["summary"]["tracking"],
        "lagging"
    );
    let long_summary = listed(&server, &long).await["summary"].clone();
    assert_eq!(long_summary["sparkline"].as_array().unwrap().len(), 32);
    assert_eq!(long_summary["estimated_regrets"], 0);
    assert_eq!(long_summary["reported_regrets"], 2300);
    // A session without steps: no regret, active when it was made.
    let idle = session(&server, "idle", "bolt").await;
    let summary = listed(&server, &idle).await["summary"].clone();
    assert_eq!(summary["average_regret"], Value::Null, "{summary}");
    assert_eq!(summary["sparkline"], json!([]), "{summary}");
    assert_eq!(summary["last_activity_t"], Value::Null, "{summary}");
    assert_eq!(summary["tracking"], "no-recent-data", "{summary}");
    let entry = listed(&server, &idle).await;
    assert_eq!(summary["last_activity_at"], entry["created_at"]);
    server.stop().await;
}

/// Which listed sessions a filter keeps.
type Matches = dyn Fn(&Value) -> bool;

/// Unix microseconds of an RFC 3339 timestamp.
fn micros(at: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(at.as_str().unwrap())
        .unwrap()
        .timestamp_micros()
}

/// The key of a listed session in an order, as the server defines it.
fn key(sort: &str, s: &Value) -> Value {
    match sort {
        "created" => json!(micros(&s["created_at"])),
        "name" => json!(s["name"].as_str().unwrap().to_lowercase()),
        "observations" => s["observation_count"].clone(),
        "last_activity" => json!(micros(&s["summary"]["last_activity_at"])),
        // Without any regret, below every mean.
        "regret" => json!(s["summary"]["average_regret"].as_f64().unwrap_or(-1.0e300)),
        _ => unreachable!(),
    }
}

fn compare(a: &Value, b: &Value) -> Ordering {
    match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ if a.is_f64() => a.as_f64().unwrap().total_cmp(&b.as_f64().unwrap()),
        // Folded names, byte by byte (ASCII here: every collation agrees).
        _ => a.as_str().unwrap().cmp(b.as_str().unwrap()),
    }
}

/// Twelve sessions, their names in mixed case (two of them the same), three algorithms,
/// 0 to 5 observations made in an order of their own, with regrets of their own (none
/// for the sessions without observations). Every sort in both directions,
/// unfiltered and filtered by name and by algorithm, paged five at a time: each matching
/// session once, in the order's key, ties by id; and the default directions.
async fn sessions_filter_and_sort_and_page_through_every_match_once(server: TestServer) {
    let names = [
        "AlphaOne",
        "alphatwo",
        "Beta",
        "beta",
        "GammaRay",
        "delta7",
        "EPSILONalpha",
        "zeta",
        "Eta",
        "thetaALPHA",
        "iota",
        "kappa",
    ];
    let algorithms = ["bolt", "random", "gp-ucb"];
    let mut ids = Vec::new();
    for (i, name) in names.iter().enumerate() {
        ids.push(session(&server, name, algorithms[i % 3]).await);
    }
    for i in [7, 2, 9, 0, 4, 11, 5, 1] {
        let count = (i % 6) as i64;
        if count > 0 {
            observe(&server, &ids[i], 1, count, |seq| {
                let regret = (i as f64 * 0.37 + seq as f64 * 0.11).fract();
                (seq as f64, seq as f64, Some(regret))
            })
            .await;
        }
    }
    let all = every_page(&server, "/v1/sessions?sort=created").await;
    assert_eq!(all.len(), 12);
    for (sort, default) in [
        ("created", "desc"),
        ("name", "asc"),
        ("observations", "desc"),
        ("last_activity", "desc"),
        ("regret", "desc"),
    ] {
        let filters: [(&str, &Matches); 3] = [
            ("", &|_| true),
            ("&name=ALPHA", &|s| {
                s["name"].as_str().unwrap().to_lowercase().contains("alpha")
            }),
            ("&algorithm=random", &|s| s["algorithm"]["name"] == "random"),
        ];
        for (filter, matches) in filters {
            for order in ["asc", "desc", ""] {
                let direction = if order.is_empty() { default } else { order };
                let path = match order {
                    "" => format!("/v1/sessions?sort={sort}{filter}"),
                    _ => format!("/v1/sessions?sort={sort}&order={order}{filter}"),
                };
                let paged = every_page(&server, &path).await;
                let mut expected: Vec<&Value> = all.iter().filter(|s| matches(s)).collect();
                expected.sort_by(|a, b| {
                    let by_key = compare(&key(sort, a), &key(sort, b))
                        .then_with(|| a["id"].as_str().unwrap().cmp(b["id"].as_str().unwrap()));
                    if direction == "desc" {
                        by_key.reverse()
                    } else {
                        by_key
                    }
                });
                let paged_ids: Vec<&Value> = paged.iter().map(|s| &s["id"]).collect();
                let expected_ids: Vec<&Value> = expected.iter().map(|s| &s["id"]).collect();
                assert_eq!(paged_ids, expected_ids, "{path}");
            }
        }
    }
    // "alpha" is in four names, whatever their case; every third session is random.
    let alpha = every_page(&server, "/v1/sessions?name=alpha").await;
    assert_eq!(alpha.len(), 4);
    let random = every_page(&server, "/v1/sessions?algorithm=random").await;
    assert_eq!(random.len(), 4);
    let (_, none) = server.get("/v1/sessions?name=%25").await;
    assert_eq!(
        none["sessions"],
        json!([]),
        "% is a character, not a wildcard"
    );
    server.stop().await;
}

/// A problem's status and field.
async fn refused(server: &TestServer, path: &str) -> (u16, Value) {
    let (status, body) = server.get(path).await;
    (status, body["field"].clone())
}

async fn bad_listing_parameters_are_refused_naming_them(server: TestServer) {
    let id = session(&server, "one", "random").await;
    session(&server, "two", "random").await;
    let (_, page) = server.get("/v1/sessions?sort=name&limit=1").await;
    let by_name = page["next_cursor"].as_str().unwrap().to_string();
    let (_, page) = server.get("/v1/sessions?limit=1").await;
    let by_creation = page["next_cursor"].as_str().unwrap().to_string();
    let observations = format!("/v1/sessions/{id}/observations");
    for (path, status, field) in [
        ("/v1/sessions?sort=size".to_string(), 400, "sort"),
        ("/v1/sessions?order=up".to_string(), 400, "order"),
        ("/v1/sessions?sort=NAME".to_string(), 400, "sort"),
        ("/v1/sessions?algorithm=bolts".to_string(), 400, "algorithm"),
        ("/v1/sessions?cursor=garbage".to_string(), 400, "cursor"),
        (
            format!("/v1/sessions?cursor={}", by_name.to_uppercase()),
            400,
            "cursor",
        ),
        // A cursor of another order, though written as cursors are: 422.
        (format!("/v1/sessions?cursor={by_name}"), 422, "cursor"),
        (
            format!("/v1/sessions?sort=name&order=desc&cursor={by_name}"),
            422,
            "cursor",
        ),
        (
            format!("/v1/sessions?sort=observations&cursor={by_creation}"),
            422,
            "cursor",
        ),
        (
            format!("/v1/sessions?order=asc&cursor={by_creation}"),
            422,
            "cursor",
        ),
        // In the pattern, but with a NUL, which no name holds (nor PostgreSQL's text).
        (
            format!("/v1/sessions?sort=name&cursor=name.asc.00.{id}"),
            422,
            "cursor",
        ),
        (format!("{observations}?sort=size"), 400, "sort"),
        (format!("{observations}?order=down"), 400, "order"),
        (format!("{observations}?state=gone"), 400, "state"),
        (format!("{observations}?offset=1.5"), 400, "offset"),
        (format!("{observations}?offset=-1"), 422, "offset"),
    ] {
        assert_eq!(
            refused(&server, &path).await,
            (status, json!(field)),
            "{path}"
        );
    }
    let (status, none) = server.get("/v1/sessions?name=a%00").await;
    assert_eq!((status, &none["sessions"]), (200, &json!([])), "{none}");
    for fine in [
        format!("/v1/sessions?sort=name&cursor={by_name}"),
        format!("/v1/sessions?sort=created&order=desc&cursor={by_creation}"),
    ] {
        let (status, page) = server.get(&fine).await;
        assert_eq!(status, 200, "{fine}: {page}");
        assert_eq!(page["sessions"].as_array().unwrap().len(), 1, "{fine}");
    }
    server.stop().await;
}

/// The expected order of observations by `sort` (`regret`: reported else estimated,
/// those without last either way), ties by seq in the same direction.
fn order_observations(observations: &mut [&Value], sort: &str, descending: bool) {
    let number = |o: &Value, field: &str| o[field].as_f64().unwrap();
    observations.sort_by(|a, b| {
        let by_key = match sort {
            "seq" => Ordering::Equal,
            "value" | "t" => number(a, sort).total_cmp(&number(b, sort)),
            "regret" => match (regret(a), regret(b)) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => return Ordering::Less,
                (None, Some(_)) => return Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
            _ => unreachable!(),
        };
        let ordered = by_key.then_with(|| number(a, "seq").total_cmp(&number(b, "seq")));
        if descending {
            ordered.reverse()
        } else {
            ordered
        }
    });
}

/// R-GP-UCB resetting every 7 observations: of 40, 35 are forgotten. Values, times and
/// regrets repeat (ties) and some regrets are missing. Every state (and `include_pruned`),
/// sort and direction, paged seven at a time by offset: each match once, in order, with
/// `total` the number of matches on every page; seq order also pages by `after`.
async fn observations_filter_and_sort_and_page_through_every_match_once(server: TestServer) {
    let mut body = client_session("r-gp-ucb", 4);
    body["algorithm"] = json!({"name": "r-gp-ucb", "reset_every": 7});
    let id = server.create(body).await;
    observe(&server, &id, 1, 40, |seq| {
        let regret = (seq % 4 != 0).then_some((seq % 5) as f64);
        ((seq % 6) as f64 - 2.5, ((seq * 37) % 11) as f64, regret)
    })
    .await;
    let everything = all_observations(&server, &id).await;
    assert_eq!(everything.len(), 40);
    let path = format!("/v1/sessions/{id}/observations");
    for (state, query) in [
        ("all", "state=all"),
        ("active", "state=active"),
        ("forgotten", "state=forgotten"),
        ("all", "include_pruned=true"),
        ("active", "include_pruned=false"),
        ("active", "state=active&include_pruned=true"),
    ] {
        let mut expected_total = None;
        for sort in ["seq", "value", "regret", "t"] {
            for order in ["asc", "desc"] {
                let mut expected: Vec<&Value> = everything
                    .iter()
                    .filter(|o| match state {
                        "all" => true,
                        "active" => o["active"] == true,
                        _ => o["active"] == false,
                    })
                    .collect();
                order_observations(&mut expected, sort, order == "desc");
                let mut paged = Vec::new();
                let mut offset = 0;
                loop {
                    let page_path =
                        format!("{path}?{query}&sort={sort}&order={order}&limit=7&offset={offset}");
                    let (status, page) = server.get(&page_path).await;
                    assert_eq!(status, 200, "{page_path}: {page}");
                    assert_eq!(page["total"], expected.len(), "{page_path}");
                    let rows = page["observations"].as_array().unwrap();
                    paged.extend(rows.iter().map(|o| o["seq"].clone()));
                    offset += 7;
                    if offset >= expected.len() {
                        assert!(page.get("next_after").is_none(), "{page_path}: {page}");
                        break;
                    }
                    assert_eq!(rows.len(), 7, "{page_path}");
                }
                let expected_seqs: Vec<Value> = expected.iter().map(|o| o["seq"].clone()).collect();
                assert_eq!(paged, expected_seqs, "{query} {sort} {order}");
                expected_total = Some(expected.len());
            }
        }
        // In seq order, ascending, `after` pages as before.
        let mut seen = Vec::new();
        let mut after = 0;
        loop {
            let (status, page) = server
                .get(&format!("{path}?{query}&limit=4&after={after}"))
                .await;
            assert_eq!(status, 200, "{page}");
            let rows = page["observations"].as_array().unwrap();
            seen.extend(rows.iter().map(|o| o["seq"].as_i64().unwrap()));
            match page["next_after"].as_i64() {
                Some(next) => after = next,
                None => break,
            }
        }
        assert_eq!(Some(seen.len()), expected_total, "{query}");
        assert_eq!(seen.iter().collect::<HashSet<_>>().len(), seen.len());
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
    }
    assert_eq!(
        everything.iter().filter(|o| o["active"] == true).count(),
        5,
        "R-GP-UCB kept the last block's"
    );
    server.stop().await;
}

/// A request with `key` as its bearer: status and JSON body.
async fn with_key(
    server: &TestServer,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json");
    let body = body.map_or_else(axum::body::Body::empty, |b| {
        axum::body::Body::from(b.to_string())
    });
    TestServer::parsed(server.send(request.body(body).unwrap()).await).await
}

/// A tenant's key lists its sessions without a tenant; an admin key's listing, of every
/// tenant, names each session's.
#[tokio::test]
async fn an_admins_listing_names_each_sessions_tenant() {
    let settings = RouterSettings {
        access: tvbo::api::auth::AccessSettings {
            rate_per_second: None,
            ..Default::default()
        },
        ..Default::default()
    };
    let server = TestServer::start_configured(settings, Default::default()).await;
    let mut keys = Vec::new();
    for (name, tenant, admin) in [("alice", "team-a", false), ("ops", "ops", true)] {
        let made = tvbo::keys::new_key(name, Some(tenant), admin).unwrap();
        server.store().insert_api_key(&made.row).await.unwrap();
        keys.push(made.key);
    }
    let (status, created) = with_key(
        &server,
        &keys[0],
        "POST",
        "/v1/sessions",
        Some(client_session("random", 1)),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (status, own) = with_key(&server, &keys[0], "GET", "/v1/sessions", None).await;
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["sessions"][0]["id"], created["id"]);
    assert!(own["sessions"][0].get("tenant").is_none(), "{own}");
    assert!(own["sessions"][0]["summary"].is_object(), "{own}");
    let (status, every) = with_key(&server, &keys[1], "GET", "/v1/sessions", None).await;
    assert_eq!(status, 200, "{every}");
    assert_eq!(every["sessions"][0]["tenant"], "team-a", "{every}");
    server.stop().await;
}

/// `GET /v1/algorithms`, keys on: every algorithm of the API's create schema once (a
/// name missing from the list would be one no filter offers), each with its facts, each
/// one a session takes and the listing filters by; no key, no list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_algorithms_listed_are_those_a_session_takes() {
    let server = TestServer::keys_required("algorithms").await;
    let (status, list) = server.get("/v1/algorithms").await;
    assert_eq!(status, 200, "{list}");
    let listed: Vec<&Value> = list["algorithms"].as_array().unwrap().iter().collect();
    let names: Vec<&str> = listed.iter().map(|a| a["name"].as_str().unwrap()).collect();
    let schema: Value = serde_json::from_str(&tvbo::api::openapi_json()).unwrap();
    let mut in_schema: Vec<&str> = schema["components"]["schemas"]["AlgorithmConfig"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| variant["properties"]["name"]["enum"][0].as_str().unwrap())
        .collect();
    in_schema.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, in_schema);
    for algorithm in &listed {
        let name = algorithm["name"].as_str().unwrap();
        assert!(!algorithm["summary"].as_str().unwrap().is_empty(), "{name}");
        let needs_priors = algorithm["priors"] == "required";
        let mut body = client_session(name, 1);
        body["name"] = json!(format!("listed {name}"));
        let (status, created) = server.post("/v1/sessions", &body).await;
        if needs_priors {
            assert_eq!(status, 422, "{name}: {created}");
            assert_eq!(created["field"], "algorithm.priors", "{name}: {created}");
            continue;
        }
        assert_eq!(status, 201, "{name}: {created}");
        assert_eq!(created["algorithm"]["name"], name);
        let (_, page) = server.get(&format!("/v1/sessions?algorithm={name}")).await;
        let ids: Vec<&Value> = page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["id"])
            .collect();
        assert_eq!(ids, [&created["id"]], "{name}");
        let forgets = matches!(name, "bolt" | "w-dbo" | "r-gp-ucb" | "et-gp-ucb");
        assert_eq!(algorithm["forgets"], forgets, "{name}");
    }
    let request = axum::http::Request::get("/v1/algorithms")
        .header("authorization", "Bearer tvbo_not_a_key")
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, _) = TestServer::parsed(server.send(request).await).await;
    assert_eq!(status, 401);
}
