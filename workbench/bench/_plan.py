"""The sweep plan: what a sweep sends, built and validated once at the edge, then passed whole.

A notebook (:func:`workbench.benchmark_variant`) or a script builds a
:class:`SweepPlan` with :meth:`SweepPlan.build` from the user's parameters; every
layer below takes it unchanged: :func:`~workbench.bench._sweep.run_sweep`, the
host-side runner (:mod:`workbench.bench._remote_run`, which reads it back from
:meth:`SweepPlan.to_json`), the measuring core and the run manifest (key ``plan``,
:meth:`SweepPlan.to_json` with ``prompt_texts=False``).

Defaults live here once: :data:`DEFAULT_CONCURRENCY_LEVELS` and
:func:`default_requests_per_level`. Each parameter has one check and one message,
which names the parameter and says what to give instead: the checks are
:mod:`workbench.bench._plan_checks`, the load's fields (backend, sampling, prompt length,
the swept dimension) :mod:`workbench.bench._plan_load`, and the prompt set's resolution
:mod:`workbench.bench._prompt_set`. A sweep run on a model instead of a server takes the
plan's closed-loop part, :class:`~workbench.bench._closed_loop.ClosedLoop`.

No pandas or numpy (standard library and the bench's stdlib/aiohttp modules): the
host-side runner imports it where those may be absent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

from workbench.bench._client import DEFAULT_REQUEST_TIMEOUT_S
from workbench.bench._plan_checks import (
    _concurrency_levels,
    _flag,
    _max_concurrency,
    _repeats,
    _request_rates,
    _requests_count,
    _requests_reach_concurrency,
    _sampling_params,
    _seed,
    _time_scale,
    _timeout_s,
    _tokens,
    _whole_at_least,
)
from workbench.bench._plan_load import LOAD_DEFAULTS, SWEEP_DIMENSIONS, _check_load
from workbench.bench._prompt_set import PromptSet, _prompts, _resolve_prompt_set
from workbench.bench._prompts import DEFAULT_RANDOM_VOCAB_SIZE, Prompt
from workbench.errors import ConfigError

__all__ = [
    "DEFAULT_CONCURRENCY_LEVELS",
    "DEFAULT_MAX_NEW_TOKENS",
    "RequestsPerLevel",
    "SweepPlan",
    "Unit",
    "default_requests_per_level",
    "repeat_seed",
]

#: Closed-loop levels when none are given (requests in flight).
DEFAULT_CONCURRENCY_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
#: Output tokens per request when none are given.
DEFAULT_MAX_NEW_TOKENS = 256

#: Requests per level: one count for every level, a function of the concurrency, or None (the default rule).
RequestsPerLevel = Union[int, Callable[[int], int], None]


#: One unit of a sweep's work: ``(repeat, level_index)``; what a run records as done.
Unit = tuple[int, int]


def repeat_seed(seed: int, repeat: int) -> int:
    """The seed of repeat ``repeat`` of a plan seeded ``seed``: ``seed`` itself for repeat 0.

    Later repeats take the first 8 bytes of ``sha256("<seed>/<repeat>")`` (big-endian,
    below 2**63), so every repeat draws its own prompt order and arrivals, the same on
    every machine and Python version, and none collides with ``seed + 1`` (the open
    loop's arrival seed of repeat 0).
    """
    if repeat == 0:
        return seed
    digest = hashlib.sha256(f"{seed}/{repeat}".encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def default_requests_per_level(concurrency: int) -> int:
    """``max(16, 2 * concurrency)``: the requests a level sends unless told otherwise.

    Two requests per slot let the closed loop pass its start-up burst of prefills and
    reach a steady mix of prefill and decode; at least 16 keep the sampling error of a
    low-concurrency level near 1% (per-request speed varies with the prompt and its
    acceptance). The simulator's calibration (:mod:`workbench.sim._calibrate`) uses
    this same rule, so its figures describe the sweep the notebooks run.
    """
    return max(16, 2 * concurrency)


#: The longest an open-loop level's arrivals may take, in hours of wall time: a rate so low that the level's
#: requests would arrive over longer (a typo such as 1e-9, or requests per hour taken for requests per second)
#: is refused before anything is launched, instead of a level that never ends.
MAX_OPEN_LOOP_LEVEL_H = 24.0


def _arrivals_within_bound(plan: "SweepPlan") -> None:
    """Refuse a request rate whose level's requests would arrive over more than :data:`MAX_OPEN_LOOP_LEVEL_H`.

    A level at ``rate`` requests/s (engine time) with ``n`` requests lasts about ``n / rate`` engine
    seconds, ``n / rate / time_scale`` wall seconds (``time_scale="auto"`` counts as 1).

    Raises:
        ConfigError: naming the rate, the level's request count, how long it would take and the lowest rate
            the bound allows.
    """
    scale = plan.time_scale if isinstance(plan.time_scale, (int, float)) else 1.0
    bound_s = MAX_OPEN_LOOP_LEVEL_H * 3600.0
    for i in range(plan.num_levels):
        rate, count = plan.level_request_rate(i), plan.requests_per_level[i]
        wall_s = count / rate / scale
        if wall_s > bound_s:
            lowest = count / (bound_s * scale)
            raise ConfigError(
                f"request_rates: {rate:g} req/s is too low: its level's {count} requests would arrive over about "
                f"{wall_s / 3600:,.0f} hours of wall time (at time scale {scale:g}), and a level may take at most {MAX_OPEN_LOOP_LEVEL_H:g} hours; give rates of at least {lowest:.3g} req/s "
                "(engine time), or fewer requests per level"
            )


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """Everything a sweep sends, validated and JSON-ready (prompt texts included).

    Build it with :meth:`build` (the user's parameter names, the defaults, prompt sets
    read, requests per level resolved); constructing it directly, or with
    :meth:`from_json`, runs the same checks. A parameter keeps its name from the
    notebook to the plan and the manifest's ``plan``; in the stored rows each request
    and each level carries the one value it ran at (the field's term, in the singular):

    - ``concurrency_levels`` -> row column ``concurrency`` (and ``level_index``, the
      position in the plan);
    - ``request_rates`` -> ``request_rate_req_s`` (``inf`` in a closed loop), with
      ``max_concurrency`` -> ``concurrency`` in an open loop;
    - ``requests_per_level`` -> a level's ``completed`` + ``failed``;
    - ``prompt_set`` (the manifest adds ``prompt_ids``) -> a request's ``prompt_id``;
    - ``time_scale`` -> ``time_scale`` (the resolved number, also the manifest's
      top-level ``time_scale``);
    - ``repeats`` -> ``repeat`` (0 to ``repeats - 1``): a level is measured once per
      repeat, so ``levels.parquet`` has one row per (level, repeat).

    Attributes:
        concurrency_levels: closed loop: requests in flight per level, in order
            (empty for an open-loop sweep).
        requests_per_level: requests each level sends, one count per level.
        prompts: the prompts the seeded schedule draws from (texts included).
        request_rates: open loop: engine-time requests/s per level (``inf`` = all at
            once); None for a closed-loop sweep.
        max_concurrency: open loop only: cap on requests in flight (None: none).
        prompt_set: the set name or path the prompts were read from (None: given directly).
        max_new_tokens: output tokens per request (``ignore_eos`` is on).
        seed: seeds the prompt schedule (``random.Random(repeat_seed(seed, r))``, the
            same at every level of repeat ``r``) and open-loop arrivals
            (``random.Random(repeat_seed(seed, r) + 1)`` per level); see :func:`repeat_seed`.
        repeats: how many times each level is measured (>= 1), each repeat with its own
            seed and prompt order (:meth:`units` lists the work in order).
        time_scale: engine seconds per wall second, or ``"auto"`` (what a simulated
            server reports in ``/server_info``, else 1.0).
        warmup_requests: unmeasured requests before the first level (0: none).
        flush: ``POST /flush_cache`` before each level.
        unique_prompts: start every request's text with ``[request <level>-<index>]``
            so a repeated prompt misses SGLang's radix (prefix) cache.
        timeout_s: per-request limit (wall seconds; None: none).
        extra_sampling_params: merged into every request's ``sampling_params`` (top level
            of the OpenAI bodies).
        backend: the route requests go to: ``"generate"`` (SGLang's native ``/generate``),
            ``"completions"`` (``/v1/completions``) or ``"chat"`` (``/v1/chat/completions``)
            -> row column ``backend``.
        model: the OpenAI ``model`` field (None: what ``/server_info`` reports as
            ``served_model_name`` or ``model_path``, else ``"default"``).
        temperature: sampling temperature (0.0: greedy) -> ``temperature``.
        ignore_eos: keep generating past EOS, so every request has ``max_new_tokens``.
        input_len: send random token ids of this many tokens instead of ``prompts``
            (:func:`~workbench.bench._prompts.random_token_prompts`, seeded by the repeat's
            seed; fresh prompts per request) -> ``input_len``; None: the prompt set.
        random_vocab_size: random token ids are drawn below this (the served model's
            vocabulary must be at least this large).
        sweep: a dimension varied besides the concurrency (:data:`SWEEP_DIMENSIONS`:
            ``input_len``, ``output_len`` = ``max_new_tokens``, ``temperature``), or None.
        sweep_values: its values. The levels are then the grid ``sweep_values x
            concurrency_levels`` (or ``x request_rates``), value-major: level ``i`` runs
            at ``sweep_values[i // n]`` and ``concurrency_levels[i % n]``; each row carries
            ``sweep`` (the dimension's name), ``sweep_value`` and the dimension's own column.

    Raises:
        ConfigError: on construction, naming the first invalid parameter.
    """

    concurrency_levels: tuple[int, ...]
    requests_per_level: tuple[int, ...]
    prompts: tuple[Prompt, ...]
    request_rates: tuple[float, ...] | None = None
    max_concurrency: int | None = None
    prompt_set: str | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    seed: int = 0
    time_scale: float | Literal["auto"] = 1.0
    warmup_requests: int = 1
    flush: bool = True
    unique_prompts: bool = False
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S
    extra_sampling_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    repeats: int = 1
    backend: str = "generate"
    model: str | None = None
    temperature: float = 0.0
    ignore_eos: bool = True
    input_len: int | None = None
    random_vocab_size: int = DEFAULT_RANDOM_VOCAB_SIZE
    sweep: str | None = None
    sweep_values: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name, value in _check_load({name: getattr(self, name) for name in LOAD_DEFAULTS}).items():
            put(name, value)

        if self.request_rates is None:
            put("concurrency_levels", _concurrency_levels(self.concurrency_levels))
        else:
            if tuple(self.concurrency_levels):
                raise ConfigError("give concurrency_levels (closed loop) or request_rates (open loop), not both")
            put("concurrency_levels", ())
            put("request_rates", _request_rates(self.request_rates))
        counts = tuple(self.requests_per_level)
        if len(counts) != self.num_levels:
            raise ConfigError(
                f"requests_per_level has {len(counts)} counts for {self.num_levels} levels; give one count per level"
            )
        put("requests_per_level", tuple(_requests_count(n, self.level_label(i)) for i, n in enumerate(counts)))
        _requests_reach_concurrency(self.concurrency_levels, self.requests_per_level)
        put("prompts", tuple(self.prompts) if self.random_input else _prompts(self.prompts))
        put("max_concurrency", _max_concurrency(self.max_concurrency, self.mode))
        if self.prompt_set is not None:
            put("prompt_set", str(self.prompt_set))
        put("max_new_tokens", _tokens("max_new_tokens", self.max_new_tokens, "output tokens per request"))
        put("seed", _seed(self.seed))
        put("time_scale", _time_scale(self.time_scale))
        if self.request_rates is not None:
            _arrivals_within_bound(self)
        put(
            "warmup_requests",
            _whole_at_least(
                "warmup_requests", self.warmup_requests, 0, "requests before the first level; 0 disables the warmup"
            ),
        )
        put("flush", _flag("flush", self.flush))
        put("unique_prompts", _flag("unique_prompts", self.unique_prompts))
        put("timeout_s", _timeout_s(self.timeout_s))
        put("extra_sampling_params", _sampling_params(self.extra_sampling_params))
        put("repeats", _repeats(self.repeats))

    @classmethod
    def build(
        cls,
        *,
        concurrency_levels: Sequence[int] | None = None,
        request_rates: Sequence[float] | None = None,
        max_concurrency: int | None = None,
        requests_per_level: RequestsPerLevel = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        prompt_set: PromptSet = "default",
        seed: int = 0,
        time_scale: float | Literal["auto"] = 1.0,
        warmup_requests: int = 1,
        flush: bool = True,
        unique_prompts: bool = False,
        timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
        extra_sampling_params: Mapping[str, Any] | None = None,
        repeats: int = 1,
        **load: Any,
    ) -> "SweepPlan":
        """A validated plan from the user's parameters (the names the notebooks use).

        Args:
            concurrency_levels: closed-loop levels; None: :data:`DEFAULT_CONCURRENCY_LEVELS`
                (or none, when ``request_rates`` is given).
            request_rates: run open-loop levels at these rates instead (engine-time
                requests/s; ``inf`` = all at once).
            max_concurrency: open loop only: cap on requests in flight.
            requests_per_level: one count for every level, a function of the
                concurrency (called with 1 in the open loop), or None:
                :func:`default_requests_per_level`.
            max_new_tokens: output tokens per request.
            prompt_set: a set name (``data/prompts/<name>.jsonl``), a JSONL path,
                ``"sharegpt:<path>"`` (a ShareGPT-style JSON/JSONL file: the first user turn of
                each conversation), or a sequence of :class:`Prompt` or plain strings (ids
                ``p0``, ``p1``, ...).
            seed, time_scale, warmup_requests, flush, unique_prompts, timeout_s,
                extra_sampling_params, repeats: see the class attributes (an engine's
                default number of repeats is :attr:`workbench.engines.Engine.default_repeats`).
            load: the load fields, by name (:data:`LOAD_DEFAULTS`: ``backend``, ``model``,
                ``temperature``, ``ignore_eos``, ``input_len``, ``random_vocab_size``,
                ``sweep``, ``sweep_values``). With a sweep, ``requests_per_level``'s rule
                is applied to each level of the grid.

        Raises:
            ConfigError: an invalid parameter (one message per mistake, naming it), or
                a prompt set that cannot be read.
        """
        closed: tuple[int, ...] = ()  # the closed loop's concurrencies
        rates: tuple[float, ...] | None = None  # the open loop's request rates
        if request_rates is None:
            closed = _concurrency_levels(
                DEFAULT_CONCURRENCY_LEVELS if concurrency_levels is None else concurrency_levels
            )
        elif concurrency_levels is not None:
            raise ConfigError("give concurrency_levels (closed loop) or request_rates (open loop), not both")
        else:
            rates = _request_rates(request_rates)
        unknown = sorted(set(load) - set(LOAD_DEFAULTS))
        if unknown:
            raise ConfigError(
                f"unknown sweep plan parameters {unknown}; the load parameters are {sorted(LOAD_DEFAULTS)}"
            )
        sweep_values = load.get("sweep_values")
        grid = 1 if sweep_values is None or isinstance(sweep_values, (str, bytes)) else max(1, len(tuple(sweep_values)))
        rule = default_requests_per_level if requests_per_level is None else requests_per_level
        per_level = closed if rates is None else (1,) * len(rates)  # the open loop's rule is called with 1
        counts = tuple(rule(c) if callable(rule) else rule for c in per_level) * grid
        random_input = load.get("input_len") is not None or load.get("sweep") == "input_len"
        prompts, name = ((), None) if random_input else _resolve_prompt_set(prompt_set)
        return cls(
            concurrency_levels=closed,
            requests_per_level=counts,
            prompts=prompts,
            request_rates=rates,
            max_concurrency=max_concurrency,
            prompt_set=name,
            max_new_tokens=max_new_tokens,
            seed=seed,
            time_scale=time_scale,
            warmup_requests=warmup_requests,
            flush=flush,
            unique_prompts=unique_prompts,
            timeout_s=timeout_s,
            extra_sampling_params={} if extra_sampling_params is None else extra_sampling_params,
            repeats=repeats,
            **load,
        )

    @property
    def mode(self) -> Literal["closed", "open"]:
        """``"closed"`` (concurrency levels) or ``"open"`` (request rates)."""
        return "closed" if self.request_rates is None else "open"

    @property
    def num_levels(self) -> int:
        """How many levels the sweep measures (with a sweep dimension: the whole grid)."""
        return self._num_base_levels * (1 if self.sweep_values is None else len(self.sweep_values))

    @property
    def _num_base_levels(self) -> int:
        return len(self.concurrency_levels) if self.request_rates is None else len(self.request_rates)

    @property
    def max_streams(self) -> int:
        """The most requests the sweep can keep in flight at once (for the file-descriptor check)."""
        if self.request_rates is None:
            return max(self.concurrency_levels)
        return self.max_concurrency or max(self.requests_per_level)

    @property
    def random_input(self) -> bool:
        """True when prompts are random token ids (``input_len`` set, or swept)."""
        return self.input_len is not None or self.sweep == "input_len"

    def level_concurrency(self, index: int) -> int | None:
        """Requests in flight at level ``index`` (open loop: ``max_concurrency``, None for no cap)."""
        if self.request_rates is None:
            return self.concurrency_levels[index % self._num_base_levels]
        return self.max_concurrency

    def level_request_rate(self, index: int) -> float:
        """Request rate of level ``index`` (engine-time req/s; ``inf`` in a closed loop)."""
        if self.request_rates is None:
            return math.inf
        return self.request_rates[index % self._num_base_levels]

    def level_settings(self, index: int) -> dict[str, Any]:
        """What level ``index`` sends: ``max_new_tokens``, ``temperature``, ``input_len`` (None: the
        prompt set), ``sweep`` and ``sweep_value`` (None without a sweep dimension)."""
        out = {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "input_len": self.input_len,
            "sweep": self.sweep,
            "sweep_value": None,
        }
        if self.sweep is not None and self.sweep_values is not None:
            value = self.sweep_values[index // self._num_base_levels]
            out[SWEEP_DIMENSIONS[self.sweep]] = value
            out["sweep_value"] = value
        return out

    @property
    def total_requests(self) -> int:
        """Measured requests over all levels and repeats (warmup excluded)."""
        return sum(self.requests_per_level) * self.repeats

    def units(self) -> list[Unit]:
        """Every ``(repeat, level_index)`` of the sweep, in the order a fresh sweep measures them
        (all levels of repeat 0, then of repeat 1, ...)."""
        return [(r, i) for r in range(self.repeats) for i in range(self.num_levels)]

    def seed_of(self, repeat: int) -> int:
        """The seed of repeat ``repeat`` (:func:`repeat_seed`)."""
        return repeat_seed(self.seed, repeat)

    def unit_label(self, unit: Unit) -> str:
        """``"concurrency=4, repeat 2/3"`` (the level's label, plus the repeat when there are several)."""
        repeat, index = unit
        label = self.level_label(index)
        return label if self.repeats == 1 else f"{label}, repeat {repeat + 1}/{self.repeats}"

    def level_label(self, index: int) -> str:
        """Level ``index`` for people: ``"concurrency=4"`` or ``"request_rate=2.5 req/s"``
        (with a sweep dimension: ``"input_len=1024, concurrency=4"``)."""
        if self.request_rates is None:
            label = f"concurrency={self.level_concurrency(index)}"
        else:
            label = f"request_rate={self.level_request_rate(index):g} req/s"
        if self.sweep_values is None:
            return label
        return f"{self.sweep}={self.sweep_values[index // self._num_base_levels]:g}, {label}"

    def to_json(self, *, prompt_texts: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (an infinite rate is ``Infinity``, as :mod:`json` writes it).

        Args:
            prompt_texts: include every prompt (id, category, text), as the host-side
                runner needs; :meth:`from_json` inverts this form. False gives the
                run manifest's record: ``prompt_ids`` and ``prompts_sha256`` (of the
                texts, in order) instead of the texts.
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["concurrency_levels"] = list(self.concurrency_levels)
        out["request_rates"] = None if self.request_rates is None else list(self.request_rates)
        out["requests_per_level"] = list(self.requests_per_level)
        out["extra_sampling_params"] = dict(self.extra_sampling_params)
        for name, default in LOAD_DEFAULTS.items():  # written only when set, so older identities hold
            if out[name] == default:
                del out[name]
        if self.sweep_values is not None:
            out["sweep_values"] = list(self.sweep_values)
        if prompt_texts:
            out["prompts"] = [dataclasses.asdict(p) for p in self.prompts]
        else:
            del out["prompts"]
            out["prompt_ids"] = [p.id for p in self.prompts]
            out["prompts_sha256"] = hashlib.sha256("\0".join(p.text for p in self.prompts).encode("utf-8")).hexdigest()
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "SweepPlan":
        """The plan of a :meth:`to_json` dict (with prompt texts), validated again.

        A dict written before ``repeats`` existed reads as one repeat.

        Raises:
            ConfigError: missing or unknown keys, or invalid values.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        obj = {"repeats": 1, **LOAD_DEFAULTS, **obj}
        if set(obj) != names:
            raise ConfigError(
                f"sweep plan keys must be {sorted(names)}; missing {sorted(names - set(obj))}, "
                f"unknown {sorted(set(obj) - names)}"
            )
        values = dict(obj)
        values["prompts"] = tuple(
            Prompt(**{**p, "input_ids": None if p.get("input_ids") is None else tuple(p["input_ids"])})
            for p in obj["prompts"]
        )
        return cls(**values)
