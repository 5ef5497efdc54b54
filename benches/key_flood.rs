//! The wrong-secret flood (docs/security.md, "Checking keys"): 32 callers send a real key
//! id with random secrets for 6 s to a `tvbo serve` process, while a legitimate client
//! reads `GET /v1/sessions` with a valid key. Reports the server's peak memory (VmHWM of
//! /proc/<pid>/status, Linux), the legitimate reads' latency, what the flood was answered,
//! and, before the flood, the median times of an unknown, a revoked and a mistyped key.
//! Exits non-zero unless peak memory < 256 MiB, the reads' median < 250 ms and the three
//! medians are within 2× of each other.
//!
//! ```sh
//! cargo build --release --bin tvbo
//! cargo bench --bench key_flood -- --bin target/release/tvbo
//! ```
//!
//! It drives any build of the binary (`--bin`), so the same command measures an older one.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Parser;
use tokio::sync::Mutex;

/// Flood a tvbo process with wrong secrets of a real key id; measure it.
#[derive(Debug, Parser)]
struct Args {
    /// Passed by `cargo bench` to every bench; ignored.
    #[arg(long, hide = true)]
    bench: bool,
    /// The tvbo binary to run.
    #[arg(long, default_value = "target/release/tvbo")]
    bin: std::path::PathBuf,
    /// Concurrent flooding callers.
    #[arg(long, default_value_t = 32)]
    callers: usize,
    /// Seconds of flood.
    #[arg(long, default_value_t = 6.0)]
    seconds: f64,
    /// Tries of each invalid key kind for the timing comparison (under the per-id
    /// allowance of 10, so that each is checked).
    #[arg(long, default_value_t = 9)]
    tries: usize,
}

/// Runs `tvbo keys ...` on the database; its standard output.
fn keys(bin: &std::path::Path, database: &str, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(bin)
        .arg("keys")
        .args(args)
        .env("DATABASE_URL", database)
        .env("RUST_LOG", "warn")
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    ensure!(output.status.success(), "tvbo keys {args:?}: {output:?}");
    Ok(String::from_utf8(output.stdout)?.trim().to_string())
}

/// A random secret of the right form.
fn random_secret() -> String {
    rand::random::<[u8; 32]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `key`'s id with a random secret.
fn mistyped(key: &str) -> String {
    format!("{}{}", &key[..key.len() - 64], random_secret())
}

/// The peak resident memory of process `pid`, in KiB.
fn peak_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .context("no VmHWM line")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("VmHWM value")?
        .parse()?)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `tvbo serve` (the binary `bin`) on `database` at a free port and waits until it
/// is ready; returns it (killed when dropped) and its base URL.
async fn start_server(
    bin: &std::path::Path,
    database: &str,
    client: &reqwest::Client,
) -> anyhow::Result<(Server, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let server = Server(
        Command::new(bin)
            .arg("serve")
            .env("TVBO_BIND", format!("127.0.0.1:{port}"))
            .env("DATABASE_URL", database)
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?,
    );
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        ensure!(Instant::now() < deadline, "the server did not become ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((server, base))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = tempfile::tempdir()?;
    let database = format!("sqlite://{}", dir.path().join("flood.db").display());
    let key = keys(&args.bin, &database, &["create", "--name", "flood"])?;
    let revoked = keys(&args.bin, &database, &["create", "--name", "gone"])?;
    keys(&args.bin, &database, &["revoke", &revoked])?;

    let client = reqwest::Client::new();
    let (server, base) = start_server(&args.bin, &database, &client).await?;
    let pid = server.0.id();
    let get = |key: String| {
        let request = client
            .get(format!("{base}/v1/sessions"))
            .bearer_auth(key)
            .send();
        async move { request.await.map(|r| r.status().as_u16()) }
    };

    // Invalid keys, one after the other: an unknown id, a revoked key, a wrong secret.
    let mut times: [Vec<Duration>; 3] = Default::default();
    for _ in 0..args.tries {
        let unknown = format!("tvbo_{}_{}", uuid::Uuid::new_v4().simple(), random_secret());
        for (kind, key) in [unknown, revoked.clone(), mistyped(&key)]
            .into_iter()
            .enumerate()
        {
            let started = Instant::now();
            let status = get(key).await?;
            times[kind].push(started.elapsed());
            ensure!(status == 401, "an invalid key got {status}");
        }
    }
    let medians: Vec<Duration> = times.iter_mut().map(|t| median(t)).collect();
    let spread =
        medians.iter().max().unwrap().as_secs_f64() / medians.iter().min().unwrap().as_secs_f64();
    println!(
        "invalid keys, median time: unknown {:.1} ms, revoked {:.1} ms, wrong secret {:.1} ms \
         (slowest/fastest {spread:.2})",
        medians[0].as_secs_f64() * 1e3,
        medians[1].as_secs_f64() * 1e3,
        medians[2].as_secs_f64() * 1e3,
    );
    ensure!(get(key.clone()).await? == 200, "the valid key is refused");
    let before = peak_kib(pid)?;

    // The flood, and a legitimate reader.
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(std::collections::BTreeMap::<u16, u64>::new()));
    let mut flood = Vec::new();
    for _ in 0..args.callers {
        let (stop, answers, client, base, key) = (
            stop.clone(),
            answers.clone(),
            client.clone(),
            base.clone(),
            key.clone(),
        );
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let status = client
                    .get(format!("{base}/v1/sessions"))
                    .bearer_auth(mistyped(&key))
                    .send()
                    .await
                    .map_or(0, |r| r.status().as_u16());
                *answers.lock().await.entry(status).or_default() += 1;
            }
        }));
    }
    let started = Instant::now();
    let mut reads = Vec::new();
    let mut refused = 0;
    while started.elapsed().as_secs_f64() < args.seconds {
        let sent = Instant::now();
        if get(key.clone()).await? != 200 {
            refused += 1;
        }
        reads.push(sent.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for caller in flood {
        caller.await?;
    }
    let peak = peak_kib(pid)?;
    let count = reads.len();
    let read_median = median(&mut reads);
    let p99 = reads[(count * 99 / 100).min(count - 1)];
    let answers = answers.lock().await.clone();
    let total: u64 = answers.values().sum();
    println!(
        "flood: {} callers, {:.0} s, {total} requests ({:.0}/s), answered {answers:?} (0: \
         no answer)",
        args.callers,
        args.seconds,
        total as f64 / args.seconds,
    );
    println!(
        "legitimate reads: {count}, {refused} refused, median {:.1} ms, p99 {:.1} ms",
        read_median.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    println!(
        "server peak memory (VmHWM): {:.1} MiB before the flood, {:.1} MiB after",
        before as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    drop(server);
    verdict(peak, read_median, refused, spread)
}

/// Fails unless peak memory < 256 MiB, the legitimate reads' median < 250 ms with none
/// refused, and the invalid keys' medians within 2× of each other (`spread`).
fn verdict(
    peak_kib: u64,
    read_median: Duration,
    refused: usize,
    spread: f64,
) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    if peak_kib >= 256 * 1024 {
        failed.push("peak memory is 256 MiB or more");
    }
    if read_median >= Duration::from_millis(250) {
        failed.push("the legitimate reads' median is 250 ms or more");
    }
    if refused > 0 {
        failed.push("legitimate reads were refused");
    }
    if spread >= 2.0 {
        failed.push("the invalid keys' medians are not within 2x of each other");
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    println!("ok");
    Ok(())
}
