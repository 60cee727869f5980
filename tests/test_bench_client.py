"""Integration tests for workbench.bench._client against a real aiohttp server on 127.0.0.1.

The server (tests/doubles/scripted_server.py) streams SGLang-shaped chunks with
scripted delays, so measured TTFT/ITL/TPOT/accept length are checked against them.
Tolerances allow for scheduling jitter on a loaded 2-core machine: measured
values may only be later than scripted, never earlier.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket

import aiohttp
import pytest

from workbench.bench._client import build_generate_body, send_generate
from workbench.bench._measure import open_session
from workbench.bench._record import RequestRecord
from doubles.scripted_server import ScriptedServer, StreamScript
from undisturbed import until_undisturbed
from workbench.bench._timing import Timebase

SLACK_MS = 30.0  # allowed lateness of a measured interval (ms)


def measure(
    url: str, *, timeout_s: float | None = 30.0, time_scale: float = 1.0, max_new_tokens: int = 6, stamped: bool = False
) -> RequestRecord:
    """One request; ``stamped``: through the sweep's own session (kernel receive stamps), else a plain one."""

    async def go() -> RequestRecord:
        async with open_session() if stamped else aiohttp.ClientSession() as session:
            tb = Timebase.start(time_scale=time_scale)
            return await send_generate(
                session,
                url,
                "Write a haiku.",
                max_new_tokens=max_new_tokens,
                timebase=tb,
                timeout_s=timeout_s,
                prompt_id="h1",
            )

    return asyncio.run(go())


def within(measured: float, scripted: float, slack: float = SLACK_MS) -> bool:
    """Measured may be late by up to ``slack`` ms, never early (2 ms clock allowance)."""
    return scripted - 2.0 <= measured <= scripted + slack


def gaps_ok(rec: RequestRecord, first_ms: float, gap_ms: float, slack: float = SLACK_MS) -> bool:
    """Each chunk arrives no earlier than scripted and at most ``slack`` late; a late chunk
    shortens the gap after it, so gaps are checked as +-slack and arrivals as late-only."""
    arrivals = [rec.ttft_ms + sum(rec.itl_ms[: i + 1]) for i in range(len(rec.itl_ms))]
    return all(abs(g - gap_ms) <= slack for g in rec.itl_ms) and all(
        within(a, first_ms + gap_ms * (i + 1), slack) for i, a in enumerate(arrivals)
    )


SPEC = StreamScript(first_delay_s=0.10, chunk_tokens=(1, 3, 2), gap_s=0.05, spec_verify_ct=3)


@pytest.fixture(scope="module")
def spec_server():
    with ScriptedServer(SPEC) as srv:
        yield srv


#: Seconds a mapped kernel stamp may sit outside its write's window (the run clock's mapping onto the epoch
#: clock is read once, microseconds apart; loopback delivers during the write itself).
STAMP_EPS_S = 0.002


def _check_against_writes(rec: RequestRecord, server: ScriptedServer, scale: float = 1.0) -> None:
    """Every time the client measured lies inside the server write that caused it (kernel receive stamps).

    The script says when the server *meant* to write; on a loaded machine its thread writes late (by 30-60
    ms at a load of 15 on 2 cores), so the script cannot bound what the client measures. The writes' own
    epoch windows can: the first content chunk's arrival (start + TTFT), each later chunk's (+ ITLs) and the
    end of E2E must each fall inside the window of the write that sent them, the start before the server
    saw the request. Measured from the wrong point (a read's loop time, the wrong chunk), a time falls outside.
    """
    # one read per chunk, the last one with the [DONE] the server writes right after it
    assert rec.ok and rec.kernel_stamped_reads == rec.num_reads == rec.num_chunks, rec
    index = max(server.write_windows)  # this request's (the module's server answers one at a time)
    *windows, done = server.write_windows[index]
    windows[-1] = (windows[-1][0], done[1])  # the last read: from the last chunk's write to the [DONE]'s
    assert rec.start_epoch_s <= server.request_epochs[index] + STAMP_EPS_S
    arrivals = [rec.ttft_ms] + [rec.ttft_ms + sum(rec.itl_ms[: i + 1]) for i in range(len(rec.itl_ms))]
    for ms, (before, after) in zip(arrivals, windows, strict=True):
        epoch = rec.start_epoch_s + ms / 1000.0 / scale
        assert before - STAMP_EPS_S <= epoch <= after + STAMP_EPS_S, (ms, epoch - before, after - before)
    before, after = windows[-1]
    assert before - STAMP_EPS_S <= rec.end_epoch_s <= after + STAMP_EPS_S, (rec.end_epoch_s - before, after - before)


def _check_timings(rec: RequestRecord) -> None:
    assert rec.ok, rec.error
    assert within(rec.ttft_ms, 100.0), rec.ttft_ms
    assert len(rec.itl_ms) == 2 and gaps_ok(rec, 100.0, 50.0), rec.itl_ms
    assert within(rec.e2e_ms, 200.0), rec.e2e_ms
    # e2e - ttft: a late first chunk shortens it as much as a late last chunk lengthens it, so +-slack
    assert abs(rec.tpot_ms * 5 - 100.0) <= SLACK_MS, rec.tpot_ms


def test_streamed_timings_are_the_server_writes_arrivals(spec_server):
    # against the server's own writes, not its script: holds at any load (a try whose chunks met in one read,
    # or that the kernel did not stamp, is measured again: tests/undisturbed.py)
    rec = until_undisturbed(
        lambda: measure(spec_server.url, stamped=True), lambda r: _check_against_writes(r, spec_server), tries=5
    )
    assert rec.ttft_ms >= 100.0 - 2.0 and all(g >= 50.0 - 2.0 for g in rec.itl_ms)  # never earlier than scripted
    assert rec.tpot_ms == pytest.approx((rec.e2e_ms - rec.ttft_ms) / 5)


def test_streamed_timings_match_script(spec_server):
    # against the script (what a reader checks by eye): 30 ms of lateness is several scheduler slices at a load
    # of 8 on 2 cores, and one disturbed request is measured again (tests/undisturbed.py); at a load of 15 the
    # server thread's own writes ran 30-60 ms late five tries running, so this one is a benchmark-grade check
    # that is skipped past a load of 2 per core: the test above proves the same timings against the writes
    _skip_if_overloaded()
    rec = until_undisturbed(lambda: measure(spec_server.url), _check_timings, tries=5)
    assert rec.http_status == 200 and rec.prompt_id == "h1" and rec.max_new_tokens == 6
    assert rec.tokens_per_chunk == [1, 3, 2] and rec.num_chunks == 3
    assert rec.output_tokens == 6 and rec.prompt_tokens == 10
    assert rec.tpot_ms == pytest.approx((rec.e2e_ms - rec.ttft_ms) / 5)
    assert rec.spec_verify_ct == 3
    assert rec.accept_length == pytest.approx(2.0) == rec.meta_spec_accept_length
    assert rec.finish_reason == "length"
    assert rec.end_epoch_s - rec.start_epoch_s == pytest.approx(rec.e2e_ms / 1000.0, abs=1e-6)


def _check_scaled(rec: RequestRecord) -> None:
    assert rec.ok and rec.time_scale == 4.0, rec
    assert within(rec.ttft_ms, 400.0, 4 * SLACK_MS), rec.ttft_ms
    assert len(rec.itl_ms) == 2 and gaps_ok(rec, 400.0, 200.0, 4 * SLACK_MS), rec.itl_ms


def test_time_scale_reports_engine_time(spec_server):
    rec = until_undisturbed(
        lambda: measure(spec_server.url, time_scale=4.0, stamped=True),
        lambda r: _check_against_writes(r, spec_server, scale=4.0),
        tries=5,
    )
    assert rec.time_scale == 4.0 and rec.ttft_ms >= 400.0 - 8.0 and all(g >= 200.0 - 8.0 for g in rec.itl_ms)
    assert (rec.end_epoch_s - rec.start_epoch_s) * 1000 == pytest.approx(rec.e2e_ms / 4.0, abs=1e-3)


def _skip_if_overloaded() -> None:
    """Skip a check against scripted delays when the 1-minute load average is above 2 per core."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > 2 * cores:
        pytest.skip(
            f"load average {load:.1f} on {cores} cores: scripted delays are not kept at this load "
            "(the same timings are checked against the server's own writes)"
        )


def test_request_body_is_sglang_native(spec_server):
    n = len(spec_server.bodies)
    measure(spec_server.url, max_new_tokens=7)
    assert spec_server.bodies[n] == {
        "text": "Write a haiku.",
        "sampling_params": {"max_new_tokens": 7, "temperature": 0.0, "ignore_eos": True},
        "stream": True,
    }


def test_build_body_merges_extras():
    body = build_generate_body("x", max_new_tokens=3, extra_sampling_params={"top_p": 0.9}, extra_body={"rid": "abc"})
    assert body["sampling_params"] == {"max_new_tokens": 3, "temperature": 0.0, "ignore_eos": True, "top_p": 0.9}
    assert body["rid"] == "abc" and body["stream"] is True


def test_http_500_becomes_an_error_row():
    with ScriptedServer(StreamScript(status=500)) as srv:
        rec = measure(srv.url)
    assert not rec.ok
    assert rec.error_type == "HTTPStatusError" and rec.http_status == 500
    assert "HTTP 500" in rec.error and "scripted status 500" in rec.error
    assert math.isnan(rec.ttft_ms) and rec.output_tokens is None


def test_error_chunk_mid_stream_becomes_an_error_row():
    with ScriptedServer(StreamScript(chunk_tokens=(1, 1, 1), gap_s=0.01, error_after_chunks=2)) as srv:
        rec = measure(srv.url)
    assert rec.error_type == "StreamError" and rec.error == "scripted failure"
    assert rec.http_status == 200 and rec.tokens_per_chunk == [1, 1]


def test_connection_refused_becomes_an_error_row():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rec = measure(f"http://127.0.0.1:{port}")
    assert not rec.ok and rec.http_status is None
    assert rec.error_type == "ClientConnectorError" and str(port) in rec.error
    assert rec.e2e_ms >= 0


def test_timeout_becomes_an_error_row():
    with ScriptedServer(StreamScript(first_delay_s=3.0)) as srv:
        rec = measure(srv.url, timeout_s=0.3)
    assert rec.error_type == "TimeoutError" and "0.3 s" in rec.error
    assert within(rec.e2e_ms, 300.0, 100.0)


def test_missing_done_after_finish_is_still_complete():
    with ScriptedServer(StreamScript(chunk_tokens=(1, 2), send_done=False)) as srv:
        rec = measure(srv.url)
    assert rec.ok and rec.output_tokens == 3
