"""Tests for workbench.bench._sse: the incremental /generate stream decoder."""

from __future__ import annotations

import json
import random

import pytest

from workbench.bench._sse import SSEDecoder, StreamEvent, decode_all


def sglang_chunk(text: str, completion_tokens: int, *, final: bool = False) -> dict:
    meta = {
        "id": "0123456789abcdef0123456789abcdef",
        "finish_reason": {"type": "length", "length": completion_tokens} if final else None,
        "prompt_tokens": 7,
        "completion_tokens": completion_tokens,
        "cached_tokens": 0,
    }
    if final:
        meta.update(e2e_latency=0.25, spec_verify_ct=2, spec_accept_length=completion_tokens / 2)
    return {"text": text, "output_ids": list(range(completion_tokens)), "meta_info": meta}


def sglang_body(newline: bytes = b"\n") -> tuple[bytes, list[dict]]:
    chunks = [
        sglang_chunk("Hé", 1),
        sglang_chunk("Hé llo 世界", 3),
        sglang_chunk("Hé llo 世界 🙂 done", 5, final=True),
    ]
    body = b""
    for c in chunks:
        body += b"data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")).encode() + newline * 2
    body += b"data: [DONE]" + newline * 2
    return body, chunks


def split_randomly(body: bytes, rng: random.Random) -> list[bytes]:
    pieces, i = [], 0
    while i < len(body):
        step = rng.choice([1, 1, 2, 3, 5, 8, 13, 64, 1000])
        pieces.append(body[i : i + step])
        i += step
    return pieces


def feed_pieces(pieces: list[bytes]) -> list[StreamEvent]:
    dec = SSEDecoder()
    events: list[StreamEvent] = []
    for p in pieces:
        events.extend(dec.feed(p))
    events.extend(dec.close())
    return events


def test_whole_body_decodes_to_chunks_then_done():
    body, chunks = sglang_body()
    events = decode_all(body)
    assert [e.kind for e in events] == ["chunk", "chunk", "chunk", "done"]
    assert [e.data for e in events[:3]] == chunks
    assert events[3].data is None


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_arbitrary_byte_splits_give_identical_events(newline):
    body, chunks = sglang_body(newline)
    expected = decode_all(body)
    assert [e.data for e in expected[:3]] == chunks
    rng = random.Random(1234)
    for _ in range(300):
        assert feed_pieces(split_randomly(body, rng)) == expected


def test_every_single_split_point():
    body, _ = sglang_body(b"\r\n")
    expected = decode_all(body)
    for cut in range(len(body) + 1):
        assert feed_pieces([body[:cut], body[cut:]]) == expected


def test_one_byte_at_a_time():
    body, _ = sglang_body(b"\r\n")
    assert feed_pieces([body[i : i + 1] for i in range(len(body))]) == decode_all(body)


def test_events_are_returned_as_soon_as_complete():
    dec = SSEDecoder()
    assert dec.feed(b'data: {"text": "a", "meta_info": {}}\n') == []
    events = dec.feed(b"\n")
    assert len(events) == 1 and events[0].data == {"text": "a", "meta_info": {}}


def test_error_chunk_mid_stream():
    body = (
        b'data: {"text":"x","meta_info":{"completion_tokens":1}}\n\n'
        b'data: {"error":{"message":"CUDA out of memory","code":500}}\n\n'
        b"data: [DONE]\n\n"
    )
    events = decode_all(body)
    assert [e.kind for e in events] == ["chunk", "error", "done"]
    assert events[1].error_message() == "CUDA out of memory"


def test_error_message_shapes():
    assert decode_all(b'data: {"error": "plain"}\n\n')[0].error_message() == "plain"
    assert decode_all(b'data: {"error": {"code": 3}}\n\n')[0].error_message() == '{"code": 3}'


def test_comments_other_fields_and_multiline_data():
    body = b': keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: {"a":\ndata:1}\n\n'
    events = decode_all(body)
    assert events == [StreamEvent("chunk", {"a": 1}, '{"a":\n1}')]


def test_data_without_space_after_colon():
    assert decode_all(b'data:{"a":2}\n\n')[0].data == {"a": 2}


def test_blank_lines_without_data_dispatch_nothing():
    assert decode_all(b"\n\n\r\n\r\n") == []


def test_invalid_json_and_non_object_are_reported_not_raised():
    events = decode_all(b"data: {not json\n\ndata: [1, 2]\n\ndata: [DONE]\n\n")
    assert [e.kind for e in events] == ["invalid", "invalid", "done"]
    assert "not JSON" in events[0].problem
    assert "list" in events[1].problem


def test_invalid_utf8_is_reported():
    events = decode_all(b'data: {"text": "\xff"}\n\n')
    assert events[0].kind == "invalid" and "UTF-8" in events[0].problem


def test_truncated_stream_reported_on_close():
    dec = SSEDecoder()
    assert dec.feed(b'data: {"text": "a"}\n\ndata: {"text": "ab"') == [
        StreamEvent("chunk", {"text": "a"}, '{"text": "a"}')
    ]
    tail = dec.close()
    assert len(tail) == 1 and tail[0].kind == "invalid" and "ended inside" in tail[0].problem
    assert dec.close() == []


def test_clean_end_without_done_gives_nothing_on_close():
    dec = SSEDecoder()
    dec.feed(b'data: {"a": 1}\n\n')
    assert dec.close() == []


def test_feed_after_close_raises():
    dec = SSEDecoder()
    dec.close()
    with pytest.raises(ValueError):
        dec.feed(b"data: x\n\n")


def test_cr_at_end_of_chunk_followed_by_lf():
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a": 1}\r') == []
    assert dec.feed(b"") == []
    events = dec.feed(b"\n\r")
    assert [e.data for e in events] == [{"a": 1}]
    assert dec.feed(b"\n") == []  # pairs with the '\r' before it, no extra blank line


def test_bench_package_exports():
    import workbench.bench as bench
    import workbench.store as store

    assert sorted(bench.__all__) == sorted(set(bench.__all__))
    for module in (bench, store):
        for name in module.__all__:
            assert getattr(module, name) is not None, name
    assert {"run_sweep", "SweepResult", "load_prompts", "summarize_levels", "count_tokens", "load_tokenizer"} <= set(
        bench.__all__
    )
    assert {"new_run", "save_level", "finish_run", "load_run", "list_runs", "load_runs"} <= set(store.__all__)
