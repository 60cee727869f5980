"""Tests for workbench.bench._sweeplog: events written as JSON Lines and read back give identical tables."""

from __future__ import annotations

import asyncio
import io
import math

import pandas as pd
import pytest

from workbench.bench._measure import LevelMeasured, measure_sweep, open_session
from workbench.bench._plan import SweepPlan
from workbench.bench._prompts import Prompt
from workbench.bench._request_record import RequestRecord, record_from_json, record_to_json
from doubles.scripted_server import ScriptedServer, StreamScript
from workbench.bench._sweep import SweepAssembler, SweepResult
from workbench.bench._sweeplog import SweepLogReader, SweepLogWriter
from workbench.errors import BenchmarkError

PROMPTS = [Prompt(f"p{i}", "coding", f"prompt {i}") for i in range(3)]


def _script(body: dict, i: int) -> StreamScript:
    if i % 5 == 3:
        return StreamScript(status=500)
    return StreamScript(first_delay_s=0.002, chunk_tokens=(1, 2, 1), gap_s=0.001, spec_verify_ct=2 if i % 2 else None)


def _measure(url: str, **plan_args) -> tuple[list, str]:
    """The events of one sweep, and the results file a host-side runner would have written for it."""
    plan = SweepPlan.build(prompt_set=PROMPTS, max_new_tokens=4, **plan_args)
    out = io.StringIO()
    writer = SweepLogWriter(out)

    async def go() -> list:
        events = []
        async with open_session() as session:
            async for event in measure_sweep(session, url, plan, on_request=writer.request):
                writer.event(event, runner={"pid": 1})
                events.append(event)
        writer.finished()
        return events

    return asyncio.run(go()), out.getvalue()


def _assemble(events) -> SweepResult:
    assembler = SweepAssembler()
    for event in events:
        assembler.add(event)
    return assembler.result()


def _assert_same(a: SweepResult, b: SweepResult) -> None:
    for name in ("requests", "levels", "level_info", "warmup"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert (a.plan, a.base_url, a.time_scale, a.server_info) == (b.plan, b.base_url, b.time_scale, b.server_info)


@pytest.mark.parametrize(
    "plan_args",
    [
        dict(concurrency_levels=[1, 3], requests_per_level=5, warmup_requests=2),
        dict(request_rates=[200.0, math.inf], requests_per_level=4, warmup_requests=0, flush=False),
    ],
)
def test_events_through_the_results_file_give_identical_tables(plan_args) -> None:
    with ScriptedServer(_script) as srv:
        events, text = _measure(srv.url, **plan_args)
    reader = SweepLogReader()
    replayed = []
    for line in text.splitlines(keepends=True):  # line by line, as a follower reads them
        replayed += reader.feed(line)
    assert reader.finished and not reader.failure and reader.started is not None
    assert reader.started.plan == events[0].plan  # the plan comes back whole
    assert text.isascii() and all(line.startswith("{") for line in text.splitlines())
    direct, read_back = _assemble(events), _assemble(replayed)
    _assert_same(direct, read_back)
    req = read_back.requests
    assert req["error"].notna().any() and req["accept_length"].isna().any() and req["accept_length"].notna().any()
    levels = [e for e in replayed if isinstance(e, LevelMeasured)]
    assert [len(e.records) for e in levels] == [plan_args["requests_per_level"]] * len(levels)
    assert [e.records for e in levels] == [e.records for e in events if isinstance(e, LevelMeasured)]


def test_record_json_keeps_every_value() -> None:
    rec = RequestRecord(
        request_index=3,
        prompt_id="p",
        ttft_ms=1.5,
        itl_ms=[0.1, 1 / 3],
        tokens_per_chunk=[1, 2],
        error="x",
        error_type="E",
    )
    obj = record_to_json(rec)
    assert obj["tpot_ms"] is None and obj["itl_ms"] == [0.1, 1 / 3]
    back = record_from_json(obj)
    assert math.isnan(back.tpot_ms) and back.ttft_ms == 1.5 and back.itl_ms == rec.itl_ms and back.error == "x"
    with pytest.raises(ValueError, match="not RequestRecord fields"):
        record_from_json({**obj, "nope": 1})


def test_reader_reports_bad_lines_and_failures() -> None:
    with pytest.raises(BenchmarkError, match="partial line"):
        SweepLogReader().feed('{"type": "finished"}')
    with pytest.raises(BenchmarkError, match="line 1: not a sweep results line"):
        SweepLogReader(source="f").feed("not json\n")
    with pytest.raises(BenchmarkError, match="unknown line type 'odd'"):
        SweepLogReader().feed('{"type": "odd"}\n')
    out = io.StringIO()
    writer = SweepLogWriter(out)
    writer.request(0, RequestRecord(request_index=0))
    with pytest.raises(BenchmarkError, match="level 0 announces 2 requests but 1 request lines came before it"):
        SweepLogReader().feed(
            out.getvalue() + '{"type": "level", "level_index": 0, "requests": 2, '
            '"flush": null, "server_info": {"info": null, "route": null, "error": "x"}, '
            '"sim_lag_s": null}\n'
        )
    out = io.StringIO()
    SweepLogWriter(out).failed("BenchmarkError", "all warmup requests failed")
    reader = SweepLogReader()
    assert reader.feed(out.getvalue()) == [] and reader.done and not reader.finished
    assert reader.failure == {
        "error_type": "BenchmarkError",
        "message": "all warmup requests failed",
        "traceback": None,
    }
