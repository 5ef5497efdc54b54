"""The webhook calls' requests and answers, against httpx's mock transport (no server)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import httpx
import pytest

import tvbo

WEBHOOK = {
    "id": "0b7d6e1c-4c7a-4d1e-9a40-3f0f2d6f1c11",
    "url": "https://hooks.example.com/tvbo",
    "events": ["model-reset"],
    "created_at": "2026-11-28T10:00:00.123456789Z",
    "state": "active",
    "consecutive_failures": 0,
}


def delivery(event: int, state: str = "delivered") -> Dict[str, Any]:
    return {
        "event": event,
        "session": "s-1",
        "seq": event,
        "kind": "model-reset",
        "state": state,
        "attempts": 1,
        "last_status": 200 if state == "delivered" else None,
        "last_error": None if state == "delivered" else "connection refused",
        "next_attempt_at": None if state == "delivered" else "2026-11-28T10:00:05Z",
        "delivered_at": "2026-11-28T10:00:01Z" if state == "delivered" else None,
        "created_at": "2026-11-28T10:00:00Z",
    }


class Api:
    """Answers the webhook routes from a dict, and logs each request."""

    def __init__(self) -> None:
        self.requests: List[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path, method = request.url.path, request.method
        if method == "POST" and path == "/v1/webhooks":
            body = json.loads(request.content)
            if body["url"].startswith("http://10."):
                problem = {
                    "type": "https://tvbo.dev/problems/invalid-field",
                    "title": "Invalid field",
                    "status": 422,
                    "detail": "host 10.0.0.1 is not in the server's allow list",
                    "field": "url",
                }
                return httpx.Response(422, json=problem)
            return httpx.Response(201, json={**WEBHOOK, "secret": body.get("secret", "gen")})
        if method == "GET" and path == "/v1/webhooks":
            return httpx.Response(200, json={"webhooks": [WEBHOOK]})
        if method == "GET" and path == f"/v1/webhooks/{WEBHOOK['id']}":
            return httpx.Response(200, json=WEBHOOK)
        if method == "DELETE" and path == f"/v1/webhooks/{WEBHOOK['id']}":
            return httpx.Response(204)
        if method == "POST" and path.endswith("/ping"):
            answer = {
                "delivered": False,
                "status": None,
                "error": "answered-5xx",
                "duration_ms": 3.5,
                "resumed": False,
            }
            return httpx.Response(200, json=answer)
        if method == "GET" and path.endswith("/deliveries"):
            after = int(request.url.params.get("after", "0"))
            rows = [delivery(i, "pending" if i == 3 else "delivered") for i in range(1, 4)]
            page = [d for d in rows if d["event"] > after][:2]
            last = page[-1]["event"] if page else None
            return httpx.Response(
                200, json={"deliveries": page, "next_after": last if last != 3 else None}
            )
        return httpx.Response(404, json={"detail": "no route", "type": "about:blank"})


def test_the_sync_client_webhook_calls() -> None:
    api = Api()
    with tvbo.Client("http://tvbo", "k", transport=httpx.MockTransport(api)) as client:
        made = client.create_webhook("https://hooks.example.com/tvbo", ["model-reset"], "s" * 16)
        assert made.secret == "s" * 16 and made.events == ["model-reset"]
        assert json.loads(api.requests[-1].content) == {
            "url": "https://hooks.example.com/tvbo",
            "events": ["model-reset"],
            "secret": "s" * 16,
        }
        assert api.requests[-1].headers["authorization"] == "Bearer k"
        assert api.requests[-1].headers["idempotency-key"]
        client.create_webhook("https://hooks.example.com/all")
        assert json.loads(api.requests[-1].content) == {"url": "https://hooks.example.com/all"}
        with pytest.raises(tvbo.InvalidField) as raised:
            client.create_webhook("http://10.0.0.1/hook")
        assert raised.value.field == "url" and "allow list" in raised.value.detail
        with pytest.raises(ValueError, match="not a string"):
            client.create_webhook("https://hooks.example.com/x", "model-reset")

        (listed,) = client.webhooks()
        assert listed.secret is None and listed.id == WEBHOOK["id"]
        assert listed.created_at.microsecond == 123456
        assert client.webhook(listed) == listed == client.webhook(listed.id)
        ping = client.ping_webhook(listed)
        assert ping == tvbo.WebhookPing(False, 3.5, False, None, "answered-5xx")
        deliveries = list(client.webhook_deliveries(listed, page_size=2))
        assert [(d.event, d.state) for d in deliveries] == [
            (1, "delivered"),
            (2, "delivered"),
            (3, "pending"),
        ]
        assert deliveries[2].next_attempt_at is not None and deliveries[2].last_status is None
        pages = [r.url.params for r in api.requests if r.url.path.endswith("/deliveries")]
        assert [(p.get("after"), p["limit"]) for p in pages] == [(None, "2"), ("2", "2")]
        assert [d.event for d in client.webhook_deliveries(listed.id, after=2)] == [3]
        client.delete_webhook(listed)
        assert api.requests[-1].method == "DELETE"
        with pytest.raises(tvbo.NotFound):
            client.webhook("nope/../x")
        assert api.requests[-1].url.raw_path == b"/v1/webhooks/nope%2F..%2Fx"


def test_the_async_client_webhook_calls() -> None:
    api = Api()

    async def main() -> None:
        transport = httpx.MockTransport(api)
        async with tvbo.AsyncClient("http://tvbo", "k", transport=transport) as client:
            made = await client.create_webhook("https://hooks.example.com/tvbo")
            assert made.secret == "gen"
            (listed,) = await client.webhooks()
            assert await client.webhook(listed) == listed
            assert (await client.ping_webhook(listed)).delivered is False
            events = [d.event async for d in client.webhook_deliveries(listed, page_size=2)]
            assert events == [1, 2, 3]
            await client.delete_webhook(listed.id)
            with pytest.raises(tvbo.InvalidField):
                await client.create_webhook("http://10.0.0.1/hook")

    asyncio.run(main())
