"""The simulated SGLang server: an aiohttp app over :class:`~workbench.sim._engine.EngineCore`.

Serves what ``sglang.bench_serving`` and the workbench call, in the shapes of the
emulated SGLang version (:mod:`workbench.sim._api_shapes`, chosen by
``--sim-api-version``): ``/generate`` (streaming SSE with cumulative text and several
tokens per chunk under speculation, and the non-streaming form), ``/health``,
``/health_generate``, ``/v1/models``, the version's model-info and server-info routes,
``/flush_cache``, and the OpenAI-compatible ``/v1/completions`` and
``/v1/chat/completions`` (:mod:`workbench.sim._openai_routes`). One HTTP request is one
engine request on every route, so timing and speculation are the same everywhere.

The engine runs in one asyncio task in real time: each iteration's simulated
duration (divided by ``--sim-time-scale``) is slept against an absolute deadline,
so timer overshoot does not accumulate; if the process falls behind (CPU-bound),
the lag is recorded and reported in ``/server_info`` under ``simulation``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any, cast

import orjson
from aiohttp import web

from workbench.sim import _api_shapes as api_shapes
from workbench.sim import _openai_routes as openai_routes
from workbench.sim._contract import SAMPLING_FIELDS_0517, contract_error
from workbench.sim._engine import EngineCore, Iteration, SimRequest
from workbench.sim._metrics import SimMetrics
from workbench.releases import release_number
from workbench.sim._openai import ChatTemplate
from workbench.sim._acceptance import ForcedAcceptance, forced_accept_length
from workbench.sim._profile_acceptance import acceptance_regime
from workbench.sim._server_args import SimServerConfig
from workbench.sim._text import TextModel

log = logging.getLogger("sglang.sim")

#: Behind-schedule slack (s) the clock may catch up on before it re-anchors.
MAX_CATCH_UP_S = 0.05


@dataclasses.dataclass
class _Pending:
    """HTTP-side state of one request."""

    request: SimRequest
    created: float
    updates: asyncio.Queue = dataclasses.field(default_factory=asyncio.Queue)
    output_ids: list[int] = dataclasses.field(default_factory=list)
    text_parts: list[str] = dataclasses.field(default_factory=list)
    sent_ids: int = 0  # output ids already streamed (versions that stream id deltas)
    first_token_seen: bool = False
    first_token_at: float | None = None  # wall clock of the first output token (the end of its prefill)
    sent_ts: float | None = None  # response_sent_to_client_ts of its first streamed chunk
    stream_interval: int = 1  # stream a chunk every this many output tokens (SGLang's --stream-interval)
    generated: int = 0  # output tokens the engine produced for this request
    handed: int = 0  # of them, those put on ``updates``
    #: What the output tokens are drawn from: the prompt under greedy sampling (:func:`greedy_text_key`),
    #: so a spec server and its baseline return the same tokens for the same prompt; else the rid.
    text_key: str | None = None


def greedy_text_key(prompt: str | list[int], temperature: float | None) -> str | None:
    """The key a request's output tokens are drawn from when it samples greedily, else None.

    Under greedy sampling (temperature 0) speculative decoding is lossless: the target model's
    argmax decides every token whatever was drafted, so a spec server and its baseline return
    the same tokens for the same prompt (Leviathan et al. 2023, "Fast Inference from
    Transformers via Speculative Decoding", §2.3; SGLang verifies by the target's greedy
    choice at temperature 0). The simulator keeps that by construction: a greedy request's
    output is a function of its prompt alone (text, or token ids), never of the server's
    settings, the batch or the rid. Sampled requests (temperature > 0, or None: SGLang's
    default 1.0) draw from their rid.
    """
    if temperature is None or temperature != 0:
        return None
    body = prompt if isinstance(prompt, str) else ",".join(str(int(t)) for t in prompt)
    return "greedy:" + hashlib.blake2b(body.encode(), digest_size=16).hexdigest()


class SimServer:
    """Engine task plus HTTP handlers. Build with a parsed :class:`SimServerConfig`."""

    def __init__(self, config: SimServerConfig, *, text: TextModel | None = None) -> None:
        import random

        self.shape = api_shapes.get_shape(config.api_version)
        self.config = config
        self.profile = config.profile
        self.time_scale = float(config.args["sim_time_scale"])
        if self.time_scale <= 0:
            from workbench.errors import ConfigError

            raise ConfigError(f"--sim-time-scale must be > 0, got {self.time_scale}")
        self.engine = EngineCore.from_config(config, rng=random.Random(config.args["sim_seed"]))
        tok_dir = config.args.get("tokenizer_path")
        self.text = text or (TextModel(Path(tok_dir)) if tok_dir else TextModel())
        self.chat_template = ChatTemplate(self.text.tokenizer_dir)
        self.pending: dict[str, _Pending] = {}
        self._acceptance: dict[str | None, Any] = {}  # acceptance model per sampling regime
        # SGLang's SGLANG_SIMULATE_ACC_LEN in the server's environment (a variant's [env]) forces it, as there
        self.forced_accept_length = forced_accept_length(os.environ)
        for temperature in (0.0, 1.0):  # solved (and a bad table refused) at start-up, not at the first request
            self.acceptance_for(temperature)
        self.emit_timestamps = bool(config.args.get("sim_emit_timestamps"))
        self.metrics = SimMetrics(
            self.served_model_name, spec_accept_rate=release_number(self.shape.version) >= (0, 5, 4)
        )
        self.startup_time = time.time()
        self.behind_schedule_s = 0.0
        self.max_lag_s = 0.0
        self.iterations = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    # -- engine loop --------------------------------------------------------
    async def run_engine(self) -> None:
        """Step the engine forever, sleeping each iteration's simulated duration."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        while True:
            if self.engine.idle:
                self._wake.clear()
                await self._wake.wait()
                deadline = None
            iteration = self.engine.step()
            if iteration is None:
                continue
            now = loop.time()
            if deadline is None:
                deadline = now
            elif now - deadline > MAX_CATCH_UP_S:
                self.behind_schedule_s += now - deadline
                deadline = now
            deadline += iteration.duration_s / self.time_scale
            delay = deadline - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                self.max_lag_s = max(self.max_lag_s, -delay)
            self.iterations += 1
            self._deliver(iteration)

    def _deliver(self, iteration: Iteration) -> None:
        for emission in iteration.emissions:
            pending = self.pending.get(emission.request.rid)
            if pending is None:
                continue
            pending.generated += emission.new_tokens
            interval = pending.stream_interval
            if interval > 1 and not emission.finished and pending.generated % interval != 1:
                continue  # no chunk is due (chunks' rule): the tokens wait, the request's task is not woken
            pending.updates.put_nowait((pending.generated - pending.handed, emission.finished))
            pending.handed = pending.generated
        if iteration.log_line:
            log.info(iteration.log_line)

    def acceptance_for(self, temperature: float | None = 1.0, top_k: int | None = None):
        """The acceptance model of a request with these sampling parameters, on this server's prompt set
        (``--sim-prompt-set``): greedy (temperature below 1e-6 or top_k 1) or sampled figures."""
        regime = acceptance_regime(1.0 if temperature is None else temperature, top_k)
        model = self._acceptance.get(regime)
        if model is None:
            model = self._acceptance[regime] = (
                ForcedAcceptance(forced_length=self.forced_accept_length)
                if self.forced_accept_length
                else self.profile.acceptance_for(self.config.args.get("sim_prompt_set"), regime=regime)
            )
        return model

    def submit(
        self,
        prompt_tokens: int,
        max_new_tokens: int,
        rid: str | None = None,
        *,
        temperature: float | None = 1.0,
        top_k: int | None = None,
        prompt: str | list[int] | None = None,
        stream_interval: int | None = None,
    ) -> _Pending:
        """Queue one engine request; ``temperature``/``top_k`` pick its acceptance (SGLang's default
        temperature is 1.0: a request that names none samples); with ``prompt`` (its text or token
        ids) a greedy request's output tokens follow from the prompt (:func:`greedy_text_key`);
        ``stream_interval``: the request's ``sampling_params.stream_interval`` (None: the server's
        ``--stream-interval``)."""
        rid = rid or uuid.uuid4().hex
        request = SimRequest(
            rid=rid,
            prompt_tokens=max(1, prompt_tokens),
            max_new_tokens=max_new_tokens,
            acceptance=self.acceptance_for(temperature, top_k),
        )
        pending = _Pending(
            request=request,
            created=time.time(),
            text_key=None if prompt is None else greedy_text_key(prompt, temperature),
            stream_interval=stream_interval or int(self.config.args.get("stream_interval") or 1),
        )
        self.pending[rid] = pending
        self.engine.submit(request)
        self._wake.set()
        return pending

    # -- /generate ----------------------------------------------------------
    async def generate(self, http: web.Request) -> web.StreamResponse:
        """POST/PUT /generate: SGLang's native generation endpoint."""
        try:
            body = await http.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "Request body is not valid JSON")
        if self.shape.strict_generate:
            violation = contract_error(body)
            if violation is not None:
                return web.json_response({"error": violation}, status=400)
        if not isinstance(body, dict):
            return _error(400, "Request body must be a JSON object (GenerateReqInput)")
        text, input_ids = body.get("text"), body.get("input_ids")
        params = body.get("sampling_params") or {}
        if isinstance(text, list) or (isinstance(input_ids, list) and input_ids and isinstance(input_ids[0], list)):
            prompts: list[Any] = text if isinstance(text, list) else cast(list, input_ids)  # a list of lists here
            if body.get("stream"):
                return _error(400, "The simulator does not stream batched (list) prompts; send one prompt per request")
            plist = params if isinstance(params, list) else [params] * len(prompts)
            outs = []
            for prompt, sp in zip(prompts, plist):
                checked = self._check(
                    sp, prompt if isinstance(prompt, str) else None, prompt if isinstance(prompt, list) else None
                )
                if isinstance(checked, web.Response):
                    return checked
                outs.append(self._submit_checked(checked))
            return web.json_response([await self.collect(p) for p in outs])
        checked = self._check(params, text, input_ids, rid=body.get("rid"))
        if isinstance(checked, web.Response):
            return checked
        pending = self._submit_checked(checked)
        if not body.get("stream"):
            try:
                return web.json_response(await self.collect(pending))
            except asyncio.CancelledError:
                self.abort(pending)
                raise
        return await self._stream(http, pending)

    def _submit_checked(self, checked: tuple) -> _Pending:
        prompt_tokens, max_new, rid, temperature, top_k, prompt, stream_interval = checked
        return self.submit(
            prompt_tokens,
            max_new,
            rid,
            temperature=temperature,
            top_k=top_k,
            prompt=prompt,
            stream_interval=stream_interval,
        )

    def _check(self, params: Any, text: Any, input_ids: Any, rid: Any = None) -> tuple | web.Response:
        if not isinstance(params, dict):
            return _error(400, "sampling_params must be an object")
        status = self.shape.unknown_sampling_param_status
        if status is not None and any(key not in SAMPLING_FIELDS_0517 for key in params):
            # SGLang 0.5.17 raises a TypeError building SamplingParams(**params): a bare 500 in plain text
            return web.Response(status=status, text="Internal Server Error")
        max_new = params.get("max_new_tokens", 128)
        if not isinstance(max_new, int) or isinstance(max_new, bool):
            return _error(400, f"max_new_tokens must be an integer, got {max_new!r}")
        if max_new < 0:
            return _error(400, self.shape.negative_max_new_tokens.format(value=max_new))
        if max_new == 0:  # SGLang answers a prefill-only request; the simulator always generates
            return _error(400, "max_new_tokens 0 (a prefill-only request) is not simulated: ask for at least 1 token")
        if isinstance(text, str):
            prompt_tokens = self.text.count_tokens(text)
        elif isinstance(input_ids, list):
            prompt_tokens = len(input_ids)
        else:
            return _error(400, "Either text or input_ids should be provided.")
        if rid is not None and not isinstance(rid, str):
            return _error(400, "rid must be a string")
        temperature, top_k = params.get("temperature", 1.0), params.get("top_k")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
            return _error(400, f"temperature must be a number, got {temperature!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
            return _error(400, f"top_k must be an integer, got {top_k!r}")
        interval = params.get("stream_interval")
        if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int) or interval < 1):
            return _error(400, f"stream_interval must be a positive integer, got {interval!r}")
        return prompt_tokens, max_new, rid, temperature, top_k, text if isinstance(text, str) else input_ids, interval

    def _advance(self, pending: _Pending, new_tokens: int, finished: bool = False) -> None:
        req = pending.request
        if not pending.first_token_seen and new_tokens:
            pending.first_token_seen = True
            pending.first_token_at = time.time()
            self.metrics.first_token((time.time() - pending.created) * self.time_scale)
        if finished and not req.aborted:
            self.metrics.finished(
                req.prompt_tokens,
                len(pending.output_ids) + new_tokens,
                (time.time() - pending.created) * self.time_scale,
            )
        start = len(pending.output_ids)
        ids = self.text.output_ids(pending.text_key or req.rid, start, new_tokens)
        pending.output_ids.extend(ids)
        pending.text_parts.extend(self.text.piece(i) for i in ids)

    def _body(self, pending: _Pending, *, final: bool, stream: bool) -> dict[str, Any]:
        """One ``/generate`` chunk (``stream``) or reply in the emulated version's shape."""
        req = pending.request
        done = final and not req.aborted
        weight_version = self.config.args["weight_version"]
        meta = self.shape.meta_info(
            rid=req.rid,
            prompt_tokens=req.prompt_tokens,
            completion_tokens=len(pending.output_ids),
            finish_reason=api_shapes.finish_reason_length(req.max_new_tokens) if done else None,
            weight_version=weight_version,
        )
        if self.shape.retraction_key:  # SGLang's per-request retraction count (0 unless the KV pool ran out)
            meta[self.shape.retraction_key] = req.retractions
        if done:
            spec = self.config.spec
            counts = (
                api_shapes.SpecCounts(
                    completion_tokens=len(pending.output_ids),
                    verify_ct=req.verify_ct,
                    accepted_drafts=req.accepted_drafts,
                    num_steps=spec.num_steps,
                    num_draft_tokens=spec.num_draft_tokens,
                    histogram=tuple(req.accept_histogram),
                )
                if spec.enabled
                else None
            )
            e2e = (time.time() - pending.created) * self.time_scale
            self.shape.finish(meta, e2e_latency=e2e, spec=counts, weight_version=weight_version)
        if self.shape.metrics_timing and self.config.args.get("enable_metrics"):
            _add_timing(meta, pending, done=done, time_scale=self.time_scale)
        ids = list(pending.output_ids)
        if stream and self.shape.output_ids == "delta":
            ids = ids[pending.sent_ids :]
            pending.sent_ids = len(pending.output_ids)
        return self.shape.generate_body(text="".join(pending.text_parts), output_ids=ids, meta=self.shape.ordered(meta))

    async def collect(self, pending: _Pending) -> dict[str, Any]:
        while True:
            new, finished = await pending.updates.get()
            self._advance(pending, new, finished)
            if finished:
                self.pending.pop(pending.request.rid, None)
                body = self._body(pending, final=True, stream=False)
                if self.shape.response_sent_ts:
                    body["meta_info"]["response_sent_to_client_ts"] = time.time()
                return body

    async def chunks(self, pending: _Pending):
        """The ``/generate`` stream of one request as bodies, one per engine update that streams.

        With a stream interval k > 1 (the request's ``sampling_params.stream_interval``, else the
        server's ``--stream-interval``) an update streams when the request then holds 1, k+1,
        2k+1, ... output tokens, and the last always does: SGLang 0.5.9's rule
        (``srt/managers/scheduler_output_processor_mixin.py``, ``stream_output_generation``),
        so a speculative step that jumps past such a count sends nothing until the next.

        The first chunk gets ``response_sent_to_client_ts`` when the version has it. The
        request leaves the server when the stream ends; if the consumer goes away (the
        generator is closed or cancelled) it is aborted in the engine.
        """
        first = True
        finished = False
        interval = pending.stream_interval
        try:
            while True:
                new, final = await pending.updates.get()
                self._advance(pending, new, final)
                if not (final or interval == 1 or len(pending.output_ids) % interval == 1):
                    continue  # SGLang 0.5.9 streams at 1, k+1, 2k+1, ... tokens and at the end
                body = self._body(pending, final=final, stream=True)
                if first and self.shape.response_sent_ts:
                    pending.sent_ts = time.time()
                    body["meta_info"]["response_sent_to_client_ts"] = pending.sent_ts
                elif final and self.shape.sent_ts_on_final and pending.sent_ts is not None:
                    body["meta_info"]["response_sent_to_client_ts"] = pending.sent_ts
                    body["meta_info"] = self.shape.ordered(body["meta_info"])
                first = False
                finished = final
                yield body
                if final:
                    return
        finally:
            if not finished:
                self.abort(pending)
            self.pending.pop(pending.request.rid, None)

    async def _stream(self, http: web.Request, pending: _Pending) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(http)
        chunks = self.chunks(pending)
        try:
            async for body in chunks:
                if self.emit_timestamps:  # opt-in: when this chunk left the server (client fidelity checks)
                    body["meta_info"]["emit_ts"] = time.time()
                # orjson, as SGLang's http_server streams (compact, UTF-8): the stdlib encoder was a third
                # of the server's CPU at concurrency 64 (docs/PERFORMANCE.md)
                await resp.write(b"data: " + orjson.dumps(body) + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
        finally:
            await chunks.aclose()
        return resp

    def abort(self, pending: _Pending) -> None:
        self.engine.abort(pending.request.rid)
        self.pending.pop(pending.request.rid, None)

    # -- management endpoints ----------------------------------------------
    async def health(self, http: web.Request) -> web.Response:
        """/health and /health_generate: a one-token probe through the engine (0.5.9)."""
        pending = self.submit(1, 1, rid=f"HEALTH_CHECK_{uuid.uuid4().hex[:8]}")
        try:
            await asyncio.wait_for(self.collect(pending), timeout=20)
        except asyncio.TimeoutError:
            self.abort(pending)
            return web.Response(status=503)
        return web.Response(status=200)

    @property
    def served_model_name(self) -> str:
        """``--served-model-name``, default the model path (as SGLang)."""
        return self.config.args["served_model_name"] or self.config.args["model_path"]

    async def models(self, http: web.Request) -> web.Response:
        args = self.config.args
        return web.json_response(
            self.shape.models_list(
                served_model_name=self.served_model_name,
                model_path=args["model_path"],
                created=int(self.startup_time),
                max_model_len=args["context_length"] or 131072,
            )
        )

    async def model_info(self, http: web.Request) -> web.Response:
        args = self.config.args
        return web.json_response(
            self.shape.model_info(
                model_path=args["model_path"],
                tokenizer_path=str(self.text.tokenizer_dir),
                weight_version=args["weight_version"],
                served_model_name=self.served_model_name,
            )
        )

    async def server_info(self, http: web.Request) -> web.Response:
        args = dict(self.config.args)
        return web.json_response(
            self.shape.server_info(
                args=args,
                max_total_num_tokens=self.config.kv_capacity_tokens or self.profile.kv_capacity_tokens(args),
                max_req_input_len=(self.config.kv_capacity_tokens or self.profile.kv_capacity_tokens(args)) - 1,
                startup_time=self.startup_time,
                launch_command=self.config.launch_command,
                last_gen_throughput=self.engine.last_gen_throughput,
                avg_spec_accept_length=self.engine.avg_spec_accept_length,
                max_running_requests=self.config.max_running_requests,
                simulation=self.simulation_info(),
            )
        )

    def simulation_info(self) -> dict[str, Any]:
        """What ``/server_info`` says about the simulator itself (labels simulated data)."""
        spec = self.config.spec
        return {
            "engine": "sim",
            "profile": self.profile.name,
            "profile_description": self.profile.description,
            "target_model": self.profile.model.get("target"),
            "draft_model": self.profile.model.get("draft"),
            "cost_model": "roofline" if self.profile.physics is not None else "linear",
            "time_scale": self.time_scale,
            "emulated_sglang_version": self.config.sglang_version,
            "emulated_api_version": self.shape.version,
            "spec": spec.label(),
            "spec_v2": spec.spec_v2,
            "spec_off_above": self.config.args.get("sim_spec_off_above"),
            "spec_policy": self.engine.spec_policy.describe() if self.engine.spec_policy is not None else None,
            "current_spec_steps": self.engine.current_steps if spec.enabled else None,
            "kv_capacity_tokens": self.engine.capacity,
            "kv_used_tokens": self.engine.kv_used,
            "token_usage": round(self.engine.token_usage, 4),
            "total_retractions": self.engine.total_retractions,
            "alloc_len_per_decode": self.engine.memory.alloc_len,
            "prompt_set": self.config.args.get("sim_prompt_set"),
            "forced_accept_length": self.forced_accept_length,  # SGLANG_SIMULATE_ACC_LEN, None when not forced
            "expected_accept_length": (self.acceptance_for(1.0).expected_accept_length(spec) if spec.enabled else None),
            "expected_accept_length_by_regime": (
                {
                    r: round(self.acceptance_for(0.0 if r == "greedy" else 1.0).expected_accept_length(spec), 4)
                    for r in ("greedy", "sampled")
                }
                if spec.enabled
                else None
            ),
            "iterations": self.iterations,
            "behind_schedule_s": round(self.behind_schedule_s, 4),
            "max_lag_s": round(self.max_lag_s, 4),
            "multi_node": (
                {
                    "nnodes": self.config.args["nnodes"],
                    "dist_init_addr": self.config.args["dist_init_addr"],
                    "note": "SIMULATED: the ranks met over TCP at --dist-init-addr (no NCCL, no GPUs); "
                    "the performance model is the one-node model of --tp-size, with no "
                    "inter-node cost",
                }
                if self.config.args.get("nnodes", 1) > 1
                else None
            ),
        }

    async def flush_cache(self, http: web.Request) -> web.Response:
        """/flush_cache: resets counters when idle (200), refuses otherwise (400)."""
        if not self.engine.idle:
            return web.Response(status=400, text=api_shapes.FLUSH_CACHE_TEXT)
        self.engine.reset_counters()
        log.info("Cache flushed successfully!")
        return web.Response(status=200, text=api_shapes.FLUSH_CACHE_TEXT)

    async def metrics_text(self, http: web.Request) -> web.Response:
        """GET /metrics (only with ``--enable-metrics``, as SGLang): :mod:`workbench.sim._metrics`."""
        return web.Response(
            text=self.metrics.render(self.engine, spec_enabled=self.config.spec.enabled),
            content_type="text/plain",
            charset="utf-8",
        )

    # -- app ----------------------------------------------------------------
    def app(self) -> web.Application:
        """The aiohttp application; starts the engine task on startup."""
        app = web.Application()
        r = app.router
        r.add_route("POST", "/generate", self.generate)
        r.add_route("PUT", "/generate", self.generate)
        for path in ("/health", "/health_generate"):
            r.add_get(path, self.health)
        r.add_get("/v1/models", self.models)
        for path in self.shape.model_info_routes:
            r.add_get(path, self.model_info)
        for path in self.shape.server_info_routes:
            r.add_get(path, self.server_info)
        openai_routes.add_routes(r, self)
        r.add_route("GET", "/flush_cache", self.flush_cache)
        r.add_route("POST", "/flush_cache", self.flush_cache)
        if self.config.args.get("enable_metrics"):
            r.add_get("/metrics", self.metrics_text)

        async def start(_: web.Application) -> None:
            self._task = asyncio.create_task(self.run_engine())

        async def stop(_: web.Application) -> None:
            if self._task:
                self._task.cancel()

        app.on_startup.append(start)
        app.on_cleanup.append(stop)
        return app


def _add_timing(meta: dict[str, Any], pending: _Pending, *, done: bool, time_scale: float) -> None:
    """SGLang 0.5.17's request timestamps (with ``--enable-metrics``; ``srt/observability/req_time_stats.py``).

    Wall-clock stamps of this server: the arrival (``request_received_ts``, and ``forward_entry_time`` too:
    the simulator does not stamp when its scheduler took the request, so ``queue_time`` is 0.0 here while a
    real server's counts the wait in its queue) and the first token (``prefill_finished_time``). The final
    chunk adds the finish and ``decode_throughput`` (output tokens after the first per decode second, in the
    simulated seconds of a scaled clock).
    """
    first = pending.first_token_at
    meta["forward_entry_time"] = pending.created
    meta["prefill_finished_time"] = first
    meta["queue_time"] = 0.0
    if done:
        now = time.time()
        meta["request_received_ts"] = pending.created
        meta["api_server_dispatch_finish_ts"] = pending.created
        meta["request_finished_ts"] = now
        decode_s = (now - first) * time_scale if first is not None else 0.0
        meta["decode_throughput"] = (len(pending.output_ids) - 1) / decode_s if decode_s > 0 else 0.0


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message}}, status=status)
