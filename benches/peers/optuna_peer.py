"""Optuna as a peer of `tvbo bench`: ask/tell over JSON lines on stdin/stdout.

The bench starts this script (`python3 -c`, with the interpreter of TVBO_BENCH_PYTHON)
and drives it as it drives a session: one line per request, one line per answer.

    -> {"parameters": [...], "sampler": "tpe" | "gp", "seed": 7, "restart_every": 1800}
    <- {"ready": true, "optuna": "5.0.0"}
    -> {"ask": 12.5}                      (the clock's time)
    <- {"params": {...}, "compute": 0.004, "trials": 3}
    -> {"tell": 0.31}
    <- {"compute": 0.0001, "trials": 4}

`parameters` are the session's, in the API's form (float, int, categorical; log scale).
The study minimises. With `restart_every` (seconds of the clock) a new study, with a new
seed, replaces the old one at the first ask past each multiple: what a careful user does
to forget a stale past. `compute` is this process's CPU seconds for the request, on one
thread: the GP sampler's torch would otherwise run a pool of threads whose waiting, on a
busy machine, is counted as CPU time (an ask at 230 trials measured 1-4 s so, 0.1-0.8 s
on one thread), and a session's policy computes on one thread too.
"""

import json
import os
import sys
import time

# Before torch is imported (by Optuna's GP sampler): one intra-op thread.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import optuna  # noqa: E402


def distributions(parameters):
    """Optuna's distribution for each of the session's parameters."""
    out = {}
    for p in parameters:
        log = p.get("scale") == "log"
        kind = p.get("type", "float")
        if kind == "categorical":
            out[p["name"]] = optuna.distributions.CategoricalDistribution(p["choices"])
        elif kind == "int":
            out[p["name"]] = optuna.distributions.IntDistribution(
                int(p["low"]), int(p["high"]), log=log
            )
        else:
            out[p["name"]] = optuna.distributions.FloatDistribution(
                p["low"], p["high"], log=log
            )
    return out


def new_study(sampler, seed):
    """A minimising study with the named sampler and its defaults."""
    if sampler == "tpe":
        chosen = optuna.samplers.TPESampler(seed=seed)
    elif sampler == "gp":
        chosen = optuna.samplers.GPSampler(seed=seed)
    else:
        raise ValueError(f"unknown sampler {sampler!r} (known: tpe, gp)")
    return optuna.create_study(direction="minimize", sampler=chosen)


def answer(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    setup = json.loads(sys.stdin.readline())
    space = distributions(setup["parameters"])
    restart_every = setup.get("restart_every")
    seed = int(setup["seed"]) % 2**31  # numpy's seeds are below 2^32
    restarts = 0
    study = new_study(setup["sampler"], seed)
    trial = None
    answer({"ready": True, "optuna": optuna.__version__})
    for line in sys.stdin:
        request = json.loads(line)
        started = time.process_time()
        if "ask" in request:
            if restart_every and request["ask"] >= (restarts + 1) * restart_every:
                restarts = int(request["ask"] // restart_every)
                study = new_study(setup["sampler"], seed + restarts)
            trial = study.ask(space)
            answer(
                {
                    "params": trial.params,
                    "compute": time.process_time() - started,
                    "trials": len(study.trials) - 1,
                }
            )
        elif "tell" in request:
            study.tell(trial, request["tell"])
            answer(
                {
                    "compute": time.process_time() - started,
                    "trials": len(study.trials),
                }
            )
        else:
            raise ValueError(f"unknown request {request!r}")


if __name__ == "__main__":
    main()
