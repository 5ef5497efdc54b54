//! tvbo-bench: the papers' experiments, reproducible from one command (`tvbo-bench`, or
//! `tvbo bench`, which runs it).
//!
//! A suite is a list of objectives × algorithms × replications. Each run creates a session
//! configuration exactly as the server would ([`tvbo_core::engine::new_session_config`] on
//! the same create request), drives it on a simulated clock ([`runner`]) through the
//! server's engine in-process or through a running server's HTTP API ([`http`]), and records the
//! regret of every query. [`report`] aggregates the runs into Markdown, CSV, JSON and SVG.
//!
//! Protocol (Bardou & Thiran, paper 002, Section 5.1): 15 uniform random warm-up queries
//! (the session default), a 600 s horizon, 10 replications, every algorithm on the same
//! seeds (same objective sample, same observation noise sequence, same policy seeds).
//!
//! # Module map
//!
//! One concern per file; each uses only modules listed above it (none uses this file's
//! re-exports, except `runner`'s `BenchError`).
//!
//! - [`error`] — [`BenchError`].
//! - [`seeds`] — the seeds of runs, derived from the one base seed ([`derive_seed`]).
//! - [`algorithms`] — the algorithms the bench runs ([`ALGORITHMS`]) and their
//!   [`AlgorithmOptions`].
//! - [`experiments`] — 003 §5's prior-selection setups, run in-process (also by
//!   `cargo bench --bench prior_selection`).
//! - The objectives: [`synthetic`] (002's eight functions), [`objective`] (the
//!   [`Objective`](objective::Objective) trait, and a synthetic function as one), [`tvgp`]
//!   (000's time-varying GP samples), [`prior_setup`] (003's setups), [`wells`] (the
//!   drifting wells), [`multimodal`] (basins whose depths change), [`mixed`] (a
//!   categorical setting beside two continuous ones), [`trace`] (real software's
//!   measurements replayed).
//! - [`stats`] — mean ± standard error of a sample ([`MeanSe`](stats::MeanSe)).
//! - [`reference`](mod@reference) — 002's published Table 3.
//! - [`suites`] — the suites ([`suite`]) and the objectives they name
//!   ([`ObjectiveSpec`](suites::ObjectiveSpec)).
//! - [`cli`] — the command line ([`cli::BenchArgs`]).
//! - [`options`] — what `tvbo bench` takes ([`BenchOptions`], [`ServerTime`]).
//! - [`session`] — a run's create-session request and the configuration made of it.
//! - [`runner`] — one run, a session driven on a clock; the policies in-process.
//! - [`http`] — the driver of a running server.
//! - [`peers`] — what people use today as drivers: tuning once, Optuna.
//! - [`plan`] — the plan of a benchmark ([`Plan`], its [`RunSpec`]s).
//! - [`run_log`] — the outcome of a run ([`RunResult`]) and the run log ([`RUN_LOG`]) that
//!   `--resume` and `--report-only` read.
//! - [`report`] — the runs aggregated, and the report files (Markdown, CSV, JSON, SVG).
//! - [`execution`] — the runs of a plan on threads ([`execute`]), and the whole command
//!   ([`run`]).

pub mod algorithms;
pub mod cli;
pub mod error;
pub mod execution;
pub mod experiments;
pub mod http;
pub mod mixed;
pub mod multimodal;
pub mod objective;
pub mod options;
pub mod peers;
pub mod plan;
pub mod prior_setup;
pub mod reference;
pub mod report;
pub mod run_log;
pub mod runner;
pub mod seeds;
pub mod session;
pub mod stats;
pub mod suites;
pub mod synthetic;
pub mod trace;
pub mod tvgp;
pub mod wells;

pub use algorithms::{ALGORITHMS, AlgorithmEntry, AlgorithmOptions, algorithm};
pub use error::BenchError;
pub use execution::{execute, run};
pub use options::{BenchOptions, ServerTime, parse_algorithm_options};
pub use plan::{Plan, RunSpec};
pub use run_log::{RUN_LOG, RunResult};
pub use seeds::derive_seed;
pub use session::{ModelSettings, session_config, session_request};
pub use suites::{Suite, all_objectives, suite};
