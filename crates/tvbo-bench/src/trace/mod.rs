//! Real software replayed: a trace of measurements ([`mod@file`]), the scenario that makes it
//! drift ([`scenario`]), and the objective of the two ([`replay`]). docs/traces.md
//! describes the files.

pub mod file;
pub mod replay;
pub mod scenario;

pub use file::Trace;
pub use replay::Replay;
pub use scenario::{BUILTIN, Scenario, digest};
