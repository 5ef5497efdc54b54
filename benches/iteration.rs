//! Times tvbo's model iteration in-process on given data: one whole suggest of a `bolt`
//! session with Matérn-5/2 × Matérn-3/2 (the hyperparameter fit from the default start,
//! then UCB maximised from 512 Sobol points with the best 20 refined), and its two parts
//! alone: the fit, and the UCB maximisation on the fitted model. It also times the same
//! session under `model.fit_start: previous`, whose state holds the fit of the first
//! n − 1 points as its previous suggest left it, at an ordinal whose fit starts from it
//! (not every fifth, which fits from the default start like the first): the whole
//! suggest, its fit alone, and the mean suggest over a cycle of [`FULL_FIT_EVERY`] (one
//! fit from the default start, the others from the previous fit; docs/performance.md
//! weighs the two). The first is the iteration
//! BoTorch runs in the papers' experiments; `benches/botorch/compare.py` feeds both the
//! same data and prints them side by side (docs/performance.md).
//!
//! Input (`--data FILE`): `{"dim": d, "sets": [{"x": [[…], …], "t": […], "y": […],
//! "t_next": …}, …]}`, inputs in the unit cube, times in seconds. Output: one JSON line
//! per set with the median seconds of each part over `--repeats` runs.
//!
//! ```sh
//! cargo bench --bench iteration -- --data sets.json --repeats 3
//! ```

use std::time::Instant;

use anyhow::{Context, ensure};
use clap::Parser;
use rand::SeedableRng;
use serde::Deserialize;
use serde_json::json;
use tvbo::acquisition::{AcquisitionOptions, beta_wdbo, maximize_ucb_on};
use tvbo::domain::checked::CheckedConfig;
use tvbo::domain::config::{CreateSession, FitStart};
use tvbo::gp::{KernelKind, KernelSpec, SearchStart};
use tvbo::policy::surrogate::FULL_FIT_EVERY;
use tvbo::policy::{
    self, FitSettings, Observation, PolicyRng, PolicyState, SuggestContext, Surrogate,
};

/// The server's allocator (see `src/main.rs`), so that this measures what it runs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Time one suggest, one fit and one UCB maximisation per data set.
#[derive(Debug, Parser)]
struct Args {
    /// Passed by `cargo bench` to every bench; ignored.
    #[arg(long, hide = true)]
    bench: bool,
    /// The data sets (JSON, format above).
    #[arg(long)]
    data: std::path::PathBuf,
    /// Runs of each part per set; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Cores the suggest's UCB refinements may use, as a server gives a suggest when the
    /// other cores are idle (the fit runs on one).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

#[derive(Deserialize)]
struct Input {
    dim: usize,
    sets: Vec<DataSet>,
}

#[derive(Deserialize)]
struct DataSet {
    x: Vec<Vec<f64>>,
    t: Vec<f64>,
    y: Vec<f64>,
    t_next: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median wall seconds of `repeats` runs of `work`.
fn timed<T>(repeats: usize, mut work: impl FnMut() -> T) -> anyhow::Result<f64> {
    let mut seconds = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        std::hint::black_box(work());
        seconds.push(start.elapsed().as_secs_f64());
    }
    ensure!(!seconds.is_empty(), "--repeats must be at least 1");
    Ok(median(seconds))
}

fn session(dim: usize, fit_start: FitStart) -> anyhow::Result<CheckedConfig> {
    let parameters: Vec<_> = (0..dim)
        .map(|i| json!({"name": format!("x{i}"), "low": 0, "high": 1}))
        .collect();
    let request: CreateSession = serde_json::from_value(json!({
        "parameters": parameters,
        "algorithm": {"name": "bolt"},
        "model": {
            "spatial_kernel": "matern52",
            "temporal_kernel": "matern32",
            "warmup": 0,
            "fit_start": fit_start,
        },
        "time": {"source": "client"}
    }))?;
    Ok(CheckedConfig::from_request(request, 0)?)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.data)
        .with_context(|| format!("reading {}", args.data.display()))?;
    let input: Input = serde_json::from_str(&text).context("parsing the data sets")?;
    let config = session(input.dim, FitStart::Fixed)?;
    let warm_config = session(input.dim, FitStart::Previous)?;
    let policy = policy::policy_for(&config);
    let spec = KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32));
    let space = config.space();
    for set in &input.sets {
        let n = set.y.len();
        ensure!(
            set.x.len() == n && set.t.len() == n,
            "x, t and y differ in length"
        );
        let data: Vec<Observation> = (0..n)
            .map(|i| Observation {
                seq: i as i64 + 1,
                x: set.x[i].clone(),
                t: set.t[i],
                y: set.y[i],
            })
            .collect();
        let ctx = SuggestContext {
            space,
            arms: None,
            model: &config.model,
            data: &data,
            pending: &[],
            t: set.t_next,
            count: 1,
            issued_before: n as u64,
            fixed_noise: None,
            cores: &args.threads,
            fixed: &[],
            beside: None,
        };
        let suggest = timed(args.repeats, || {
            let mut state = PolicyState::default();
            let mut rng = PolicyRng::seed_from_u64(1);
            policy::suggest(policy.as_ref(), &ctx, &mut state, &mut rng).expect("suggest")
        })?;
        let fit_alone = |start: SearchStart<'_>| {
            let settings = FitSettings {
                start,
                ..FitSettings::from_default_start(None, &config.model)
            };
            Surrogate::fit(spec, input.dim, &data, &settings).expect("fit")
        };
        let fit = timed(args.repeats, || fit_alone(SearchStart::Default))?;
        let surrogate = fit_alone(SearchStart::Default);
        // The previous suggest of a `fit_start: previous` session fitted the first n − 1.
        let warm = if n > 2 {
            let previous = *Surrogate::fit(
                spec,
                input.dim,
                &data[..n - 1],
                &FitSettings::from_default_start(None, &config.model),
            )?
            .hyperparameters();
            // An ordinal whose fit starts from the previous one.
            let ordinal = (n as u64 + 1..)
                .find(|k| !k.is_multiple_of(FULL_FIT_EVERY))
                .expect("an ordinal");
            let warm_ctx = SuggestContext {
                model: &warm_config.model,
                issued_before: ordinal,
                ..ctx
            };
            let suggest = timed(args.repeats, || {
                let mut state = PolicyState {
                    hyperparameters: Some(previous),
                    ..PolicyState::default()
                };
                let mut rng = PolicyRng::seed_from_u64(1);
                policy::suggest(policy.as_ref(), &warm_ctx, &mut state, &mut rng).expect("suggest")
            })?;
            let fit = timed(args.repeats, || fit_alone(SearchStart::Previous(&previous)))?;
            Some((suggest, fit))
        } else {
            None
        };
        let beta = beta_wdbo(input.dim, n);
        let acquisition = timed(args.repeats, || {
            let mut rng = PolicyRng::seed_from_u64(1);
            let options = AcquisitionOptions::default();
            maximize_ucb_on(
                surrogate.gp(),
                beta,
                set.t_next,
                &options,
                &[],
                &args.threads,
                &mut rng,
            )
        })?;
        println!(
            "{}",
            json!({
                "n": n,
                "dim": input.dim,
                "suggest_seconds": suggest,
                "fit_seconds": fit,
                "previous_suggest_seconds": warm.map(|(suggest, _)| suggest),
                "previous_fit_seconds": warm.map(|(_, fit)| fit),
                "previous_cycle_seconds": warm.map(|(warm_suggest, _)| {
                    let cycle = FULL_FIT_EVERY as f64;
                    (suggest + (cycle - 1.0) * warm_suggest) / cycle
                }),
                "acquisition_seconds": acquisition,
                "hyperparameters": surrogate.hyperparameters(),
            })
        );
    }
    Ok(())
}
