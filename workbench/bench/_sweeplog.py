"""The results file of a sweep run on the GPU host: JSON Lines, written as the sweep measures.

The host-side runner (:mod:`workbench.bench._remote_run`) writes it with
:class:`SweepLogWriter`; the workbench reads it back with :class:`SweepLogReader`,
which turns the lines into the same :mod:`~workbench.bench._measure` events the local
sweep consumes, so both produce identical tables. Standard library only (the runner
imports it on a host without pandas).

Lines, in order (one JSON object each)::

    {"type": "started", "plan": {...}, "base_url": "http://127.0.0.1:30000", "time_scale": 10.0,
     "server_info": {...} | null, "runner": {"pid": 4242, "python": "3.11.7", "aiohttp": "3.9.5", "hostname": "gpu1"}}
    {"type": "request", "level_index": null, "record": {...}}     # warmup requests, as each ends
    {"type": "warmup", "requests": 1}
    {"type": "request", "level_index": 0, "record": {...}}        # level 0's requests, as each ends
    {"type": "level", "level_index": 0, "repeat": 0, "requests": 8, "flush": {...} | null,
     "server_info": {"info": {...} | null, "route": "/server_info", "error": null}, "sim_lag_s": 0.0 | null}
    ...
    {"type": "finished"}
      or
    {"type": "failed", "error_type": "BenchmarkError", "message": "...", "traceback": "..." | null}

``plan`` is :meth:`SweepPlan.to_json <workbench.bench._plan.SweepPlan.to_json>` (prompt
texts included), read back into the same plan. A ``record`` holds every :class:`~workbench.bench._record.RequestRecord` field, NaN
as ``null``. A level's request lines come before its level line, whose ``requests``
count checks them. Text is ASCII (``json.dumps`` defaults); an infinite request rate
is written ``Infinity``, which Python's json reads back. Each line is flushed as
written, so a reader (or a later reconnect) sees every request measured so far.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import IO, Any

from workbench.bench._measure import LevelMeasured, SweepEvent, SweepStarted, WarmupMeasured
from workbench.bench._plan import SweepPlan
from workbench.bench._request_record import RequestRecord, record_from_json, record_to_json
from workbench.bench._server_api import FlushOutcome, ServerInfoOutcome
from workbench.errors import BenchmarkError, ConfigError

__all__ = ["SweepLogReader", "SweepLogWriter"]


def _nan_to_none(value: float) -> float | None:
    return None if isinstance(value, float) and math.isnan(value) else value


class SweepLogWriter:
    """Writes the results file, one flushed line per call.

    Args:
        stream: a text file opened for writing (the runner creates it exclusively).
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def _line(self, obj: dict[str, Any]) -> None:
        self._stream.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._stream.flush()

    def request(self, level_index: int | None, record: RequestRecord) -> None:
        """One finished request (``level_index`` None: warmup)."""
        self._line({"type": "request", "level_index": level_index, "record": record_to_json(record)})

    def event(self, event: SweepEvent, *, runner: dict[str, Any] | None = None) -> None:
        """A :mod:`~workbench.bench._measure` event (its requests were written with :meth:`request`).

        Args:
            event: the event.
            runner: facts about the runner for the ``started`` line (pid, python version, ...).
        """
        if isinstance(event, SweepStarted):
            self._line(
                {
                    "type": "started",
                    "plan": event.plan.to_json(),
                    "base_url": event.base_url,
                    "time_scale": event.time_scale,
                    "server_info": event.server_info,
                    "runner": runner or {},
                }
            )
        elif isinstance(event, WarmupMeasured):
            self._line({"type": "warmup", "requests": len(event.records)})
        else:
            self._line(
                {
                    "type": "level",
                    "level_index": event.index,
                    "repeat": event.repeat,
                    "requests": len(event.records),
                    "flush": None if event.flush is None else dataclasses.asdict(event.flush),
                    "server_info": dataclasses.asdict(event.server_info),
                    "sim_lag_s": _nan_to_none(event.sim_lag_s),
                    "observations": event.observations,
                    "observe_problems": event.observe_problems,
                }
            )

    def finished(self) -> None:
        """The last line of a sweep that measured every level."""
        self._line({"type": "finished"})

    def failed(self, error_type: str, message: str, traceback: str | None = None) -> None:
        """The last line of a sweep that stopped early."""
        self._line({"type": "failed", "error_type": error_type, "message": message, "traceback": traceback})


class SweepLogReader:
    """Turns the results file's lines back into events, as they arrive.

    Feed it complete lines (any number at a time, in file order); it returns the
    events they complete. Request lines are held until their level's line arrives.

    Args:
        on_request: called with ``(level_index, record)`` for each request line
            (``None``: warmup), e.g. to advance a progress bar.
        source: names the file in error messages.

    Attributes:
        started: the :class:`SweepStarted` event once read (None before).
        finished: the ``finished`` line was read.
        failure: the ``failed`` line's object once read (``error_type``, ``message``,
            ``traceback``), else None.
        lines: how many lines were read.
    """

    def __init__(
        self,
        *,
        on_request: Callable[[int | None, RequestRecord], None] | None = None,
        source: str = "the sweep results file",
    ) -> None:
        self._on_request = on_request
        self._source = source
        self._pending: dict[int | None, list[RequestRecord]] = {}
        self.started: SweepStarted | None = None
        self.finished = False
        self.failure: dict[str, Any] | None = None
        self.lines = 0

    @property
    def done(self) -> bool:
        """True once the last line (``finished`` or ``failed``) was read."""
        return self.finished or self.failure is not None

    def feed(self, text: str) -> list[SweepEvent]:
        """Events completed by ``text`` (complete lines; a trailing partial line is an error).

        Raises:
            BenchmarkError: a line is not valid JSON or not a known line type, or a
                level's request lines do not match its count.
        """
        if text and not text.endswith("\n"):
            raise BenchmarkError(f"{self._source}: feed complete lines only (got a partial line {text[-80:]!r})")
        events: list[SweepEvent] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            self.lines += 1
            try:
                obj = json.loads(line)
                event = self._take(obj)
            except (ValueError, KeyError, TypeError, ConfigError) as exc:
                raise BenchmarkError(
                    f"{self._source}, line {self.lines}: not a sweep results line "
                    f"({type(exc).__name__}: {exc}): {line[:200]!r}"
                ) from exc
            if event is not None:
                events.append(event)
        return events

    def _take(self, obj: dict[str, Any]) -> SweepEvent | None:
        kind = obj["type"]
        if kind == "request":
            record = record_from_json(obj["record"])
            self._pending.setdefault(obj["level_index"], []).append(record)
            if self._on_request is not None:
                self._on_request(obj["level_index"], record)
            return None
        if kind == "started":
            self.started = SweepStarted(
                plan=SweepPlan.from_json(obj["plan"]),
                base_url=str(obj["base_url"]),
                time_scale=float(obj["time_scale"]),
                server_info=obj["server_info"],
            )
            return self.started
        if kind == "warmup":
            return WarmupMeasured(records=self._records(None, obj["requests"]))
        if kind == "level":
            flush = obj["flush"]
            sim_lag = obj["sim_lag_s"]
            return LevelMeasured(
                index=obj["level_index"],
                records=self._records(obj["level_index"], obj["requests"]),
                flush=None if flush is None else FlushOutcome(**flush),
                server_info=ServerInfoOutcome(**obj["server_info"]),
                sim_lag_s=math.nan if sim_lag is None else float(sim_lag),
                repeat=int(obj.get("repeat", 0)),
                observations=list(obj.get("observations", [])),
                observe_problems=list(obj.get("observe_problems", [])),
            )
        if kind == "finished":
            self.finished = True
            return None
        if kind == "failed":
            self.failure = {
                "error_type": str(obj["error_type"]),
                "message": str(obj["message"]),
                "traceback": obj.get("traceback"),
            }
            return None
        raise ValueError(f"unknown line type {kind!r}")

    def _records(self, level_index: int | None, count: int) -> list[RequestRecord]:
        records = self._pending.pop(level_index, [])
        if len(records) != count:
            what = "warmup" if level_index is None else f"level {level_index}"
            raise ValueError(f"{what} announces {count} requests but {len(records)} request lines came before it")
        return sorted(records, key=lambda r: r.request_index if r.request_index is not None else -1)
