//! Sessions, their tenants and the API keys: create, read, list, delete.

use super::*;

use tvbo::store::{
    ListedSession, ObservationQuery, ObservationSort, ObservationState, SessionCursor,
    SessionQuery, SessionSort, SortKey, SortOrder,
};

store_tests!(
    check_tenants_and_keys,
    check_session_create_get_list_delete,
    check_delete_cascades,
    check_listing_follows_commits,
);

/// The listing's first `limit` sessions after `after`, newest first.
async fn newest(
    store: &dyn Store,
    limit: i64,
    after: Option<SessionCursor>,
    tenant: Option<&str>,
) -> Vec<ListedSession> {
    let query = SessionQuery::newest_first(limit, after, tenant);
    store.list_sessions(&query).await.unwrap()
}

/// Sessions keep their tenant, list and count by it; keys read back as stored, list
/// oldest first, and are revoked once.
async fn check_tenants_and_keys(store: &dyn Store) {
    let base = 1_700_000_000_000_000;
    let mut ids = Vec::new();
    for (i, tenant) in ["red", "blue", "red"].into_iter().enumerate() {
        let mut row = session(tenant, base + i as i64);
        row.tenant = tenant.into();
        store.create_session(&row, None, None, false).await.unwrap();
        ids.push(row.id);
    }
    let got = store.get_session(ids[1]).await.unwrap().unwrap();
    assert_eq!(got.tenant, "blue");
    assert_eq!(
        store.session_tenant(ids[0]).await.unwrap().as_deref(),
        Some("red")
    );
    assert_eq!(store.session_tenant(Uuid::new_v4()).await.unwrap(), None);
    let red: Vec<Uuid> = newest(store, 10, None, Some("red"))
        .await
        .iter()
        .map(|r| r.cursor.id)
        .collect();
    assert_eq!(red, vec![ids[2], ids[0]]);
    assert_eq!(newest(store, 10, None, None).await.len(), 3);
    // The cap on a tenant's sessions counts its own sessions only.
    let mut green = session("green", base + 3);
    green.tenant = "green".into();
    assert!(matches!(
        store.create_session(&green, None, Some(0), false).await,
        Err(StoreError::TooManySessions(0))
    ));
    store
        .create_session(&green, None, Some(1), false)
        .await
        .unwrap();
    let mut red = session("red", base + 4);
    red.tenant = "red".into();
    assert!(matches!(
        store.create_session(&red, None, Some(2), false).await,
        Err(StoreError::TooManySessions(2))
    ));
    assert_eq!(newest(store, 10, None, None).await.len(), 4);

    let first = tvbo::keys::new_key("alice", Some("red"), false)
        .unwrap()
        .row;
    let mut second = tvbo::keys::new_key("ops", None, true).unwrap().row;
    second.created_at = first.created_at + chrono::Duration::seconds(1);
    for key in [&second, &first] {
        store.insert_api_key(key).await.unwrap();
    }
    let mut expected_first = first.clone();
    expected_first.created_at = at(first.created_at.timestamp_micros());
    assert_eq!(
        store.get_api_key(first.id).await.unwrap(),
        Some(expected_first)
    );
    assert_eq!(store.get_api_key(Uuid::new_v4()).await.unwrap(), None);
    let listed: Vec<Uuid> = store
        .list_api_keys()
        .await
        .unwrap()
        .iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(listed, vec![first.id, second.id]);
    assert!(store.revoke_api_key(first.id).await.unwrap());
    assert!(!store.revoke_api_key(first.id).await.unwrap());
    assert!(!store.revoke_api_key(Uuid::new_v4()).await.unwrap());
    let revoked = store.get_api_key(first.id).await.unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(
        store
            .get_api_key(second.id)
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
}

/// A created session reads back as stored; the listing is newest first (ties by id) and
/// its cursor pages through every session once; deleting answers whether there was one.
async fn check_session_create_get_list_delete(store: &dyn Store) {
    assert!(store.get_session(Uuid::new_v4()).await.unwrap().is_none());
    assert!(newest(store, 10, None, None).await.is_empty());
    // Two sessions share a creation time: the id breaks the tie.
    let base = 1_700_000_000_000_000;
    let mut rows = [
        created(store, "a", base).await,
        created(store, "b", base + 5).await,
        created(store, "c", base + 5).await,
        created(store, "d", base + 9).await,
    ];
    let got = store.get_session(rows[0].id).await.unwrap().unwrap();
    assert_eq!(got.id, rows[0].id);
    assert_eq!(got.config, rows[0].config);
    assert_eq!(got.created_at, rows[0].created_at);
    assert_eq!(got.status, "active");
    assert_eq!(got.version, 0);
    assert_eq!(got.state, json!({"initial": true}));
    assert_eq!(
        (got.suggest_count, got.last_suggest, got.observation_count),
        (0, None, 0)
    );
    assert_eq!((got.dataset_size, got.pending_count), (0, 0));

    // Newest first, ties by id descending; pages of two follow the cursor.
    rows.sort_by_key(|r| std::cmp::Reverse((r.created_at, r.id.to_string())));
    let expected: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let all: Vec<Uuid> = newest(store, 10, None, None)
        .await
        .iter()
        .map(|r| r.cursor.id)
        .collect();
    assert_eq!(all, expected);
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = newest(store, 2, cursor, None).await;
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 2);
        cursor = Some(page.last().unwrap().cursor.clone());
        paged.extend(page.iter().map(|r| r.cursor.id));
    }
    assert_eq!(paged, expected);

    assert!(store.delete_session(rows[1].id).await.unwrap());
    assert!(!store.delete_session(rows[1].id).await.unwrap());
    assert!(store.get_session(rows[1].id).await.unwrap().is_none());
    assert_eq!(newest(store, 10, None, None).await.len(), 3);
}

/// Deleting a session deletes its suggestions, observations, response times, calls and
/// idempotency records, and nothing of another session.
async fn check_delete_cascades(store: &dyn Store) {
    let kept = created(store, "kept", 1).await;
    let gone = created(store, "gone", 2).await;
    let scope = "POST /v1/sessions/x/observations";
    let mut suggestions = Vec::new();
    for row in [&kept, &gone] {
        let s = suggestion(0, 0.0);
        let change = ChangeSet {
            new_suggestions: vec![s.clone()],
            new_observations: vec![observation(1, None, 0.5)],
            response_time: Some(ResponseTimeSample { n: 1, seconds: 0.2 }),
            calls: vec![call("suggest", 0.01)],
            events: vec![tvbo::domain::events::NewEvent {
                kind: tvbo::domain::events::EventKind::ModelReset,
                t: 0.0,
                data: serde_json::json!({"resets": 1}),
            }],
            ..ChangeSet::default()
        };
        let key = row.id.to_string();
        store
            .commit(row.id, 0, &change, Some(&record(scope, Some(row.id), &key)))
            .await
            .unwrap();
        suggestions.push(s);
    }
    assert!(store.delete_session(gone.id).await.unwrap());
    for ((row, s), present) in [&kept, &gone]
        .into_iter()
        .zip(&suggestions)
        .zip([true, false])
    {
        let count = usize::from(present);
        assert_eq!(store.load_history(row.id).await.unwrap().is_some(), present);
        let stored = store.get_suggestion(row.id, s.id).await.unwrap();
        assert_eq!(stored.is_some(), present);
        let observations = store.list_observations(row.id, 0, 10, true).await.unwrap();
        assert_eq!(observations.len(), count);
        let summaries = store.response_time_summaries(row.id).await.unwrap();
        assert_eq!(summaries.len(), count);
        assert_eq!(store.call_stats(row.id).await.unwrap().len(), count);
        let events = store.list_events(row.id, 0, 10).await.unwrap();
        assert_eq!(events.len(), count);
        if let Some(record) = events.first() {
            assert_eq!(record.session, row.id);
            let event = &record.event;
            let steps = store.list_calls(row.id, 0, 10).await.unwrap();
            assert_eq!((event.seq, event.step), (1, steps[0].id));
            assert_eq!((event.kind.as_str(), event.t), ("model-reset", 0.0));
            assert_eq!(event.data, serde_json::json!({"resets": 1}));
        }
        let idem = store.get_idempotency(scope, &row.id.to_string()).await;
        assert_eq!(idem.unwrap().is_some(), present);
    }
}

/// What the listing sorts and summarises by follows each commit: the observation count
/// (the largest seq), the newest call's time and session time (a change without a call
/// leaves them), the algorithm; the regret slices sum the regrets, reported or
/// estimated; the observation page filters, orders and counts.
async fn check_listing_follows_commits(store: &dyn Store) {
    let row = created(store, "Listed", 1_700_000_000_000_000).await;
    let other = created(store, "other", 1_700_000_000_000_001).await;
    let by = |sort, order| SessionQuery {
        sort,
        order,
        ..SessionQuery::newest_first(10, None, None)
    };
    let listed = store
        .list_sessions(&by(SessionSort::LastActivity, SortOrder::Desc))
        .await
        .unwrap();
    assert_eq!(listed[0].cursor.id, other.id);
    assert_eq!(listed[1].last_activity_at, row.created_at);
    assert_eq!(listed[1].last_activity_t, None);
    let mut change = ChangeSet {
        new_observations: (1..=3)
            .map(|seq| observation(seq, None, seq as f64))
            .collect(),
        calls: vec![call("observe", 0.01)],
        ..ChangeSet::default()
    };
    change.calls[0].t = 7.5;
    store.commit(row.id, 0, &change, None).await.unwrap();
    // A change without a call (an abandoned suggestion's) is no step.
    let quiet = ChangeSet {
        new_observations: vec![observation(4, None, 9.0)],
        ..ChangeSet::default()
    };
    store.commit(row.id, 1, &quiet, None).await.unwrap();
    let listed = store
        .list_sessions(&by(SessionSort::LastActivity, SortOrder::Desc))
        .await
        .unwrap();
    assert_eq!(listed[0].cursor.id, row.id);
    assert_eq!(listed[0].last_activity_t, Some(7.5));
    assert!(listed[0].last_activity_at > row.created_at);
    assert_eq!(
        listed[0].cursor.key,
        SortKey::Int(tvbo::store::to_micros(listed[0].last_activity_at))
    );
    let listed = store
        .list_sessions(&by(SessionSort::Observations, SortOrder::Desc))
        .await
        .unwrap();
    assert_eq!(
        (listed[0].cursor.id, &listed[0].cursor.key),
        (row.id, &SortKey::Int(4))
    );
    assert_eq!(listed[1].cursor.key, SortKey::Int(0));
    let listed = store
        .list_sessions(&by(SessionSort::Name, SortOrder::Asc))
        .await
        .unwrap();
    assert_eq!(listed[0].cursor.key, SortKey::Text("listed".into()));
    let gp = SessionQuery {
        algorithm: Some("gp-ucb"),
        name: Some("LIST"),
        ..by(SessionSort::Created, SortOrder::Asc)
    };
    let listed = store.list_sessions(&gp).await.unwrap();
    assert_eq!(
        listed.iter().map(|l| l.cursor.id).collect::<Vec<_>>(),
        [row.id]
    );
    let bolt = SessionQuery {
        algorithm: Some("bolt"),
        ..by(SessionSort::Created, SortOrder::Asc)
    };
    assert!(store.list_sessions(&bolt).await.unwrap().is_empty());

    // observation(seq): regret reported for even seqs (0.5 seq), estimated for odd (0.25 seq).
    // Four observations: a slice each (a young session is sliced by observation); none
    // for a session without any.
    let slices = store.regret_slices(&[row.id, other.id], 40).await.unwrap();
    assert_eq!(slices.len(), 4, "{slices:?}");
    let valued: Vec<(i64, i64)> = slices.iter().map(|s| (s.valued, s.reported)).collect();
    assert_eq!(valued, [(1, 0), (1, 1), (1, 0), (1, 1)]);
    let totals: Vec<f64> = slices.iter().map(|s| s.total).collect();
    assert_eq!(totals, [0.25, 1.0, 0.75, 2.0]);
    assert!(store.regret_slices(&[], 40).await.unwrap().is_empty());

    let page = |sort, order, state, offset, limit| ObservationQuery {
        after: 0,
        state,
        sort,
        order,
        offset,
        limit,
    };
    let all = page(
        ObservationSort::Regret,
        SortOrder::Desc,
        ObservationState::All,
        1,
        2,
    );
    let got = store.observation_page(row.id, &all).await.unwrap();
    assert_eq!(got.total, 4);
    assert_eq!(got.rows.iter().map(|o| o.seq).collect::<Vec<_>>(), [2, 3]);
    let forgotten = page(
        ObservationSort::Seq,
        SortOrder::Asc,
        ObservationState::Forgotten,
        0,
        9,
    );
    let got = store.observation_page(row.id, &forgotten).await.unwrap();
    assert_eq!((got.total, got.rows.len()), (0, 0));
    let after = ObservationQuery {
        after: 3,
        ..page(
            ObservationSort::T,
            SortOrder::Asc,
            ObservationState::Active,
            0,
            9,
        )
    };
    let got = store.observation_page(row.id, &after).await.unwrap();
    assert_eq!(
        (
            got.total,
            got.rows.iter().map(|o| o.seq).collect::<Vec<_>>()
        ),
        (1, vec![4])
    );
}
