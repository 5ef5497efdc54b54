//! A short replay of a committed trace through the bench's entry point
//! ([`tvbo_bench::run`]), and what its report says of it: the fraction of the optimum by
//! phase of the scenario (`report.md`, `summary.csv`), the plot over the day, and the
//! setting of every iteration (`runs.jsonl`).
//!
//! The scenario is the committed compression one, its day shortened to minutes (a phase
//! of 60 s, ramps of 15 s, an evaluation every 5 s) so that a run of 200 s crosses four
//! phases; `random` and `bolt`, 2 replications, a fixed compute per iteration: a few
//! seconds in a debug build, and the same runs every time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tvbo_bench::BenchOptions;
use tvbo_core::domain::hyperpriors::Hyperpriors;

const HORIZON: f64 = 200.0;
const ALGORITHMS: [&str; 2] = ["random", "bolt"];
const REPLICATIONS: usize = 2;
/// The phases a run of `HORIZON` seconds reaches, as `report.md` names them.
const PHASES: [&str; 4] = [
    "1. logs (0–1 min)",
    "2. json (1–2 min)",
    "3. json (2–3 min)",
    "4. binaries (3–4 min)",
];

/// The committed compression scenario with a day of 6 minutes, written into `dir`.
fn short_scenario(dir: &Path) -> PathBuf {
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks/traces");
    let text = std::fs::read_to_string(traces.join("compression.scenario.json")).unwrap();
    let mut scenario: Value = serde_json::from_str(&text).unwrap();
    scenario["name"] = json!("compression-short");
    let trace = traces.join("compression.jsonl").canonicalize().unwrap();
    scenario["trace"] = json!(trace.to_str().unwrap());
    for phase in scenario["phases"].as_array_mut().unwrap() {
        phase["seconds"] = json!(60);
    }
    scenario["ramp_seconds"] = json!(15);
    scenario["evaluation_seconds"] = json!(5);
    let path = dir.join("compression-short.scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

/// Checks that a cell "0.912 ± 0.004" (or in bold) holds a fraction.
fn fraction_cell(cell: &str) {
    let (mean, _) = cell.trim().trim_matches('*').split_once(" ± ").unwrap();
    let mean: f64 = mean.parse().unwrap();
    assert!(mean > 0.0 && mean <= 1.0, "{cell}");
}

#[test]
fn a_replayed_trace_is_reported_by_phase() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = short_scenario(dir.path());
    let output = dir.path().join("out");
    let options = BenchOptions {
        suite: "real".into(),
        objectives: Some(vec![format!("trace:{}", scenario.display())]),
        algorithms: Some(ALGORITHMS.iter().map(|a| a.to_string()).collect()),
        replications: Some(REPLICATIONS),
        horizon: Some(HORIZON),
        fixed_compute: Some(0.05),
        hyperpriors: Hyperpriors::default(),
        jobs: 2,
        progress: false,
        output: output.clone(),
        ..BenchOptions::default()
    };
    let report = tvbo_bench::run(&options).unwrap();
    assert_eq!(report.runs.len(), ALGORITHMS.len() * REPLICATIONS);

    // report.md: a table by phase, a row per phase reached, a fraction per algorithm,
    // and the link to the plot.
    let md = std::fs::read_to_string(output.join("report.md")).unwrap();
    assert!(md.contains("by phase of each trace's scenario"), "{md}");
    assert!(md.contains("| phase | random | bolt |"), "{md}");
    for phase in PHASES {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {phase} |")))
            .unwrap_or_else(|| panic!("no row {phase}: {md}"));
        let cells: Vec<&str> = row.trim_matches('|').split('|').skip(1).collect();
        assert_eq!(cells.len(), ALGORITHMS.len(), "{row}");
        for cell in cells {
            fraction_cell(cell);
        }
    }
    assert!(!md.contains("| 5. compressed"), "{md}");
    assert!(
        md.contains("`--hyperpriors robust`, the service's default"),
        "{md}"
    );
    let plot = "achieved-trace-compression-short.svg";
    assert!(md.contains(&format!("]({plot})")), "{md}");

    // summary.csv: a row per (algorithm, phase) beside the whole run's.
    let csv = std::fs::read_to_string(output.join("summary.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (phase, condition, achieved) = (
        column("phase"),
        column("condition"),
        column("achieved_mean"),
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for algorithm in ALGORITHMS {
        let mine: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] == algorithm).collect();
        let phases: Vec<(&str, &str)> = mine
            .iter()
            .filter(|r| !r[phase].is_empty())
            .map(|r| (r[phase], r[condition]))
            .collect();
        assert_eq!(
            phases,
            [
                ("1", "logs"),
                ("2", "json"),
                ("3", "json"),
                ("4", "binaries")
            ],
            "{csv}"
        );
        assert_eq!(mine.iter().filter(|r| r[phase].is_empty()).count(), 1);
        for row in mine {
            let value: f64 = row[achieved].parse().unwrap();
            assert!(value > 0.0 && value <= 1.0, "{csv}");
        }
    }

    // The plot: a line per algorithm over the phases, shaded and named.
    let svg = std::fs::read_to_string(output.join(plot)).unwrap();
    assert_eq!(svg.matches("<polyline").count(), ALGORITHMS.len(), "{svg}");
    for name in ["1. logs", "2. json", "3. json", "random", "bolt"] {
        assert!(svg.contains(&format!(">{name}</text>")), "{name}: {svg}");
    }

    // runs.jsonl: every iteration names its setting in the trace's parameters.
    let log = std::fs::read_to_string(output.join("runs.jsonl")).unwrap();
    let mut codecs = BTreeSet::new();
    for line in log.lines() {
        let run: Value = serde_json::from_str(line).unwrap();
        let iterations = run["iterations"].as_array().unwrap();
        assert!(iterations.len() >= 30, "{} iterations", iterations.len());
        for iteration in iterations {
            let setting = iteration["setting"].as_object().unwrap();
            let names: Vec<&str> = setting.keys().map(String::as_str).collect();
            assert_eq!(names, ["block_kib", "codec", "level"], "{iteration}");
            codecs.insert(setting["codec"].as_str().unwrap().to_string());
            let level = setting["level"].as_i64().unwrap();
            assert!((1..=9).contains(&level), "{iteration}");
            let block = setting["block_kib"].as_i64().unwrap();
            assert!((16..=256).contains(&block), "{iteration}");
        }
    }
    assert!(
        codecs
            .iter()
            .all(|c| ["zlib", "bz2", "lzma"].contains(&c.as_str()))
    );
    assert!(codecs.len() >= 2, "{codecs:?}");
}
