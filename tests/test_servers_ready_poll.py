"""The ready wait's checks: growing delays, at most 0.5 s apart for a server on this machine."""

from __future__ import annotations

from workbench.servers import _handle as handle
from workbench.servers._watch import wait_until_ready


def _waits(max_poll_s: float, ready_after: int = 12) -> list[float]:
    polls, waits, now = [], [], [0.0]

    def poll(**_: object) -> dict:
        polls.append(1)
        text = "The server is fired up" if len(polls) > ready_after else ""
        return {"alive": True, "ports": [], "log": {"offset": 0, "text": text}}

    def sleep(s: float) -> None:
        waits.append(s)
        now[0] += s

    assert (
        wait_until_ready(
            poll, lambda: None, port=1, limit_s=600, clock=lambda: now[0], sleep=sleep, max_poll_s=max_poll_s
        )
        is None
    )
    return waits


def test_checks_grow_by_half_up_to_the_limit() -> None:
    remote = _waits(2.0)
    assert remote[:3] == [0.25, 0.375, 0.5625] and max(remote) == 2.0
    local = _waits(handle.LOCAL_MAX_POLL_S)
    assert handle.LOCAL_MAX_POLL_S == 0.5 and local[:2] == [0.25, 0.375] and set(local[2:]) == {0.5}
