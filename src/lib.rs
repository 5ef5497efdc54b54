//! tvbo: time-varying Bayesian optimization as a service.
//!
//! The engine is the `tvbo-core` crate, re-exported here under its own module names
//! ([`domain`], [`optim`], [`gp`], [`acquisition`], [`policy`], [`engine`]), so that the
//! server and its users name one type by one path. This crate adds, bottom to top
//! (docs/architecture.md; `tests/it/layering.rs` checks the arrows): [`store`] persistence
//! (over [`domain`] only); [`telemetry`] the Prometheus metrics that the service and the
//! API record; [`session`] the service that runs the engine between a load and a commit;
//! [`keys`] the API keys; [`delivery`] the webhooks and their delivery worker (over
//! [`session`]'s views); [`api`] the HTTP layer, which also serves the [`dashboard`]'s
//! pages and the API docs UI ([`docs_ui`]), and [`server`] its listener; [`config`] the
//! command line. The papers' experiments are the `tvbo-bench` crate.

pub use tvbo_core::{acquisition, domain, engine, gp, optim, policy};

pub mod api;
pub mod config;
pub mod dashboard;
pub mod delivery;
pub mod docs_ui;
pub mod keys;
pub mod server;
pub mod session;
pub mod store;
pub mod telemetry;
