//! Aggregation of benchmark runs and the report files: `report.md`, `summary.csv`,
//! `runs.csv`, `report.json` and one `<objective>.svg` per objective.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::algorithms::AlgorithmOptions;
use super::options::{BenchOptions, ServerTime};
use super::plan::Plan;
use super::reference;
use super::run_log::RunResult;

/// Points of the time series (bins over the horizon).
const SERIES_POINTS: usize = 60;

/// One run, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    pub objective: String,
    pub algorithm: String,
    pub replication: usize,
    pub seed: u64,
    pub iterations: usize,
    /// Mean regret over the run's queries (warm-up included): R_T / T.
    pub average_regret: f64,
    /// Mean regret over the queries after the warm-up (0 if there were none).
    pub average_regret_after_warmup: f64,
    pub final_dataset_size: usize,
    /// Mean over the iterations of the dataset size after each observation.
    pub mean_dataset_size: f64,
    /// Mean seconds of compute (suggest + observe) per iteration.
    pub compute_per_iteration: f64,
    pub wall_seconds: f64,
}

impl RunSummary {
    fn new(run: &RunResult) -> RunSummary {
        let n = run.iterations.len().max(1) as f64;
        RunSummary {
            objective: run.objective.clone(),
            algorithm: run.algorithm.clone(),
            replication: run.replication,
            seed: run.seed,
            iterations: run.iterations.len(),
            average_regret: run.iterations.iter().map(|i| i.regret).sum::<f64>() / n,
            average_regret_after_warmup: {
                let after = run.iterations.get(run.warmup..).unwrap_or(&[]);
                after.iter().map(|i| i.regret).sum::<f64>() / after.len().max(1) as f64
            },
            final_dataset_size: run.iterations.last().map_or(0, |i| i.dataset_size),
            mean_dataset_size: run
                .iterations
                .iter()
                .map(|i| i.dataset_size as f64)
                .sum::<f64>()
                / n,
            compute_per_iteration: run.iterations.iter().map(|i| i.compute).sum::<f64>() / n,
            wall_seconds: run.wall_seconds,
        }
    }
}

/// Mean and standard error of a sample (the standard error is 0 for one value).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MeanSe {
    pub mean: f64,
    pub se: f64,
}

impl MeanSe {
    pub fn of(values: &[f64]) -> MeanSe {
        let n = values.len() as f64;
        if values.is_empty() {
            return MeanSe {
                mean: f64::NAN,
                se: f64::NAN,
            };
        }
        let mean = values.iter().sum::<f64>() / n;
        let se = if values.len() > 1 {
            let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (variance / n).sqrt()
        } else {
            0.0
        };
        MeanSe { mean, se }
    }
}

/// One (objective, algorithm) over its replications.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub objective: String,
    pub label: String,
    pub algorithm: String,
    pub replications: usize,
    /// Mean ± standard error over replications of each run's average regret.
    pub average_regret: MeanSe,
    /// The same over the queries after the warm-up.
    pub average_regret_after_warmup: MeanSe,
    pub iterations: f64,
    pub final_dataset_size: f64,
    pub mean_dataset_size: f64,
    pub compute_per_iteration: f64,
    /// The published average regret of this pair (002's Table 3), where there is one
    /// and the runs follow its protocol (its horizon).
    pub published: Option<MeanSe>,
}

/// 002's normalised regret of one algorithm (Figure 3, last row of Table 3): per
/// objective, (r − r_best)/(r_worst − r_best) over the algorithms of the report,
/// averaged over objectives (± standard error over objectives).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Normalised {
    pub algorithm: String,
    pub normalised_regret: MeanSe,
    pub objectives: usize,
}

/// Mean over replications of a run's state at regular times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub objective: String,
    pub algorithm: String,
    pub times: Vec<f64>,
    /// Running average regret R_t / t at each time (None before the first query).
    pub average_regret: Vec<Option<f64>>,
    /// Active dataset size at each time.
    pub dataset_size: Vec<Option<f64>>,
}

/// Everything a benchmark produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub suite: String,
    pub mode: String,
    pub horizon: f64,
    pub replications: usize,
    /// Runs of the plan; `runs` holds fewer in an interim report (`--report-only`).
    pub planned_runs: usize,
    pub seed: u64,
    pub jobs: usize,
    pub fixed_compute: Option<f64>,
    pub started: String,
    /// Seconds the bench ran; `None` for a report of recorded runs (`--report-only`).
    pub total_seconds: Option<f64>,
    pub objectives: Vec<(String, String)>,
    pub algorithms: Vec<String>,
    /// `--algorithm-options` per algorithm; the others ran with their defaults.
    pub algorithm_options: BTreeMap<String, AlgorithmOptions>,
    pub summaries: Vec<Summary>,
    pub normalised: Vec<Normalised>,
    pub runs: Vec<RunSummary>,
    pub series: Vec<Series>,
}

fn series(runs: &[&RunResult], horizon: f64) -> (Vec<f64>, Vec<Option<f64>>, Vec<Option<f64>>) {
    let times: Vec<f64> = (1..=SERIES_POINTS)
        .map(|b| horizon * b as f64 / SERIES_POINTS as f64)
        .collect();
    let mut regret = vec![(0.0, 0usize); SERIES_POINTS];
    let mut size = vec![(0.0, 0usize); SERIES_POINTS];
    for run in runs {
        let mut sum = 0.0;
        let mut k = 0;
        for (b, &end) in times.iter().enumerate() {
            while k < run.iterations.len() && run.iterations[k].t <= end {
                sum += run.iterations[k].regret;
                k += 1;
            }
            if k > 0 {
                regret[b].0 += sum / k as f64;
                regret[b].1 += 1;
                size[b].0 += run.iterations[k - 1].dataset_size as f64;
                size[b].1 += 1;
            }
        }
    }
    let mean = |v: &[(f64, usize)]| -> Vec<Option<f64>> {
        v.iter()
            .map(|(s, n)| (*n > 0).then(|| s / *n as f64))
            .collect()
    };
    (times, mean(&regret), mean(&size))
}

impl Report {
    pub fn new(
        plan: &Plan,
        options: &BenchOptions,
        results: &[RunResult],
        total: Option<f64>,
    ) -> Report {
        let runs: Vec<RunSummary> = results.iter().map(RunSummary::new).collect();
        // A column for each algorithm the plan runs at all (the prior-selection ones only
        // run where an objective comes with priors).
        let algorithms: Vec<String> = plan
            .suite
            .algorithms
            .iter()
            .filter(|a| plan.runs.iter().any(|r| r.algorithm.name == a.name))
            .map(|a| a.name.to_string())
            .collect();
        let mut summaries = Vec::new();
        let mut all_series = Vec::new();
        for spec in &plan.suite.objectives {
            for algorithm in &algorithms {
                let mine: Vec<&RunSummary> = runs
                    .iter()
                    .filter(|r| r.objective == spec.name && &r.algorithm == algorithm)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let mean = |f: &dyn Fn(&RunSummary) -> f64| {
                    mine.iter().map(|r| f(r)).sum::<f64>() / mine.len() as f64
                };
                let regrets: Vec<f64> = mine.iter().map(|r| r.average_regret).collect();
                summaries.push(Summary {
                    objective: spec.name.clone(),
                    label: spec.label.clone(),
                    algorithm: algorithm.clone(),
                    replications: mine.len(),
                    average_regret: MeanSe::of(&regrets),
                    average_regret_after_warmup: MeanSe::of(
                        &mine
                            .iter()
                            .map(|r| r.average_regret_after_warmup)
                            .collect::<Vec<_>>(),
                    ),
                    iterations: mean(&|r| r.iterations as f64),
                    final_dataset_size: mean(&|r| r.final_dataset_size as f64),
                    mean_dataset_size: mean(&|r| r.mean_dataset_size),
                    compute_per_iteration: mean(&|r| r.compute_per_iteration),
                    published: (plan.suite.horizon == reference::TABLE_3_HORIZON)
                        .then(|| reference::table_3(&spec.name, algorithm))
                        .flatten(),
                });
                let raw: Vec<&RunResult> = results
                    .iter()
                    .filter(|r| r.objective == spec.name && &r.algorithm == algorithm)
                    .collect();
                let (times, average_regret, dataset_size) = series(&raw, plan.suite.horizon);
                all_series.push(Series {
                    objective: spec.name.clone(),
                    algorithm: algorithm.clone(),
                    times,
                    average_regret,
                    dataset_size,
                });
            }
        }
        let normalised = normalise(&summaries, &algorithms);
        let mode = match (&options.server, options.server_time) {
            (None, _) => "in-process".to_string(),
            (Some(url), ServerTime::Client) => format!("server {url} (client time)"),
            (Some(url), ServerTime::Wall) => format!("server {url} (wall-clock time)"),
        };
        Report {
            suite: plan.suite.name.clone(),
            mode,
            horizon: plan.suite.horizon,
            replications: plan.suite.replications,
            planned_runs: plan.runs.len(),
            seed: options.seed,
            jobs: options.jobs,
            fixed_compute: options.fixed_compute,
            started: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            total_seconds: total,
            objectives: plan
                .suite
                .objectives
                .iter()
                .map(|o| (o.name.clone(), o.label.clone()))
                .collect(),
            algorithms,
            algorithm_options: plan
                .algorithm_options
                .iter()
                .map(|(name, options)| (name.to_string(), options.clone()))
                .collect(),
            summaries,
            normalised,
            runs,
            series: all_series,
        }
    }

    /// The summary of (objective, algorithm), if it ran.
    pub fn summary(&self, objective: &str, algorithm: &str) -> Option<&Summary> {
        self.summaries
            .iter()
            .find(|s| s.objective == objective && s.algorithm == algorithm)
    }

    /// The Markdown report: settings, the Table-3-style pivot (mean ± standard error of
    /// the average regret, best in bold), the normalised regret, and the details.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
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
        let _ = writeln!(
            md,
            "Average regret (mean ± standard error over replications; lower is better, best in bold):\n"
        );
        self.algorithm_columns(&mut md);
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
        md.push_str(&self.published_comparison());
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
        md
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
        let rows: Vec<&(String, String)> = self
            .objectives
            .iter()
            .filter(|(name, _)| {
                self.algorithms
                    .iter()
                    .any(|a| reference::table_3(name, a).is_some())
            })
            .collect();
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
                let _ = writeln!(
                    orders,
                    "- {label}: ours {}; 002 {} ({alike} of {pairs} pairs in the same order)",
                    our_order.join(" < "),
                    published_order.join(" < ")
                );
            }
        }
        if !complete_ours.is_empty() {
            // 002's normalised regret over the same rows and algorithms on both sides
            // (Table 3's "Overall" row also holds ABO and the real-data rows).
            let ours = normalise(&complete_ours, &self.algorithms);
            let published = normalise(&complete_published, &self.algorithms);
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

    fn summary_csv(&self) -> String {
        let mut csv = String::from(
            "objective,algorithm,replications,average_regret_mean,average_regret_se,after_warmup_mean,after_warmup_se,iterations,final_dataset_size,mean_dataset_size,compute_per_iteration_s,published_mean,published_se\n",
        );
        for s in &self.summaries {
            let (published_mean, published_se) =
                s.published.map_or((String::new(), String::new()), |p| {
                    (p.mean.to_string(), p.se.to_string())
                });
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{published_mean},{published_se}",
                s.objective,
                s.algorithm,
                s.replications,
                s.average_regret.mean,
                s.average_regret.se,
                s.average_regret_after_warmup.mean,
                s.average_regret_after_warmup.se,
                s.iterations,
                s.final_dataset_size,
                s.mean_dataset_size,
                s.compute_per_iteration
            );
        }
        csv
    }

    fn runs_csv(&self) -> String {
        let mut csv = String::from(
            "objective,algorithm,replication,seed,iterations,average_regret,after_warmup,final_dataset_size,mean_dataset_size,compute_per_iteration_s,wall_s\n",
        );
        for r in &self.runs {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{}",
                r.objective,
                r.algorithm,
                r.replication,
                r.seed,
                r.iterations,
                r.average_regret,
                r.average_regret_after_warmup,
                r.final_dataset_size,
                r.mean_dataset_size,
                r.compute_per_iteration,
                r.wall_seconds
            );
        }
        csv
    }

    /// Writes every report file into `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("report.md"), self.markdown())?;
        std::fs::write(dir.join("summary.csv"), self.summary_csv())?;
        std::fs::write(dir.join("runs.csv"), self.runs_csv())?;
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("report.json"), json)?;
        for (name, label) in &self.objectives {
            let series: Vec<&Series> = self
                .series
                .iter()
                .filter(|s| &s.objective == name)
                .collect();
            if series.is_empty() {
                continue;
            }
            let svg = super::svg::objective_plot(label, self.horizon, &series, &self.algorithms);
            std::fs::write(dir.join(format!("{name}.svg")), svg)?;
        }
        Ok(())
    }
}

fn normalise(summaries: &[Summary], algorithms: &[String]) -> Vec<Normalised> {
    let mut per_algorithm: Vec<Vec<f64>> = vec![Vec::new(); algorithms.len()];
    let mut objectives: Vec<&str> = summaries.iter().map(|s| s.objective.as_str()).collect();
    objectives.dedup();
    for objective in objectives {
        let mine: Vec<&Summary> = summaries
            .iter()
            .filter(|s| s.objective == objective)
            .collect();
        let best = mine
            .iter()
            .map(|s| s.average_regret.mean)
            .fold(f64::INFINITY, f64::min);
        let worst = mine
            .iter()
            .map(|s| s.average_regret.mean)
            .fold(f64::NEG_INFINITY, f64::max);
        for s in mine {
            let value = if worst > best {
                (s.average_regret.mean - best) / (worst - best)
            } else {
                0.0
            };
            if let Some(k) = algorithms.iter().position(|a| a == &s.algorithm) {
                per_algorithm[k].push(value);
            }
        }
    }
    algorithms
        .iter()
        .zip(per_algorithm)
        .filter(|(_, values)| !values.is_empty())
        .map(|(a, values)| Normalised {
            algorithm: a.clone(),
            normalised_regret: MeanSe::of(&values),
            objectives: values.len(),
        })
        .collect()
}

/// Three significant digits, without exponent for ordinary magnitudes.
pub fn significant(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&magnitude) {
        return format!("{x:.2e}");
    }
    let decimals = (2 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

fn duration(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.1} ms", seconds * 1000.0)
    } else {
        format!("{seconds:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(objective: &str, algorithm: &str, regret: f64) -> Summary {
        Summary {
            objective: objective.into(),
            label: objective.into(),
            algorithm: algorithm.into(),
            replications: 1,
            average_regret: MeanSe {
                mean: regret,
                se: 0.0,
            },
            average_regret_after_warmup: MeanSe {
                mean: regret,
                se: 0.0,
            },
            iterations: 1.0,
            final_dataset_size: 1.0,
            mean_dataset_size: 1.0,
            compute_per_iteration: 0.0,
            published: None,
        }
    }

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

    #[test]
    fn normalised_regret_is_zero_for_the_best_and_one_for_the_worst() {
        let algorithms: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let summaries = vec![
            summary("f", "a", 1.0),
            summary("f", "b", 3.0),
            summary("f", "c", 2.0),
            summary("g", "a", 10.0),
            summary("g", "b", 0.0),
            summary("g", "c", 5.0),
        ];
        let n = normalise(&summaries, &algorithms);
        let get = |a: &str| {
            n.iter()
                .find(|x| x.algorithm == a)
                .unwrap()
                .normalised_regret
        };
        assert_eq!(get("a").mean, 0.5);
        assert_eq!(get("b").mean, 0.5);
        assert_eq!(get("c").mean, 0.5);
        assert_eq!(get("a").se, 0.5);
    }

    #[test]
    fn algorithms_that_need_priors_have_columns_only_where_an_objective_has_priors() {
        let columns = |suite: &str| {
            let options = crate::bench::BenchOptions {
                suite: suite.into(),
                ..Default::default()
            };
            let plan = crate::bench::Plan::new(&options).unwrap();
            Report::new(&plan, &options, &[], None).algorithms
        };
        let gp = columns("gp");
        assert_eq!(gp.len(), 7, "{gp:?}");
        assert!(!gp.iter().any(|a| a == "hp-gp-ts"), "{gp:?}");
        let quick = columns("quick");
        assert_eq!(quick.len(), 11, "{quick:?}");
    }

    #[test]
    fn mean_and_standard_error() {
        let m = MeanSe::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m.mean, 2.5);
        assert!((m.se - (5.0f64 / 3.0 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(MeanSe::of(&[7.0]).se, 0.0);
    }

    #[test]
    fn significant_digits() {
        assert_eq!(significant(1234.567), "1235");
        assert_eq!(significant(1.834), "1.83");
        assert_eq!(significant(0.30456), "0.305");
        assert_eq!(significant(0.0), "0");
    }
}
