//! 003 §5's synthetic prior-selection experiments (not a timing benchmark): every rule on
//! the same seeds, mean ± standard error of the final cumulative regret and the prior
//! statistics of 003 Figs. 4–7.
//!
//! `cargo bench --bench prior_selection -- [--setup lengthscale|kernel|hill] [--seeds 50]
//! [--horizon 500] [--jobs 2]`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tvbo_bench::experiments::{self, RULES, SetupKind};

struct Options {
    setup: String,
    seeds: usize,
    horizon: usize,
    jobs: usize,
}

fn options() -> Options {
    let mut options = Options {
        setup: "lengthscale".into(),
        seeds: 50,
        horizon: experiments::HORIZON,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--setup" => options.setup = value(),
            "--seeds" => options.seeds = value().parse().expect("--seeds: a count"),
            "--horizon" => options.horizon = value().parse().expect("--horizon: a count"),
            "--jobs" => options.jobs = value().parse().expect("--jobs: a count"),
            // cargo bench passes --bench.
            _ => {}
        }
    }
    options
}

fn main() {
    let options = options();
    let setup = match SetupKind::named(&options.setup) {
        Some(kind) => kind.setup(experiments::ARM_COUNT),
        None => panic!(
            "unknown setup {}: lengthscale, kernel or hill",
            options.setup
        ),
    };
    let priors = setup.build_priors();
    let started = Instant::now();
    println!(
        "003 §5 {} setup: {} priors, {} arms, T = {}, {} seeds, δ = {}",
        setup.name,
        priors.len(),
        setup.arms.len(),
        options.horizon,
        options.seeds,
        experiments::DELTA
    );
    println!();
    println!(
        "| algorithm | final cumulative regret (mean ± s.e.) | most mass on p* | p* eliminated | priors eliminated (mean) | steps choosing p* | final entropy |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, rule) in RULES {
        let next = AtomicUsize::new(0);
        let mut outcomes: Vec<(usize, experiments::SeedOutcome)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..options.jobs.max(1))
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let seed = next.fetch_add(1, Ordering::Relaxed);
                            if seed >= options.seeds {
                                return done;
                            }
                            let outcome = experiments::run_seed(
                                &setup,
                                &priors,
                                rule,
                                seed as u64,
                                options.horizon,
                            );
                            eprint!("\r{name}: seed {} of {}   ", seed + 1, options.seeds);
                            done.push((seed, outcome));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("worker"))
                .collect()
        });
        eprintln!();
        outcomes.sort_by_key(|(seed, _)| *seed);
        let outcomes: Vec<_> = outcomes.into_iter().map(|(_, o)| o).collect();
        let s = experiments::summarise(name, &outcomes);
        println!(
            "| {} | {:.1} ± {:.1} | {:.0}% | {:.0}% | {:.2} | {:.0}% | {:.3} |",
            s.rule,
            s.mean_final_regret,
            s.standard_error,
            100.0 * s.most_mass_on_true_prior,
            100.0 * s.true_prior_eliminated,
            s.mean_eliminated,
            100.0 * s.true_prior_chosen,
            s.mean_final_entropy,
        );
    }
    println!();
    println!("({:.0} s)", started.elapsed().as_secs_f64());
}
