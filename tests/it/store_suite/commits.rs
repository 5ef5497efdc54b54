//! Commits: every part of a change, the version check, concurrent commits, idempotency
//! records.

use super::*;

store_tests!(
    check_commit_applies_every_part,
    check_commit_version_conflict,
    check_concurrent_commits_one_wins,
    check_concurrent_commits_of_many_sessions_stand_alone,
    check_commit_missing_session,
    check_idempotency_records,
);

/// Every part of a ChangeSet is stored, and the session's counts follow.
async fn check_commit_applies_every_part(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    let s0 = suggestion(0, 0.0);
    let s1 = suggestion(1, 1.0);
    let first = ChangeSet {
        new_suggestions: vec![s0.clone(), s1.clone()],
        new_observations: vec![observation(1, None, 0.5), observation(2, None, 0.7)],
        state: Some(json!({"step": 1})),
        last_suggest: Some((1.0, 2)),
        last_optimum_mean: Some(-0.5),
        ..ChangeSet::default()
    };
    store.commit(row.id, 0, &first, None).await.unwrap();
    let second = ChangeSet {
        suggestion_status: vec![(s0.id, SuggestionStatus::Observed)],
        new_observations: vec![observation(3, Some(&s0), 2.0)],
        deactivate: vec![Deactivation {
            seq: 1,
            reason: "stale".into(),
            t: 1.75,
        }],
        response_time: Some(ResponseTimeSample { n: 2, seconds: 0.5 }),
        calls: vec![call("observe", 0.25)],
        ..ChangeSet::default()
    };
    let before = Utc::now() - Duration::seconds(1);
    store.commit(row.id, 1, &second, None).await.unwrap();

    let got = store.get_session(row.id).await.unwrap().unwrap();
    assert_eq!(got.version, 2);
    // A change without a state or last suggest keeps the stored ones.
    assert_eq!(got.state, json!({"step": 1}));
    assert_eq!(got.last_suggest, Some((1.0, 2)));
    assert_eq!(got.last_optimum_mean, Some(-0.5));
    assert_eq!(got.suggest_count, 2);
    assert_eq!(got.observation_count, 3);
    assert_eq!(got.dataset_size, 2);
    assert_eq!(got.pending_count, 1);

    let stored_s0 = store.get_suggestion(row.id, s0.id).await.unwrap().unwrap();
    assert_eq!(
        stored_s0,
        SuggestionRow {
            status: SuggestionStatus::Observed,
            ..s0.clone()
        }
    );
    assert_eq!(
        store.get_suggestion(row.id, s1.id).await.unwrap(),
        Some(s1.clone())
    );
    // Suggestions belong to their session.
    let other = created(store, "other", 2).await;
    assert!(
        store
            .get_suggestion(other.id, s1.id)
            .await
            .unwrap()
            .is_none()
    );

    let all = store.list_observations(row.id, 0, 10, true).await.unwrap();
    assert_eq!(all.len(), 3);
    let forgotten = &all[0];
    assert!(!forgotten.active);
    assert_eq!(forgotten.removed_reason.as_deref(), Some("stale"));
    assert!(forgotten.removed_at.unwrap() >= before);
    assert_eq!(forgotten.removed_t, Some(1.75));
    assert_eq!(
        ObservationRow {
            active: true,
            removed_at: None,
            removed_t: None,
            removed_reason: None,
            metadata: None,
            ..forgotten.clone()
        },
        observation(1, None, 0.5)
    );
    assert_eq!(all[1], observation(2, None, 0.7));
    assert_eq!(all[2], observation(3, Some(&s0), 2.0));
    assert_eq!(
        store.response_time_summaries(row.id).await.unwrap(),
        vec![ResponseTimeSummary {
            n: 2,
            count: 1,
            total_seconds: 0.5
        }]
    );
    let stats = store.call_stats(row.id).await.unwrap();
    assert_eq!(stats.len(), 1);
    assert_eq!(
        (stats[0].kind.as_str(), stats[0].count, stats[0].max_seconds),
        ("observe", 1, 0.25)
    );
}

/// A commit computed from an old version is a Conflict and stores nothing, idempotency
/// record included.
async fn check_commit_version_conflict(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    let first = ChangeSet {
        state: Some(json!({"by": "first"})),
        ..ChangeSet::default()
    };
    store.commit(row.id, 0, &first, None).await.unwrap();
    let late = ChangeSet {
        new_suggestions: vec![suggestion(0, 0.0)],
        new_observations: vec![observation(1, None, 0.5)],
        state: Some(json!({"by": "late"})),
        last_suggest: Some((3.0, 1)),
        response_time: Some(ResponseTimeSample { n: 0, seconds: 1.0 }),
        calls: vec![call("suggest", 0.1)],
        ..ChangeSet::default()
    };
    let scope = "POST /v1/sessions/x/suggestions";
    let outcome = store
        .commit(row.id, 0, &late, Some(&record(scope, Some(row.id), "k")))
        .await;
    assert!(matches!(outcome, Err(StoreError::Conflict)), "{outcome:?}");
    // Nothing of the late change was stored.
    let got = store.get_session(row.id).await.unwrap().unwrap();
    assert_eq!(got.version, 1);
    assert_eq!(got.state, json!({"by": "first"}));
    assert_eq!((got.suggest_count, got.last_suggest), (0, None));
    assert_eq!((got.observation_count, got.pending_count), (0, 0));
    assert!(
        store
            .response_time_summaries(row.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.call_stats(row.id).await.unwrap().is_empty());
    assert!(store.get_idempotency(scope, "k").await.unwrap().is_none());
    // The current version still commits.
    store.commit(row.id, 1, &late, None).await.unwrap();
    assert_eq!(store.get_session(row.id).await.unwrap().unwrap().version, 2);
}

/// Of concurrent commits computed from one version, exactly one is stored; the others are
/// Conflicts.
async fn check_concurrent_commits_one_wins(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    // Three changes computed from version 0, committed at once: each stores observation 1.
    let change = |value: f64| ChangeSet {
        new_observations: vec![ObservationRow {
            value,
            ..observation(1, None, 0.5)
        }],
        state: Some(json!({"by": value})),
        ..ChangeSet::default()
    };
    let (a, b, c) = (change(1.0), change(2.0), change(3.0));
    let outcomes = tokio::join!(
        store.commit(row.id, 0, &a, None),
        store.commit(row.id, 0, &b, None),
        store.commit(row.id, 0, &c, None),
    );
    let outcomes = [outcomes.0, outcomes.1, outcomes.2];
    let winners: Vec<usize> = (0..3).filter(|&i| outcomes[i].is_ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Ok(()) | Err(StoreError::Conflict))),
        "{outcomes:?}"
    );
    let value = [1.0, 2.0, 3.0][winners[0]];
    let got = store.get_session(row.id).await.unwrap().unwrap();
    assert_eq!((got.version, got.state), (1, json!({"by": value})));
    let stored = store.list_observations(row.id, 0, 10, true).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].value, value);
}

/// Many sessions' changes committed at once, as the writers group them into shared
/// transactions: a change that loses its race or whose idempotency key is taken fails
/// alone, and every other change is stored whole (each session's call, sample and
/// observation, and the timeline's buckets that count them).
async fn check_concurrent_commits_of_many_sessions_stand_alone(store: &dyn Store) {
    let scope = "POST /v1/sessions/x/observations";
    let mut rows = Vec::new();
    for i in 0..12 {
        rows.push(created(store, &format!("s{i}"), 1 + i).await);
    }
    let taken = record(scope, None, "taken");
    store
        .commit(rows[0].id, 0, &ChangeSet::default(), Some(&taken))
        .await
        .unwrap();
    let change = |value: f64| ChangeSet {
        new_observations: vec![ObservationRow {
            value,
            ..observation(1, None, 0.5)
        }],
        response_time: Some(ResponseTimeSample {
            n: 1,
            seconds: value,
        }),
        calls: vec![call("observe", value)],
        state: Some(json!({"by": value})),
        ..ChangeSet::default()
    };
    // Each session but the first: two changes planned from version 0 (one loses the
    // race); the first: one change whose idempotency key is taken.
    let racing = rows[1..].iter().enumerate().flat_map(|(i, row)| {
        [0.25, 0.75].map(|part| {
            let change = change(i as f64 + 1.0 + part);
            async move { store.commit(row.id, 0, &change, None).await }
        })
    });
    let refused = async {
        let change = change(0.5);
        store.commit(rows[0].id, 1, &change, Some(&taken)).await
    };
    let (refused, outcomes) = tokio::join!(refused, futures_util::future::join_all(racing));
    assert!(
        matches!(refused, Err(StoreError::DuplicateKey)),
        "{refused:?}"
    );
    let first = store.get_session(rows[0].id).await.unwrap().unwrap();
    assert_eq!(first.version, 1);
    let none = store
        .list_observations(rows[0].id, 0, 10, true)
        .await
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
    for (i, row) in rows.iter().enumerate().skip(1) {
        let pair = &outcomes[2 * (i - 1)..2 * i];
        let won: Vec<usize> = (0..2).filter(|&k| pair[k].is_ok()).collect();
        assert_eq!(won.len(), 1, "session {i}: {pair:?}");
        assert!(
            pair.iter()
                .all(|o| matches!(o, Ok(()) | Err(StoreError::Conflict))),
            "session {i}: {pair:?}"
        );
        let value = i as f64 + [0.25, 0.75][won[0]];
        let got = store.get_session(row.id).await.unwrap().unwrap();
        assert_eq!(
            (got.version, got.state),
            (1, json!({"by": value})),
            "session {i}"
        );
        let stored = store.list_observations(row.id, 0, 10, true).await.unwrap();
        let values: Vec<f64> = stored.iter().map(|o| o.value).collect();
        assert_eq!(values, [value], "session {i}");
        let budget = tvbo::store::TimelineBudget::points(120);
        let timeline = store.timeline(row.id, &budget).await.unwrap();
        assert_eq!(timeline.calls.len(), 1, "session {i}");
        assert_eq!(timeline.response_times.len(), 1, "session {i}");
    }
}

/// A missing session: commit is NotFound, load_history None.
async fn check_commit_missing_session(store: &dyn Store) {
    let outcome = store
        .commit(Uuid::new_v4(), 0, &ChangeSet::default(), None)
        .await;
    assert!(matches!(outcome, Err(StoreError::NotFound)), "{outcome:?}");
    assert!(store.load_history(Uuid::new_v4()).await.unwrap().is_none());
}

/// Idempotency records round-trip; a taken key is DuplicateKey and rolls back the whole
/// change; records go with their session.
async fn check_idempotency_records(store: &dyn Store) {
    let scope = "POST /v1/sessions";
    let first = session("first", 1);
    let with_key = record(scope, Some(first.id), "key-1");
    store
        .create_session(&first, Some(&with_key), None, false)
        .await
        .unwrap();
    assert_eq!(
        store.get_idempotency(scope, "key-1").await.unwrap(),
        Some(with_key.clone())
    );
    assert!(
        store
            .get_idempotency(scope, "key-2")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get_idempotency("GET /", "key-1")
            .await
            .unwrap()
            .is_none()
    );

    // The same key again: DuplicateKey, and the second session is not created.
    let second = session("second", 2);
    let outcome = store
        .create_session(
            &second,
            Some(&record(scope, Some(second.id), "key-1")),
            None,
            false,
        )
        .await;
    assert!(
        matches!(outcome, Err(StoreError::DuplicateKey)),
        "{outcome:?}"
    );
    assert!(store.get_session(second.id).await.unwrap().is_none());

    // In a commit: DuplicateKey rolls the whole change back.
    let commit_scope = "POST /v1/sessions/x/observations";
    let taken = record(commit_scope, None, "key-3");
    let change = ChangeSet {
        state: Some(json!({"n": 1})),
        ..ChangeSet::default()
    };
    store
        .commit(first.id, 0, &change, Some(&taken))
        .await
        .unwrap();
    assert_eq!(
        store.get_idempotency(commit_scope, "key-3").await.unwrap(),
        Some(taken.clone())
    );
    let outcome = store.commit(first.id, 1, &change, Some(&taken)).await;
    assert!(
        matches!(outcome, Err(StoreError::DuplicateKey)),
        "{outcome:?}"
    );
    assert_eq!(
        store.get_session(first.id).await.unwrap().unwrap().version,
        1
    );

    // Records go with their session; records of no session stay.
    assert!(store.delete_session(first.id).await.unwrap());
    assert!(
        store
            .get_idempotency(scope, "key-1")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store.get_idempotency(commit_scope, "key-3").await.unwrap(),
        Some(taken)
    );
}
