//! Reads: a session's history, its observations, response times, calls, steps and
//! timeline.

use super::*;

use tvbo::store::TimelineBudget;

store_tests!(
    check_load_history,
    check_list_observations,
    check_response_times,
    check_call_stats,
    check_steps_with_snapshots,
    check_timeline_downsampling,
);

/// load_history: the active observations by seq, the pending suggestions by ordinal, the
/// latest delays first, the next seq.
async fn check_load_history(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    let empty = store.load_history(row.id).await.unwrap().unwrap();
    assert!(empty.active.is_empty() && empty.pending.is_empty());
    assert!(empty.recent_delays.is_empty());
    assert_eq!(empty.next_seq, 1);

    // Suggestions committed out of ordinal order; two are measured, one expires.
    let s: Vec<SuggestionRow> = (0..5).map(|i| suggestion(i, i as f64)).collect();
    let first = ChangeSet {
        new_suggestions: [2, 4, 0, 3, 1].map(|i| s[i].clone()).to_vec(),
        ..ChangeSet::default()
    };
    store.commit(row.id, 0, &first, None).await.unwrap();
    let second = ChangeSet {
        suggestion_status: vec![
            (s[0].id, SuggestionStatus::Observed),
            (s[2].id, SuggestionStatus::Observed),
            (s[4].id, SuggestionStatus::Expired),
        ],
        new_observations: vec![
            observation(1, Some(&s[0]), 0.5),
            observation(2, None, 4.0),
            observation(3, Some(&s[2]), 5.0),
            observation(4, None, 6.0),
        ],
        deactivate: vec![Deactivation {
            seq: 2,
            reason: "forgotten".into(),
            t: 6.0,
        }],
        state: Some(json!({"saved": [1, 2]})),
        ..ChangeSet::default()
    };
    store.commit(row.id, 1, &second, None).await.unwrap();

    let history = store.load_history(row.id).await.unwrap().unwrap();
    assert_eq!(history.session.version, 2);
    assert_eq!(history.session.state, json!({"saved": [1, 2]}));
    let active: Vec<i64> = history.active.iter().map(|o| o.seq).collect();
    assert_eq!(active, vec![1, 3, 4]);
    assert_eq!(history.active[1], observation(3, Some(&s[2]), 5.0));
    let pending: Vec<i64> = history.pending.iter().map(|g| g.ordinal).collect();
    assert_eq!(pending, vec![1, 3]);
    assert_eq!(history.pending, vec![s[1].clone(), s[3].clone()]);
    // Latest observation first: seq 3 measured 3 s after issue, seq 1 0.5 s after.
    assert_eq!(history.recent_delays, vec![3.0, 0.5]);
    assert_eq!(history.next_seq, 5);
}

/// list_observations pages by seq, with and without forgotten observations.
async fn check_list_observations(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    let change = ChangeSet {
        new_observations: (1..=7)
            .map(|seq| observation(seq, None, seq as f64))
            .collect(),
        deactivate: [2, 3, 6]
            .into_iter()
            .map(|seq| Deactivation {
                seq,
                reason: "window".into(),
                t: 7.0,
            })
            .collect(),
        ..ChangeSet::default()
    };
    store.commit(row.id, 0, &change, None).await.unwrap();
    let seqs = |rows: Vec<ObservationRow>| rows.iter().map(|o| o.seq).collect::<Vec<_>>();
    let list = |after, limit, inactive| store.list_observations(row.id, after, limit, inactive);
    assert_eq!(
        seqs(list(0, 100, true).await.unwrap()),
        (1..=7).collect::<Vec<_>>()
    );
    assert_eq!(seqs(list(0, 100, false).await.unwrap()), vec![1, 4, 5, 7]);
    assert_eq!(seqs(list(0, 3, true).await.unwrap()), vec![1, 2, 3]);
    assert_eq!(seqs(list(3, 3, true).await.unwrap()), vec![4, 5, 6]);
    assert_eq!(seqs(list(6, 3, true).await.unwrap()), vec![7]);
    assert_eq!(seqs(list(1, 2, false).await.unwrap()), vec![4, 5]);
    assert_eq!(seqs(list(5, 2, false).await.unwrap()), vec![7]);
    assert!(list(7, 10, true).await.unwrap().is_empty());
    assert!(
        store
            .list_observations(Uuid::new_v4(), 0, 10, true)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Response-time samples come back in the order they were stored (the timeline), and
/// summed per dataset size, ascending in n (what an observe reads).
async fn check_response_times(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    // n deliberately not monotone: the order is the order of insertion.
    let samples = [(5, 0.5), (2, 0.25), (9, 1.5), (2, 0.125)]
        .map(|(n, seconds)| ResponseTimeSample { n, seconds });
    for (version, sample) in samples.iter().enumerate() {
        let change = ChangeSet {
            response_time: Some(*sample),
            ..ChangeSet::default()
        };
        store
            .commit(row.id, version as i64, &change, None)
            .await
            .unwrap();
    }
    assert_eq!(
        store
            .timeline(row.id, &TimelineBudget::points(100))
            .await
            .unwrap()
            .response_times,
        samples.to_vec()
    );
    let summary = |n, count, total_seconds| ResponseTimeSummary {
        n,
        count,
        total_seconds,
    };
    assert_eq!(
        store.response_time_summaries(row.id).await.unwrap(),
        vec![summary(2, 2, 0.375), summary(5, 1, 0.5), summary(9, 1, 1.5)]
    );
    assert!(
        store
            .response_time_summaries(Uuid::new_v4())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Compute-time statistics per kind of call, of one session only.
async fn check_call_stats(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    let other = created(store, "other", 2).await;
    let change = ChangeSet {
        calls: vec![
            call("suggest", 0.5),
            call("observe", 0.25),
            call("suggest", 1.5),
            call("suggest", 1.0),
        ],
        ..ChangeSet::default()
    };
    store.commit(row.id, 0, &change, None).await.unwrap();
    let noise = ChangeSet {
        calls: vec![call("suggest", 100.0)],
        ..ChangeSet::default()
    };
    store.commit(other.id, 0, &noise, None).await.unwrap();
    let stats = store.call_stats(row.id).await.unwrap();
    let summary: Vec<(&str, i64, f64, f64)> = stats
        .iter()
        .map(|s| (s.kind.as_str(), s.count, s.mean_seconds, s.max_seconds))
        .collect();
    assert_eq!(
        summary,
        vec![("observe", 1, 0.25, 0.25), ("suggest", 3, 1.0, 1.5)]
    );
}

/// Calls read back in order, paged by id, with their model snapshots (absent ones null).
async fn check_steps_with_snapshots(store: &dyn Store) {
    let row = created(store, "s", 1).await;
    let snapshot = StepSnapshot {
        dataset_size: 7,
        max_dataset_size: Some(12),
        budget: None,
        hyperparameters: Some(FittedHyperparameters {
            signal_variance: 1.5,
            spatial_lengthscale: 0.25,
            temporal_lengthscale: Some(300.0),
            noise_variance: 0.01,
            epsilon: None,
            categorical_lengthscale: None,
            lengthscales: Some([("x".to_string(), 0.25)].into()),
            level_variance: Some(0.4),
            level_lengthscale: Some(900.0),
        }),
        optimum: Some(RecordedOptimum {
            t: 4.5,
            params: numbers([("x", 0.75)]),
            arm: None,
            mean: -2.0,
        }),
        prior_probabilities: Some(vec![0.25, 0.75]),
        priors_active: None,
        response_time_fit: Some([0.5, 0.25, 0.0, 1e-6]),
        state_not_saved: Some("a reason".into()),
        fit: Some(FitReport {
            at_bound: vec![BoundHit::SpatialLengthscaleUpper],
            second_start: true,
            explored: true,
        }),
    };
    let mut with_snapshot = call("suggest", 0.5);
    with_snapshot.snapshot = Some(snapshot.clone());
    let change = ChangeSet {
        calls: vec![with_snapshot, call("observe", 0.25), call("suggest", 1.0)],
        ..ChangeSet::default()
    };
    store.commit(row.id, 0, &change, None).await.unwrap();
    let all = store.list_calls(row.id, 0, 10).await.unwrap();
    assert_eq!(all.len(), 3);
    assert!(all.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(all[0].snapshot, Some(snapshot));
    assert_eq!(
        (all[1].kind.as_str(), all[1].snapshot.as_ref()),
        ("observe", None)
    );
    let page = store.list_calls(row.id, all[0].id, 1).await.unwrap();
    assert_eq!(page, vec![all[1].clone()]);
    let other = created(store, "other", 2).await;
    assert!(store.list_calls(other.id, 0, 10).await.unwrap().is_empty());
}

/// The timeline comes back whole within the budget; past it, bounded, with every
/// bucket's extremes: no spike of value or regret is lost, the first and last rows are
/// kept, and the counts and regret sum are over every row. Forgetting events are grouped
/// by step and reason, then merged into spans past the budget.
async fn check_timeline_downsampling(store: &dyn Store) {
    let row = created(store, "long", 1).await;
    let mut change = ChangeSet::default();
    for seq in 1..=3000 {
        let mut o = observation(seq, None, seq as f64);
        o.value = (seq as f64 * 0.01).sin() + if seq % 997 == 0 { 50.0 } else { 0.0 };
        if seq % 1201 == 0 {
            o.regret = Some(1e6);
        }
        if seq <= 2000 {
            o.active = false;
            o.removed_t = Some(seq as f64 + 0.5);
            o.removed_reason = Some(if seq % 2 == 0 { "relevance" } else { "budget" }.into());
        }
        change.new_observations.push(o);
        let mut c = call(if seq % 2 == 0 { "suggest" } else { "observe" }, 0.1);
        c.dataset_size = if seq == 1500 { 9999 } else { seq % 50 };
        change.calls.push(c);
    }
    change.response_time = Some(ResponseTimeSample { n: 3, seconds: 0.5 });
    store.commit(row.id, 0, &change, None).await.unwrap();
    let whole = store
        .timeline(row.id, &TimelineBudget::points(20_000))
        .await
        .unwrap();
    assert_eq!(
        (
            whole.observations.len(),
            whole.calls.len(),
            whole.response_times.len()
        ),
        (3000, 3000, 1)
    );
    assert_eq!(whole.forgotten.len(), 2000, "one event per step and reason");
    let all = store
        .list_observations(row.id, 0, 10_000, true)
        .await
        .unwrap();
    assert_eq!(whole.observations, all);
    let (reported, estimated): (Vec<_>, Vec<_>) = all.iter().partition(|o| o.regret.is_some());
    assert_eq!(whole.reported_regrets, reported.len() as i64);
    assert_eq!(whole.estimated_regrets, estimated.len() as i64);
    let sum: f64 = all
        .iter()
        .filter_map(|o| o.regret.or(o.regret_estimate))
        .sum();
    assert!((whole.regret_sum - sum).abs() < 1e-6 * sum.abs());

    let small = store
        .timeline(row.id, &TimelineBudget::points(300))
        .await
        .unwrap();
    assert_eq!((small.observation_count, small.step_count), (3000, 3000));
    assert_eq!(small.regret_sum, whole.regret_sum);
    assert!(
        small.observations.len() <= 300 + 6,
        "{}",
        small.observations.len()
    );
    assert!(small.observations.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(small.observations.first(), all.first());
    assert_eq!(small.observations.last(), all.last());
    let spikes = |rows: &[ObservationRow]| rows.iter().filter(|o| o.value > 10.0).count();
    assert_eq!(spikes(&small.observations), spikes(&all));
    let big_regrets =
        |rows: &[ObservationRow]| rows.iter().filter(|o| o.regret == Some(1e6)).count();
    assert_eq!(big_regrets(&small.observations), big_regrets(&all));
    let lowest = all.iter().map(|o| o.value).fold(f64::INFINITY, f64::min);
    assert!(small.observations.iter().any(|o| o.value == lowest));
    assert!(small.calls.len() <= 300 + 4, "{}", small.calls.len());
    assert!(
        small.calls.iter().any(|c| c.dataset_size == 9999),
        "the spike"
    );
    let kept_forgotten: i64 = small.forgotten.iter().map(|f| f.count).sum();
    assert_eq!(kept_forgotten, 2000, "every forgotten observation counted");
    assert!(
        small.forgotten.len() <= 2 * 300 + 2,
        "{}",
        small.forgotten.len()
    );
    assert!(small.forgotten.windows(2).all(|w| w[0].t <= w[1].t));
    assert!(small.forgotten.iter().all(|f| f.t <= f.t_end));
    // The newest regrets, exact at any budget; the downsampled groups' regrets add up
    // to every observation's and each ends at a kept row; the newest step's time.
    let newest: Vec<(f64, f64)> = all
        .iter()
        .filter_map(|o| Some((o.t, o.regret.or(o.regret_estimate)?)))
        .collect();
    let newest = &newest[newest.len().saturating_sub(RECENT_REGRETS as usize)..];
    assert_eq!(
        (
            whole.recent_regrets.as_slice(),
            small.recent_regrets.as_slice()
        ),
        (newest, newest)
    );
    assert!(whole.regret_groups.is_empty(), "every observation returned");
    let groups = &small.regret_groups;
    assert_eq!(groups.iter().map(|g| g.observations).sum::<i64>(), 3000);
    let grouped: f64 = groups.iter().map(|g| g.regret_sum).sum();
    assert!((grouped - whole.regret_sum).abs() <= 1e-9 * whole.regret_sum.abs());
    assert!(
        groups
            .iter()
            .all(|g| small.observations.iter().any(|o| o.seq == g.last_seq))
    );
    assert!(small.last_step_at.is_some() && whole.last_step_at == small.last_step_at);
}
