//! `report.md`: the settings, the Table-3-style pivot of the average regret, the normalised
//! regret, the fraction of the optimum achieved (for replayed traces also by phase of
//! their scenarios), the comparison with 002's published Table 3 ([`super::published`]),
//! and the details.

use std::fmt::Write as _;

use serde_json::Value;

use super::aggregate::Report;
use super::format::{duration, fraction, significant, span};
use super::phases::achieved_plot_file;
use tvbo_core::domain::config::{FitStart, Lengthscales, Level, Warping};
use tvbo_core::domain::hyperpriors::Hyperpriors;

impl Report {
    /// The Markdown report: settings, the Table-3-style pivot (mean ± standard error of
    /// the average regret), the normalised regret, the fraction of the optimum achieved
    /// (overall and by phase), the comparison with 002's Table 3, and the details.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        self.settings(&mut md);
        self.regret_table(&mut md);
        self.achieved_table(&mut md);
        self.phase_tables(&mut md);
        md.push_str(&self.published_comparison());
        self.details_table(&mut md);
        md
    }

    /// The title and the settings the runs were made with.
    fn settings(&self, md: &mut String) {
        let _ = writeln!(md, "# tvbo bench: suite `{}`\n", self.suite);
        let _ = writeln!(
            md,
            "{}; horizon {} s; {} replication(s){}; seed {}; {} job(s); compute {}; {}.\n",
            self.mode,
            self.horizon,
            self.replications,
            if self.runs.len() < self.planned_runs {
                format!(
                    " (interim: {} of the {} runs recorded; the column `runs` of the details says how many per cell)",
                    self.runs.len(),
                    self.planned_runs
                )
            } else {
                String::new()
            },
            self.seed,
            self.jobs,
            match self.fixed_compute {
                Some(f) => format!("fixed at {f} s per iteration"),
                None => "measured".to_string(),
            },
            match self.total_seconds {
                Some(seconds) => format!("{} finished in {seconds:.0} s", self.started),
                None => format!("reported at {} from the recorded runs", self.started),
            }
        );
        if !self.algorithm_options.is_empty() {
            let given: Vec<String> = self
                .algorithm_options
                .iter()
                .map(|(name, options)| format!("`{name}` `{}`", Value::Object(options.clone())))
                .collect();
            let _ = writeln!(
                md,
                "Algorithm options (`--algorithm-options`; the other algorithms ran with their defaults): {}.\n",
                given.join(", ")
            );
        }
        if self.fit_start == FitStart::Previous {
            let _ = writeln!(
                md,
                "Hyperparameter fits start from each session's previous fit (`--fit-start previous`), not from the papers' fixed start.\n"
            );
        }
        if self.hyperpriors != Hyperpriors::None {
            let _ = writeln!(
                md,
                "Hyperparameter fits are maximum a posteriori under the service's weak priors (`--hyperpriors {}`{}), not the papers' exact maximum likelihood.\n",
                serde_json::to_value(self.hyperpriors)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                if self.hyperpriors == Hyperpriors::default() {
                    ", the service's default"
                } else {
                    ""
                }
            );
        }
        if self.lengthscales != Lengthscales::Shared {
            let _ = writeln!(
                md,
                "The GPs fit one spatial lengthscale per parameter (`--lengthscales per_parameter`), not the papers' and the service's default, one shared by every parameter.\n"
            );
        }
        if self.warping != Warping::None {
            let _ = writeln!(
                md,
                "The GPs are fitted to warped values (`--warping {}`), not the papers' and the service's default, the values themselves.\n",
                serde_json::to_value(self.warping)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            );
        }
        if self.level == Level::Drifting {
            let _ = writeln!(
                md,
                "The GPs of the algorithms with time have a drifting level (`--level drifting`), not the papers' kernel.\n"
            );
        }
    }

    /// The Table-3-style pivot: mean ± standard error of the average regret (best of each
    /// row in bold where it has two or more), and, with two or more algorithms, the
    /// normalised regret (002 Fig. 3).
    fn regret_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "Average regret (mean ± standard error over replications; lower is better{}):\n",
            if self.ranked() { ", best in bold" } else { "" }
        );
        self.algorithm_columns(md, "objective");
        for (name, label) in &self.objectives {
            self.ranked_row(
                md,
                label,
                |a| self.summary(name, a).map(|s| s.average_regret),
                f64::min,
                |m| format!("{} ± {}", significant(m.mean), significant(m.se)),
            );
        }
        if !self.normalised.is_empty() {
            let _ = write!(md, "| normalised regret (0 best, 1 worst) |");
            for a in &self.algorithms {
                let _ = match self.normalised.iter().find(|n| &n.algorithm == a) {
                    Some(n) => write!(
                        md,
                        " {:.2} ± {:.2} |",
                        n.normalised_regret.mean, n.normalised_regret.se
                    ),
                    None => write!(md, " – |"),
                };
            }
            let _ = writeln!(
                md,
                "\n\nNormalised regret (002 Fig. 3): per objective, (r − r_best) / (r_worst − r_best) between the algorithms of this report (0 the best of them, 1 the worst), averaged over the objectives on which two or more ran (± standard error over them); it ranks these algorithms only."
            );
        }
        let _ = writeln!(md);
    }

    /// For the objectives in real units (trace replays): the mean fraction of the
    /// per-moment optimum reached, mean ± standard error over replications (best in bold
    /// where a row has two or more). Nothing when no objective has it.
    fn achieved_table(&self, md: &mut String) {
        let rows = self.objectives_where(|name, a| {
            self.summary(name, a).is_some_and(|s| s.achieved.is_some())
        });
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(
            md,
            "Fraction of the per-moment optimum achieved (mean over queries; mean ± standard error over replications; higher is better):\n"
        );
        self.algorithm_columns(md, "objective");
        for (name, label) in rows {
            self.ranked_row(
                md,
                label,
                |a| self.summary(name, a).and_then(|s| s.achieved),
                f64::max,
                fraction,
            );
        }
        let _ = writeln!(md);
    }

    /// For each objective that replays a trace: the fraction of the per-moment optimum
    /// achieved by phase of its scenario (a row per phase reached, a column per
    /// algorithm; mean over a run's queries in the phase, mean ± standard error over
    /// replications), and its plot over the day. Nothing for the other objectives.
    fn phase_tables(&self, md: &mut String) {
        let mut introduced = false;
        for scenario in &self.scenarios {
            let name = &scenario.objective;
            let value = |phase: usize, algorithm: &str| {
                self.phase_summaries
                    .iter()
                    .find(|p| &p.objective == name && p.algorithm == algorithm && p.phase == phase)
                    .and_then(|p| p.achieved)
            };
            let phases: Vec<usize> = (0..scenario.phases.len())
                .filter(|&k| self.algorithms.iter().any(|a| value(k, a).is_some()))
                .collect();
            if phases.is_empty() {
                continue;
            }
            if !introduced {
                introduced = true;
                let _ = writeln!(
                    md,
                    "Fraction of the per-moment optimum achieved by phase of each trace's scenario (mean over a run's queries in the phase; mean ± standard error over replications; higher is better{}). A query counts for the phase its time falls in: a phase's last `ramp_seconds`, which blend into the next, are still that phase; a phase that recurs within the horizon counts all its occurrences together.\n",
                    if self.ranked() { ", best in bold" } else { "" }
                );
            }
            let label = self.label(name);
            let _ = writeln!(md, "{label}:\n");
            self.algorithm_columns(md, "phase");
            for k in phases {
                let phase = &scenario.phases[k];
                let row = format!(
                    "{}. {} ({})",
                    k + 1,
                    phase.condition,
                    span(phase.start, phase.end)
                );
                self.ranked_row(md, &row, |a| value(k, a), f64::max, fraction);
            }
            if self.achieved_series.iter().any(|s| &s.objective == name) {
                let _ = writeln!(
                    md,
                    "\n![{label}: the fraction of the optimum achieved over the day, by algorithm, its phases shaded]({})",
                    achieved_plot_file(name)
                );
            }
            let _ = writeln!(md);
        }
    }

    /// The details per (objective, algorithm), means over replications.
    fn details_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "Details per (objective, algorithm), means over replications:\n"
        );
        let _ = writeln!(
            md,
            "| objective | algorithm | runs | average regret | after warm-up | iterations | final n | mean n | compute / iteration |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
        for s in &self.summaries {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} ± {} | {} ± {} | {:.0} | {:.0} | {:.1} | {} |",
                s.label,
                s.algorithm,
                s.replications,
                significant(s.average_regret.mean),
                significant(s.average_regret.se),
                significant(s.average_regret_after_warmup.mean),
                significant(s.average_regret_after_warmup.se),
                s.iterations,
                s.final_dataset_size,
                s.mean_dataset_size,
                duration(s.compute_per_iteration)
            );
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::aggregate::Summary;
    use crate::report::aggregate::tests::summary;
    use crate::report::phases::tests::{run, scenario};
    use crate::report::phases::{AchievedSeries, phase_summaries};

    /// A report of the paper suite's Hartmann-3 and Shekel under three algorithms,
    /// holding `summaries` and nothing else.
    pub(crate) fn report(horizon: f64, summaries: Vec<Summary>) -> Report {
        Report {
            suite: "paper".into(),
            mode: "in-process".into(),
            horizon,
            replications: 10,
            planned_runs: 20,
            seed: 0,
            jobs: 1,
            fixed_compute: None,
            started: String::new(),
            total_seconds: None,
            objectives: vec![
                ("hartmann3".into(), "Hartmann (3)".into()),
                ("shekel".into(), "Shekel (4)".into()),
            ],
            algorithms: vec!["gp-ucb".into(), "w-dbo".into(), "bolt".into()],
            algorithm_options: BTreeMap::new(),
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Level::None,
            summaries,
            normalised: Vec::new(),
            runs: Vec::new(),
            series: Vec::new(),
            scenarios: Vec::new(),
            phase_summaries: Vec::new(),
            achieved_series: Vec::new(),
        }
    }

    /// With two or more algorithms the best of a row is bold and the normalised regret
    /// is shown and explained; with one, nothing is called the best and there is no
    /// normalised regret.
    #[test]
    fn only_a_comparison_of_algorithms_has_a_best_and_a_normalised_regret() {
        let summaries = vec![
            summary("hartmann3", "gp-ucb", 0.5),
            summary("hartmann3", "bolt", 0.75),
        ];
        let mut two = report(60.0, summaries.clone());
        two.normalised = crate::report::aggregate::normalise(&summaries, &two.algorithms);
        let md = two.markdown();
        assert!(md.contains("lower is better, best in bold"), "{md}");
        assert!(
            md.contains("| Hartmann (3) | **0.500 ± 0** | – | 0.750 ± 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| normalised regret (0 best, 1 worst) | 0.00 ± 0.00 | – | 1.00 ± 0.00 |"),
            "{md}"
        );
        assert!(
            md.contains("Normalised regret (002 Fig. 3): per objective"),
            "{md}"
        );
        let mut one = report(60.0, vec![summary("hartmann3", "bolt", 0.75)]);
        one.algorithms = vec!["bolt".into()];
        one.normalised = crate::report::aggregate::normalise(&one.summaries, &one.algorithms);
        let md = one.markdown();
        assert!(md.contains("| Hartmann (3) | 0.750 ± 0 |"), "{md}");
        assert!(!md.contains("**"), "{md}");
        assert!(!md.contains("best"), "{md}");
        assert!(!md.contains("normalised"), "{md}");
    }

    /// `--hyperpriors default` runs record the mode it resolves to; the report names it
    /// as the service's default.
    #[test]
    fn the_settings_name_the_hyperpriors_and_the_default() {
        let mut md = report(60.0, Vec::new());
        assert!(!md.markdown().contains("--hyperpriors"));
        md.hyperpriors = Hyperpriors::Robust;
        assert_eq!(Hyperpriors::default(), Hyperpriors::Robust);
        assert!(
            md.markdown().contains(
                "under the service's weak priors (`--hyperpriors robust`, the service's default)"
            ),
            "{}",
            md.markdown()
        );
    }

    /// The report names per-parameter lengthscales, and nothing under the papers' and
    /// the service's default, `shared`.
    #[test]
    fn the_settings_name_the_lengthscales() {
        let mut md = report(60.0, Vec::new());
        assert!(!md.markdown().contains("lengthscale"), "{}", md.markdown());
        assert_eq!(Lengthscales::default(), Lengthscales::Shared);
        md.lengthscales = Lengthscales::PerParameter;
        assert!(
            md.markdown().contains(
                "one spatial lengthscale per parameter (`--lengthscales per_parameter`), not"
            ),
            "{}",
            md.markdown()
        );
    }

    /// A trace objective gets a table by phase (rows in the scenario's order, only the
    /// phases reached, best in bold) and a link to its plot; the synthetic ones none.
    #[test]
    fn a_trace_objective_is_broken_down_by_phase() {
        let mut with_trace = report(200.0, Vec::new());
        with_trace.objectives = vec![("trace-s".into(), "S (a system)".into())];
        with_trace.algorithms = vec!["bolt".into(), "random".into()];
        let s = scenario();
        let bolt = run("bolt", &[(10.0, 0.9), (120.0, 0.8)]);
        let random = run("random", &[(10.0, 0.5), (120.0, 0.85)]);
        for (name, r) in [("bolt", &bolt), ("random", &random)] {
            with_trace
                .phase_summaries
                .extend(phase_summaries(&s, "trace-s", name, &[r]));
            with_trace
                .achieved_series
                .extend(AchievedSeries::new("trace-s", name, 200.0, &[r]));
        }
        with_trace.scenarios.push(s);
        let md = with_trace.markdown();
        assert!(md.contains("by phase of each trace's scenario"), "{md}");
        assert!(
            md.contains("S (a system):\n\n| phase | bolt | random |\n|---|---|---|\n| 1. a (0–100 s) | **0.900 ± 0.000** | 0.500 ± 0.000 |\n| 2. b (100–150 s) | 0.800 ± 0.000 | **0.850 ± 0.000** |\n"),
            "{md}"
        );
        assert!(md.contains("](achieved-trace-s.svg)"), "{md}");
        assert!(!report(200.0, Vec::new()).markdown().contains("by phase"));
    }
}
