"""tvbo.verify_signature: the ``Tvbo-Signature`` of a webhook delivery (no server)."""

from __future__ import annotations

import hashlib
import hmac
import time

import pytest

import tvbo

SECRET = "whsec_test_secret_0123"
T = 1700000000
BODY = b'{"id":1}'
# HMAC-SHA256(key=SECRET, msg=b'1700000000.{"id":1}'), computed once and kept: a change
# of the scheme on either side breaks this vector.
FIXED = "b359aca471a76d908e046c23b6367555fdb372fb6e4cbf8d14568613b79a2c89"


def sign(secret: str, t: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


def test_the_fixed_vector() -> None:
    assert sign(SECRET, T, BODY) == FIXED
    tvbo.verify_signature(SECRET, BODY, f"t={T},v1={FIXED}", now=T)


def test_a_signature_made_now_verifies_on_the_clock() -> None:
    body = b'{"id":42,"kind":"model-reset","data":{"resets":1}}'
    t = int(time.time())
    tvbo.verify_signature(
        "another-secret-16+", body, f"t={t},v1={sign('another-secret-16+', t, body)}"
    )


@pytest.mark.parametrize(
    "header, message",
    [
        (f"t={T},v1={sign(SECRET, T, BODY + b' ')}", "no signature matches"),
        (f"t={T},v1={sign('whsec_other_secret_99', T, BODY)}", "no signature matches"),
        (f"t={T + 1},v1={FIXED}", "no signature matches"),  # the timestamp is signed too
        (f"t={T},v1={FIXED[:-1]}", "no signature matches"),
        (f"t={T},v1=", "no signature matches"),
        (f"v1={FIXED}", "no timestamp"),
        (f"t=soon,v1={FIXED}", "no timestamp"),
        (f"t={T}", "no v1= signature"),
        (f"t={T},v0={FIXED}", "no v1= signature"),
        (f"t={T},t={T},v1={FIXED}", "more than one t="),
        ("", "no Tvbo-Signature header"),
        ("garbage", "no timestamp"),
    ],
)
def test_a_wrong_or_malformed_signature_is_refused(header: str, message: str) -> None:
    with pytest.raises(tvbo.SignatureError, match=message):
        tvbo.verify_signature(SECRET, BODY, header, now=T)


def test_any_matching_v1_suffices_during_a_rotation() -> None:
    old = sign("whsec_old_secret_000", T, BODY)
    header = f"t={T},v1={old},v1={FIXED}"
    tvbo.verify_signature(SECRET, BODY, header, now=T)
    tvbo.verify_signature("whsec_old_secret_000", BODY, header, now=T)
    tvbo.verify_signature(SECRET, BODY, f" t={T} , v1={FIXED} ", now=T)  # spaces
    with pytest.raises(tvbo.SignatureError):
        tvbo.verify_signature("whsec_third_secret_0", BODY, header, now=T)


def test_the_timestamp_must_be_within_the_tolerance() -> None:
    header = f"t={T},v1={FIXED}"
    tvbo.verify_signature(SECRET, BODY, header, now=T + 300)
    tvbo.verify_signature(SECRET, BODY, header, now=T - 300)
    with pytest.raises(tvbo.SignatureError, match="outside the tolerance of 300 s"):
        tvbo.verify_signature(SECRET, BODY, header, now=T + 301)
    with pytest.raises(tvbo.SignatureError, match="outside the tolerance"):
        tvbo.verify_signature(SECRET, BODY, header, now=T - 301)  # from the future
    tvbo.verify_signature(SECRET, BODY, header, now=T + 3600, tolerance=3600)
    with pytest.raises(tvbo.SignatureError, match="outside the tolerance"):
        tvbo.verify_signature(SECRET, BODY, header)  # the clock: 2023 is long past


def test_the_error_is_a_tvbo_error_and_the_body_must_be_bytes() -> None:
    assert issubclass(tvbo.SignatureError, tvbo.TvboError)
    assert not issubclass(tvbo.SignatureError, tvbo.ApiError)
    with pytest.raises(TypeError, match="raw request body"):
        tvbo.verify_signature(SECRET, BODY.decode(), f"t={T},v1={FIXED}", now=T)  # type: ignore[arg-type]


def test_signatures_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    other = sign("whsec_old_secret_000", T, BODY)
    tvbo.verify_signature(SECRET, BODY, f"t={T},v1={FIXED},v1={other}", now=T)
    assert seen == [(FIXED.encode(), FIXED.encode()), (FIXED.encode(), other.encode())]
