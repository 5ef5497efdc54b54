"""Verifying a webhook delivery's signature (docs/python-client.md, "Verifying a
delivery"). No I/O: a receiver passes the raw body and the ``Tvbo-Signature`` header.

The server signs each delivery with the webhook's secret:
``Tvbo-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>``. The
timestamp is signed with the body, so a captured delivery cannot be replayed once it is
older than the receiver's tolerance; several ``v1=`` entries may appear while a secret is
rotated, and any one matching suffices.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from typing import List, Optional

from .errors import SignatureError

SIGNATURE_HEADER = "Tvbo-Signature"
"""The header carrying the signature."""


def verify_signature(
    secret: str,
    body: bytes,
    header: Optional[str],
    *,
    tolerance: float = 300.0,
    now: Optional[float] = None,
) -> None:
    """Check a delivery: returns None when ``header`` (the ``Tvbo-Signature`` value) signs
    ``body`` (the raw request body, as received: not re-encoded JSON) with ``secret`` at a
    time within ``tolerance`` seconds of ``now`` (default: the clock); raises
    :class:`tvbo.SignatureError` otherwise.

    Signatures are compared in constant time. A delivery may be sent more than once (a
    retry after a lost answer): deduplicate by its ``Tvbo-Event-Id`` header.
    """
    if not isinstance(body, (bytes, bytearray)):
        raise TypeError("body: the raw request body as bytes (not decoded or re-encoded)")
    if not header:
        raise SignatureError(f"no {SIGNATURE_HEADER} header")
    timestamp: Optional[str] = None
    candidates: List[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            if timestamp is not None:
                raise SignatureError(f"{SIGNATURE_HEADER}: more than one t=")
            timestamp = value
        elif key == "v1":
            candidates.append(value)
    if timestamp is None or not timestamp.isascii() or not timestamp.isdigit():
        raise SignatureError(f"{SIGNATURE_HEADER}: no timestamp (t=<unix seconds>)")
    if not candidates:
        raise SignatureError(f"{SIGNATURE_HEADER}: no v1= signature")
    clock = time.time() if now is None else now
    age = clock - int(timestamp)
    if math.isnan(age) or abs(age) > tolerance:
        raise SignatureError(
            f"{SIGNATURE_HEADER}: timestamp {timestamp} is {age:.0f} s from now, "
            f"outside the tolerance of {tolerance:g} s"
        )
    expected = hmac.new(
        secret.encode("utf-8"), timestamp.encode("ascii") + b"." + bytes(body), hashlib.sha256
    ).hexdigest()
    matched = False
    for candidate in candidates:
        # Every candidate is compared (no early exit), each in constant time.
        matched |= hmac.compare_digest(expected.encode("ascii"), candidate.encode("utf-8"))
    if not matched:
        raise SignatureError(f"{SIGNATURE_HEADER}: no signature matches the body")
