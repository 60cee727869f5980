"""Tests for workbench.bench._record and timing: the timing rules, with exact scripted clocks."""

from __future__ import annotations

import math

import pytest

from workbench.bench._frames import records_to_frame
from workbench.bench._record import RequestRecord, StreamAccumulator
from workbench.bench._sse import StreamEvent
from workbench.bench._timing import Timebase
from workbench.errors import ConfigError


def chunk(text: str, ct: int, *, finish=None, **meta) -> StreamEvent:
    m = {"id": "r1", "finish_reason": finish, "prompt_tokens": 9, "completion_tokens": ct, "cached_tokens": 2}
    m.update(meta)
    return StreamEvent("chunk", {"text": text, "meta_info": m}, "")


DONE = StreamEvent("done", None, "[DONE]")


def run(events: list[tuple[float, StreamEvent]], *, scale: float = 1.0, end: float | None = None) -> RequestRecord:
    tb = Timebase(clock=lambda: 0.0, origin=0.0, epoch_at_origin=1_000_000.0, time_scale=scale)
    acc = StreamAccumulator(tb, 0.0, prompt_id="p", max_new_tokens=6)
    for t, ev in events:
        acc.on_event(ev, t)
    return acc.finish(end if end is not None else events[-1][0])


def spec_stream() -> list[tuple[float, StreamEvent]]:
    return [
        (0.100, chunk("a", 1)),
        (0.150, chunk("a bcd", 4)),
        (0.150, chunk("a bcd", 4)),  # adds no tokens: not a content chunk
        (
            0.200,
            chunk(
                "a bcd ef",
                6,
                finish={"type": "length", "length": 6},
                spec_verify_ct=3,
                spec_accept_length=2.0,
                e2e_latency=0.19,
            ),
        ),
        (0.210, DONE),
    ]


def test_exact_timings_from_scripted_clock():
    rec = run(spec_stream())
    assert rec.ok and rec.error is None
    assert rec.ttft_ms == pytest.approx(100.0)
    assert rec.itl_ms == pytest.approx([50.0, 50.0])
    assert rec.tokens_per_chunk == [1, 3, 2]
    assert rec.num_chunks == 3
    assert rec.e2e_ms == pytest.approx(210.0)
    assert rec.tpot_ms == pytest.approx((210.0 - 100.0) / 5)
    assert rec.output_tokens == 6 and rec.prompt_tokens == 9 and rec.cached_tokens == 2
    assert rec.spec_verify_ct == 3 and rec.accept_length == pytest.approx(2.0)
    assert rec.accept_length == pytest.approx(rec.meta_spec_accept_length)
    assert rec.server_e2e_ms == pytest.approx(190.0)
    assert rec.finish_reason == "length" and rec.rid == "r1"
    assert rec.start_epoch_s == pytest.approx(1_000_000.0) and rec.end_epoch_s == pytest.approx(1_000_000.21)
    assert rec.start_s == 0.0 and rec.end_s == pytest.approx(0.21)


def test_time_scale_multiplies_durations_not_epochs():
    rec = run(spec_stream(), scale=10.0)
    assert rec.time_scale == 10.0
    assert rec.ttft_ms == pytest.approx(1000.0)
    assert rec.itl_ms == pytest.approx([500.0, 500.0])
    assert rec.e2e_ms == pytest.approx(2100.0)
    assert rec.tpot_ms == pytest.approx(220.0)
    assert rec.end_s == pytest.approx(2.1)
    assert rec.end_epoch_s == pytest.approx(1_000_000.21)


def test_non_speculative_has_nan_accept_length():
    rec = run([(0.1, chunk("a", 1)), (0.2, chunk("ab", 2, finish={"type": "length"})), (0.2, DONE)])
    assert rec.spec_verify_ct is None
    assert math.isnan(rec.accept_length) and math.isnan(rec.meta_spec_accept_length)


def test_single_token_has_nan_tpot_and_no_itl():
    rec = run([(0.1, chunk("a", 1, finish={"type": "length"})), (0.1, DONE)])
    assert rec.ok and math.isnan(rec.tpot_ms) and rec.itl_ms == [] and rec.ttft_ms == pytest.approx(100.0)


def test_empty_text_chunks_before_first_content_count_toward_first_chunk():
    rec = run(
        [(0.05, chunk("", 1)), (0.1, chunk("xy", 2)), (0.2, chunk("xyz", 3, finish={"type": "length"})), (0.2, DONE)]
    )
    assert rec.ttft_ms == pytest.approx(100.0) and rec.tokens_per_chunk == [2, 1]


def test_error_chunk_mid_stream():
    err = StreamEvent("error", {"error": {"message": "boom"}}, "")
    rec = run([(0.1, chunk("a", 1)), (0.15, err), (0.2, DONE)])
    assert not rec.ok and rec.error_type == "StreamError" and rec.error == "boom"
    assert rec.e2e_ms == pytest.approx(150.0) and rec.ttft_ms == pytest.approx(100.0)


def test_invalid_event_is_a_protocol_error():
    rec = run([(0.1, StreamEvent("invalid", None, "{x", "data is not JSON"))])
    assert rec.error_type == "StreamProtocolError" and "not JSON" in rec.error


def test_missing_completion_tokens_is_a_protocol_error():
    rec = run([(0.1, StreamEvent("chunk", {"text": "a"}, ""))])
    assert rec.error_type == "StreamProtocolError" and "completion_tokens" in rec.error


def test_decreasing_completion_tokens_is_a_protocol_error():
    rec = run([(0.1, chunk("a", 3)), (0.2, chunk("ab", 2))])
    assert rec.error_type == "StreamProtocolError"


def test_end_without_done_but_with_finish_reason_is_complete():
    rec = run([(0.1, chunk("a", 1)), (0.2, chunk("ab", 2, finish={"type": "length"}))], end=0.3)
    assert rec.ok and rec.e2e_ms == pytest.approx(200.0)


def test_end_without_done_or_finish_reason_is_incomplete():
    rec = run([(0.1, chunk("a", 1))], end=0.3)
    assert rec.error_type == "IncompleteStream"


def test_abort_finish_reason_is_an_error():
    rec = run([(0.1, chunk("a", 1, finish={"type": "abort", "message": "too long", "status_code": 400})), (0.1, DONE)])
    assert rec.error_type == "Aborted" and rec.error == "too long" and rec.finish_reason == "abort"


def test_events_after_done_are_ignored():
    rec = run([(0.1, chunk("a", 1, finish={"type": "length"})), (0.1, DONE), (0.5, chunk("ab", 2))])
    assert rec.ok and rec.output_tokens == 1 and rec.e2e_ms == pytest.approx(100.0)


def test_timebase_validation_and_anchor():
    ticks = iter([5.0, 7.5])
    tb = Timebase.start(clock=lambda: next(ticks), wall_clock=lambda: 100.0, time_scale=2)
    assert tb.origin == 5.0 and tb.epoch_at_origin == 100.0 and tb.time_scale == 2.0
    assert tb.now() == 7.5 and tb.run_s(7.5) == 5.0 and tb.epoch_s(7.5) == 102.5
    assert tb.duration_ms(5.0, 5.5) == 1000.0
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ConfigError):
            Timebase.start(time_scale=bad)


def test_records_to_frame_schema():
    frame = records_to_frame([run(spec_stream()), RequestRecord(error="x", error_type="E")], {"concurrency": 2})
    assert list(frame.columns[:2]) == ["concurrency", "request_index"]
    assert str(frame["output_tokens"].dtype) == "Int64" and frame["output_tokens"].isna().iloc[1]
    assert frame["itl_ms"].iloc[0] == pytest.approx([50.0, 50.0])
    assert records_to_frame([]).shape == (0, len(frame.columns) - 1)


def test_zero_accept_length_of_non_speculative_request_is_nan():
    rec = run(
        [(0.1, chunk("ab", 2, finish={"type": "length"}, spec_accept_length=0.0, spec_accept_rate=0.0)), (0.1, DONE)]
    )
    assert math.isnan(rec.meta_spec_accept_length) and math.isnan(rec.accept_length)
    rec = run([(0.1, chunk("ab", 2, finish={"type": "length"}, spec_verify_ct=0)), (0.1, DONE)])
    assert rec.spec_verify_ct == 0 and math.isnan(rec.accept_length)


def test_output_hash_of_the_cumulative_generate_text_and_the_accept_histogram():
    import hashlib

    events = spec_stream()
    events[3] = (
        0.200,
        chunk("a bcd ef", 6, finish={"type": "length", "length": 6}, spec_verify_ct=3, spec_accept_histogram=[1, 1, 1]),
    )
    rec = run(events)
    assert rec.output_hash == hashlib.sha256(b"a bcd ef").hexdigest()[:16]  # the last text, not the chunks joined
    assert rec.spec_accept_histogram == [1, 1, 1]  # 3 verifies: 0, 1 and 2 drafts accepted
    newer = spec_stream()
    newer[3] = (
        0.200,
        chunk(
            "a bcd ef",
            6,
            finish={"type": "length", "length": 6},
            spec_verify_ct=3,
            spec_correct_drafts_histogram=[0, 3],
        ),
    )  # the 0.5.12+ name
    assert run(newer).spec_accept_histogram == [0, 3]
    assert run([(0.1, chunk("x", 1, finish={"type": "length", "length": 1})), (0.2, DONE)]).spec_accept_histogram == []
    failed = run([(0.1, chunk("a", 1)), (0.2, StreamEvent("error", {"message": "boom"}, ""))])
    assert not failed.ok and failed.output_hash is None
    frame = records_to_frame([rec, failed])
    assert frame["output_hash"].iloc[0] == rec.output_hash and frame["output_hash"].isna().iloc[1]


def test_output_hash_of_openai_deltas_joined():
    import hashlib

    tb = Timebase(clock=lambda: 0.0, origin=0.0, epoch_at_origin=0.0)
    acc = StreamAccumulator(tb, 0.0, backend="completions")
    for t, text in ((0.1, "Hel"), (0.2, "lo")):
        acc.on_event(StreamEvent("chunk", {"id": "c", "choices": [{"text": text, "finish_reason": None}]}, ""), t)
    acc.on_event(
        StreamEvent(
            "chunk",
            {
                "id": "c",
                "choices": [{"text": "", "finish_reason": "length"}],
                "usage": {"prompt_tokens": 2, "completion_tokens": 2},
            },
            "",
        ),
        0.3,
    )
    acc.on_event(DONE, 0.3)
    assert acc.finish(0.3).output_hash == hashlib.sha256(b"Hello").hexdigest()[:16]
