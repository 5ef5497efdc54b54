//! Model work timed by stage: a `tracing` layer over the spans the policies and the
//! engine open for each stage ([`Stage`](crate::policy::Stage)). The clock is read here,
//! by the listener, never by the code that does the work.

use std::time::{Duration, Instant};

use metrics::histogram;
use tracing::span::{Attributes, Id};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::MODEL_WORK_SECONDS;
use crate::policy::MODEL_WORK_TARGET;

/// The layer to add to the process's subscriber (the binary's, or a test's global one:
/// model work runs on the blocking pool's threads, which a thread's default subscriber
/// does not reach). It sees only the stage spans, whatever the other layers' filters
/// (give those per-layer filters, not a global one that would drop TRACE spans), and
/// records each into [`MODEL_WORK_SECONDS`] with `stage` = the span's name.
pub fn model_work_layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    StageTimer.with_filter(filter_fn(is_stage))
}

fn is_stage(metadata: &Metadata<'_>) -> bool {
    metadata.target() == MODEL_WORK_TARGET
}

/// Times stage spans from creation to close.
struct StageTimer;

/// A stage span's start and the time of the stage spans nested in it so far.
struct Timing {
    started: Instant,
    nested: Duration,
}

impl<S> Layer<S> for StageTimer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _attributes: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Timing {
                started: Instant::now(),
                nested: Duration::ZERO,
            });
        }
    }

    /// Records the span's own time (its time less its nested stages') and adds its whole
    /// time to the enclosing stage's nested time: the stages partition the work.
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(timing) = span.extensions_mut().remove::<Timing>() else {
            return;
        };
        let total = timing.started.elapsed();
        // The parent as this layer sees it: the nearest enclosing stage span.
        if let Some(parent) = span.parent()
            && let Some(outer) = parent.extensions_mut().get_mut::<Timing>()
        {
            outer.nested += total;
        }
        histogram!(MODEL_WORK_SECONDS, "stage" => span.name())
            .record(total.saturating_sub(timing.nested));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Stage;
    use metrics_exporter_prometheus::PrometheusBuilder;
    use tracing_subscriber::layer::SubscriberExt;

    /// `(count, sum)` of the stage's histogram in a rendering (summaries without buckets).
    fn count_and_sum(rendered: &str, stage: &str) -> (f64, f64) {
        let value = |suffix: &str| {
            let prefix = format!("{MODEL_WORK_SECONDS}_{suffix}{{stage=\"{stage}\"}} ");
            rendered
                .lines()
                .find_map(|line| line.strip_prefix(&prefix))
                .map_or(0.0, |v| v.parse().unwrap())
        };
        (value("count"), value("sum"))
    }

    #[test]
    fn stages_are_timed_without_their_nested_stages() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let subscriber = tracing_subscriber::registry().with(model_work_layer());
        metrics::with_local_recorder(&recorder, || {
            tracing::subscriber::with_default(subscriber, || {
                Stage::Acquisition.run(|| {
                    Stage::Fit.run(|| std::thread::sleep(Duration::from_millis(60)));
                    Stage::Fit.run(|| std::thread::sleep(Duration::from_millis(60)));
                });
                Stage::Forgetting.run(|| ());
                Stage::Optimum.run(|| ());
                // Not a stage: not recorded.
                tracing::trace_span!("fit").in_scope(|| ());
            });
        });
        let rendered = handle.render();
        let (fits, fit_seconds) = count_and_sum(&rendered, "fit");
        let (acquisitions, acquisition_seconds) = count_and_sum(&rendered, "acquisition");
        let (forgettings, _) = count_and_sum(&rendered, "forgetting");
        let (optima, _) = count_and_sum(&rendered, "optimum");
        assert_eq!(
            (fits, acquisitions, forgettings, optima),
            (2.0, 1.0, 1.0, 1.0),
            "{rendered}"
        );
        assert!(fit_seconds >= 0.12, "{rendered}");
        assert!(acquisition_seconds < 0.06, "{rendered}");
    }
}
