"""The simulated engine's core: continuous batching, one iteration at a time.

:class:`EngineCore` is clock-free: :meth:`EngineCore.step` picks the next batch the
way SGLang's scheduler does (a prefill iteration whenever new requests can be
admitted, otherwise one decode iteration over every running request), samples the
tokens each request gains, updates state, and returns an :class:`Iteration` with
its duration from the cost model (:class:`~workbench.sim._roofline.RooflineCost`). The HTTP server
sleeps that long in real time before delivering the tokens; the offline runner
advances a virtual clock instead. Both share this code.

Scheduling rules taken from SGLang 0.5.9 (``srt/managers/scheduler.py``
``get_next_batch_to_run``): prefill has priority over decode; new requests are
admitted FIFO while fewer than ``max_running_requests`` run and the iteration's
prefill budget (``chunked_prefill_size`` tokens) lasts; a prompt longer than the
budget is prefilled in chunks over several iterations; the first output token
comes out of the iteration that finishes the prompt.
"""

from __future__ import annotations

import collections
import dataclasses
import random
from collections.abc import Callable

from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._cost_model import StepCost
from workbench.sim._spec import SpecConfig

#: A speculation policy: (running batch size) -> whether to speculate this iteration.
#: ``None`` means always speculate when the server is speculative.
SpecPolicy = Callable[[int], bool]


@dataclasses.dataclass
class SimRequest:
    """One request inside the engine (counts only; text lives in the HTTP layer).

    Attributes:
        rid: request id.
        prompt_tokens: prompt length in tokens.
        max_new_tokens: output tokens to generate (ignore_eos semantics).
        request_alpha: this request's top-1 acceptance probability.
        prefilled: prompt tokens prefilled so far.
        output_tokens: tokens generated so far.
        verify_ct: speculative verify iterations this request took part in.
        accepted_drafts: draft tokens accepted over all its verifies.
        accept_histogram: verify count indexed by drafts accepted (SGLang's
            ``spec_accept_histogram``).
        finished: True once ``output_tokens == max_new_tokens`` or aborted.
    """

    rid: str
    prompt_tokens: int
    max_new_tokens: int
    request_alpha: float = 0.0
    prefilled: int = 0
    output_tokens: int = 0
    verify_ct: int = 0
    accepted_drafts: int = 0
    accept_histogram: list[int] = dataclasses.field(default_factory=list)
    finished: bool = False
    aborted: bool = False
    depth_probs: list[float] | None = None  # this request's per-depth acceptance (computed once)


@dataclasses.dataclass(frozen=True)
class Emission:
    """Tokens one request gained in one iteration."""

    request: SimRequest
    new_tokens: int
    finished: bool


@dataclasses.dataclass(frozen=True)
class Iteration:
    """One scheduler iteration.

    Attributes:
        kind: ``"prefill"`` or ``"decode"``.
        duration_s: simulated duration in seconds.
        batch_size: requests in the forward.
        speculative: True when this decode iteration drafted and verified.
        emissions: tokens delivered when the iteration ends.
        log_line: a SGLang-style log line to print, or None.
    """

    kind: str
    duration_s: float
    batch_size: int
    speculative: bool
    emissions: list[Emission]
    log_line: str | None = None


class EngineCore:
    """Continuous-batching scheduler of the simulated server (see module docstring).

    Args:
        cost: the cost model (anything with the :class:`~workbench.sim._cost_model.StepCost` methods).
        acceptance: the acceptance model (used when ``spec`` is enabled).
        spec: resolved speculative settings (disabled for a baseline server).
        max_running_requests: cap on concurrently decoding requests.
        chunked_prefill_size: prompt tokens per prefill iteration.
        decode_log_interval: decode iterations between log lines / counter updates
            (SGLang's ``--decode-log-interval``, default 40).
        rng: source of randomness (inject a seeded ``random.Random``).
        spec_policy: optional stand-in for a patched scheduler that turns drafting
            off per iteration (e.g. above a batch size); None = always speculate.
    """

    def __init__(
        self,
        *,
        cost: StepCost,
        acceptance: AcceptanceModel,
        spec: SpecConfig,
        max_running_requests: int,
        chunked_prefill_size: int = 8192,
        decode_log_interval: int = 40,
        rng: random.Random,
        spec_policy: SpecPolicy | None = None,
    ) -> None:
        if max_running_requests < 1 or chunked_prefill_size < 1:
            raise ValueError("max_running_requests and chunked_prefill_size must be >= 1")
        self.cost = cost
        self.acceptance = acceptance
        self.spec = spec
        self.max_running_requests = max_running_requests
        self.chunked_prefill_size = chunked_prefill_size
        self.decode_log_interval = decode_log_interval
        self.rng = rng
        self.spec_policy = spec_policy
        self.waiting: collections.deque[SimRequest] = collections.deque()
        self.running: list[SimRequest] = []
        self.decode_iterations = 0
        # Counters as SGLang keeps them: per log interval, and lifetime (added at each tick).
        self._interval_accepted = 0
        self._interval_forward = 0
        self._interval_tokens = 0
        self._interval_time_s = 0.0
        self.total_accepted_tokens = 0
        self.total_forward_ct = 0
        self.last_gen_throughput = 0.0

    # -- requests -----------------------------------------------------------
    def submit(self, request: SimRequest) -> None:
        """Queue a request; it is admitted at the next prefill iteration.

        Only a request that will decode draws its acceptance from ``rng``, so one-token
        health probes (however many a ready check sends) leave the sampled sequence,
        and with it a seeded run, unchanged.
        """
        if self.spec.enabled and request.max_new_tokens > 1:
            request.request_alpha = self.acceptance.sample_request_alpha(self.rng)
        self.waiting.append(request)

    def abort(self, rid: str) -> None:
        """Drop a request (client went away); it emits nothing more."""
        for queue in (self.waiting, self.running):
            for req in list(queue):
                if req.rid == rid:
                    req.aborted = req.finished = True
                    queue.remove(req)

    @property
    def idle(self) -> bool:
        """True when nothing is waiting or running."""
        return not self.waiting and not self.running

    @property
    def avg_spec_accept_length(self) -> float | None:
        """Lifetime accept length as ``/server_info`` reports it (None before the first tick)."""
        if not self.spec.enabled or self.total_forward_ct == 0:
            return None
        return self.total_accepted_tokens / self.total_forward_ct

    def reset_counters(self) -> None:
        """What a successful ``/flush_cache`` does to the metrics counters."""
        self._interval_accepted = self._interval_forward = self._interval_tokens = 0
        self._interval_time_s = 0.0
        self.total_accepted_tokens = self.total_forward_ct = 0

    # -- iterations ---------------------------------------------------------
    def step(self) -> Iteration | None:
        """Run one iteration: prefill if new requests fit, else decode. None when idle."""
        if self.waiting and len(self.running) < self.max_running_requests:
            return self._prefill()
        if self.running:
            return self._decode()
        return None

    def _prefill(self) -> Iteration:
        budget = self.chunked_prefill_size
        chunks: list[int] = []
        emissions: list[Emission] = []
        slots = self.max_running_requests - len(self.running)
        while self.waiting and budget > 0 and slots > 0:
            req = self.waiting[0]
            take = min(req.prompt_tokens - req.prefilled, budget)
            req.prefilled += take
            budget -= take
            chunks.append(take)
            if req.prefilled < req.prompt_tokens:
                break  # chunked: continues in the next prefill iteration
            self.waiting.popleft()
            slots -= 1
            req.output_tokens = 1  # the first token is sampled at the end of prefill
            done = req.output_tokens >= req.max_new_tokens
            req.finished = done
            if not done:
                self.running.append(req)
            emissions.append(Emission(req, 1, done))
        duration_ms = self.cost.prefill_ms(chunks, self.spec)
        log = (
            f"Prefill batch, #new-seq: {len(emissions)}, #new-token: {sum(chunks)}, #cached-token: 0, "
            f"#running-req: {len(self.running)}, #queue-req: {len(self.waiting)}, "
        )
        return Iteration("prefill", duration_ms / 1000.0, len(chunks), False, emissions, log)

    def _decode(self) -> Iteration:
        batch = list(self.running)
        kv_tokens = sum(r.prompt_tokens + r.output_tokens for r in batch)
        speculate = self.spec.enabled and (self.spec_policy is None or self.spec_policy(len(batch)))
        emissions: list[Emission] = []
        accepted_total = 0
        rand = self.rng.random
        for req in batch:
            if speculate:
                probs = req.depth_probs
                if probs is None:
                    probs = req.depth_probs = self.acceptance.depth_probs(self.spec, req.request_alpha)
                drafts = 0  # the same draws as AcceptanceModel.sample_accepted_drafts, probabilities cached
                for p in probs:
                    if rand() >= p:
                        break
                    drafts += 1
                req.verify_ct += 1
                req.accepted_drafts += drafts
                if len(req.accept_histogram) <= drafts:
                    req.accept_histogram.extend([0] * (drafts + 1 - len(req.accept_histogram)))
                req.accept_histogram[drafts] += 1
                gained = drafts + 1
                accepted_total += gained
            else:
                gained = 1
            gained = min(gained, req.max_new_tokens - req.output_tokens)
            req.output_tokens += gained
            req.finished = req.output_tokens >= req.max_new_tokens
            emissions.append(Emission(req, gained, req.finished))
        if speculate:
            duration_ms = self.cost.spec_decode_ms(len(batch), kv_tokens, self.spec, accepted_total)
            self._interval_accepted += accepted_total
            self._interval_forward += len(batch)
        else:
            duration_ms = self.cost.decode_ms(len(batch), kv_tokens)
        self.running = [r for r in self.running if not r.finished]
        self.decode_iterations += 1
        self._interval_tokens += sum(e.new_tokens for e in emissions)
        self._interval_time_s += duration_ms / 1000.0
        log = None
        if self.decode_iterations % self.decode_log_interval == 0:
            log = self._log_tick(len(batch), kv_tokens)
        return Iteration("decode", duration_ms / 1000.0, len(batch), speculate, emissions, log)

    def _log_tick(self, running: int, kv_tokens: int) -> str:
        """Fold interval counters into lifetime ones and build SGLang's decode log line."""
        self.last_gen_throughput = (
            self._interval_tokens / self._interval_time_s if self._interval_time_s > 0 else 0.0
        )
        msg = f"Decode batch, #running-req: {running}, #token: {kv_tokens}, "
        if self.spec.enabled:
            forward = self._interval_forward
            accept_len = self._interval_accepted / forward if forward else 0.0
            rate = self._interval_accepted / (forward * self.spec.num_draft_tokens) if forward else 0.0
            self.total_accepted_tokens += self._interval_accepted
            self.total_forward_ct += forward
            msg += f"accept len: {accept_len:.2f}, accept rate: {rate:.2f}, "
        msg += (
            f"cuda graph: True, gen throughput (token/s): {self.last_gen_throughput:.2f}, "
            f"#queue-req: {len(self.waiting)}"
        )
        self._interval_accepted = self._interval_forward = self._interval_tokens = 0
        self._interval_time_s = 0.0
        return msg
