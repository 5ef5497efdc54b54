//! Sessions, their tenants and the API keys: create, read, list, delete.

use super::*;

store_tests!(
    check_tenants_and_keys,
    check_session_create_get_list_delete,
    check_delete_cascades,
);

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
    let red: Vec<Uuid> = store
        .list_sessions(10, None, Some("red"))
        .await
        .unwrap()
        .iter()
        .map(|r| r.cursor.id)
        .collect();
    assert_eq!(red, vec![ids[2], ids[0]]);
    assert_eq!(store.list_sessions(10, None, None).await.unwrap().len(), 3);
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
    assert_eq!(store.list_sessions(10, None, None).await.unwrap().len(), 4);

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
    assert!(
        store
            .list_sessions(10, None, None)
            .await
            .unwrap()
            .is_empty()
    );
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
    let all: Vec<Uuid> = store
        .list_sessions(10, None, None)
        .await
        .unwrap()
        .iter()
        .map(|r| r.cursor.id)
        .collect();
    assert_eq!(all, expected);
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list_sessions(2, cursor, None).await.unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 2);
        cursor = Some(page.last().unwrap().cursor);
        paged.extend(page.iter().map(|r| r.cursor.id));
    }
    assert_eq!(paged, expected);

    assert!(store.delete_session(rows[1].id).await.unwrap());
    assert!(!store.delete_session(rows[1].id).await.unwrap());
    assert!(store.get_session(rows[1].id).await.unwrap().is_none());
    assert_eq!(store.list_sessions(10, None, None).await.unwrap().len(), 3);
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
        let idem = store.get_idempotency(scope, &row.id.to_string()).await;
        assert_eq!(idem.unwrap().is_some(), present);
    }
}
