//! The stages of model work, reported as `tracing` spans so that the policies, the
//! engine and the GP never read a clock: a span only marks where a stage begins and
//! ends, and whoever listens (the binary's metrics layer, `telemetry::model_work_layer`)
//! times it. With no listener a span costs one check of a cached flag.

/// The target of every stage span; its name is the stage's.
pub const MODEL_WORK_TARGET: &str = "tvbo::model_work";

/// A stage of model work. Spans of stages nest (a forgetting decision that builds a GP
/// holds a fit); a listener that splits time by stage counts each span's time minus the
/// time of the stages nested in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Fitting hyperparameters and building a GP (posterior) from data.
    Fit,
    /// Choosing points: maximising the acquisition function, or sampling.
    Acquisition,
    /// Deciding what to forget (relevance, budgets, resets) when data arrives.
    Forgetting,
    /// Searching a model's posterior mean for the optimum it recommends (each step's
    /// recorded optimum, the reads' `best`).
    Optimum,
}

impl Stage {
    /// Runs `work` inside a span of this stage (target [`MODEL_WORK_TARGET`], level
    /// TRACE, named `fit`, `acquisition`, `forgetting` or `optimum`).
    pub fn run<T>(self, work: impl FnOnce() -> T) -> T {
        let span = match self {
            Stage::Fit => tracing::trace_span!(target: MODEL_WORK_TARGET, "fit"),
            Stage::Acquisition => tracing::trace_span!(target: MODEL_WORK_TARGET, "acquisition"),
            Stage::Forgetting => tracing::trace_span!(target: MODEL_WORK_TARGET, "forgetting"),
            Stage::Optimum => tracing::trace_span!(target: MODEL_WORK_TARGET, "optimum"),
        };
        span.in_scope(work)
    }
}
