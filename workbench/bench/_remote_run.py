"""Host-side load generator: run one sweep plan against a server on this host's loopback.

Usage (started detached by :mod:`workbench.bench._onhost`, from the workbench package
bundle on ``PYTHONPATH``)::

    python -m workbench.bench._remote_run --plan PLAN.json --results RESULTS.jsonl \\
        --url http://127.0.0.1:30000 [--units '[[0,0],[0,1],[1,0]]']

``PLAN.json`` is a :meth:`SweepPlan.to_json <workbench.bench._plan.SweepPlan.to_json>`
object (prompt texts included, so the host needs no data files), read back into the
same plan with :meth:`~workbench.bench._plan.SweepPlan.from_json`. ``--units`` (JSON
``[[repeat, level_index], ...]``) picks the units to measure, in order (default: all).
The sweep is the
one in :mod:`workbench.bench._measure`, and every event and request is written to
``RESULTS.jsonl`` as it is measured (:mod:`workbench.bench._sweeplog`); the file is
created exclusively, never appended to. Needs only the standard library and aiohttp
(SGLang's environment has it): nothing here imports pandas, numpy or tqdm.

Standard output (the runner's log) gets one progress line per level for people to
read; the workbench follows the results file, not these lines.

Exit status: 0 every level measured; 1 the sweep stopped early (the results file's
last line says why); 2 bad arguments or an unreadable plan; 143 stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import aiohttp

from workbench.bench._measure import LevelMeasured, measure_sweep, open_session
from workbench.bench._plan import SweepPlan
from workbench.bench._record import RequestRecord
from workbench.bench._sweeplog import SweepLogWriter
from workbench.errors import ConfigError, WorkbenchError

__all__ = ["main", "run_plan"]

PREFIX = "[workbench sweep]"


class Stopped(Exception):
    """SIGTERM arrived (the workbench stopped the runner)."""


def _say(text: str) -> None:
    print(f"{PREFIX} {text}", flush=True)


def _runner_facts() -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "python": platform.python_version(),
        "executable": sys.executable,
        "aiohttp": aiohttp.__version__,
        "hostname": platform.node(),
    }


async def run_plan(
    base_url: str, plan: SweepPlan, writer: SweepLogWriter, units: list[tuple[int, int]] | None = None
) -> None:
    """Measure ``plan`` against ``base_url``, writing every request and event with ``writer``.

    Raises:
        ConfigError, BenchmarkError: as :func:`~workbench.bench._measure.measure_sweep`.
    """
    counts: dict[int | None, list[int]] = {}

    def on_request(level_index: int | None, record: RequestRecord) -> None:
        writer.request(level_index, record)
        done, failed = counts.setdefault(level_index, [0, 0])
        counts[level_index] = [done + 1, failed + (not record.ok)]

    facts = _runner_facts()
    async with open_session(plan.max_streams) as session:
        # the runner is on the server's host: its GPUs are the server's
        events = measure_sweep(session, base_url, plan, on_request=on_request, units=units, gpu_telemetry=True)
        try:
            async for event in events:
                writer.event(event, runner=facts)
                if isinstance(event, LevelMeasured):
                    done, failed = counts.get(event.index, [0, 0])
                    _say(
                        f"level {event.index + 1}/{plan.num_levels} {plan.unit_label(event.unit)}: "
                        f"{done} requests, {failed} failed"
                    )
        finally:
            await events.aclose()


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workbench.bench._remote_run",
        description="Run a workbench sweep plan against a server on this host.",
    )
    parser.add_argument("--plan", required=True, help="sweep plan JSON file (SweepPlan.to_json)")
    parser.add_argument("--results", required=True, help="results file to create (JSON Lines; must not exist)")
    parser.add_argument("--url", required=True, help="server root URL, e.g. http://127.0.0.1:30000")
    parser.add_argument("--units", default=None, help="JSON [[repeat, level_index], ...] to measure (default: all)")
    return parser.parse_args(argv)


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM outside the event loop (while the plan is read or the loop starts)."""
    raise Stopped("stopped by SIGTERM")


async def _run_until_sigterm(
    base_url: str, plan: SweepPlan, writer: SweepLogWriter, units: list[tuple[int, int]] | None
) -> None:
    """:func:`run_plan`, ended by SIGTERM through the loop: the sweep task is cancelled (its ``finally`` blocks
    close the streams) and :class:`Stopped` raised here.

    A handler installed with ``signal.signal`` that raises would raise inside whatever callback the loop
    happens to run, where asyncio logs and drops the exception ("Exception in callback ...") and the sweep
    went on to exit 0; the loop's own handler (``add_signal_handler``) runs between callbacks.

    Raises:
        Stopped: SIGTERM arrived.
    """
    loop = asyncio.get_running_loop()
    sweep = asyncio.current_task()
    assert sweep is not None
    stopped: list[bool] = []

    def on_sigterm() -> None:
        stopped.append(True)
        sweep.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        await run_plan(base_url, plan, writer, units)
    except asyncio.CancelledError:
        if stopped:
            raise Stopped("stopped by SIGTERM") from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _on_sigterm)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep described by the command line; returns the exit status (see module docstring)."""
    args = _parse(argv)
    try:
        with open(args.plan, encoding="utf-8") as fh:
            plan = SweepPlan.from_json(json.load(fh))
        units = None if args.units is None else [(int(r), int(i)) for r, i in json.loads(args.units)]
    except (OSError, ValueError, TypeError, ConfigError) as exc:
        print(f"{PREFIX} cannot use the plan {args.plan}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    try:
        out = open(args.results, "x", encoding="utf-8")
    except OSError as exc:
        print(f"{PREFIX} cannot create the results file {args.results}: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    with out:
        writer = SweepLogWriter(out)
        _say(f"pid {os.getpid()}: {plan.num_levels} levels, {plan.total_requests} requests against {args.url}")
        try:
            asyncio.run(_run_until_sigterm(args.url, plan, writer, units))
        except Stopped as exc:
            writer.failed("Stopped", str(exc))
            _say(str(exc))
            return 143
        except WorkbenchError as exc:
            writer.failed(type(exc).__name__, str(exc))
            _say(f"failed: {type(exc).__name__}: {exc}")
            return 1
        except Exception as exc:  # noqa: BLE001 - the runner's boundary: the workbench reads the cause from the file
            writer.failed(type(exc).__name__, str(exc), traceback.format_exc()[-4000:])
            _say(f"failed: {type(exc).__name__}: {exc}")
            return 1
        writer.finished()
        _say("finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
