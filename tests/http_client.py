"""Tiny HTTP client for tests that talk to real servers: status and body, never raising on 4xx/5xx."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def post_json(url: str, body: dict[str, Any], *, timeout_s: float = 60.0) -> tuple[int, bytes]:
    """``POST`` ``body`` as JSON; ``(HTTP status, raw body)``."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get(url: str, *, timeout_s: float = 60.0) -> tuple[int, bytes]:
    """``GET``; ``(HTTP status, raw body)``."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def sse_events(raw: bytes) -> list[Any]:
    """The ``data:`` payloads of a server-sent-event body: parsed JSON, or the literal ``"[DONE]"``."""
    out: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if block.startswith("data: "):
            payload = block[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out
