"""Tuning a radio link through a simulated day of drifting interference.

What it shows: a BOLT session following an optimum that moves. A transmitter picks its
transmit power (0 to 30 dBm) and channel (1 to 11); the value is the link's throughput
less the energy it costs. An interferer sweeps across the channels over the day and the
background noise rises in office hours, so the best channel and power keep changing. The
session runs on client time (``time.source = "client"``): each step is 10 simulated
minutes, so a whole day takes seconds. Because the simulation knows the true optimum,
every observation reports its true regret; the script prints it as it goes and ends with
the link to the session's dashboard page.

How long: 144 steps (one line per simulated hour), about 20 s against a debug build of
the server, less against ``cargo run --release``; ``--short`` (or
``TVBO_EXAMPLE_SHORT=1``) runs 24 steps of an hour, a few seconds.

Run: start a server, make a key, then
    TVBO_API_KEY=$(cargo run --release -q -- keys create --name radio) \\
        python examples/python/drifting_radio.py
"""

from __future__ import annotations

import argparse
import math
import os
import random
from typing import Tuple

import tvbo

DAY = 86_400.0
CHANNELS = range(1, 12)


def interference_dbm(channel: float, t: float) -> float:
    """Interference on a channel at time t: an interferer sweeping across the band twice
    a day, neighbours' access points on the edge channels in the evening, and
    background noise that rises in office hours."""
    hour = t / 3600.0
    centre = 6.0 + 5.0 * math.sin(2 * math.pi * t / DAY * 2)
    sweep = 25.0 * math.exp(-((channel - centre) ** 2) / 4.0)
    evening = 0.5 + 0.5 * math.cos(2 * math.pi * (hour - 21.0) / 24.0)
    edges = 20.0 * evening * sum(math.exp(-((channel - c) ** 2) / 3) for c in (1, 11))
    office = 8.0 * math.exp(-((hour - 13.0) ** 2) / 18.0)
    return -95.0 + office + sweep + edges


def link_value(power_dbm: float, channel: float, t: float) -> float:
    """Throughput (Mbit/s over 20 MHz, saturating at the best modulation's 25 dB) less
    2 Mbit/s per dBm of transmit power (the energy and the interference it causes)."""
    snr = 10 ** ((power_dbm - 80.0 - interference_dbm(channel, t)) / 10)  # 80 dB path loss
    usable = snr / (1 + snr / 10**2.5)
    return 20.0 * math.log2(1 + usable) - 2.0 * power_dbm


def optimum(t: float) -> Tuple[float, float, int]:
    """The best value at time t and where it is (a fine grid over power, every channel)."""
    return max((link_value(p / 4, c, t), p / 4, c) for c in CHANNELS for p in range(0, 121))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("TVBO_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--key", default=os.environ.get("TVBO_API_KEY"))
    parser.add_argument("--steps", type=int, default=144)
    parser.add_argument(
        "--short",
        action="store_true",
        default=os.environ.get("TVBO_EXAMPLE_SHORT", "") not in ("", "0"),
    )
    args = parser.parse_args()
    steps = 24 if args.short else args.steps
    every = max(1, steps // 24)  # print once per simulated hour
    rng = random.Random(1)

    with tvbo.Client(args.url, args.key) as client:
        session = client.create_session(
            [tvbo.Float("power_dbm", 0, 30), tvbo.Int("channel", 1, 11)],
            name="radio link over a day",
            algorithm="bolt",
            model={"warmup": 6},
            time={"source": "client"},
            seed=1,
        )
        print(f"session {session.id}: {steps} steps of {DAY / steps / 60:.0f} simulated minutes")
        total = 0.0
        for step in range(steps):
            t = step * DAY / steps
            (suggestion,) = session.suggest(t=t)
            power, channel = (
                float(suggestion.params["power_dbm"]),
                int(suggestion.params["channel"]),
            )
            true_value = link_value(power, channel, t)
            best_value, best_power, best_channel = optimum(t)
            regret = max(0.0, best_value - true_value)
            total += regret
            measured = true_value + rng.gauss(0.0, 0.5)  # the measurement is noisy
            session.observe(suggestion, measured, t=t, regret=regret)
            if step % every:
                continue
            print(
                f"{t / 3600:4.1f} h  tried {power:4.1f} dBm ch {channel:2.0f}: {measured:6.1f}  "
                f"(optimum {best_value:5.1f} at {best_power:4.1f} dBm ch {best_channel:2d})  "
                f"regret {regret:5.1f}, average so far {total / (step + 1):5.1f}"
            )
        report = session.regret()
        recommended = session.best(t=DAY)
        print(f"average regret {report.average_regret:.2f} over {len(report.points)} steps")
        print(
            f"recommended at midnight: {recommended.params['power_dbm']:.1f} dBm on channel "
            f"{recommended.params['channel']:.0f} (model's mean {recommended.mean:.1f})"
        )
        print(f"dashboard: {session.dashboard_url}")


if __name__ == "__main__":
    main()
