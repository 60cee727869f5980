"""Every latency counted (issue 9, item 2): each rule with exact expected values.

Two halves. Scripted reads with scripted clock readings go straight into the
accumulator, so every figure is exact. Scripted streams from a real HTTP server
(tests/doubles/scripted_server.py) check what does not depend on the clock exactly:
which chunks arrive in one read, token counts, typed failures, the OpenAI shapes.
"""

from __future__ import annotations

import asyncio
import math
import socket
import subprocess
import sys

import aiohttp
import pytest

from doubles.scripted_server import ScriptedServer, StreamScript
from workbench.bench._client import send_request
from workbench.bench._frames import records_to_frame
from workbench.bench._loadgen import closed_loop, open_loop
from workbench.bench._measure import ensure_fd_limit, open_session
from workbench.bench._metrics import summarize_levels
from workbench.bench._prompts import Prompt
from workbench.bench._record import RequestRecord, StreamAccumulator
from workbench.bench._sse import StreamEvent
from workbench.bench._timing import Timebase

DONE = StreamEvent("done", None, "[DONE]")


def gen(text: str, ct: int, *, finish=None, **meta) -> StreamEvent:
    m = {"id": "r1", "finish_reason": finish, "prompt_tokens": 9, "completion_tokens": ct}
    m.update(meta)
    return StreamEvent("chunk", {"text": text, "meta_info": m}, "")


def completion(delta: str, ct: int | None, *, finish=None, prompt_tokens: int = 9) -> StreamEvent:
    usage = None if ct is None else {"prompt_tokens": prompt_tokens, "completion_tokens": ct}
    return StreamEvent(
        "chunk", {"id": "c1", "choices": [{"index": 0, "text": delta, "finish_reason": finish}], "usage": usage}, ""
    )


def chat(content: str | None, ct: int | None, *, role: str | None = None, finish=None) -> StreamEvent:
    delta = {"content": content} if role is None else {"role": role, "content": content}
    usage = None if ct is None else {"prompt_tokens": 9, "completion_tokens": ct}
    return StreamEvent(
        "chunk", {"id": "k1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": usage}, ""
    )


def usage_chunk(ct: int, prompt_tokens: int = 9) -> StreamEvent:
    return StreamEvent(
        "chunk", {"id": "c1", "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": ct}}, ""
    )


def run_reads(
    reads: list[tuple[float, list[StreamEvent]]],
    *,
    backend: str = "generate",
    due: float | None = None,
    end: float | None = None,
    scale: float = 1.0,
) -> RequestRecord:
    tb = Timebase(clock=lambda: 0.0, origin=0.0, epoch_at_origin=1_000_000.0, time_scale=scale)
    acc = StreamAccumulator(tb, 0.0, prompt_id="p", max_new_tokens=8, backend=backend, due=due)
    for t, events in reads:
        acc.on_read(events, t)
    return acc.finish(end if end is not None else reads[-1][0])


# -- exact rules, scripted reads ---------------------------------------------------------------


def test_chunks_sharing_a_read_give_no_zero_gap():
    rec = run_reads(
        [
            (0.100, [gen("a", 1)]),
            (0.150, [gen("a b", 2), gen("a b c", 3)]),  # two chunks in one read: one arrival time
            (0.200, [gen("a b c d", 5, finish={"type": "length"}), DONE]),
        ]
    )
    assert rec.ok
    assert rec.itl_ms == pytest.approx([50.0, 50.0])  # bench_serving would report [50, 0, 50]
    assert 0.0 not in rec.itl_ms
    assert rec.chunks_per_read == [1, 2, 1] and rec.num_reads == 3 and rec.num_chunks == 4
    assert rec.tokens_per_chunk == [1, 1, 1, 2] and rec.tokens_per_read == [1, 2, 2]
    assert rec.ttft_ms == pytest.approx(100.0) and rec.e2e_ms == pytest.approx(200.0)


def test_tpot_comes_from_completion_tokens_not_chunks():
    # 3 chunks carrying 1 + 4 + 3 tokens (speculative rounds): TPOT over 7 tokens, not 2 chunks
    rec = run_reads(
        [
            (0.1, [gen("a", 1)]),
            (0.2, [gen("a bcde", 5)]),
            (0.3, [gen("a bcde fgh", 8, finish="length")]),
            (0.31, [DONE]),
        ]
    )
    assert rec.output_tokens == 8 and rec.num_chunks == 3
    assert rec.tpot_ms == pytest.approx((310.0 - 100.0) / 7)
    assert rec.itl_ms == pytest.approx([100.0, 100.0])


def test_client_wait_and_user_latency():
    rec = run_reads([(0.1, [gen("a", 1)]), (0.2, [gen("a b", 2, finish="length"), DONE])], due=-0.030, scale=2.0)
    assert rec.client_wait_ms == pytest.approx(60.0)  # 30 ms wall x time_scale 2
    assert rec.ttft_ms == pytest.approx(200.0) and rec.e2e_ms == pytest.approx(400.0)
    assert rec.user_ttft_ms == pytest.approx(260.0) and rec.user_e2e_ms == pytest.approx(460.0)
    unknown = run_reads([(0.1, [gen("a", 1, finish="length"), DONE])])
    assert math.isnan(unknown.client_wait_ms) and math.isnan(unknown.user_e2e_ms)


def test_openai_completions_with_continuous_usage():
    rec = run_reads(
        [
            (0.05, [completion("a", 1)]),
            (0.08, [completion(" b c", 3)]),
            (0.08 + 0.04, [completion("", 3), completion(" d", 4, finish="length")]),  # an empty delta is not content
            (0.13, [usage_chunk(4), DONE]),
        ],
        backend="completions",
    )
    assert rec.ok and rec.backend == "completions" and rec.rid == "c1" and rec.finish_reason == "length"
    assert rec.output_tokens == 4 and rec.prompt_tokens == 9
    assert rec.tokens_per_chunk == [1, 2, 1] and rec.tokens_per_read == [1, 2, 1] and rec.chunks_per_read == [1, 1, 1]
    assert rec.ttft_ms == pytest.approx(50.0) and rec.itl_ms == pytest.approx([30.0, 40.0])
    assert rec.tpot_ms == pytest.approx((130.0 - 50.0) / 3)
    assert math.isnan(rec.accept_length)  # the OpenAI routes carry no spec_verify_ct


def test_openai_without_per_chunk_usage_never_guesses_tokens_from_chunks():
    rec = run_reads(
        [
            (0.05, [completion("a", None)]),
            (0.10, [completion(" b c", None, finish="length")]),
            (0.11, [usage_chunk(3), DONE]),
        ],
        backend="completions",
    )
    assert rec.ok and rec.output_tokens == 3 and rec.num_chunks == 2
    assert rec.tokens_per_chunk == [] and rec.tokens_per_read == []  # unknown, not 1 per chunk
    assert rec.tpot_ms == pytest.approx((110.0 - 50.0) / 2)
    levels = summarize_levels(records_to_frame([rec], {"level_index": 0}))
    assert levels.loc[0, "mean_itl_ms"] == pytest.approx(50.0)
    assert math.isnan(levels.loc[0, "mean_itl_per_token_ms"])


def test_chat_role_chunk_is_not_content():
    rec = run_reads(
        [
            (0.01, [chat("", 0, role="assistant")]),
            (0.05, [chat("Hi", 1)]),
            (0.09, [chat(" there", 2, finish="length"), DONE]),
        ],
        backend="chat",
    )
    assert rec.ok and rec.ttft_ms == pytest.approx(50.0) and rec.itl_ms == pytest.approx([40.0])
    assert rec.tokens_per_chunk == [1, 1] and rec.output_tokens == 2 and rec.rid == "k1"


@pytest.mark.parametrize(
    ("reads", "kind", "error_type", "text"),
    [
        (
            [(0.1, [gen("a", 1), StreamEvent("error", {"error": {"message": "KV cache full"}}, "")])],
            "server_error",
            "StreamError",
            "KV cache full",
        ),
        ([(0.1, [gen("a", 1)])], "disconnect", "IncompleteStream", "before [DONE]"),
        (
            [(0.1, [gen("a", 1), StreamEvent("invalid", None, "{", "data is not JSON")])],
            "protocol",
            "StreamProtocolError",
            "not JSON",
        ),
        (
            [(0.1, [gen("a", 1, finish={"type": "abort", "message": "preempted", "status_code": 503})])],
            "server_error",
            "Aborted",
            "preempted",
        ),
    ],
)
def test_failures_are_typed_rows_with_the_servers_text(reads, kind, error_type, text):
    rec = run_reads(reads)
    assert not rec.ok and rec.error_kind == kind and rec.error_type == error_type and text in rec.error
    assert rec.ttft_ms == pytest.approx(100.0)  # what was measured before the failure is kept


def level(records: list[RequestRecord]):
    return summarize_levels(records_to_frame(records, {"level_index": 0, "concurrency": 2})).iloc[0]


def test_level_accept_length_achieved_concurrency_reads_and_waits():
    a = RequestRecord(
        output_tokens=12,
        spec_verify_ct=4,
        e2e_ms=1000.0,
        ttft_ms=100.0,
        start_s=0.0,
        end_s=1.0,
        itl_ms=[100.0],
        chunks_per_read=[1, 2],
        tokens_per_read=[1, 11],
        tokens_per_chunk=[1, 5, 6],
        client_wait_ms=2.0,
        user_ttft_ms=102.0,
        user_e2e_ms=1002.0,
        accept_length=3.0,
        kernel_stamped_reads=2,
    )
    b = RequestRecord(
        output_tokens=6,
        spec_verify_ct=4,
        e2e_ms=500.0,
        ttft_ms=50.0,
        start_s=0.5,
        end_s=1.0,
        itl_ms=[60.0],
        chunks_per_read=[1, 1],
        tokens_per_read=[1, 5],
        tokens_per_chunk=[1, 5],
        client_wait_ms=4.0,
        user_ttft_ms=54.0,
        user_e2e_ms=504.0,
        accept_length=1.5,
    )
    bad = RequestRecord(
        error="HTTP 503",
        error_type="HTTPStatusError",
        error_kind="http_status",
        http_status=503,
        start_s=0.2,
        end_s=0.3,
        e2e_ms=100.0,
    )
    gone = RequestRecord(
        error="x", error_type="ServerDisconnectedError", error_kind="disconnect", start_s=0.2, end_s=0.4, e2e_ms=200.0
    )
    row = level([a, b, bad, gone])
    assert row["accept_length"] == pytest.approx(18 / 8)  # sum(tokens) / sum(verify), not mean(3.0, 1.5)
    assert row["achieved_concurrency"] == pytest.approx(1.5 / 1.0) and row["concurrency"] == 2
    assert row["multi_chunk_read_fraction"] == pytest.approx(1 / 4) and row["max_chunks_per_read"] == 2
    assert row["kernel_stamped_read_fraction"] == pytest.approx(2 / 4)  # a's two reads of the four
    assert row["mean_itl_ms"] == pytest.approx(80.0)
    # per-token ITL from tokens per read: 100/11 eleven times, 60/5 five times
    assert row["mean_itl_per_token_ms"] == pytest.approx((100.0 + 60.0) / 16)
    assert row["mean_client_wait_ms"] == pytest.approx(3.0) and row["mean_user_e2e_ms"] == pytest.approx(753.0)
    assert row["failed"] == 2 and row["error_kind_counts"] == "disconnect: 1, http_status: 1"


# -- scripted streams over real HTTP -----------------------------------------------------------


def fetch(url: str, *, backend: str = "generate", timeout_s: float | None = 30.0) -> RequestRecord:
    async def go() -> RequestRecord:
        async with aiohttp.ClientSession() as session:
            return await send_request(
                session, url, "Hi", max_new_tokens=4, backend=backend, timeout_s=timeout_s, timebase=Timebase.start()
            )

    return asyncio.run(go())


def test_chunks_written_together_arrive_in_one_read():
    script = StreamScript(first_delay_s=0.02, chunk_tokens=(1, 1, 1, 1), gap_s=0.05, write_groups=(1, 2, 1))
    with ScriptedServer(script) as srv:
        rec = fetch(srv.url)
    assert rec.ok and rec.chunks_per_read == [1, 2, 1] and rec.tokens_per_read == [1, 2, 1]
    assert rec.num_chunks == 4 and len(rec.itl_ms) == 2 and min(rec.itl_ms) > 20.0
    assert rec.tpot_ms == pytest.approx((rec.e2e_ms - rec.ttft_ms) / 3)


@pytest.mark.parametrize("backend", ["completions", "chat"])
def test_openai_backends_against_scripted_streams(backend):
    script = StreamScript(first_delay_s=0.01, chunk_tokens=(1, 3, 2), gap_s=0.01)
    with ScriptedServer(script) as srv:
        rec = fetch(srv.url, backend=backend)
        body = srv.bodies[0]
    assert rec.ok, rec.error
    assert rec.output_tokens == 6 and rec.prompt_tokens == 10 and rec.finish_reason == "length"
    assert rec.tokens_per_chunk == [1, 3, 2] and rec.num_chunks == 3
    assert body["max_tokens"] == 4 and body["ignore_eos"] is True and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert ("messages" in body) == (backend == "chat")


def test_failed_requests_are_kept_as_typed_rows():
    scripts = {
        0: StreamScript(status=503),
        1: StreamScript(chunk_tokens=(1, 1, 1), gap_s=0.01, disconnect_after_chunks=2),
        2: StreamScript(first_delay_s=1.0),
        3: StreamScript(chunk_tokens=(1, 1), error_after_chunks=1),
    }
    with ScriptedServer(lambda body, i: scripts[i]) as srv:
        http, cut, slow, err = (fetch(srv.url, timeout_s=0.3 if i == 2 else 30.0) for i in range(4))
    assert (http.error_kind, http.http_status) == ("http_status", 503) and "scripted status 503" in http.error
    assert cut.error_kind == "disconnect" and cut.num_chunks == 2
    assert slow.error_kind == "timeout" and slow.error_type == "TimeoutError"
    assert err.error_kind == "server_error" and err.error == "scripted failure"
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    refused = fetch(f"http://127.0.0.1:{port}")
    assert refused.error_kind == "connect" and not refused.ok


def test_client_wait_in_the_open_loop_counts_the_wait_for_a_slot():
    prompts = [Prompt(f"p{i}", "coding", "x") for i in range(3)]
    with ScriptedServer(StreamScript(first_delay_s=0.1)) as srv:

        async def go():
            async with open_session() as session:
                return await open_loop(
                    session,
                    srv.url,
                    prompts,
                    request_rate=math.inf,
                    rng=None,
                    max_new_tokens=1,
                    timebase=Timebase.start(),
                    max_concurrency=1,
                )

        records = asyncio.run(go())
    waits = [r.client_wait_ms for r in records]
    # all three arrive at once, one slot: the second waits one request, the third two
    assert waits[0] < 30.0 and 90.0 < waits[1] < 200.0 and 190.0 < waits[2] < 400.0
    assert all(r.user_e2e_ms == pytest.approx(r.client_wait_ms + r.e2e_ms) for r in records)


def test_1024_streams_are_not_capped_by_the_pool_or_the_fd_limit():
    prompts = [Prompt(f"p{i}", "coding", "x") for i in range(1024)]
    ensure_fd_limit(2 * 1024)  # client and server sockets live in this one process
    # every answer waits until all 1024 are open (at most 45 s), not a fixed second: on a loaded machine
    # connecting 1024 streams can take longer than that, and the first would finish before the last opened
    with ScriptedServer(StreamScript(chunk_tokens=(1,), until_in_flight=1024, until_in_flight_timeout_s=45.0)) as srv:

        async def go():
            async with open_session(1024) as session:
                return await closed_loop(
                    session,
                    srv.url,
                    prompts,
                    concurrency=1024,
                    max_new_tokens=1,
                    timebase=Timebase.start(),
                    timeout_s=60.0,
                )

        records = asyncio.run(go())
        assert srv.max_in_flight == 1024
    assert all(r.ok for r in records), {r.error for r in records}


def test_fd_limit_below_the_target_is_a_clear_error():
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
        "from workbench.bench._measure import ensure_fd_limit\n"
        "try:\n    ensure_fd_limit(1024)\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("BenchmarkError 1024 concurrent streams need 1088 file descriptors")
    assert "ulimit" in out and "below 192" in out
