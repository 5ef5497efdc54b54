//! tvbo-core: time-varying Bayesian optimization as a library, pure and synchronous.
//!
//! The objective is modelled as a Gaussian process over space × time; each algorithm
//! decides what to forget (BOLT, W-DBO, TV-GP-UCB, R-GP-UCB, ET-GP-UCB) or which prior to
//! trust (PE-GP-TS, HP-GP-TS) and where to look next. No IO, no clock, no async runtime:
//! the caller says what time it is. The `tvbo` server runs the same engine between a load
//! from and a commit to its database.
//!
//! Layers, bottom to top (each imports only from those below it): [`domain`] the types
//! every layer shares; [`optim`], [`gp`] and [`acquisition`] the math core; [`policy`]
//! the algorithms; [`engine`] a session's suggest and observe steps, whose front door
//! is [`engine::LocalSession`].
//!
//! ```
//! use chrono::{DateTime, Utc};
//! use tvbo_core::domain::config::CreateSession;
//! use tvbo_core::engine::{LocalSession, new_session_config};
//!
//! let request: CreateSession = serde_json::from_value(serde_json::json!({
//!     "name": "doc",
//!     "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
//!     "algorithm": {"name": "bolt"},
//!     "time": {"source": "client"},
//! }))
//! .unwrap();
//! let epoch = DateTime::<Utc>::UNIX_EPOCH;
//! let mut session = LocalSession::new(new_session_config(request, 7).unwrap(), epoch);
//! let suggestion = session.suggest(1, Some(0.0), epoch).unwrap().remove(0);
//! let x = suggestion.params["x"].as_number().unwrap();
//! assert!((0.0..=1.0).contains(&x));
//! ```
//!
//! `examples/embed.rs` tunes a drifting function this way, observing each suggestion.

pub mod acquisition;
pub mod domain;
pub mod engine;
pub mod gp;
pub mod optim;
pub mod policy;
