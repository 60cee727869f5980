"""Tests for workbench.bench._loadgen and sweep: concurrency control, schedules, management calls."""

from __future__ import annotations

import asyncio
import math
import random
import socket

import aiohttp
import pytest

from workbench.bench._plan import SweepPlan
from workbench.bench._loadgen import closed_loop, open_loop, poisson_arrivals, prompt_schedule
from workbench.bench._prompts import Prompt
from doubles.scripted_server import ScriptedServer, StreamScript
from undisturbed import until_undisturbed
from workbench.bench._server_api import fetch_server_info, flush_cache, server_accept_length
from workbench.bench._sweep import run_sweep
from workbench.bench._timing import Timebase
from workbench.errors import BenchmarkError, ConfigError

PROMPTS = [Prompt(f"p{i}", "coding" if i % 2 else "agentic", f"prompt number {i}") for i in range(5)]


def _plan(**kwargs) -> SweepPlan:
    """A small closed-loop plan over PROMPTS: one level of concurrency 1, one request, one token."""
    return SweepPlan.build(
        **(dict(concurrency_levels=[1], requests_per_level=1, max_new_tokens=1, prompt_set=PROMPTS) | kwargs)
    )


def steady_fraction(log: list[tuple[float, int]], target: int) -> float:
    """Fraction of time, from the first moment ``target`` were in flight to the last, spent at ``target``."""
    times = [t for t, n in log if n == target]
    start, end = times[0], times[-1]
    at_target = 0.0
    for (t0, n), (t1, _) in zip(log, log[1:]):
        lo, hi = max(t0, start), min(t1, end)
        if hi > lo and n == target:
            at_target += hi - lo
    return at_target / (end - start)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_closed_loop_keeps_exactly_concurrency_in_flight(concurrency):
    # 200 ms requests: a client loop's wake-up, tens of ms late on a loaded machine, stays a small share
    script = StreamScript(first_delay_s=0.05, chunk_tokens=(1, 1, 1), gap_s=0.075)

    def measure():
        with ScriptedServer(script) as srv:

            async def go():
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                    schedule = prompt_schedule(PROMPTS, 6 * concurrency, rng=random.Random(1))
                    return await closed_loop(
                        session, srv.url, schedule, concurrency=concurrency, max_new_tokens=3, timebase=Timebase.start()
                    )

            records = asyncio.run(go())
            return records, list(srv.in_flight_log), srv.max_in_flight

    def check(measured):
        records, log, max_in_flight = measured
        assert len(records) == 6 * concurrency and all(r.ok for r in records)
        assert [r.request_index for r in records] == list(range(6 * concurrency))
        assert max_in_flight == concurrency and max(n for _, n in log) == concurrency, (max_in_flight, log)
        # the time share at the target: each replacement waits for the client loop to wake, which a loaded
        # machine delays by tens of ms against 200 ms requests in one try (measured again); a loop that
        # waits for a batch, or starts one short, stays below it in every try
        assert steady_fraction(log, concurrency) > 0.85, steady_fraction(log, concurrency)

    until_undisturbed(measure, check)


def test_closed_loop_fewer_requests_than_concurrency():
    with ScriptedServer(StreamScript(first_delay_s=0.05)) as srv:

        async def go():
            async with aiohttp.ClientSession() as session:
                return await closed_loop(
                    session, srv.url, PROMPTS[:2], concurrency=8, max_new_tokens=1, timebase=Timebase.start()
                )

        records = asyncio.run(go())
    assert len(records) == 2 and srv.max_in_flight == 2


def test_closed_loop_rejects_bad_concurrency():
    with pytest.raises(ConfigError):
        asyncio.run(
            closed_loop(
                None,
                "http://x",
                PROMPTS,
                concurrency=0,
                max_new_tokens=1,  # type: ignore[arg-type]
                timebase=Timebase.start(),
            )
        )


def test_prompt_schedule_is_seeded_and_uses_every_prompt_before_repeating():
    a = prompt_schedule(PROMPTS, 12, rng=random.Random(7))
    b = prompt_schedule(PROMPTS, 12, rng=random.Random(7))
    assert a == b
    assert sorted(p.id for p in a[:5]) == sorted(p.id for p in PROMPTS)
    assert a[5:10] == a[:5]
    assert prompt_schedule(PROMPTS, 12, rng=random.Random(8)) != a
    with pytest.raises(ConfigError):
        prompt_schedule([], 3, rng=random.Random(0))


def test_poisson_arrivals():
    offsets = poisson_arrivals(2000, 10.0, rng=random.Random(3))
    assert offsets[0] == 0.0 and offsets == sorted(offsets)
    assert offsets == poisson_arrivals(2000, 10.0, rng=random.Random(3))
    assert offsets[-1] / 1999 == pytest.approx(0.1, rel=0.1)  # mean gap 1/rate
    assert poisson_arrivals(3, math.inf, rng=random.Random(0)) == [0.0, 0.0, 0.0]
    with pytest.raises(ConfigError):
        poisson_arrivals(3, 0.0, rng=random.Random(0))


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_open_loop_follows_the_arrival_schedule(scale):
    rate = 40.0  # engine-time requests/s; the wall rate is rate * scale
    expected = poisson_arrivals(10, rate, rng=random.Random(5))

    def measure():
        with ScriptedServer(StreamScript(first_delay_s=0.01)) as srv:

            async def go():
                async with aiohttp.ClientSession() as session:
                    tb = Timebase.start(time_scale=scale)
                    return await open_loop(
                        session,
                        srv.url,
                        PROMPTS * 2,
                        request_rate=rate,
                        rng=random.Random(5),
                        max_new_tokens=1,
                        timebase=tb,
                    )

            return asyncio.run(go())

    def check(records):
        starts = [r.start_s - records[0].start_s for r in records]
        assert all(r.ok for r in records), records
        assert all(abs(s - e) < 0.03 * scale for s, e in zip(starts, expected)), (starts, expected)  # engine time

    # 30 ms is a tenth of the schedule's span: a loaded machine's preemption of the loop can exceed it in
    # one try (measured again); a schedule not followed, or not scaled, misses it in every try
    until_undisturbed(measure, check)


def test_flush_cache_retries_while_busy_and_server_info_fallback():
    with ScriptedServer(flush_busy_answers=2, legacy_server_info=True) as srv:

        async def go():
            async with aiohttp.ClientSession() as session:
                return (
                    await flush_cache(session, srv.url, retry_interval_s=0.01),
                    await fetch_server_info(session, srv.url),
                )

        flushed, info = asyncio.run(go())
    assert flushed.ok and flushed.attempts == 3 and flushed.error is None
    assert info.route == "/get_server_info" and server_accept_length(info.info) == 2.5


def test_flush_cache_gives_up_and_reports():
    with ScriptedServer(flush_busy_answers=100) as srv:

        async def go():
            async with aiohttp.ClientSession() as session:
                return await flush_cache(session, srv.url, retry_for_s=0.1, retry_interval_s=0.02)

        flushed = asyncio.run(go())
    assert not flushed.ok and flushed.status == 400 and "400" in flushed.error


def test_server_accept_length_absent_is_nan():
    assert math.isnan(server_accept_length({"internal_states": [{"last_gen_throughput": 3.0}]}))
    assert math.isnan(server_accept_length(None))
    assert server_accept_length({"avg_spec_accept_length": 3.0}) == 3.0


def test_sweep_end_to_end():
    script = StreamScript(first_delay_s=0.01, chunk_tokens=(1, 2, 2), gap_s=0.01, spec_verify_ct=3)
    seen = []
    with ScriptedServer(script) as srv:
        plan = SweepPlan.build(
            concurrency_levels=[1, 2, 4],
            requests_per_level=lambda c: 2 * c + 1,
            max_new_tokens=5,
            prompt_set=PROMPTS,
            seed=3,
            time_scale=2.0,
            warmup_requests=2,
        )
        result = run_sweep(srv.url, plan, progress=False, on_level=seen.append)
        bodies = list(srv.bodies)
        flushes = srv.flush_calls
        max_in_flight = srv.max_in_flight
    assert flushes == 3 and max_in_flight == 4
    assert len(bodies) == 2 + 3 + 5 + 9 and len(result.warmup) == 2
    req, lev = result.requests, result.levels
    assert list(req.groupby("level_index").size()) == [3, 5, 9]
    assert set(req["time_scale"]) == {2.0} and result.time_scale == 2.0
    assert list(lev["concurrency"]) == [1, 2, 4] and list(lev["completed"]) == [3, 5, 9]
    assert list(lev["accept_length"]) == pytest.approx([5 / 3] * 3)
    assert list(lev["server_accept_length"]) == [2.5] * 3
    assert (req["ttft_ms"] >= 2 * 10.0 - 1).all()  # 10 ms scripted, x2 engine time
    # the same seeded prompt sequence at every level
    per_level = [list(g.sort_values("request_index")["prompt_id"]) for _, g in req.groupby("level_index")]
    assert per_level[1] == per_level[2][:5] and per_level[0] == per_level[1][:3]
    assert per_level[2] == [p.id for p in prompt_schedule(PROMPTS, 9, rng=random.Random(3))]  # seeded as before
    assert [len(lvl.requests) for lvl in seen] == [3, 5, 9]
    assert seen[-1].plan is plan and result.plan is plan


def test_sweep_open_loop_levels():
    with ScriptedServer(StreamScript()) as srv:
        result = run_sweep(
            srv.url,
            SweepPlan.build(
                request_rates=[50.0, math.inf],
                requests_per_level=4,
                max_new_tokens=1,
                prompt_set=["a", "b"],
                warmup_requests=0,
                flush=False,
            ),
            progress=False,
        )
    lev = result.levels
    assert list(lev["mode"]) == ["open", "open"] and list(lev["request_rate_req_s"]) == [50.0, math.inf]
    assert lev["concurrency"].isna().all() and list(lev["completed"]) == [4, 4]
    assert lev["flush_ok"].isna().all()


def test_sweep_failed_requests_do_not_stop_the_level():
    script = lambda body, i: StreamScript(status=500) if i % 2 else StreamScript()  # noqa: E731
    with ScriptedServer(script) as srv:
        result = run_sweep(
            srv.url, _plan(concurrency_levels=[2], requests_per_level=6, warmup_requests=1), progress=False
        )
    assert result.levels.loc[0, "completed"] + result.levels.loc[0, "failed"] == 6
    assert result.levels.loc[0, "failed"] >= 2
    assert "HTTPStatusError" in result.levels.loc[0, "error_counts"]


def test_sweep_raises_when_the_server_is_down():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(BenchmarkError, match="warmup"):
        run_sweep(f"http://127.0.0.1:{port}", _plan(), progress=False)


def test_run_sweep_works_inside_a_running_event_loop():
    with ScriptedServer(StreamScript()) as srv:

        async def notebook_cell():
            return run_sweep(srv.url, _plan(requests_per_level=2), progress=False)

        result = asyncio.run(notebook_cell())
    assert list(result.levels["completed"]) == [2]


SIM_INFO = {
    "version": "0.5.9",
    "internal_states": [{"avg_spec_accept_length": 2.0}],
    "simulation": {"engine": "sim", "time_scale": 4.0},
}


def test_time_scale_auto_and_mismatch_with_a_simulated_server():
    with ScriptedServer(StreamScript(first_delay_s=0.02), server_info=SIM_INFO) as srv:
        result = run_sweep(srv.url, _plan(requests_per_level=2, time_scale="auto"), progress=False)
        with pytest.raises(ConfigError, match="time_scale=4.0"):
            run_sweep(srv.url, _plan(time_scale=1.0), progress=False)
    req = result.requests
    assert set(req["time_scale"]) == {4.0} and result.time_scale == 4.0
    assert (req["ttft_ms"] >= 4 * 20.0 - 4).all()
    assert set(req["engine"]) == {"sim"} and req["simulated"].all()
    assert set(result.levels["engine"]) == {"sim"}


def test_rows_from_a_real_server_are_not_simulated():
    with ScriptedServer(StreamScript()) as srv:
        result = run_sweep(srv.url, _plan(time_scale="auto"), progress=False)
    assert list(result.requests["engine"]) == ["sglang"] and not result.requests["simulated"].any()
    assert result.time_scale == 1.0


def test_unique_prompts_makes_every_request_text_distinct():
    with ScriptedServer(StreamScript()) as srv:
        run_sweep(
            srv.url,
            _plan(concurrency_levels=[2], requests_per_level=7, warmup_requests=0, unique_prompts=True),
            progress=False,
        )
        texts = [b["text"] for b in srv.bodies]
    assert len(set(texts)) == 7 and texts[0].startswith("[request 0-")
