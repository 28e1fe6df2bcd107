"""Deliver ledger events to subscriber URLs, at least once, with backoff."""

from __future__ import annotations

import hashlib
import hmac
import logging
import random
import time
from dataclasses import dataclass

import httpx

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 12
MAX_DELAY_SECONDS = 300
JITTER_FRACTION = 0.2


@dataclass(frozen=True)
class Delivery:
    subscription_id: int
    url: str
    secret: bytes
    payload: bytes
    attempt: int = 0


def retry_backoff(attempt: int) -> float:
    """Seconds to wait before the next try: exponential, capped, with jitter.

    The jitter spreads retries of many subscribers that failed at the same moment
    (a receiver outage) so they do not all come back in the same second.
    """
    base = min(2**attempt, MAX_DELAY_SECONDS)
    return base + random.uniform(0, base * JITTER_FRACTION)


def sign(secret: bytes, payload: bytes, timestamp: int) -> str:
    message = str(timestamp).encode() + b"." + payload
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def deliver(client: httpx.Client, delivery: Delivery) -> bool:
    """One attempt. True when the receiver acknowledged with a 2xx."""
    timestamp = int(time.time())
    signature = sign(delivery.secret, delivery.payload, timestamp)
    headers = {
        "Content-Type": "application/json",
        "Ledger-Signature": f"t={timestamp},v1={signature}",
    }
    try:
        response = client.post(delivery.url, content=delivery.payload, headers=headers, timeout=10)
    except httpx.TransportError as exc:
        log.warning("webhook transport error", extra={"url": delivery.url, "error": str(exc)})
        return False
    if response.status_code == 410:
        # The receiver says the endpoint is gone for good: stop retrying, disable it.
        disable_subscription(delivery.subscription_id)
        return True
    return 200 <= response.status_code < 300


def next_attempt(delivery: Delivery) -> Delivery | None:
    if delivery.attempt + 1 >= MAX_ATTEMPTS:
        log.error("webhook given up", extra={"subscription": delivery.subscription_id})
        return None
    return Delivery(
        delivery.subscription_id,
        delivery.url,
        delivery.secret,
        delivery.payload,
        delivery.attempt + 1,
    )


def disable_subscription(subscription_id: int) -> None:
    log.info("disabling subscription", extra={"subscription": subscription_id})
