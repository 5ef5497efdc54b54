//! The report files: `summary.csv` and `runs.csv` made here, and every file written into
//! the output directory (with `report.md`, `report.json`, the SVG plots of every
//! objective and the plots over the day of each replayed trace).

use std::fmt::Write as _;
use std::path::Path;

use super::aggregate::{Report, Series};
use super::phases::{AchievedSeries, achieved_plot_file};
use crate::stats::MeanSe;

impl Report {
    /// One row per (objective, algorithm), its columns `phase` and `condition` empty,
    /// followed, for a replayed trace, by a row per phase of its scenario in which it
    /// made queries: `phase` its number (from 1, as in `report.md`), `condition` its
    /// condition, `replications` the runs with queries in it, `iterations` their mean
    /// count there, the regret and the fraction achieved over those queries; the columns
    /// that describe a whole run (after warm-up, dataset sizes, compute, published)
    /// empty.
    fn summary_csv(&self) -> String {
        let mut csv = String::from(
            "objective,algorithm,replications,average_regret_mean,average_regret_se,after_warmup_mean,after_warmup_se,iterations,final_dataset_size,mean_dataset_size,compute_per_iteration_s,published_mean,published_se,achieved_mean,achieved_se,phase,condition\n",
        );
        let pair = |m: Option<MeanSe>| {
            m.map_or((String::new(), String::new()), |m| {
                (m.mean.to_string(), m.se.to_string())
            })
        };
        for s in &self.summaries {
            let (published_mean, published_se) = pair(s.published);
            let (achieved_mean, achieved_se) = pair(s.achieved);
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{published_mean},{published_se},{achieved_mean},{achieved_se},,",
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
            for p in self
                .phase_summaries
                .iter()
                .filter(|p| p.objective == s.objective && p.algorithm == s.algorithm)
            {
                let (achieved_mean, achieved_se) = pair(p.achieved);
                let _ = writeln!(
                    csv,
                    "{},{},{},{},{},,,{},,,,,,{achieved_mean},{achieved_se},{},{}",
                    p.objective,
                    p.algorithm,
                    p.replications,
                    p.average_regret.mean,
                    p.average_regret.se,
                    p.iterations,
                    p.phase + 1,
                    p.condition
                );
            }
        }
        csv
    }

    fn runs_csv(&self) -> String {
        let mut csv = String::from(
            "objective,algorithm,replication,seed,iterations,average_regret,after_warmup,final_dataset_size,mean_dataset_size,compute_per_iteration_s,wall_s,achieved\n",
        );
        for r in &self.runs {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
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
                r.wall_seconds,
                r.achieved.map_or(String::new(), |a| a.to_string())
            );
        }
        csv
    }

    /// Writes every report file into `dir` (created if missing): `report.md`,
    /// `summary.csv`, `runs.csv`, `report.json`, `<objective>.svg` per objective that ran
    /// and `achieved-<objective>.svg` per replayed trace that ran.
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
        for scenario in &self.scenarios {
            let name = &scenario.objective;
            let series: Vec<&AchievedSeries> = self
                .achieved_series
                .iter()
                .filter(|s| &s.objective == name)
                .collect();
            if series.is_empty() {
                continue;
            }
            let label = self.label(name);
            let svg =
                super::svg::achieved_plot(label, self.horizon, &series, &self.algorithms, scenario);
            std::fs::write(dir.join(achieved_plot_file(name)), svg)?;
        }
        Ok(())
    }
}
