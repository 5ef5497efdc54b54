#!/usr/bin/env python3
"""One model iteration in BoTorch and in tvbo, on the same data, in one run.

The iteration is the one the papers' BoTorch experiments run at every step: fit the GP
hyperparameters by exact marginal likelihood from a fresh model, then maximise UCB with
20 restarts from 512 raw samples, with time fixed at the next query's time. The kernel
is Matérn-5/2 (isotropic, over the d spatial inputs) × Matérn-3/2 (over time), float64.

For each d in `--dims` and n in `--sizes` the script draws n points of a drifting smooth
function over a 600 s horizon (inputs uniform in [0, 1]^d, times evenly spread), then
times, each `--repeats` times (the median is reported):

- `botorch`: SingleTaskGP + fit_gpytorch_mll, then UpperConfidenceBound + optimize_acqf
  (time mapped to [0, 1] over the horizon, as the authors' code does), in this process;
- `tvbo`: the same iteration in-process, through `benches/iteration.rs` (one whole
  suggest of a `bolt` session, plus its fit and its UCB maximisation alone), its UCB
  refinements on as many threads as torch uses; and the same session under
  `model.fit_start: previous`, whose fit starts from the previous suggest's (that of the
  first n - 1 points) except at every fifth suggest, which fits like the first: the
  table gives the mean over such a cycle of five;
- `http`: a suggest of a fresh `bolt` session over HTTP (keep-alive) from a `tvbo
  serve` started here on a temporary SQLite file, after one batch observe of the data.

It appends one JSON line per (d, n) to `--output` and prints the table that
docs/performance.md holds. Optional, not run by CI; BoTorch comes from
requirements.txt:

    python3 -m venv .venv-botorch && .venv-botorch/bin/pip install -r benches/botorch/requirements.txt
    cargo build --release --bin tvbo
    .venv-botorch/bin/python benches/botorch/compare.py --output benchmarks/botorch/runs.jsonl

`--no-botorch` leaves BoTorch (and torch) out: tvbo in-process against tvbo over HTTP
alone, tvbo's UCB on `--torch-threads` threads (default: the machine's CPUs), which needs
numpy only:

    python3 benches/botorch/compare.py --no-botorch --dims 3 --sizes 400 --repeats 7

With `--rounds R` it times the two in turn R times against one server and reports each
round's HTTP / in-process ratio and their median (this VM's speed drifts within minutes,
more than the difference between the two):

    python3 benches/botorch/compare.py --no-botorch --dims 3 --sizes 400 --repeats 15 --rounds 8
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shlex
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

HORIZON = 600.0
RESTARTS = 20
RAW_SAMPLES = 512


def dataset(n: int, dim: int, seed: int) -> dict:
    """n noisy samples of a smooth function whose optimum drifts over the horizon."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, dim))
    t = HORIZON * np.arange(n) / n
    centre = 0.5 + 0.3 * np.sin(t[:, None] / 200.0 + np.arange(dim)[None, :])
    y = -np.sum((x - centre) ** 2, axis=1) + 0.2 * np.sin(6.0 * x[:, -1]) + 0.05 * (rng.random(n) - 0.5)
    return {"x": x.tolist(), "t": t.tolist(), "y": y.tolist(), "t_next": HORIZON}


def ucb_beta(dim: int, n: int) -> float:
    """The β of tvbo's bolt sessions (W-DBO's 0.2·d·ln 2n), so both maximise the same UCB."""
    return 0.2 * dim * max(math.log(2 * n), math.log(2))


def botorch_iteration(data: dict, dim: int) -> tuple[float, float]:
    """(fit seconds, acquisition seconds) of one BoTorch iteration."""
    import torch
    from botorch.acquisition import UpperConfidenceBound
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from botorch.optim import optimize_acqf
    from gpytorch.kernels import MaternKernel, ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    x = np.asarray(data["x"])
    t = np.asarray(data["t"]) / HORIZON
    train_x = torch.tensor(np.hstack([x, t[:, None]]), dtype=torch.float64)
    train_y = torch.tensor(np.asarray(data["y"])[:, None], dtype=torch.float64)
    start = time.perf_counter()
    kernel = ScaleKernel(
        MaternKernel(nu=2.5, active_dims=tuple(range(dim))) * MaternKernel(nu=1.5, active_dims=(dim,))
    )
    model = SingleTaskGP(train_x, train_y, covar_module=kernel, outcome_transform=Standardize(m=1))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    fitted = time.perf_counter()
    bounds = torch.tensor([[0.0] * (dim + 1), [1.0] * (dim + 1)], dtype=torch.float64)
    optimize_acqf(
        UpperConfidenceBound(model, beta=ucb_beta(dim, len(data["y"]))),
        bounds=bounds,
        q=1,
        num_restarts=RESTARTS,
        raw_samples=RAW_SAMPLES,
        fixed_features={dim: data["t_next"] / HORIZON},
    )
    return fitted - start, time.perf_counter() - fitted


def tvbo_in_process(command_line: str, dim: int, sets: list[dict], repeats: int, threads: int) -> list[dict]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"dim": dim, "sets": sets}, f)
    try:
        command = shlex.split(command_line) + ["--data", f.name, "--repeats", str(repeats), "--threads", str(threads)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


class Server:
    """`tvbo serve` on a free loopback port over a temporary SQLite file."""

    def __init__(self, binary: str):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        database = Path(tempfile.mkdtemp(prefix="botorch-compare-")) / "tvbo.db"
        # As users run it: keys required, the default rate limit; the key made as an
        # operator makes one.
        env = dict(os.environ, RUST_LOG="warn")
        for name in ("TVBO_AUTH", "TVBO_RATE_LIMIT", "TVBO_RATE_BURST"):
            env.pop(name, None)
        self.key = subprocess.run(
            [binary, "keys", "create", "--name", "botorch-compare", "--database-url", f"sqlite://{database}"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        self.process = subprocess.Popen(
            [binary, "serve", "--bind", f"127.0.0.1:{self.port}", "--database-url", f"sqlite://{database}"],
            env=env,
        )
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        for _ in range(200):
            try:
                if self.call("GET", "/readyz", None, expect=None)[0] == 200:
                    return
            except OSError:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            time.sleep(0.05)
        self.process.kill()
        raise SystemExit(f"{binary} serve did not become ready")

    def call(self, method: str, path: str, body: object | None, expect: int | None = 2) -> tuple[int, dict]:
        payload = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"}
        try:
            self.connection.request(method, path, body=payload, headers=headers)
            response = self.connection.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closes a keep-alive connection left idle (while BoTorch runs).
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            self.connection.request(method, path, body=payload, headers=headers)
            response = self.connection.getresponse()
        text = response.read()
        if expect is not None and response.status // 100 != expect:
            raise RuntimeError(f"{method} {path}: {response.status}: {text[:300]!r}")
        is_json = "json" in (response.getheader("Content-Type") or "")
        return response.status, (json.loads(text) if is_json else {})

    def suggest_seconds(self, data: dict, dim: int) -> float:
        """Seconds of one suggest of a fresh session holding `data`."""
        names = [f"x{i}" for i in range(dim)]
        _, session = self.call(
            "POST",
            "/v1/sessions",
            {
                "name": f"botorch-compare d={dim} n={len(data['y'])}",
                "parameters": [{"name": n, "low": 0.0, "high": 1.0} for n in names],
                "algorithm": {"name": "bolt"},
                "model": {"spatial_kernel": "matern52", "temporal_kernel": "matern32", "warmup": 0},
                "time": {"source": "client"},
            },
        )
        path = f"/v1/sessions/{session['id']}"
        rows = [
            {"params": dict(zip(names, x)), "value": y, "t": t} for x, t, y in zip(data["x"], data["t"], data["y"])
        ]
        for start in range(0, len(rows), 1000):
            self.call("POST", f"{path}/observations", {"observations": rows[start : start + 1000]})
        began = time.perf_counter()
        self.call("POST", f"{path}/suggestions", {"t": data["t_next"]})
        seconds = time.perf_counter() - began
        self.call("DELETE", path, None)
        return seconds

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def table(rows: list[dict]) -> str:
    lines = [
        "| d | n | BoTorch fit | BoTorch UCB | **BoTorch** | tvbo fit | tvbo UCB | **tvbo suggest** | ratio | tvbo over HTTP | ratio (HTTP) | tvbo suggest, `previous` | ratio (`previous`) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ms = lambda s: f"{s * 1e3:.3g}" if s < 10 else f"{s:.1f} s"  # noqa: E731
    for r in rows:
        b = r["botorch_fit"] + r["botorch_acquisition"]
        http_cells = (
            f"{ms(r['http_suggest'])} | {b / r['http_suggest']:.1f}×" if r.get("http_suggest") else "– | –"
        )
        cycle = r.get("tvbo_previous_cycle")
        previous_cells = f"{ms(cycle)} | {b / cycle:.1f}×" if cycle else "– | –"
        lines.append(
            f"| {r['dim']} | {r['n']} | {ms(r['botorch_fit'])} | {ms(r['botorch_acquisition'])} | **{ms(b)}** | "
            f"{ms(r['tvbo_fit'])} | {ms(r['tvbo_acquisition'])} | **{ms(r['tvbo_suggest'])}** | "
            f"**{b / r['tvbo_suggest']:.1f}×** | {http_cells} | {previous_cells} |"
        )
    return "\n".join(lines) + "\n\n(milliseconds unless marked; medians)"


def tvbo_table(rows: list[dict]) -> str:
    """tvbo in-process against tvbo over HTTP (`--no-botorch`)."""
    lines = [
        "| d | n | tvbo fit | tvbo UCB | **tvbo suggest** | tvbo over HTTP | HTTP − in-process | HTTP / in-process |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ms = lambda s: f"{s * 1e3:.3g}"  # noqa: E731
    for r in rows:
        suggest, over_http = r["tvbo_suggest"], r.get("http_suggest")
        http_cells = (
            f"{ms(over_http)} | {ms(over_http - suggest)} | {over_http / suggest:.3f}" if over_http else "– | – | –"
        )
        lines.append(
            f"| {r['dim']} | {r['n']} | {ms(r['tvbo_fit'])} | {ms(r['tvbo_acquisition'])} | "
            f"**{ms(suggest)}** | {http_cells} |"
        )
    return "\n".join(lines) + "\n\n(milliseconds; medians)"


def alternating_rounds(args: argparse.Namespace, sets: dict[int, list[dict]], threads: int) -> str:
    """`--rounds`: the in-process and the HTTP suggest timed in turn, round after round
    (medians of `--repeats` each), against one server; each round's HTTP / in-process
    ratio and their median, since this VM's speed drifts within minutes."""
    rounds: dict[tuple[int, int], list[tuple[float, float]]] = {}
    server = Server(args.tvbo)
    try:
        for _ in range(args.rounds):
            for dim, dim_sets in sets.items():
                mine = tvbo_in_process(args.iteration, dim, dim_sets, args.repeats, threads)
                for data, row in zip(dim_sets, mine):
                    over_http = statistics.median(server.suggest_seconds(data, dim) for _ in range(args.repeats))
                    rounds.setdefault((dim, len(data["y"])), []).append((row["suggest_seconds"], over_http))
    finally:
        server.close()
    lines = [
        "| d | n | in process (per round) | over HTTP (per round) | HTTP / in-process (per round) | **median ratio** |",
        "|---|---|---|---|---|---|",
    ]
    for (dim, n), pairs in rounds.items():
        ratios = [h / m for m, h in pairs]
        print(json.dumps({"dim": dim, "n": n, "rounds": [{"tvbo_suggest": m, "http_suggest": h} for m, h in pairs]}))
        lines.append(
            f"| {dim} | {n} | {', '.join(f'{m * 1e3:.3g}' for m, _ in pairs)} | "
            f"{', '.join(f'{h * 1e3:.3g}' for _, h in pairs)} | {', '.join(f'{r:.3f}' for r in ratios)} | "
            f"**{statistics.median(ratios):.3f}** |"
        )
    return "\n".join(lines) + f"\n\n(milliseconds; medians of {args.repeats} per round)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="25,100,200,400,800,1600")
    parser.add_argument("--dims", default="3,6")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tvbo", default="target/release/tvbo", help="the tvbo binary (for --http)")
    parser.add_argument(
        "--iteration",
        default="cargo bench -q --bench iteration --",
        help="the command that runs benches/iteration.rs (its arguments follow)",
    )
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP column")
    parser.add_argument("--torch-threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument(
        "--no-botorch",
        action="store_true",
        help="time tvbo alone, in-process and over HTTP (no torch needed; UCB on --torch-threads, else every CPU)",
    )
    parser.add_argument("--output", help="append one JSON line per (d, n) here")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="with --no-botorch: time in process and over HTTP in turn this many times, "
        "and report each round's HTTP / in-process ratio and their median",
    )
    args = parser.parse_args()
    if args.rounds > 1 and not args.no_botorch:
        parser.error("--rounds needs --no-botorch")

    if args.no_botorch:
        torch = None
        threads = args.torch_threads or os.cpu_count() or 1
    else:
        import torch

        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        threads = torch.get_num_threads()
    sizes = [int(s) for s in args.sizes.split(",")]
    dims = [int(d) for d in args.dims.split(",")]
    header = {
        ("torch_threads" if torch is not None else "tvbo_threads"): threads,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    rows = []
    # Both tvbo columns first, for every (d, n), before torch starts its threads: they spin
    # for a while after each parallel region and would take a core from tvbo.
    sets = {dim: [dataset(n, dim, seed=1000 * dim + n) for n in sizes] for dim in dims}
    if args.rounds > 1:
        print(alternating_rounds(args, sets, threads))
        return
    # tvbo's UCB refinements get as many threads as torch has (a server gives a suggest
    # the cores no other job holds); its fit runs on one.
    ours = {dim: tvbo_in_process(args.iteration, dim, sets[dim], args.repeats, threads) for dim in dims}
    over_http: dict[tuple[int, int], float] = {}
    if not args.no_http:
        server = Server(args.tvbo)
        try:
            for dim in dims:
                for data in sets[dim]:
                    over_http[(dim, len(data["y"]))] = statistics.median(
                        server.suggest_seconds(data, dim) for _ in range(args.repeats)
                    )
        finally:
            server.close()
    for dim in dims:
        for data, mine in zip(sets[dim], ours[dim]):
            n = len(data["y"])
            row = dict(header, dim=dim, n=n)
            if torch is not None:
                if n <= 400:
                    botorch_iteration(data, dim)  # a first run warms torch's caches
                timings = [botorch_iteration(data, dim) for _ in range(args.repeats)]
                row["botorch_fit"] = statistics.median(f for f, _ in timings)
                row["botorch_acquisition"] = statistics.median(a for _, a in timings)
            row.update(
                tvbo_suggest=mine["suggest_seconds"],
                tvbo_fit=mine["fit_seconds"],
                tvbo_acquisition=mine["acquisition_seconds"],
            )
            if mine.get("previous_suggest_seconds") is not None:
                row["tvbo_previous_suggest"] = mine["previous_suggest_seconds"]
                row["tvbo_previous_fit"] = mine["previous_fit_seconds"]
                row["tvbo_previous_cycle"] = mine["previous_cycle_seconds"]
            if (dim, n) in over_http:
                row["http_suggest"] = over_http[(dim, n)]
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.output:
                Path(args.output).parent.mkdir(parents=True, exist_ok=True)
                with open(args.output, "a") as f:
                    f.write(json.dumps(row) + "\n")
    print(table(rows) if torch is not None else tvbo_table(rows))


if __name__ == "__main__":
    main()
