//! The events a step finds (docs/events.md), by comparing the policy's state before the
//! step with the state it leaves: pure, like the rest of the engine.

use serde_json::json;

use crate::domain::checked::CheckedConfig;
use crate::domain::config::{EventsConfig, OptimumMovedConfig, SessionConfig, TrackingConfig};
use crate::domain::events::{
    DRIFT_RATE_PERSISTENCE, DriftState, EventKind, NewEvent, RateState, RecommendationAt,
    TrackingLoss, TrackingState, WindowStats,
};
use crate::domain::records::RecordedOptimum;
use crate::policy::PolicyState;

use super::reads::prior_names;

/// The events of a step at session time `t` that turned the policy's state `before`
/// into `after`:
/// - `model-reset` when the count of resets grew (R-GP-UCB, ET-GP-UCB): `resets` is the
///   session's count after the step;
/// - `prior-eliminated` for each prior that left the active set (PE-GP-UCB, PE-GP-TS):
///   its index and name, and how many priors remain active.
pub(crate) fn step_events(
    config: &SessionConfig,
    before: &PolicyState,
    after: &PolicyState,
    t: f64,
) -> Vec<NewEvent> {
    let mut events = Vec::new();
    if after.resets > before.resets {
        events.push(NewEvent {
            kind: EventKind::ModelReset,
            t,
            data: json!({ "resets": after.resets }),
        });
    }
    if let (Some(was), Some(now)) = (&before.prior_selection, &after.prior_selection) {
        let remaining = now.active.iter().filter(|&&active| active).count();
        let names = prior_names(config);
        for (index, (&had, &has)) in was.active.iter().zip(&now.active).enumerate() {
            if had && !has {
                events.push(NewEvent {
                    kind: EventKind::PriorEliminated,
                    t,
                    data: json!({
                        "prior": index,
                        "name": names.get(index).cloned().unwrap_or_else(|| format!("prior-{index}")),
                        "remaining": remaining,
                    }),
                });
            }
        }
    }
    events
}

/// What a step saw that the drift events compare, besides the policy's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StepSeen {
    /// The recommendation the step recorded, with the coordinates its suggest held.
    pub recommendation: Option<RecommendationAt>,
    /// The regrets of the step's new observations, in order: reported, else estimated.
    pub regrets: Vec<f64>,
    /// The temporal lengthscale the step fitted, if it fitted one.
    pub fit: Option<LengthscaleFit>,
}

/// A fitted temporal lengthscale and the time span of the data it was fitted to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LengthscaleFit {
    /// l_T, in seconds.
    pub lengthscale: f64,
    /// Last minus first session time of the fit's data, in seconds.
    pub span: f64,
}

/// The drift events of a step at session time `t` and the drift state after it, under
/// the session's thresholds `config`: `state` is the state before the step, `reset`
/// whether the step reset the model, `seen` what the step saw.
/// - `optimum-moved` ([`optimum_moved`]); a reset forgets its reference: a model that
///   starts over learns where the optimum is again;
/// - `tracking-lost` and `tracking-regained` ([`TrackingState`]); a reset clears the
///   regrets, not the loss;
/// - `drift-rate-changed` ([`RateState`]).
pub(crate) fn drift_events(
    config: &EventsConfig,
    state: Option<DriftState>,
    reset: bool,
    seen: StepSeen,
    t: f64,
) -> (Option<DriftState>, Vec<NewEvent>) {
    let mut drift = state.unwrap_or_default();
    if reset {
        drift = DriftState {
            tracking: TrackingState {
                lost: drift.tracking.lost,
                ..TrackingState::default()
            },
            rate: drift.rate,
            ..DriftState::default()
        };
    }
    let mut events = Vec::new();
    events.extend(optimum_moved(
        &mut drift,
        &config.optimum_moved,
        seen.recommendation,
        t,
    ));
    events.extend(tracking(
        &mut drift.tracking,
        &config.tracking,
        &seen.regrets,
        t,
    ));
    events.extend(drift_rate(
        &mut drift.rate,
        config.drift_rate_factor,
        seen.fit,
        t,
    ));
    (Some(drift).filter(|d| *d != DriftState::default()), events)
}

/// The `optimum-moved` event of a step, if any, under `config` (its `distance`,
/// `persistence` and `relative_value`), the recommendation `seen` at session time `t`.
///
/// The rule ([`persist`]): a first reference settles once the recommendation has stood
/// near itself for `persistence` consecutive suggests (no event: a model learning where
/// a static optimum is moves its argmax too). Then an event is found when the
/// recommendation has stood far from the reference, and near itself, for as many
/// suggests; it becomes the reference. A suggest back near the reference clears the
/// count. Far: more than `distance` apart (the largest change of a coordinate the
/// suggests chose, in the unit cube) or, with `relative_value`, means more than that
/// fraction of the earlier |mean| apart.
///
/// A recommendation given held coordinates (a context session's suggests give their
/// context) is compared only with those of the same context: the same coordinates held
/// at values within `distance`. The context moving is not the optimum moving: a
/// recommendation in another context than the reference's settles a new reference there,
/// silently, as the first one settles.
fn optimum_moved(
    drift: &mut DriftState,
    config: &OptimumMovedConfig,
    seen: Option<RecommendationAt>,
    t: f64,
) -> Option<NewEvent> {
    let seen = seen?;
    let same_context = |a: &RecommendationAt, b: &RecommendationAt| {
        a.fixed == b.fixed
            && a.fixed
                .iter()
                .all(|&i| (a.x[i] - b.x[i]).abs() <= config.distance)
    };
    if drift
        .reference
        .as_ref()
        .is_some_and(|reference| !same_context(reference, &seen))
    {
        drift.reference = None;
        drift.candidate = None;
        drift.streak = 0;
    }
    let far = |a: &RecommendationAt, b: &RecommendationAt| {
        !same_context(a, b)
            || chosen_distance(a, b) > config.distance
            || config
                .relative_value
                .is_some_and(|fraction| (b.mean - a.mean).abs() > fraction * a.mean.abs())
    };
    let (from, to) = persist(
        &mut drift.reference,
        &mut drift.candidate,
        &mut drift.streak,
        seen,
        far,
        config.persistence,
    )?;
    Some(NewEvent {
        kind: EventKind::OptimumMoved,
        t,
        data: json!({
            "from": {"params": from.params, "mean": from.mean, "t": from.t},
            "to": {"params": to.params, "mean": to.mean, "t": to.t},
            "distance": chosen_distance(&from, &to),
        }),
    })
}

/// The persistence rule `optimum-moved` and `drift-rate-changed` share, one value `now`
/// at a time: with a `reference`, a value not `far` from it clears the `candidate` and
/// its `streak`; any other value extends the streak when it is not far from the candidate
/// (else starts one) and becomes the candidate. At `persistence` the candidate becomes
/// the reference: the move (old reference, new) is returned, or none when there was no
/// reference yet (a first reference settles silently).
fn persist<T: Clone>(
    reference: &mut Option<T>,
    candidate: &mut Option<T>,
    streak: &mut u32,
    now: T,
    far: impl Fn(&T, &T) -> bool,
    persistence: u32,
) -> Option<(T, T)> {
    if reference.as_ref().is_some_and(|r| !far(r, &now)) {
        *candidate = None;
        *streak = 0;
        return None;
    }
    *streak = match candidate.as_ref() {
        Some(c) if !far(c, &now) => *streak + 1,
        _ => 1,
    };
    *candidate = Some(now);
    if *streak < persistence {
        return None;
    }
    let from = reference.take();
    *reference = candidate.take();
    *streak = 0;
    from.zip(reference.clone())
}

/// The `tracking-lost` and `tracking-regained` events of a step whose new observations
/// had `regrets`, under `config` ([`TrackingState`] states the rule).
fn tracking(
    state: &mut TrackingState,
    config: &TrackingConfig,
    regrets: &[f64],
    t: f64,
) -> Vec<NewEvent> {
    let window = config.window as usize;
    let mut events = Vec::new();
    for &regret in regrets {
        state.regrets.push_back(regret);
        while state.regrets.len() > 2 * window {
            state.regrets.pop_front();
        }
        state.count += 1;
        if !state.count.is_multiple_of(window as u64) {
            continue;
        }
        let all: &[f64] = state.regrets.make_contiguous();
        let (before, newest) = all.split_at(all.len().saturating_sub(window));
        let Some(newest) = WindowStats::of(newest) else {
            continue;
        };
        if let Some(loss) = &state.lost {
            let (above, standard_error) = newest.rise_over(&loss.reference);
            if above <= config.hysteresis * standard_error {
                events.push(NewEvent {
                    kind: EventKind::TrackingRegained,
                    t,
                    data: json!({
                        "window": window,
                        "recent_mean": newest.mean,
                        "reference_mean": loss.reference.mean,
                        "standard_error": standard_error,
                        "lost_t": loss.t,
                    }),
                });
                state.lost = None;
            }
        } else if let Some(earlier) = WindowStats::of(before).filter(|_| before.len() == window)
            && newest.rose_beyond(&earlier, config.rise)
        {
            let (_, standard_error) = newest.rise_over(&earlier);
            events.push(NewEvent {
                kind: EventKind::TrackingLost,
                t,
                data: json!({
                    "window": window,
                    "recent_mean": newest.mean,
                    "previous_mean": earlier.mean,
                    "standard_error": standard_error,
                }),
            });
            state.lost = Some(TrackingLoss {
                reference: earlier,
                t,
            });
        }
    }
    events
}

/// The `drift-rate-changed` event of a step that made the temporal-lengthscale `fit`, if
/// it made one, with the reference moving by `factor` ([`RateState`] states the rule):
/// `from` and `to` are the old and new reference l_T, in seconds, `factor` their ratio
/// (above 1: the objective drifts more slowly).
fn drift_rate(
    state: &mut RateState,
    factor: f64,
    fit: Option<LengthscaleFit>,
    t: f64,
) -> Option<NewEvent> {
    let fit = fit?;
    // Not below the span (NaN included): no drift measurable over the data.
    let resolved = fit.lengthscale < fit.span;
    if !resolved {
        state.candidate = None;
        state.streak = 0;
        return None;
    }
    let far = |a: &f64, b: &f64| (a / b).max(b / a) >= factor;
    let (from, to) = persist(
        &mut state.reference,
        &mut state.candidate,
        &mut state.streak,
        fit.lengthscale,
        far,
        DRIFT_RATE_PERSISTENCE,
    )?;
    Some(NewEvent {
        kind: EventKind::DriftRateChanged,
        t,
        data: json!({ "from": from, "to": to, "factor": to / from }),
    })
}

/// Last minus first session time of `times` (0 for fewer than two).
pub(crate) fn time_span(times: impl IntoIterator<Item = f64>) -> f64 {
    let (first, last) = times
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
            (a.min(t), b.max(t))
        });
    (last - first).max(0.0)
}

/// The `dataset-full` event of an observe that took a capped session (`capped`: its
/// algorithm keeps its observations) from below `cap` active observations to `cap`.
pub(crate) fn dataset_full(
    capped: bool,
    before: usize,
    after: usize,
    cap: usize,
    t: f64,
) -> Option<NewEvent> {
    (capped && before < cap && after >= cap).then(|| NewEvent {
        kind: EventKind::DatasetFull,
        t,
        data: json!({ "active": after, "cap": cap }),
    })
}

/// A recorded optimum as the drift events compare it (None if its setting does not map
/// into the unit cube, which a recorded optimum always does).
pub(crate) fn recommendation(
    config: &CheckedConfig,
    optimum: &RecordedOptimum,
    fixed: Vec<usize>,
) -> Option<RecommendationAt> {
    let x = config.space().to_unit(&optimum.params, "optimum").ok()?;
    Some(RecommendationAt {
        x,
        params: optimum.params.clone(),
        mean: optimum.mean,
        t: optimum.t,
        fixed,
    })
}

/// The largest change, in the unit cube, of a coordinate the suggests chose (not held)
/// between two recommendations of the same context.
fn chosen_distance(a: &RecommendationAt, b: &RecommendationAt) -> f64 {
    a.x.iter()
        .zip(&b.x)
        .enumerate()
        .filter(|(i, _)| !a.fixed.contains(i))
        .map(|(_, (a, b))| (a - b).abs())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PriorSelectionState;

    fn config() -> SessionConfig {
        let request = serde_json::from_value(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
        }))
        .unwrap();
        SessionConfig::from_request(request, 1).unwrap()
    }

    fn at(x: f64, t: f64) -> Option<RecommendationAt> {
        Some(RecommendationAt {
            x: vec![x],
            params: std::collections::BTreeMap::from([(
                "x".to_string(),
                crate::domain::space::ParamValue::Number(x),
            )]),
            mean: 1.0,
            t,
            fixed: Vec::new(),
        })
    }

    /// The events of a run of suggests recommending `xs` in turn (a reset before those
    /// indices in `resets`).
    fn moves(xs: &[f64], resets: &[usize]) -> Vec<(f64, f64)> {
        let mut state = None;
        let mut found = Vec::new();
        for (i, &x) in xs.iter().enumerate() {
            let seen = StepSeen {
                recommendation: at(x, i as f64),
                ..StepSeen::default()
            };
            let (next, events) = drift_events(
                &EventsConfig::default(),
                state,
                resets.contains(&i),
                seen,
                i as f64,
            );
            state = next;
            for event in events {
                let from = event.data["from"]["params"]["x"].as_f64().unwrap();
                let to = event.data["to"]["params"]["x"].as_f64().unwrap();
                found.push((from, to));
            }
        }
        found
    }

    /// The events of a run of suggests in a context session (x chosen, load held):
    /// recommending `(x, load)` in turn; each event's (from x, to x).
    fn context_moves(steps: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let mut state = None;
        let mut found = Vec::new();
        for (i, &(x, load)) in steps.iter().enumerate() {
            let number = crate::domain::space::ParamValue::Number;
            let seen = StepSeen {
                recommendation: Some(RecommendationAt {
                    x: vec![x, load],
                    params: std::collections::BTreeMap::from([
                        ("x".to_string(), number(x)),
                        ("load".to_string(), number(load)),
                    ]),
                    mean: 1.0,
                    t: i as f64,
                    fixed: vec![1],
                }),
                ..StepSeen::default()
            };
            let (next, events) =
                drift_events(&EventsConfig::default(), state, false, seen, i as f64);
            state = next;
            for event in events {
                let from = event.data["from"]["params"]["x"].as_f64().unwrap();
                let to = event.data["to"]["params"]["x"].as_f64().unwrap();
                assert_eq!(event.data["distance"].as_f64(), Some((to - from).abs()));
                found.push((from, to));
            }
        }
        found
    }

    #[test]
    fn in_a_context_the_optimum_moving_is_an_event_and_the_context_moving_is_not() {
        // The best x moves 0.2 → 0.8 at a constant load: one event.
        let held = [(0.2, 0.5); 4].into_iter().chain([(0.8, 0.5); 4]);
        assert_eq!(context_moves(&held.collect::<Vec<_>>()), [(0.2, 0.8)]);
        // The load moves and the best x with it, then stands: no event, and the next move
        // at the new load is one.
        let steps: Vec<(f64, f64)> = [(0.2, 0.1); 4]
            .into_iter()
            .chain([(0.8, 0.9); 4])
            .chain([(0.4, 0.9); 4])
            .collect();
        assert_eq!(context_moves(&steps), [(0.8, 0.4)]);
        // A load that wanders within the distance is the same context.
        let wandering = [
            (0.2, 0.5),
            (0.2, 0.55),
            (0.2, 0.45),
            (0.8, 0.5),
            (0.8, 0.6),
            (0.8, 0.55),
        ];
        assert_eq!(context_moves(&wandering), [(0.2, 0.8)]);
    }

    #[test]
    fn a_learning_model_settles_without_an_event() {
        assert!(moves(&[0.9, 0.5, 0.31, 0.3, 0.32, 0.3, 0.29, 0.31], &[]).is_empty());
    }

    #[test]
    fn a_move_that_persists_is_one_event_and_a_blip_is_none() {
        let xs = [0.3, 0.3, 0.3, 0.3, 0.8, 0.3, 0.3, 0.8, 0.81, 0.79, 0.8, 0.8];
        assert_eq!(moves(&xs, &[]), [(0.3, 0.79)]);
        // Back to where it was: a second event.
        let back = [0.3, 0.3, 0.3, 0.8, 0.8, 0.8, 0.3, 0.3, 0.3];
        assert_eq!(moves(&back, &[]), [(0.3, 0.8), (0.8, 0.3)]);
        // A move within the distance is none.
        assert!(moves(&[0.3, 0.3, 0.3, 0.45, 0.45, 0.45, 0.45], &[]).is_empty());
    }

    #[test]
    fn a_reset_forgets_the_reference() {
        let xs = [0.3, 0.3, 0.3, 0.8, 0.8, 0.8];
        assert!(moves(&xs, &[3]).is_empty());
    }

    #[test]
    fn a_relative_value_moves_the_optimum_when_its_mean_moves() {
        let config = EventsConfig {
            optimum_moved: OptimumMovedConfig {
                relative_value: Some(0.5),
                ..OptimumMovedConfig::default()
            },
            ..EventsConfig::default()
        };
        let mut state = None;
        let mut found = Vec::new();
        // Same place; the mean falls from 1 to 0.4 (by 60 % of 1) at the fourth suggest.
        for (i, mean) in [1.0, 1.0, 1.0, 0.4, 0.4, 0.4, 0.45].into_iter().enumerate() {
            let mut recommendation = at(0.3, i as f64);
            if let Some(r) = recommendation.as_mut() {
                r.mean = mean;
            }
            let seen = StepSeen {
                recommendation,
                ..StepSeen::default()
            };
            let (next, events) = drift_events(&config, state, false, seen, i as f64);
            state = next;
            found.extend(events);
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].data["from"]["mean"], json!(1.0));
        assert_eq!(found[0].data["to"]["mean"], json!(0.4));
        assert_eq!(found[0].t, 5.0);
    }

    /// The tracking events of `regrets`, observed `batch` at a time under `config`, as
    /// (kind, index of the last regret of the step that found it).
    fn tracked(regrets: &[f64], batch: usize, config: &EventsConfig) -> Vec<(EventKind, usize)> {
        let mut state = None;
        let mut found = Vec::new();
        for (i, chunk) in regrets.chunks(batch).enumerate() {
            let last = i * batch + chunk.len() - 1;
            let seen = StepSeen {
                regrets: chunk.to_vec(),
                ..StepSeen::default()
            };
            let (next, events) = drift_events(config, state, false, seen, last as f64);
            state = next;
            found.extend(events.into_iter().map(|e| (e.kind, e.t as usize)));
        }
        found
    }

    /// `n` regrets of a level that `level(i)` gives, each that level times |N(0, 1)| ·
    /// √(π/2) (a half-normal of that mean: a noisy objective's regret) or times an
    /// exponential of mean 1 (`heavy`).
    fn regrets(seed: u64, n: usize, heavy: bool, level: impl Fn(usize) -> f64) -> Vec<f64> {
        use rand::SeedableRng;
        use rand_distr::{Distribution, Exp, Normal};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let normal = Normal::new(0.0, 1.0).unwrap();
        let exponential = Exp::new(1.0).unwrap();
        (0..n)
            .map(|i| {
                let noise = if heavy {
                    exponential.sample(&mut rng)
                } else {
                    f64::abs(normal.sample(&mut rng)) * (std::f64::consts::PI / 2.0).sqrt()
                };
                level(i) * noise
            })
            .collect()
    }

    #[test]
    fn noisy_regrets_of_a_steady_level_lose_no_tracking() {
        let config = EventsConfig::default();
        for seed in 1..=10 {
            for heavy in [false, true] {
                let steady = regrets(seed, 2000, heavy, |_| 0.3);
                assert_eq!(
                    tracked(&steady, 1, &config),
                    [],
                    "seed {seed}, heavy {heavy}"
                );
            }
        }
    }

    #[test]
    fn a_doubled_regret_loses_tracking_once_and_its_return_regains_it() {
        let config = EventsConfig::default();
        let window = config.tracking.window as usize;
        for seed in 1..=5 {
            // Regret with a spread (standard deviation) of 23 % of its level, which
            // doubles over observations 640 to 1279.
            let doubled = |i: usize| if (640..1280).contains(&i) { 2.0 } else { 1.0 };
            let values: Vec<f64> = regrets(seed, 2000, false, |_| 1.0)
                .into_iter()
                .enumerate()
                .map(|(i, r)| doubled(i) * (1.0 + 0.3 * (r - 1.0)))
                .collect();
            let found = tracked(&values, 1, &config);
            let kinds: Vec<EventKind> = found.iter().map(|e| e.0).collect();
            assert_eq!(
                kinds,
                [EventKind::TrackingLost, EventKind::TrackingRegained],
                "seed {seed}: {found:?}"
            );
            // Found at the first comparison whose newest window is past each change.
            assert!((640..640 + 2 * window).contains(&found[0].1), "{found:?}");
            assert!((1280..1280 + 2 * window).contains(&found[1].1), "{found:?}");
            // The same, observed in batches of 7.
            let batched: Vec<EventKind> = tracked(&values, 7, &config)
                .into_iter()
                .map(|e| e.0)
                .collect();
            assert_eq!(batched, kinds, "seed {seed}");
        }
    }

    #[test]
    fn a_loss_carries_the_two_means_and_a_reset_keeps_it() {
        let config = EventsConfig::default();
        let window = config.tracking.window as usize;
        let low = regrets(3, window, false, |_| 1.0);
        let high: Vec<f64> = low.iter().map(|r| 3.0 * r).collect();
        let seen = |regrets: &[f64]| StepSeen {
            regrets: regrets.to_vec(),
            ..StepSeen::default()
        };
        let (state, events) = drift_events(&config, None, false, seen(&low), 1.0);
        assert!(events.is_empty());
        let (state, events) = drift_events(&config, state, false, seen(&high), 2.0);
        assert_eq!(events.len(), 1);
        let data = &events[0].data;
        let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
        assert_eq!(data["window"], json!(window));
        assert!((data["previous_mean"].as_f64().unwrap() - mean(&low)).abs() < 1e-12);
        assert!((data["recent_mean"].as_f64().unwrap() - mean(&high)).abs() < 1e-12);
        assert!(data["standard_error"].as_f64().unwrap() > 0.0);
        // A reset clears the regrets, not the loss: one window back at the level regains.
        let (state, events) = drift_events(&config, state, true, seen(&[]), 3.0);
        assert!(events.is_empty());
        let tracking = &state.as_ref().unwrap().tracking;
        assert!(tracking.regrets.is_empty() && tracking.lost.is_some());
        let (state, events) = drift_events(&config, state, false, seen(&low), 4.0);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, EventKind::TrackingRegained);
        assert_eq!(events[0].data["lost_t"], json!(2.0));
        assert!(state.unwrap().tracking.lost.is_none());
    }

    /// The `drift-rate-changed` events of fits of `lengthscales` in turn, each on data
    /// spanning `span` seconds, as (from, to).
    fn rate_changes(lengthscales: &[f64], span: f64) -> Vec<(f64, f64)> {
        let mut state = None;
        let mut found = Vec::new();
        for (i, &lengthscale) in lengthscales.iter().enumerate() {
            let seen = StepSeen {
                fit: Some(LengthscaleFit { lengthscale, span }),
                ..StepSeen::default()
            };
            let (next, events) =
                drift_events(&EventsConfig::default(), state, false, seen, i as f64);
            state = next;
            for event in events {
                assert_eq!(event.kind, EventKind::DriftRateChanged);
                let (from, to) = (event.data["from"].as_f64(), event.data["to"].as_f64());
                let factor = event.data["factor"].as_f64().unwrap();
                assert!((factor - to.unwrap() / from.unwrap()).abs() < 1e-12);
                found.push((from.unwrap(), to.unwrap()));
            }
        }
        found
    }

    #[test]
    fn a_lengthscale_that_moves_by_the_factor_for_three_fits_is_one_event() {
        // Settles at 30 (no event), moves to 70-ish: one event; back to 30: another.
        let fits = [
            30.0, 31.0, 29.0, 30.0, 65.0, 70.0, 72.0, 71.0, 30.0, 31.0, 32.0,
        ];
        assert_eq!(rate_changes(&fits, 500.0), [(29.0, 72.0), (72.0, 32.0)]);
        // Shorter: the objective drifts faster.
        assert_eq!(
            rate_changes(&[30.0, 30.0, 30.0, 14.0, 15.0, 14.5], 500.0),
            [(30.0, 14.5)]
        );
        // One or two fits away are none; nor is a move below the factor.
        let blips = [
            30.0, 30.0, 30.0, 90.0, 30.0, 90.0, 95.0, 30.0, 55.0, 58.0, 56.0,
        ];
        assert_eq!(rate_changes(&blips, 500.0), []);
        // Away, but first up and then down by the factor: no streak.
        assert_eq!(
            rate_changes(&[30.0, 30.0, 30.0, 70.0, 10.0, 70.0], 500.0),
            []
        );
    }

    #[test]
    fn a_lengthscale_beyond_its_data_span_is_no_measured_rate() {
        // A static objective's fit grows with the span: never below it, never an event.
        assert_eq!(
            rate_changes(&[300.0, 600.0, 1200.0, 2400.0, 4800.0], 200.0),
            []
        );
        // A fit at or above the span breaks a streak.
        assert_eq!(
            rate_changes(&[30.0, 30.0, 30.0, 70.0, 70.0, 900.0, 70.0, 70.0], 500.0),
            []
        );
    }

    #[test]
    fn the_cap_is_an_event_when_reached_and_not_after() {
        let event = dataset_full(true, 4, 5, 5, 2.0).unwrap();
        assert_eq!(event.kind, EventKind::DatasetFull);
        assert_eq!(event.data, json!({"active": 5, "cap": 5}));
        assert!(dataset_full(true, 3, 4, 5, 2.0).is_none());
        assert!(dataset_full(true, 5, 5, 5, 2.0).is_none());
        assert!(dataset_full(false, 4, 5, 5, 2.0).is_none());
    }

    #[test]
    fn a_step_that_changes_nothing_finds_nothing() {
        let state = PolicyState::default();
        assert!(step_events(&config(), &state, &state, 3.0).is_empty());
    }

    #[test]
    fn a_reset_is_one_event_with_the_count_after() {
        let before = PolicyState {
            resets: 2,
            ..PolicyState::default()
        };
        let after = PolicyState {
            resets: 3,
            ..PolicyState::default()
        };
        let events = step_events(&config(), &before, &after, 7.5);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, EventKind::ModelReset);
        assert_eq!(events[0].t, 7.5);
        assert_eq!(events[0].data, json!({"resets": 3}));
    }

    #[test]
    fn each_prior_that_leaves_the_active_set_is_an_event() {
        let selection = |active: Vec<bool>| PriorSelectionState {
            active,
            ..PriorSelectionState::default()
        };
        let before = PolicyState {
            prior_selection: Some(selection(vec![true, true, false, true])),
            ..PolicyState::default()
        };
        let after = PolicyState {
            prior_selection: Some(selection(vec![false, true, false, false])),
            ..PolicyState::default()
        };
        let events = step_events(&config(), &before, &after, 1.0);
        let priors: Vec<_> = events.iter().map(|e| e.data["prior"].clone()).collect();
        assert_eq!(priors, [json!(0), json!(3)]);
        assert!(events.iter().all(|e| e.kind == EventKind::PriorEliminated));
        assert!(events.iter().all(|e| e.data["remaining"] == json!(1)));
        assert_eq!(events[1].data["name"], "prior-3");
    }
}
