"""Timing checks that a loaded machine can disturb, tried again before they fail.

A test that measures a few tens of milliseconds (a stream's gaps, an open loop's start times) is
disturbed when the scheduler takes its thread away for longer than that: on 2 cores shared with other
work a 50-100 ms preemption is ordinary. Such a try says nothing about the code, so it is run again; a
real fault (a stamp not used, a schedule not followed) fails every try, and the failure shows them all.
Only the measurement is repeated, never loosened.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Tries before the check fails: three disturbed tries in a row are rare even at a load of 8 on 2 cores.
TRIES = 3


def until_undisturbed(measure: Callable[[], T], check: Callable[[T], None], tries: int = TRIES) -> T:
    """``measure()`` then ``check(result)`` (raises AssertionError), up to ``tries`` times.

    Returns the first result that passes; raises AssertionError naming each try's failure when none does.
    """
    failures = []
    for _ in range(tries):
        result = measure()
        try:
            check(result)
        except AssertionError as failed:
            failures.append(str(failed) or repr(failed))
            continue
        return result
    raise AssertionError(
        f"failed in all {tries} tries (a real fault, not one disturbed measurement):\n"
        + "\n".join(f"  try {i + 1}: {f}" for i, f in enumerate(failures))
    )
