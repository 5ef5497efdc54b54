//! tvbo: time-varying Bayesian optimization as a service.
//!
//! Module map (DESIGN.md §1): [`gp`] and [`acquisition`] are the math core (no IO);
//! [`policy`] holds the algorithms; [`session`] the search space, configuration, time and
//! the suggest/observe lifecycle; [`store`] persistence; [`api`] the HTTP layer;
//! [`bench`] the papers' benchmarks (`tvbo bench`); [`experiments`] paper 003's
//! prior-selection experiments, run in-process.

pub mod acquisition;
pub mod api;
pub mod bench;
pub mod config;
pub mod gp;
pub mod optim;
pub mod policy;
pub mod server;
pub mod session;
pub mod store;
