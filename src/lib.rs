//! tvbo: time-varying Bayesian optimization as a service.
//!
//! Layers, bottom to top (docs/architecture.md; `tests/layering.rs` checks the arrows):
//! [`domain`] the types every layer shares; [`optim`], [`gp`] and [`acquisition`] the
//! math core (no IO); [`policy`] the algorithms; [`engine`] a session's suggest and
//! observe steps, pure and synchronous; [`store`] persistence (over [`domain`] only);
//! [`session`] the service that runs the engine between a load and a commit; [`api`] the
//! HTTP layer, which also serves the [`dashboard`]'s pages and the API docs UI
//! ([`docs_ui`]), and [`server`] its listener;
//! [`bench`](mod@bench) the papers' benchmarks (`tvbo bench`); [`config`] the command
//! line; [`telemetry`] the Prometheus metrics that the service and the API record.

pub mod acquisition;
pub mod api;
pub mod bench;
pub mod config;
pub mod dashboard;
pub mod docs_ui;
pub mod domain;
pub mod engine;
pub mod gp;
pub mod keys;
pub mod optim;
pub mod policy;
pub mod server;
pub mod session;
pub mod store;
pub mod telemetry;
