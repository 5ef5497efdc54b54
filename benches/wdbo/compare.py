#!/usr/bin/env python3
"""Our W-DBO beside the official one (PyPI `wdbo-algo`), in one protocol.

Runs 002's protocol (Section 5.1, as `tvbo bench` does it: simulated clock, measured
compute, the objective's cost c) on a drifting several-well polynomial that is not in
the paper suite, for:

- `tvbo:<algorithm>`: a session of a tvbo server over HTTP with client time (the
  compute δ of a call is its measured round trip), e.g. `tvbo:w-dbo`, `tvbo:bolt`,
  `tvbo:random`;
- `official:w-dbo`: `wdbo_algo.optimizer.WDBOOptimizer` in this process (BoTorch), with
  time mapped to [0, 1] over the horizon as the authors' experiments do, its defaults
  otherwise (Matérn-5/2 × Matérn-3/2 as tvbo's sessions, 15 warm-up queries, α = 0.25).

Each run appends one JSON line to `--output` (per iteration: clock time, regret,
dataset size after the observe, fitted hyperparameters with l_T in seconds); `--resume`
keeps the runs already there. At the end it prints the table (mean regret, iterations,
final and mean dataset size, median l_T) and, with matplotlib, draws the dataset size
and l_T over time (`--plot`).

The official code is optional (see requirements.txt); without it, only tvbo runs.

    python benches/wdbo/compare.py --tvbo target/release/tvbo --seeds 0,1,2 \
        --output benchmarks/wdbo/runs.jsonl --plot docs/wdbo-comparison.png
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import minimize


# --------------------------------------------------------------------------- objective


@dataclass
class Wells:
    """A drifting polynomial with 2^d wells, minimised over x ∈ [0,1]^d.

    z = 3x − 1.5 ∈ [−1.5, 1.5]^d, τ = t / horizon ∈ [0, 1]:

        f(z, τ) = Σ_i (z_i² − 1)² + a Σ_i sin(2π(ω_i τ + φ_i)) z_i + b Σ_i z_i z_{i+1}

    Each (z_i² − 1)² is a double well; the tilts (a = 0.4) make first one well and then
    another the deepest as τ runs, and the chain coupling (b = 0.15) keeps the function
    from being separable. Noise: Gaussian, variance 0.01; cost c = 0.1 s.
    """

    dim: int = 4
    horizon: float = 150.0
    tilt: float = 0.4
    coupling: float = 0.15
    noise_variance: float = 0.01
    cost: float = 0.1
    omegas: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.7, 1.3, 0.5, 0.9]))
    phases: np.ndarray = field(default_factory=lambda: np.array([0.1, 0.6, 0.35, 0.8, 0.2]))

    def _tilts(self, t: float) -> np.ndarray:
        tau = min(max(t / self.horizon, 0.0), 1.0)
        d = self.dim
        return self.tilt * np.sin(2 * math.pi * (self.omegas[:d] * tau + self.phases[:d]))

    def _f_z(self, z: np.ndarray, tilts: np.ndarray) -> tuple[float, np.ndarray]:
        value = float(np.sum((z * z - 1) ** 2) + tilts @ z + self.coupling * np.sum(z[:-1] * z[1:]))
        grad = 4 * z * (z * z - 1) + tilts
        grad[:-1] += self.coupling * z[1:]
        grad[1:] += self.coupling * z[:-1]
        return value, grad

    def value(self, x: np.ndarray, t: float) -> float:
        z = 3.0 * np.clip(np.asarray(x, dtype=float), 0.0, 1.0) - 1.5
        return self._f_z(z, self._tilts(t))[0]

    def optimum(self, t: float) -> float:
        """min_x f(x, t): L-BFGS-B from each of the 2^d wells (z_i = ±1)."""
        tilts = self._tilts(t)
        best = math.inf
        for corner in range(2**self.dim):
            z0 = np.array([1.0 if corner >> i & 1 else -1.0 for i in range(self.dim)])
            result = minimize(
                lambda z: self._f_z(z, tilts),
                z0,
                jac=True,
                method="L-BFGS-B",
                bounds=[(-1.5, 1.5)] * self.dim,
            )
            best = min(best, float(result.fun))
        return best


# --------------------------------------------------------------------------- drivers

HYPERPARAMETERS = ("signal_variance", "spatial_lengthscale", "temporal_lengthscale", "noise_variance")



class TvboSession:
    """A tvbo session over HTTP (keep-alive), with client time."""

    def __init__(self, base: str, algorithm: str, dim: int, seed: int, api_key: str | None):
        url = urllib.parse.urlparse(base)
        self.prefix = url.path.rstrip("/")
        self.connection = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.names = [f"x{i}" for i in range(dim)]
        session = self._call(
            "POST",
            "/v1/sessions",
            {
                "name": f"wdbo-compare {algorithm} seed {seed}",
                "goal": "minimize",
                "parameters": [{"name": n, "low": 0.0, "high": 1.0} for n in self.names],
                "algorithm": {"name": algorithm},
                "time": {"source": "client"},
                "seed": seed,
            },
        )
        self.id = session["id"]
        self.suggestion: str | None = None

    def _call(self, method: str, path: str, body: object | None = None) -> dict:
        payload = None if body is None else json.dumps(body)
        self.connection.request(method, self.prefix + path, body=payload, headers=self.headers)
        response = self.connection.getresponse()
        text = response.read()
        if response.status // 100 != 2:
            raise RuntimeError(f"{method} {path}: {response.status}: {text[:500]!r}")
        return json.loads(text)

    def suggest(self, t: float) -> np.ndarray:
        answer = self._call("POST", f"/v1/sessions/{self.id}/suggestions", {"t": t})
        suggestion = answer["suggestions"][0]
        self.suggestion = suggestion["id"]
        return np.array([suggestion["params"][n] for n in self.names])

    def observe(self, x: np.ndarray, t_measured: float, t_now: float, value: float, regret: float) -> None:
        # The suggestion's id names x. Client time: the observation carries its
        # measurement time; the session's clock is the latest time it was given (the
        # suggest's), as in `tvbo bench --server`.
        del x, t_now
        self._call(
            "POST",
            f"/v1/sessions/{self.id}/observations",
            {"suggestion_id": self.suggestion, "value": value, "regret": regret, "t": t_measured},
        )

    def trace(self) -> list[tuple[int, dict | None]]:
        """(dataset size, hyperparameters with l_T in seconds) after each observe, from
        the session's steps."""
        out: list[tuple[int, dict | None]] = []
        after = None
        while True:
            query = "?limit=1000" + ("" if after is None else f"&after={after}")
            page = self._call("GET", f"/v1/sessions/{self.id}/steps{query}")
            for step in page["steps"]:
                if step["kind"] == "observe":
                    snapshot = step.get("snapshot") or {}
                    hyper = snapshot.get("hyperparameters")
                    if hyper is not None:
                        hyper = {k: hyper[k] for k in HYPERPARAMETERS}
                    out.append((snapshot.get("dataset_size"), hyper))
            after = page.get("next_after")
            if after is None:
                return out

    def close(self) -> None:
        self.connection.close()


class OfficialWdbo:
    """`wdbo_algo.optimizer.WDBOOptimizer` on [0,1]^d, time mapped to [0, 1] over the horizon."""

    def __init__(self, dim: int, seed: int, horizon: float):
        import gpytorch
        import torch
        from wdbo_algo.optimizer import WDBOOptimizer

        # The model's parameters must be float64 like its data (`posterior` casts the
        # query points to double); recent GPyTorch refuses the mixed product.
        torch.set_default_dtype(torch.float64)
        # One thread, as a tvbo request computes on one.
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        np.random.seed(seed)
        self.horizon = horizon
        self.optimizer = WDBOOptimizer(
            np.array([[0.0, 1.0]] * dim),
            gpytorch.kernels.MaternKernel,
            gpytorch.kernels.MaternKernel,
            spatial_kernel_args=[2.5],
            temporal_kernel_args=[1.5],
        )
        self.sizes: list[tuple[int, dict | None]] = []

    def suggest(self, t: float) -> np.ndarray:
        return np.asarray(self.optimizer.next_query(t / self.horizon), dtype=float)

    def observe(self, x: np.ndarray, t_measured: float, t_now: float, value: float, regret: float) -> None:
        del regret
        # The official optimizer maximises: tell it −f.
        self.optimizer.tell(x, t_measured / self.horizon, -value)
        self.optimizer.clean(t_now / self.horizon)
        o = self.optimizer
        hyper = None
        if o._lT is not None:
            # The official model's λ and σ² are on standardised values, as tvbo's.
            values = (o._lambda, o._lS, o._lT * self.horizon, o._noise)
            hyper = {k: float(v) for k, v in zip(HYPERPARAMETERS, values)}
        self.sizes.append((o.dataset_size(), hyper))

    def trace(self) -> list[tuple[int, dict | None]]:
        return self.sizes

    def close(self) -> None:
        pass


def run(kind: str, objective: Wells, seed: int, server: str | None, api_key: str | None) -> dict:
    """One run of 002's protocol: suggest at clock s (δ measured), evaluate at s + δ,
    observe at s + δ + c (δ' measured); the next suggest at s + δ + c + δ'."""
    owner, algorithm = kind.split(":", 1)
    if owner == "tvbo":
        assert server is not None
        driver: TvboSession | OfficialWdbo = TvboSession(
            server, algorithm, objective.dim, seed, api_key
        )
    elif kind == "official:w-dbo":
        driver = OfficialWdbo(objective.dim, seed, objective.horizon)
    else:
        raise SystemExit(f"unknown algorithm {kind!r}")
    rng = np.random.default_rng([seed, 7])
    started = time.perf_counter()
    clock, iterations = 0.0, []
    while True:
        begin = time.perf_counter()
        x = driver.suggest(clock)
        handed = clock + (time.perf_counter() - begin)
        if handed > objective.horizon:
            break
        f = objective.value(x, handed)
        regret = f - objective.optimum(handed)
        y = f + rng.normal(0.0, math.sqrt(objective.noise_variance))
        now = handed + objective.cost
        begin = time.perf_counter()
        driver.observe(x, handed, now, float(y), float(regret))
        clock = now + (time.perf_counter() - begin)
        iterations.append({"t": handed, "regret": regret})
    for record, (size, hyper) in zip(iterations, driver.trace()):
        record["dataset_size"] = size
        record["hyperparameters"] = hyper
    driver.close()
    return {
        "algorithm": kind,
        "seed": seed,
        "objective": f"wells{objective.dim}",
        "horizon": objective.horizon,
        "iterations": iterations,
        "wall_seconds": time.perf_counter() - started,
    }


# --------------------------------------------------------------------------- server


def start_server(binary: str) -> tuple[subprocess.Popen, str]:
    """`tvbo serve` on a free loopback port with a temporary SQLite database."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    database = Path(tempfile.mkdtemp(prefix="wdbo-compare-")) / "tvbo.db"
    env = dict(os.environ, TVBO_AUTH="off", TVBO_RATE_LIMIT="0", RUST_LOG="warn")
    process = subprocess.Popen(
        [binary, "serve", "--bind", f"127.0.0.1:{port}", "--database-url", f"sqlite://{database}"],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return process, base
        except OSError:
            pass
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{binary} serve did not become ready")


# --------------------------------------------------------------------------- report


def _hyper(iteration: dict, name: str) -> float | None:
    hyper = iteration.get("hyperparameters")
    return None if hyper is None else hyper.get(name)


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.3g}" if values else "–"


def summary(runs: list[dict]) -> str:
    rows = [
        "| algorithm | seeds | mean regret | iterations | final n | mean n | median l_T (s) | median l_S |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by_algorithm: dict[str, list[dict]] = {}
    for r in runs:
        by_algorithm.setdefault(r["algorithm"], []).append(r)
    for algorithm, group in sorted(by_algorithm.items()):
        regrets = [statistics.fmean(i["regret"] for i in r["iterations"]) for r in group]
        spread = (
            f" ± {statistics.stdev(regrets) / math.sqrt(len(regrets)):.3f}" if len(regrets) > 1 else ""
        )
        steps = [i for r in group for i in r["iterations"]]
        sizes = [i["dataset_size"] for i in steps if i["dataset_size"] is not None]
        lts = [v for i in steps if (v := _hyper(i, "temporal_lengthscale")) is not None]
        lss = [v for i in steps if (v := _hyper(i, "spatial_lengthscale")) is not None]
        rows.append(
            f"| {algorithm} | {','.join(str(r['seed']) for r in group)} "
            f"| {statistics.fmean(regrets):.3f}{spread} "
            f"| {statistics.fmean(len(r['iterations']) for r in group):.0f} "
            f"| {'/'.join(str(r['iterations'][-1]['dataset_size']) for r in group)} "
            f"| {statistics.fmean(sizes):.1f} | {_median(lts)} | {_median(lss)} |"
        )
    return "\n".join(rows)


def plot(runs: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    colours: dict[str, str] = {}
    for r in runs:
        if r["algorithm"].endswith(":random"):
            continue
        colour = colours.setdefault(r["algorithm"], f"C{len(colours)}")
        ts = [i["t"] for i in r["iterations"]]
        label = r["algorithm"] if r["seed"] == min(x["seed"] for x in runs) else None
        top.plot(ts, [i["dataset_size"] for i in r["iterations"]], color=colour, alpha=0.7, label=label)
        lt = [(i["t"], v) for i in r["iterations"] if (v := _hyper(i, "temporal_lengthscale"))]
        if lt:
            bottom.plot(*zip(*lt), color=colour, alpha=0.7)
    top.set_ylabel("dataset size")
    top.legend()
    bottom.set_ylabel("fitted l_T (s)")
    bottom.set_yscale("log")
    bottom.set_xlabel("session time (s)")
    top.set_title("W-DBO on the drifting wells objective: dataset size and temporal lengthscale")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithms", default="tvbo:w-dbo,tvbo:bolt,tvbo:random,official:w-dbo")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--dim", type=int, default=4)
    parser.add_argument("--horizon", type=float, default=150.0)
    parser.add_argument("--server", help="a running tvbo (else --tvbo starts one)")
    parser.add_argument("--tvbo", default="target/release/tvbo", help="binary to start")
    parser.add_argument("--api-key", default=os.environ.get("TVBO_API_KEY"))
    parser.add_argument("--output", default="wdbo-compare.jsonl")
    parser.add_argument("--resume", action="store_true", help="keep the runs in --output")
    parser.add_argument("--plot", help="PNG of dataset size and l_T over time (matplotlib)")
    args = parser.parse_args()

    objective = Wells(dim=args.dim, horizon=args.horizon)
    output = Path(args.output)
    runs = []
    if args.resume and output.exists():
        runs = [json.loads(line) for line in output.read_text().splitlines() if line.strip()]
        runs = [r for r in runs if r["horizon"] == args.horizon and r["objective"] == f"wells{args.dim}"]
    elif output.exists():
        output.unlink()
    done = {(r["algorithm"], r["seed"]) for r in runs}
    kinds = args.algorithms.split(",")
    server, process = args.server, None
    if server is None and any(k.startswith("tvbo:") for k in kinds):
        process, server = start_server(args.tvbo)
    try:
        for seed in [int(s) for s in args.seeds.split(",")]:
            for kind in kinds:
                if (kind, seed) in done:
                    continue
                result = run(kind, objective, seed, server, args.api_key)
                runs.append(result)
                output.parent.mkdir(parents=True, exist_ok=True)
                with output.open("a") as f:
                    f.write(json.dumps(result) + "\n")
                last = result["iterations"][-1]
                print(
                    f"{kind} seed {seed}: {len(result['iterations'])} iterations, mean regret "
                    f"{statistics.fmean(i['regret'] for i in result['iterations']):.3f}, final n "
                    f"{last['dataset_size']}, {result['wall_seconds']:.0f} s",
                    file=sys.stderr,
                )
    finally:
        if process is not None:
            process.terminate()
            process.wait()
    print(summary([r for r in runs if r["algorithm"] in kinds]))
    if args.plot:
        plot([r for r in runs if r["algorithm"] in kinds], args.plot)


if __name__ == "__main__":
    main()
