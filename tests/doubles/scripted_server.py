"""A scripted SGLang-shaped HTTP server for testing the load generator's timing.

Not the simulator (:mod:`workbench.sim` models an engine); this server plays back a
fixed :class:`StreamScript` per request: a delay, then chunks of given token counts at
given gaps, so the client's TTFT/ITL/TPOT/accept-length can be checked against known
numbers. The same script plays on ``/generate`` and, in the OpenAI shapes (usage on
every chunk when ``stream_options.continuous_usage_stats`` asks, a final usage chunk
when ``include_usage`` does), on ``/v1/completions`` and ``/v1/chat/completions``.
Chunks can be written together (``write_groups``: they then arrive in one read) and a
stream can be cut (``disconnect_after_chunks``). It also serves ``/flush_cache`` (optionally answering 400 "not idle" a few
times), ``/server_info`` (or only ``/get_server_info``, as before 0.5.6), and records
how many ``/generate`` requests are in flight over time.

It runs on its own event loop in a daemon thread, bound to 127.0.0.1 on a free port::

    with ScriptedServer(StreamScript(first_delay_s=0.05, chunk_tokens=(1, 3, 2))) as srv:
        run_sweep(srv.url, ...)
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

__all__ = ["ScriptedServer", "StreamScript"]


@dataclasses.dataclass(frozen=True)
class StreamScript:
    """How the server answers one ``/generate`` request.

    Attributes:
        first_delay_s: wait before the first chunk (seconds).
        chunk_tokens: tokens added by each chunk, in order (their sum is completion_tokens).
        gap_s: wait between consecutive chunks (seconds).
        spec_verify_ct: if set, the final chunk carries it and ``spec_accept_length``.
        status: HTTP status; anything but 200 answers ``{"error": {"message": ...}}`` at once.
        error_after_chunks: if set, send an error chunk after this many chunks, then ``[DONE]``.
        prompt_tokens: reported prompt_tokens.
        send_done: end with ``data: [DONE]``.
        hold_s: wait after the last chunk before ``[DONE]`` (seconds).
        write_groups: chunks per write, in order (e.g. ``(1, 2, 1)``: the second and third
            chunk go out in one write, so they reach the client in one read); the gap
            is between writes. None: one chunk per write.
        disconnect_after_chunks: if set, close the connection (without ending the
            chunked body) after this many chunks.
        until_in_flight: if set, hold every answer (before ``first_delay_s``) until this many
            requests are open at once, at most ``until_in_flight_timeout_s``: a test of how many
            streams a client keeps open then holds on a loaded machine, where connecting them all
            takes longer than any fixed delay.
        until_in_flight_timeout_s: the most seconds an answer waits for ``until_in_flight``.
    """

    first_delay_s: float = 0.0
    chunk_tokens: Sequence[int] = (1,)
    gap_s: float = 0.0
    spec_verify_ct: int | None = None
    status: int = 200
    error_after_chunks: int | None = None
    prompt_tokens: int = 10
    send_done: bool = True
    hold_s: float = 0.0
    write_groups: Sequence[int] | None = None
    disconnect_after_chunks: int | None = None
    until_in_flight: int | None = None
    until_in_flight_timeout_s: float = 30.0


def _chunk(
    rid: str, text: str, completion: int, prompt_tokens: int, finish: dict | None, extra: dict[str, Any] | None = None
) -> bytes:
    meta = {
        "id": rid,
        "finish_reason": finish,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "cached_tokens": 0,
        "weight_version": "default",
    }
    meta.update(extra or {})
    body = {"text": text, "output_ids": list(range(completion)), "meta_info": meta}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def _openai_chunk(
    kind: str, rid: str, delta: str, completion: int, prompt_tokens: int, finish: str | None, usage: bool
) -> bytes:
    if kind == "chat":
        choice: dict[str, Any] = {"index": 0, "delta": {"content": delta}, "finish_reason": finish}
    else:
        choice = {"index": 0, "text": delta, "finish_reason": finish}
    body: dict[str, Any] = {"id": rid, "object": "chunk", "choices": [choice]}
    body["usage"] = (
        {"prompt_tokens": prompt_tokens, "completion_tokens": completion, "total_tokens": prompt_tokens + completion}
        if usage
        else None
    )
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


class ScriptedServer:
    """Serve scripted streams on 127.0.0.1 from a background thread.

    Args:
        script: one script for every request, or ``f(request_body, index) -> StreamScript``.
        flush_busy_answers: answer the first N ``/flush_cache`` calls with 400 "not idle".
        server_info: body of ``/server_info``; default reports avg_spec_accept_length 2.5.
        legacy_server_info: serve only ``/get_server_info`` (``/server_info`` gives 404).

    Attributes (read after requests ran):
        url: ``http://127.0.0.1:<port>``.
        bodies: JSON bodies of the ``/generate`` requests, in arrival order.
        in_flight_log: ``(time.perf_counter(), in_flight)`` after every change.
        write_times: ``time.perf_counter()`` after each write of a stream's chunks, in order (the
            server's own send times, which a loaded machine may delay).
        write_windows: per request index, ``(epoch before, epoch after)`` (``time.time()``, seconds) of each
            write of its chunks and of its ``[DONE]``, in order: the kernel's receive stamp of what a write
            sent over loopback lies inside its window, however late a loaded machine ran the write.
        request_epochs: per request index, ``time.time()`` when its handler began (after the client sent it).
        max_in_flight: the most ``/generate`` requests open at once.
        flush_calls: number of ``/flush_cache`` calls.
    """

    def __init__(
        self,
        script: StreamScript | Callable[[dict[str, Any], int], StreamScript] = StreamScript(),
        *,
        flush_busy_answers: int = 0,
        server_info: dict[str, Any] | None = None,
        legacy_server_info: bool = False,
    ) -> None:
        self._script = script
        self._flush_busy = flush_busy_answers
        self._server_info = (
            server_info
            if server_info is not None
            else {
                "version": "scripted",
                "internal_states": [{"avg_spec_accept_length": 2.5, "last_gen_throughput": 100.0}],
            }
        )
        self._legacy = legacy_server_info
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.in_flight_log: list[tuple[float, int]] = []
        self._reached: dict[int, asyncio.Event] = {}  # in-flight count -> set once it was reached
        self.write_times: list[float] = []
        self.write_windows: dict[int, list[tuple[float, float]]] = {}
        self.request_epochs: dict[int, float] = {}
        self.flush_calls = 0
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # -- handlers ---------------------------------------------------------
    def _set_in_flight(self, delta: int) -> None:
        self.in_flight += delta
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.in_flight_log.append((time.perf_counter(), self.in_flight))
        for count, reached in self._reached.items():
            if self.in_flight >= count:
                reached.set()

    async def _until_in_flight(self, count: int, timeout_s: float) -> None:
        reached = self._reached.setdefault(count, asyncio.Event())
        if self.max_in_flight >= count:
            reached.set()
        try:
            await asyncio.wait_for(reached.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass  # the test's own assertion on max_in_flight says what was reached

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, kind="completions")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, kind="chat")

    def _encode(
        self,
        kind: str,
        body: dict[str, Any],
        rid: str,
        text: str,
        delta: str,
        completion: int,
        script: StreamScript,
        finish: dict | None,
        extra: dict[str, Any],
    ) -> bytes:
        if kind == "generate":
            return _chunk(rid, text, completion, script.prompt_tokens, finish, extra)
        options = body.get("stream_options") or {}
        return _openai_chunk(
            kind,
            rid,
            delta,
            completion,
            script.prompt_tokens,
            finish and finish["type"],
            bool(options.get("continuous_usage_stats")),
        )

    async def _generate(self, request: web.Request, kind: str = "generate") -> web.StreamResponse:
        begun = time.time()
        body = await request.json()
        index = len(self.bodies)
        self.request_epochs[index] = begun
        windows = self.write_windows.setdefault(index, [])
        self.bodies.append(body)
        script = self._script(body, index) if callable(self._script) else self._script
        if script.status != 200:
            return web.json_response({"error": {"message": f"scripted status {script.status}"}}, status=script.status)
        self._set_in_flight(+1)
        rid = f"{index:032x}"
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        counted = True
        try:
            await resp.prepare(request)
            if script.until_in_flight is not None:
                await self._until_in_flight(script.until_in_flight, script.until_in_flight_timeout_s)
            await asyncio.sleep(script.first_delay_s)
            completion, text = 0, ""
            groups = list(script.write_groups or [1] * len(script.chunk_tokens))
            pending = b""
            for i, tokens in enumerate(script.chunk_tokens):
                if i == script.disconnect_after_chunks:
                    await resp.write(pending)
                    await asyncio.sleep(0.01)
                    assert request.transport is not None
                    request.transport.close()  # the chunked body never ends: the client sees a broken stream
                    return resp
                if script.error_after_chunks is not None and i == script.error_after_chunks:
                    await resp.write(pending + b'data: {"error":{"message":"scripted failure"}}\n\n')
                    pending = b""
                    break
                completion += tokens
                delta = " tok" * tokens
                text += delta
                last = i == len(script.chunk_tokens) - 1
                finish = {"type": "length", "length": completion} if last else None
                extra: dict[str, Any] = {}
                if last:
                    extra["e2e_latency"] = 0.0
                    if script.spec_verify_ct is not None:
                        extra["spec_verify_ct"] = script.spec_verify_ct
                        extra["spec_accept_length"] = completion / script.spec_verify_ct
                pending += self._encode(kind, body, rid, text, delta, completion, script, finish, extra)
                groups[0] -= 1
                if groups[0] <= 0 or last:
                    groups.pop(0)
                    before = time.time()
                    await resp.write(pending)
                    self.write_times.append(time.perf_counter())
                    windows.append((before, time.time()))
                    pending = b""
                    if not last:
                        await asyncio.sleep(script.gap_s)
            if kind != "generate" and (body.get("stream_options") or {}).get("include_usage") and completion:
                usage = {
                    "prompt_tokens": script.prompt_tokens,
                    "completion_tokens": completion,
                    "total_tokens": script.prompt_tokens + completion,
                }
                await resp.write(b"data: " + json.dumps({"id": rid, "choices": [], "usage": usage}).encode() + b"\n\n")
            if script.hold_s:
                await asyncio.sleep(script.hold_s)
            # Count the request as finished before [DONE] reaches the client, so the
            # client's next request never overlaps it in this server's bookkeeping.
            self._set_in_flight(-1)
            counted = False
            if script.send_done:
                before = time.time()
                await resp.write(b"data: [DONE]\n\n")
                windows.append((before, time.time()))
            await resp.write_eof()
        finally:
            if counted:
                self._set_in_flight(-1)
        return resp

    async def _flush(self, request: web.Request) -> web.Response:
        self.flush_calls += 1
        if self.flush_calls <= self._flush_busy:
            return web.Response(status=400, text="Cache not flushed: requests running.\n")
        return web.Response(text="Cache flushed.\n")

    async def _info(self, request: web.Request) -> web.Response:
        return web.json_response(self._server_info)

    # -- lifecycle --------------------------------------------------------
    def start(self) -> "ScriptedServer":
        """Start serving; returns once the port is bound."""
        app = web.Application()
        app.router.add_post("/generate", self._generate)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/flush_cache", self._flush)
        app.router.add_get("/get_server_info", self._info)
        if not self._legacy:
            app.router.add_get("/server_info", self._info)
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._runner = web.AppRunner(app)
                loop.run_until_complete(self._runner.setup())
                site = web.TCPSite(self._runner, "127.0.0.1", 0)
                loop.run_until_complete(site.start())
                port = self._runner.addresses[0][1]
                self.url = f"http://127.0.0.1:{port}"
            except OSError as exc:  # pragma: no cover - bind failure
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="scripted-sglang", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Stop serving and join the thread (safe to call twice)."""
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
