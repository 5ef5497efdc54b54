//! docs/deploy.md's settings table names every setting the server reads, with the flag
//! and the default the code declares (clap's `ServeArgs`), and no setting that is gone.
//!
//! The rule for the default cell: clap's default in backticks (`127.0.0.1:8080`, several
//! values joined by commas); `empty` when the default is the empty string; `unset` when
//! there is no default (the setting is off unless given).

use std::collections::BTreeMap;

use clap::CommandFactory;

/// A setting as the code declares it.
#[derive(Debug)]
struct Declared {
    flag: String,
    default: String,
}

/// Every argument of `tvbo` read from the environment: the server's settings.
fn declared() -> BTreeMap<String, Declared> {
    let command = tvbo::config::Cli::command();
    let mut settings = BTreeMap::new();
    for arg in command.get_arguments() {
        let Some(env) = arg.get_env() else { continue };
        let env = env.to_string_lossy().into_owned();
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let default = match defaults.as_slice() {
            [] => "unset".to_owned(),
            [one] if one.is_empty() => "empty".to_owned(),
            many => format!("`{}`", many.join(",")),
        };
        let flag = format!(
            "`--{}`",
            arg.get_long().expect("every setting has a long flag")
        );
        settings.insert(env, Declared { flag, default });
    }
    settings
}

/// The rows of the table under `## Settings` in docs/deploy.md: variable -> cells.
fn documented() -> BTreeMap<String, Vec<String>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deploy.md");
    let doc = std::fs::read_to_string(path).expect("docs/deploy.md");
    let section = doc
        .split("\n## Settings\n")
        .nth(1)
        .expect("docs/deploy.md has a `## Settings` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_owned())
            .collect();
        let env = cells[0].trim_matches('`').to_owned();
        assert!(
            rows.insert(env.clone(), cells).is_none(),
            "docs/deploy.md lists {env} twice"
        );
    }
    rows
}

#[test]
fn the_settings_table_matches_the_code() {
    let declared = declared();
    assert!(
        declared.len() >= 17,
        "only {} settings found: clap's arguments changed shape?",
        declared.len()
    );
    let documented = documented();
    let mut wrong = Vec::new();
    for (env, setting) in &declared {
        match documented.get(env) {
            None => wrong.push(format!("{env}: no row")),
            Some(cells) => {
                if cells.len() < 4 {
                    wrong.push(format!(
                        "{env}: a row needs variable | flag | default | meaning"
                    ));
                    continue;
                }
                if cells[1] != setting.flag {
                    wrong.push(format!(
                        "{env}: flag {} in the doc, {} in the code",
                        cells[1], setting.flag
                    ));
                }
                if cells[2] != setting.default {
                    wrong.push(format!(
                        "{env}: default {} in the doc, {} in the code",
                        cells[2], setting.default
                    ));
                }
            }
        }
    }
    // RUST_LOG is read by the log filter, not by clap.
    for env in documented.keys() {
        if !declared.contains_key(env) && env != "RUST_LOG" {
            wrong.push(format!(
                "{env}: documented, but the code reads no such setting"
            ));
        }
    }
    if !documented.contains_key("RUST_LOG") {
        wrong.push("RUST_LOG: no row".to_owned());
    }
    assert!(
        wrong.is_empty(),
        "docs/deploy.md's settings table and src/config.rs disagree:\n{}",
        wrong.join("\n")
    );
}
