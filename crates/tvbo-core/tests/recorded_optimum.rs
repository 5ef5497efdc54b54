//! A suggest records the posterior mean's optimum (`GET …/best`, the timeline, estimated
//! regrets and the drift events read it) from the model its policy fitted when that is
//! the model the record would build (the active data alone, under the hyperparameters
//! just fitted): one model per suggest instead of two. The recorded optimum must be the
//! one a model built afresh gives, bit for bit, for every algorithm over the unit cube,
//! with and without pending suggestions, several proposals and context parameters.
//!
//! The comparison can fail: a model that differs from the record's only by rounding
//! (the same hyperparameters to 1e-9, or the pending points hallucinated at their mean,
//! which leaves the mean unchanged in exact arithmetic) records another optimum, and the
//! reuse refuses both.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tvbo_core::domain::checked::CheckedConfig;
use tvbo_core::domain::config::CreateSession;
use tvbo_core::domain::input::ObservationInput;
use tvbo_core::domain::records::{ChangeSet, RecordedOptimum};
use tvbo_core::domain::space::Params;
use tvbo_core::engine::{
    CurrentModel, Limits, LocalSession, OptimumAt, new_session_config, plan_suggest, policy_data,
    step_snapshot,
};
use tvbo_core::gp::Hyperparameters;
use tvbo_core::policy::{MODEL_WORK_TARGET, PolicyState, Surrogate, policy_for};

/// Counts, per thread, the spans named `fit` (a fit with its GP, or a GP built under
/// given hyperparameters: each one Cholesky factorisation). Installed as the process's
/// subscriber, once: a subscriber set for a scope on one thread races with the other
/// test's thread over the callsites' cached interest, and may see no span at all.
struct FitSpans;

thread_local! {
    static FITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl tracing::Subscriber for FitSpans {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let metadata = span.metadata();
        if metadata.target() == MODEL_WORK_TARGET && metadata.name() == "fit" {
            FITS.with(|fits| fits.set(fits.get() + 1));
        }
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// `work`'s result, and the models it built on this thread.
fn counting_models<T>(work: impl FnOnce() -> T) -> (T, usize) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        tracing::subscriber::set_global_default(FitSpans).expect("no other subscriber is set");
    });
    FITS.with(|fits| fits.set(0));
    let result = work();
    (result, FITS.with(|fits| fits.get()))
}

/// A client-time session of `algorithm` over a, b (and a context parameter `load`, and
/// a categorical `kind`, when asked), no warm-up.
fn config(algorithm: &Value, context: bool, categorical: bool) -> CheckedConfig {
    let mut parameters = vec![
        json!({"name": "a", "low": 0, "high": 1}),
        json!({"name": "b", "low": -2, "high": 3}),
    ];
    if context {
        parameters.push(json!({"name": "load", "low": 0, "high": 1, "context": true}));
    }
    if categorical {
        parameters.push(json!({"name": "kind", "type": "categorical", "choices": ["x", "y", "z"]}));
    }
    let request: CreateSession = serde_json::from_value(json!({
        "parameters": parameters,
        "algorithm": algorithm,
        "model": {"warmup": 0},
        "time": {"source": "client"},
    }))
    .unwrap();
    new_session_config(request, 7).unwrap()
}

/// The session of `config` after `n` observations at t = 0, 1, …, of a smooth drifting
/// function of the parameters with a little deterministic noise.
fn observed(config: &CheckedConfig, n: usize, epoch: DateTime<Utc>) -> LocalSession {
    let names: Vec<&str> = config.parameters.iter().map(|p| p.name.as_str()).collect();
    let mut session = LocalSession::new(config.clone(), epoch);
    let inputs: Vec<(String, ObservationInput)> = (0..n)
        .map(|i| {
            let u = |k: usize| ((i * (7 + 4 * k) + 3 * k) % 31) as f64 / 31.0;
            let (a, b, load) = (u(0), -2.0 + 5.0 * u(1), u(2));
            let kind = ["x", "y", "z"][i % 3];
            let t = i as f64;
            let mut value = -(a - 0.3 - 0.002 * t).powi(2) - 0.1 * (b - 1.0).powi(2)
                + 0.3 * (5.0 * load).sin()
                + 0.01 * ((i * 37 % 11) as f64 - 5.0);
            if kind == "y" {
                value += 0.2;
            }
            let params: Params = serde_json::from_value(json!({
                "a": a, "b": b, "load": load, "kind": kind,
            }))
            .unwrap();
            let params = params
                .into_iter()
                .filter(|(name, _)| names.contains(&name.as_str()))
                .collect();
            let input = ObservationInput {
                params: Some(params),
                value: Some(value),
                t: Some(t),
                ..ObservationInput::default()
            };
            (format!("observations[{i}]"), input)
        })
        .collect();
    session.observe(&inputs, epoch).unwrap();
    session
}

/// The optimum as JSON text: equal texts are equal bits (serde_json writes each f64 in
/// the shortest form that reads back as it).
fn text(optimum: &RecordedOptimum) -> String {
    serde_json::to_string(optimum).unwrap()
}

/// One suggest of `count` after `pending` suggestions handed out and not observed (a
/// session of `algorithm`, with a context parameter given and a categorical one when
/// asked), checked as the module says.
fn check(algorithm: &Value, context: bool, categorical: bool, pending: usize, count: usize) {
    let case = format!(
        "{algorithm} context={context} categorical={categorical} pending={pending} count={count}"
    );
    let epoch = DateTime::<Utc>::UNIX_EPOCH;
    let config = config(algorithm, context, categorical);
    let n = 40;
    let mut session = observed(&config, n, epoch);
    let fixed: Params = if context {
        serde_json::from_value(json!({"load": 0.3})).unwrap()
    } else {
        Params::new()
    };
    let t = n as f64;
    if pending > 0 {
        session
            .suggest_given(pending, Some(t), &fixed, epoch)
            .unwrap();
    }
    let history = session.history();
    assert_eq!(history.pending.len(), pending, "{case}");
    let (change, models): (ChangeSet, usize) = counting_models(|| {
        plan_suggest(
            history,
            count,
            Some(t + 0.5),
            &fixed,
            epoch,
            &Limits::default(),
            &1,
        )
        .unwrap()
    });
    let recorded = change.calls[0]
        .snapshot
        .as_ref()
        .and_then(|s| s.optimum.clone())
        .unwrap_or_else(|| panic!("{case}: an optimum is recorded"));

    // The record as built before: a model of the active data under the saved
    // hyperparameters, built afresh.
    let state: PolicyState = serde_json::from_value(change.state.clone().unwrap()).unwrap();
    let target = change.new_suggestions[0].t;
    let coordinates = config.space().fixed_coordinates(&fixed).unwrap();
    let issued = history.session.suggest_count as u64 + count as u64;
    let at = |built: Option<Surrogate>| OptimumAt {
        active: &history.active,
        failed: &history.failed,
        t: target,
        fixed: &coordinates,
        cores: &1,
        built,
        searched: None,
    };
    let afresh = step_snapshot(
        &config,
        &state,
        history.active.len(),
        Some(at(None)),
        issued,
    )
    .unwrap()
    .optimum
    .unwrap();
    assert_eq!(text(&recorded), text(&afresh), "{case}");

    // One model (the fit's) when the policy's is the record's, else the fit's and the
    // record's.
    let reused = pending == 0 && count == 1;
    assert_eq!(models, if reused { 1 } else { 2 }, "{case}: models built");

    // Models that differ from the record's by rounding alone are not taken for it, and
    // one of them records another optimum (so that taking it would show).
    let hyper = state.hyperparameters.unwrap();
    let spec = policy_for(&config).model_kernel(&config.model, config.space());
    let dim = config.parameters.len();
    let data = policy_data(&config, &history.active);
    let nearly = Hyperparameters {
        spatial_lengthscale: hyper.spatial_lengthscale * (1.0 + 1e-9),
        ..hyper
    };
    let mut others = vec![(
        "l_S to 1e-9",
        Surrogate::with_hyperparameters(spec, dim, &data, nearly, config.model.warping).unwrap(),
    )];
    if pending > 0 {
        let mut hallucinated =
            Surrogate::with_hyperparameters(spec, dim, &data, hyper, config.model.warping).unwrap();
        for suggestion in &history.pending {
            hallucinated
                .hallucinate(&suggestion.unit, suggestion.t)
                .unwrap();
        }
        others.push(("pending hallucinated", hallucinated));
    }
    for (what, other) in others {
        assert!(
            !other.is_built_from(spec, dim, &data, &hyper, config.model.warping),
            "{case}: {what}"
        );
        // A hallucinated point leaves the mean as it was up to rounding, which may round
        // to the same optimum; a lengthscale changed by 1e-9 moves it.
        let its = CurrentModel::Surrogate(other.clone()).optimum(&config, target, &coordinates, &1);
        if what == "l_S to 1e-9" {
            assert_ne!(
                text(&its),
                text(&afresh),
                "{case}: {what} records the same optimum"
            );
        }
        let offered = step_snapshot(
            &config,
            &state,
            history.active.len(),
            Some(at(Some(other))),
            issued,
        )
        .unwrap()
        .optimum
        .unwrap();
        assert_eq!(text(&offered), text(&afresh), "{case}: {what} is refused");
    }
    // The model the record builds is taken for itself.
    let same =
        Surrogate::with_hyperparameters(spec, dim, &data, hyper, config.model.warping).unwrap();
    assert!(
        same.is_built_from(spec, dim, &data, &hyper, config.model.warping),
        "{case}"
    );
}

fn algorithms() -> Vec<Value> {
    vec![
        json!({"name": "bolt"}),
        json!({"name": "w-dbo"}),
        json!({"name": "gp-ucb"}),
        json!({"name": "tv-gp-ucb"}),
        json!({"name": "tv-gp-ucb", "epsilon": 0.01}),
        json!({"name": "r-gp-ucb", "reset_every": 25}),
        json!({"name": "et-gp-ucb"}),
    ]
}

#[test]
fn the_recorded_optimum_read_from_the_policys_model_is_the_one_built_afresh() {
    for algorithm in algorithms() {
        for context in [false, true] {
            check(&algorithm, context, false, 0, 1);
        }
    }
    check(&json!({"name": "bolt"}), true, true, 0, 1);
}

#[test]
fn with_pending_suggestions_or_several_proposals_the_record_builds_its_own_model() {
    for algorithm in algorithms() {
        for context in [false, true] {
            check(&algorithm, context, false, 2, 1);
        }
        check(&algorithm, false, false, 0, 2);
    }
    check(&json!({"name": "bolt"}), true, true, 2, 1);
}
