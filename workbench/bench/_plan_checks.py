"""The sweep plan's checks: one per parameter, each returning the normalised value or raising its one message.

Every message names the parameter and says what to give instead. :class:`~workbench.bench._plan.SweepPlan`
and :class:`~workbench.bench._closed_loop.ClosedLoop` run them on construction; the limits they enforce
(:data:`MAX_CONCURRENCY`, :data:`MAX_REQUESTS_PER_LEVEL`, :data:`MAX_TOKENS`) are stated here once (the
load's fields have their checks in :mod:`workbench.bench._plan_load`). A command line's comma-separated
lists are parsed here too (:func:`parse_number_list`), so their messages match the plan's.

No pandas or numpy (standard library only): the host-side runner imports it where those may be absent.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from workbench.errors import ConfigError

__all__ = ["MAX_CONCURRENCY", "MAX_REQUESTS_PER_LEVEL", "MAX_TOKENS", "check_concurrency_levels", "parse_number_list"]


def _is_whole(value: Any) -> bool:
    """True for an int, or a float with no fractional part (not bool, not inf or NaN)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())


# One check per parameter: each returns the normalised value or raises its one message.


def _as_list(name: str, value: Any, example: str) -> tuple[Any, ...]:
    """``value`` as a tuple; a string, a mapping or a lone number is refused, naming ``name``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ConfigError(f"{name} must be a list, e.g. {example}; got {value!r} ({type(value).__name__})")
    return tuple(value)


def _no_repeats(name: str, values: Sequence[Any], example: str) -> None:
    """Refuse a list that names a value twice: a level measured twice is not two repeats of it
    (they share a seed and a prompt order), yet it would be stored and shown as n=2 with an interval."""
    seen, twice = set(), []
    for value in values:
        if value in seen and value not in twice:
            twice.append(value)
        seen.add(value)
    if twice:
        raise ConfigError(
            f"{name} names {', '.join(repr(v) for v in twice)} more than once in {list(values)!r}; "
            f"give each value once, e.g. {example} (for several measurements of a level use "
            "repeats, which gives each its own seed and prompt order)"
        )


#: The most requests in flight a level may ask for. Each is one TCP connection and one SSE
#: stream in this client's one event loop; at 4,096 the simulated server already fell 15 s
#: behind its schedule in a 72 s level (issue 24), so far beyond that the client and the
#: machine, not the server, set the timings.
MAX_CONCURRENCY = 16_384

#: The most requests one level may send: its rows are held in memory until the level is stored.
MAX_REQUESTS_PER_LEVEL = 1_000_000

#: The most tokens a prompt (``input_len``) or an output (``max_new_tokens``) may have: 2**20,
#: past the context length of the models served (SGLang refuses a request longer than
#: ``--context-length``), and 8 MB of token ids per random prompt.
MAX_TOKENS = 1_048_576


def check_concurrency_levels(value: Any, name: str = "concurrency_levels") -> tuple[int, ...]:
    """``value`` as a tuple of concurrencies (requests in flight), checked once for every entry point.

    Args:
        value: a list of whole numbers.
        name: the parameter or option named in the message (``--levels`` on a command line).

    Raises:
        ConfigError: not a list, empty, a level that is not a whole number in
            [1, :data:`MAX_CONCURRENCY`], or a level named twice.
    """
    levels = _as_list(name, value, "[1, 2, 4]")
    if not levels:
        raise ConfigError(f"{name} is empty; give at least one concurrency (requests in flight), e.g. [1, 2, 4]")
    for level in levels:
        if not _is_whole(level) or level < 1:
            raise ConfigError(
                f"{name} must be whole numbers >= 1 (requests in flight), got {level!r} "
                f"in {list(levels)!r}; e.g. [1, 2, 4]"
            )
        if level > MAX_CONCURRENCY:
            raise ConfigError(
                f"{name}: concurrency {level!r} is above {MAX_CONCURRENCY:,} requests in flight, the "
                "most one client process can drive without setting the timings itself (one TCP "
                "connection and SSE stream each; the simulator fell 15 s behind its schedule at "
                "4,096); give smaller levels"
            )
    levels = tuple(int(level) for level in levels)
    _no_repeats(name, levels, "[1, 2, 4]")
    return levels


def _concurrency_levels(value: Any) -> tuple[int, ...]:
    return check_concurrency_levels(value)


def parse_number_list(option: str, text: str, convert: Callable[[str], Any], what: str, example: str) -> list[Any]:
    """The comma-separated parts of ``text`` (a command-line option), each through ``convert``.

    Spaces around parts are ignored; ranges, duplicates and bounds are the plan's checks.

    Args:
        option: the option named in the message, e.g. ``"--levels"``.
        text: what the user typed, e.g. ``"1,2,4"``.
        convert: ``int`` or ``float``.
        what, example: the message's description of a part and an example of the whole.

    Raises:
        ConfigError: an empty part (``"1,,2"``, a trailing comma), a part ``convert`` refuses,
            or no part at all.
    """
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts) or not all(parts):
        where = "is empty" if not any(parts) else f"has an empty part (position {parts.index('') + 1})"
        raise ConfigError(f"{option} {where}: it must be comma-separated {what}, e.g. {example}; got {text!r}")
    values = []
    for part in parts:
        try:
            value = convert(part)
        except ValueError:
            raise ConfigError(
                f"{option} must be comma-separated {what}, e.g. {example}; {part!r} is not one (got {text!r})"
            ) from None
        if isinstance(value, float) and math.isinf(value) and part.lower().lstrip("+-") not in ("inf", "infinity"):
            raise ConfigError(
                f"{option}: {part!r} is too large for a number (it overflows to infinity, which is not "
                f"what was typed); give {what} below 1e308, e.g. {example}"
            )
        values.append(value)
    return values


def _request_rates(value: Any) -> tuple[float, ...]:
    rates = _as_list("request_rates", value, "[0.5, 2.0, inf]")
    if not rates:
        raise ConfigError(
            "request_rates is empty; give at least one rate (requests/s), or None for a "
            "closed-loop sweep over concurrency_levels"
        )
    for rate in rates:
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not float(rate) > 0:
            raise ConfigError(
                f"request_rates must be numbers > 0 (engine-time requests/s; inf sends all at once), "
                f"got {rate!r} in {list(rates)!r}"
            )
    rates = tuple(float(rate) for rate in rates)
    _no_repeats("request_rates", rates, "[0.5, 2.0, inf]")
    return rates


def _requests_count(value: Any, where: str) -> int:
    if not _is_whole(value) or value < 1:
        raise ConfigError(
            f"requests_per_level must be a whole number >= 1 (or a function of the concurrency "
            f"returning one), got {value!r} for {where}"
        )
    if value > MAX_REQUESTS_PER_LEVEL:
        raise ConfigError(
            f"requests_per_level {value!r} for {where} is above {MAX_REQUESTS_PER_LEVEL:,}, the most "
            "one level may send (its rows are held in memory until the level is stored); split the "
            "work into repeats or levels"
        )
    return int(value)


def _tokens(name: str, value: Any, meaning: str) -> int:
    """A token count in [1, :data:`MAX_TOKENS`]."""
    count = _whole_at_least(name, value, 1, meaning)
    if count > MAX_TOKENS:
        raise ConfigError(
            f"{name} {count:,} is above {MAX_TOKENS:,} tokens, past the context length of the models "
            "served (SGLang refuses a request longer than --context-length); give a smaller count"
        )
    return count


def _requests_reach_concurrency(levels: Sequence[int], counts: Sequence[int]) -> None:
    """Refuse a closed-loop level that sends fewer requests than its concurrency.

    Such a level never has ``concurrency`` requests in flight (at most ``count``), so
    storing it under its concurrency would relabel a lighter load; the findings would
    then name the wrong concurrency.
    """
    short = [(c, n) for c, n in zip(levels, counts) if n < c]
    if short:
        c, n = short[0]
        raise ConfigError(
            f"requests_per_level {n} is below concurrency {c}: a level of {n} requests never has {c} in flight, "
            f"so it cannot measure concurrency {c} (levels short of requests: "
            f"{', '.join(f'concurrency={c} with {n}' for c, n in short)}); give requests_per_level >= "
            f"{max(c for c, _ in short)}, or None for the default max(16, 2 * concurrency), or drop those levels"
        )


def _whole_at_least(name: str, value: Any, minimum: int, meaning: str) -> int:
    if not _is_whole(value) or value < minimum:
        raise ConfigError(f"{name} must be a whole number >= {minimum} ({meaning}), got {value!r}")
    return int(value)


def _seed(value: Any) -> int:
    if not _is_whole(value):
        raise ConfigError(f"seed must be an integer (it seeds the prompt order and arrivals), got {value!r}")
    return int(value)


def _repeats(value: Any) -> int:
    return _whole_at_least(
        "repeats",
        value,
        1,
        "how many times each level is measured, each with its own seed "
        "and prompt order; 3 or more give a 95% interval worth reading",
    )


def _time_scale(value: Any) -> float | Literal["auto"]:
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"time_scale must be a finite number > 0 (engine seconds per wall second; 1.0 for a "
            f"real server) or 'auto' (what a simulated server reports), got {value!r}"
        )
    return float(value)


def _timeout_s(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) > 0:
        raise ConfigError(f"timeout_s must be a number of seconds > 0, or None for no limit, got {value!r}")
    return float(value)


def _max_concurrency(value: Any, mode: str) -> int | None:
    if value is None:
        return None
    if mode == "closed":
        raise ConfigError(
            "max_concurrency caps an open-loop sweep (request_rates) only; in a closed loop the "
            "concurrency is the level, so leave max_concurrency None"
        )
    return _whole_at_least("max_concurrency", value, 1, "requests in flight; None for no cap")


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
    return value


def _sampling_params(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"extra_sampling_params must be a mapping of SGLang sampling params (e.g. {{'top_p': 0.9}}), got {value!r}"
        )
    return dict(value)
