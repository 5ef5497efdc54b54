"""Drives a client-time BOLT session whose optimum jumps from 0.2 to 0.8 at t = 60, after
registering the relay as a webhook of `optimum-moved` and `tracking-lost`."""

import math
import os
import random

import tvbo

client = tvbo.Client(os.environ["TVBO_URL"], api_key=os.environ["TVBO_API_KEY"])
client.create_webhook(
    f"http://127.0.0.1:{os.environ.get('RELAY_PORT', '8787')}/",
    events=["optimum-moved", "tracking-lost"],
    secret=os.environ["TVBO_SECRET"],
)
session = client.create_session(
    [tvbo.Float("x", 0, 1)], algorithm="bolt", time={"source": "client"}, seed=21
)
rng = random.Random(1)
for step in range(120):
    t = float(step)
    centre = 0.2 if t < 60 else 0.8
    suggestion = session.suggest(t=t)[0]
    x = float(suggestion.params["x"])
    value = math.exp(-((x - centre) ** 2) / 0.02) + rng.gauss(0, 0.05)
    session.observe(suggestion, value, t=t)
print("events:", [event.kind for event in session.events()])
