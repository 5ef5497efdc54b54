//! `report.md`: the settings, the Table-3-style pivot of the average regret, the normalised
//! regret, the comparison with 002's published Table 3, and the details.

use std::fmt::Write as _;

use serde_json::Value;

use super::aggregate::{Normalised, Report, Summary, normalise};
use super::format::{duration, significant};
use crate::reference;
use crate::stats::MeanSe;
use tvbo_core::domain::config::FitStart;
use tvbo_core::domain::hyperpriors::Hyperpriors;

impl Report {
    /// The Markdown report: settings, the Table-3-style pivot (mean ± standard error of
    /// the average regret, best in bold), the normalised regret, and the details.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        self.settings(&mut md);
        self.regret_table(&mut md);
        self.achieved_table(&mut md);
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
                "Hyperparameter fits are maximum a posteriori under the service's weak priors (`--hyperpriors {}`), not the papers' exact maximum likelihood.\n",
                serde_json::to_value(self.hyperpriors)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            );
        }
    }

    /// The Table-3-style pivot: mean ± standard error of the average regret, best of each
    /// row in bold, and the normalised regret (002 Fig. 3).
    fn regret_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "Average regret (mean ± standard error over replications; lower is better, best in bold):\n"
        );
        self.algorithm_columns(md);
        for (name, label) in &self.objectives {
            let best = self
                .algorithms
                .iter()
                .filter_map(|a| self.summary(name, a))
                .map(|s| s.average_regret.mean)
                .fold(f64::INFINITY, f64::min);
            let _ = write!(md, "| {label} |");
            for a in &self.algorithms {
                match self.summary(name, a) {
                    Some(s) => {
                        let cell = format!(
                            "{} ± {}",
                            significant(s.average_regret.mean),
                            significant(s.average_regret.se)
                        );
                        if s.average_regret.mean == best {
                            let _ = write!(md, " **{cell}** |");
                        } else {
                            let _ = write!(md, " {cell} |");
                        }
                    }
                    None => {
                        let _ = write!(md, " – |");
                    }
                }
            }
            let _ = writeln!(md);
        }
        let _ = write!(md, "| normalised (002 Fig. 3) |");
        for a in &self.algorithms {
            match self.normalised.iter().find(|n| &n.algorithm == a) {
                Some(n) => {
                    let _ = write!(
                        md,
                        " {:.2} ± {:.2} |",
                        n.normalised_regret.mean, n.normalised_regret.se
                    );
                }
                None => {
                    let _ = write!(md, " – |");
                }
            }
        }
        let _ = writeln!(md, "\n");
    }

    /// For the objectives in real units (trace replays): the mean fraction of the
    /// per-moment optimum reached, mean ± standard error over replications, best in bold.
    /// Nothing when no objective has it.
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
        self.algorithm_columns(md);
        for (name, label) in rows {
            let achieved = |a: &String| self.summary(name, a).and_then(|s| s.achieved);
            let best = self
                .algorithms
                .iter()
                .filter_map(achieved)
                .map(|m| m.mean)
                .fold(f64::NEG_INFINITY, f64::max);
            let _ = write!(md, "| {label} |");
            for a in &self.algorithms {
                let _ = match achieved(a) {
                    Some(m) if m.mean == best => write!(md, " **{:.3} ± {:.3}** |", m.mean, m.se),
                    Some(m) => write!(md, " {:.3} ± {:.3} |", m.mean, m.se),
                    None => write!(md, " – |"),
                };
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
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

    /// The objectives (name, label) for which `has` holds with at least one algorithm.
    fn objectives_where(&self, has: impl Fn(&str, &str) -> bool) -> Vec<&(String, String)> {
        self.objectives
            .iter()
            .filter(|(name, _)| self.algorithms.iter().any(|a| has(name, a)))
            .collect()
    }

    /// The header of a table with one column per algorithm.
    fn algorithm_columns(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "| objective | {} |\n|---|{}",
            self.algorithms.join(" | "),
            "---|".repeat(self.algorithms.len())
        );
    }

    /// The objectives of the report with published results (002's Table 3), each cell
    /// "ours (runs) / published", best of each side in bold; then, for every row where
    /// all algorithms have run, the two orders and how many pairs of algorithms they
    /// order alike. Empty if no objective of the report was published, or the runs are
    /// not of the published horizon.
    fn published_comparison(&self) -> String {
        if self.horizon != reference::TABLE_3_HORIZON {
            return String::new();
        }
        let rows = self.objectives_where(|name, a| reference::table_3(name, a).is_some());
        if rows.is_empty() {
            return String::new();
        }
        let mut md = String::new();
        let _ = writeln!(
            md,
            "Beside 002's Table 3: each cell is ours, mean ± standard error over the replications recorded (how many in parentheses) / 002's, over 10 replications; bold: the best of the row on each side (ours only where every algorithm has run){}:\n",
            if self.algorithm_options.is_empty() {
                ""
            } else {
                "; ours with the algorithm options above, 002's with its own settings"
            }
        );
        self.algorithm_columns(&mut md);
        let mut orders = String::new();
        // The summaries of the complete rows, ours and the published ones.
        let mut complete_ours: Vec<Summary> = Vec::new();
        let mut complete_published: Vec<Summary> = Vec::new();
        for (name, label) in rows {
            let ours: Vec<Option<&Summary>> = self
                .algorithms
                .iter()
                .map(|a| self.summary(name, a))
                .collect();
            let published: Vec<Option<MeanSe>> = self
                .algorithms
                .iter()
                .map(|a| reference::table_3(name, a))
                .collect();
            let complete = ours.iter().all(Option::is_some);
            let best = |values: &mut dyn Iterator<Item = f64>| values.fold(f64::INFINITY, f64::min);
            let our_best = best(&mut ours.iter().flatten().map(|s| s.average_regret.mean));
            let published_best = best(&mut published.iter().flatten().map(|p| p.mean));
            let _ = write!(md, "| {label} |");
            for (summary, paper) in ours.iter().zip(&published) {
                let our_cell = match summary {
                    Some(s) => {
                        let cell = format!(
                            "{} ± {}",
                            significant(s.average_regret.mean),
                            significant(s.average_regret.se)
                        );
                        let cell = if complete && s.average_regret.mean == our_best {
                            format!("**{cell}**")
                        } else {
                            cell
                        };
                        format!("{cell} ({})", s.replications)
                    }
                    None => "–".to_string(),
                };
                let paper_cell = match paper {
                    Some(p) if p.mean == published_best => format!("**{} ± {}**", p.mean, p.se),
                    Some(p) => format!("{} ± {}", p.mean, p.se),
                    None => "–".to_string(),
                };
                let _ = write!(md, " {our_cell} / {paper_cell} |");
            }
            let _ = writeln!(md);
            if complete {
                for (summary, paper) in ours.iter().flatten().zip(&published) {
                    complete_ours.push((*summary).clone());
                    if let Some(paper) = paper {
                        complete_published.push(Summary {
                            average_regret: *paper,
                            ..(*summary).clone()
                        });
                    }
                }
                let _ = writeln!(orders, "{}", self.order_line(label, &ours, &published));
            }
        }
        if !complete_ours.is_empty() {
            self.normalised_beside_published(&mut md, &complete_ours, &complete_published);
        }
        if !orders.is_empty() {
            let _ = writeln!(
                md,
                "\nOrder of the mean average regrets, best first, where every algorithm has run:\n\n{orders}"
            );
        } else {
            let _ = writeln!(md);
        }
        md
    }

    /// A row's algorithms in the order of their mean average regrets, best first, ours
    /// and 002's, and how many pairs the two orders order alike.
    fn order_line(
        &self,
        label: &str,
        ours: &[Option<&Summary>],
        published: &[Option<MeanSe>],
    ) -> String {
        let rank = |value: &dyn Fn(usize) -> Option<f64>| -> Vec<&str> {
            let mut ranked: Vec<(f64, &str)> = (0..self.algorithms.len())
                .filter_map(|k| value(k).map(|v| (v, self.algorithms[k].as_str())))
                .collect();
            ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
            ranked.into_iter().map(|(_, a)| a).collect()
        };
        let our_order = rank(&|k| ours[k].map(|s| s.average_regret.mean));
        let published_order = rank(&|k| published[k].map(|p| p.mean));
        let (alike, pairs) = reference::concordant_pairs(&our_order, &published_order);
        format!(
            "- {label}: ours {}; 002 {} ({alike} of {pairs} pairs in the same order)",
            our_order.join(" < "),
            published_order.join(" < ")
        )
    }

    /// 002's normalised regret over the rows where every algorithm has run, ours / 002's
    /// (Table 3's "Overall" row also holds ABO and the real-data rows).
    fn normalised_beside_published(
        &self,
        md: &mut String,
        ours: &[Summary],
        published: &[Summary],
    ) {
        let ours = normalise(ours, &self.algorithms);
        let published = normalise(published, &self.algorithms);
        let _ = write!(md, "| normalised, rows where all have run |");
        for a in &self.algorithms {
            let cell = |values: &[Normalised]| {
                values.iter().find(|n| &n.algorithm == a).map_or_else(
                    || "–".to_string(),
                    |n| {
                        format!(
                            "{:.2} ± {:.2}",
                            n.normalised_regret.mean, n.normalised_regret.se
                        )
                    },
                )
            };
            let _ = write!(md, " {} / {} |", cell(&ours), cell(&published));
        }
        let _ = writeln!(md);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::aggregate::tests::summary;

    fn report(horizon: f64, summaries: Vec<Summary>) -> Report {
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
            summaries,
            normalised: Vec::new(),
            runs: Vec::new(),
            series: Vec::new(),
        }
    }

    #[test]
    fn the_paper_comparison_puts_ours_beside_table_3() {
        let summaries = vec![
            summary("hartmann3", "gp-ucb", 0.5),
            summary("hartmann3", "w-dbo", 0.25),
            summary("hartmann3", "bolt", 0.75),
            summary("shekel", "bolt", 2.0),
        ];
        let md = report(600.0, summaries.clone()).markdown();
        assert!(md.contains("Beside 002's Table 3"), "{md}");
        // Complete row: the best of each side in bold, runs in parentheses.
        assert!(
            md.contains("| Hartmann (3) | 0.500 ± 0 (1) / 1.45 ± 0.15 | **0.250 ± 0** (1) / 0.47 ± 0.08 | 0.750 ± 0 (1) / **0.3 ± 0.02** |"),
            "{md}"
        );
        // Incomplete row: ours is never bold, missing cells are dashes.
        assert!(
            md.contains("| Shekel (4) | – / 2.51 ± 0.06 | – / 2.06 ± 0.09 | 2.00 ± 0 (1) / **1.83 ± 0.09** |"),
            "{md}"
        );
        // The order only of the complete row; 002 orders bolt < w-dbo < gp-ucb, we
        // w-dbo < gp-ucb < bolt: of three pairs only (w-dbo, gp-ucb) agrees.
        assert!(
            md.contains("- Hartmann (3): ours w-dbo < gp-ucb < bolt; 002 bolt < w-dbo < gp-ucb (1 of 3 pairs in the same order)"),
            "{md}"
        );
        assert!(!md.contains("- Shekel (4)"), "{md}");
        // Normalised over the complete row only: ours w-dbo 0, gp-ucb 0.5, bolt 1; 002's
        // (0.47 − 0.3)/(1.45 − 0.3) for w-dbo.
        assert!(
            md.contains("| normalised, rows where all have run | 0.50 ± 0.00 / 1.00 ± 0.00 | 0.00 ± 0.00 / 0.15 ± 0.00 | 1.00 ± 0.00 / 0.00 ± 0.00 |"),
            "{md}"
        );
        assert!(!md.contains("Algorithm options"), "{md}");
        assert!(!md.contains("--hyperpriors"), "{md}");
        let mut robust = report(600.0, summaries.clone());
        robust.hyperpriors = Hyperpriors::Robust;
        assert!(
            robust
                .markdown()
                .contains("under the service's weak priors (`--hyperpriors robust`)"),
            "{md}"
        );
        // Runs with options say so in the settings and beside 002's numbers.
        let mut with_options = report(600.0, summaries.clone());
        let options = serde_json::json!({"alpha": 0.5});
        with_options
            .algorithm_options
            .insert("w-dbo".into(), options.as_object().unwrap().clone());
        let md = with_options.markdown();
        assert!(
            md.contains("ran with their defaults): `w-dbo` `{\"alpha\":0.5}`."),
            "{md}"
        );
        assert!(md.contains("ours with the algorithm options above"), "{md}");
        // Another horizon is another protocol: no comparison.
        assert!(!report(60.0, summaries).markdown().contains("Table 3"));
    }
}
