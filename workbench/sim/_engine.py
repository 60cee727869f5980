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

Memory (:mod:`workbench.sim._memory`), when the engine is given a KV capacity: admission
follows SGLang 0.5.9's ``PrefillAdder.add_one_req`` (``srt/managers/schedule_policy.py``): a
waiting request is admitted only while ``prompt + min(max_new_tokens, 4096)`` fits in the free
pool minus the running requests' estimated future tokens (``new_token_ratio`` of what each still
may generate); before each decode step ``Scheduler.update_running_batch`` checks that the pool
has what the step needs (``new_tokens_required_next_decode``) and otherwise retracts requests
(``ScheduleBatch.retract_decode``: the newest under speculation, else the one with the fewest
output tokens; at least one, until the rest fit, always keeping one), which go back to the end
of the queue, free their KV, and re-prefill their prompt and output tokens when admitted again.

Speculation per iteration: a policy (:mod:`workbench.sim._policies`) chooses the draft steps of
each decode iteration; 0 means the iteration does not draft, and it then costs a plain decode
step times ``1 + overhead(batch)`` (:class:`~workbench.sim._policies.SpecOffCost`).
"""

from __future__ import annotations

import collections
import dataclasses
import random
from collections.abc import Callable
from typing import Any, cast

from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._cost_model import StepCost
from workbench.sim._memory import CLIP_MAX_NEW_TOKENS, MemoryRules, NewTokenRatio
from workbench.sim._policies import FunctionPolicy, SpecOffCost, SpecPolicy
from workbench.sim._spec import SpecConfig


@dataclasses.dataclass
class SimRequest:
    """One request inside the engine (counts only; text lives in the HTTP layer).

    Attributes:
        rid: request id.
        prompt_tokens: prompt length in tokens.
        max_new_tokens: output tokens to generate (ignore_eos semantics).
        request_alpha: this request's top-1 acceptance probability.
        acceptance: this request's acceptance model (its prompt set and sampling regime), or None for
            the engine's.
        prefilled: prompt tokens prefilled so far.
        output_tokens: tokens generated so far.
        verify_ct: speculative verify iterations this request took part in.
        accepted_drafts: draft tokens accepted over all its verifies.
        accept_histogram: verify count indexed by drafts accepted (SGLang's
            ``spec_accept_histogram``).
        finished: True once ``output_tokens == max_new_tokens`` or aborted.
        kv_held: KV-pool tokens this request holds now.
        retractions: times it was retracted (SGLang's ``retraction_count``, meta_info's
            ``num_retractions`` / ``total_retractions``).
    """

    rid: str
    prompt_tokens: int
    max_new_tokens: int
    request_alpha: float = 0.0
    acceptance: AcceptanceModel | None = None
    prefilled: int = 0
    output_tokens: int = 0
    verify_ct: int = 0
    accepted_drafts: int = 0
    accept_histogram: list[int] = dataclasses.field(default_factory=list)
    finished: bool = False
    aborted: bool = False
    depth_probs: list[float] | None = None  # this request's per-depth acceptance (computed per draft steps)
    kv_held: int = 0
    retractions: int = 0


class Emission:
    """Tokens one request gained in one iteration (read-only by convention).

    A plain ``__slots__`` class, not a frozen dataclass: a decode iteration makes one per running
    request, and a frozen dataclass's ``__init__`` (an ``object.__setattr__`` per field) was a
    large share of the offline mode's time. Same attributes, positional or keyword construction,
    equality by value.
    """

    __slots__ = ("request", "new_tokens", "finished")

    def __init__(self, request: SimRequest, new_tokens: int, finished: bool) -> None:
        self.request = request
        self.new_tokens = new_tokens
        self.finished = finished

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.request, self.new_tokens, self.finished) == (other.request, other.new_tokens, other.finished)

    __hash__ = None  # type: ignore[assignment]  # as the dataclass: its request is not hashable

    def __repr__(self) -> str:
        return f"Emission(request={self.request!r}, new_tokens={self.new_tokens!r}, finished={self.finished!r})"


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
        spec_policy: the speculation policy (a :class:`~workbench.sim._policies.SpecPolicy`, or a
            plain ``(batch size) -> speculate?`` function); None = static speculation.
        memory: the KV-pool rules (:class:`~workbench.sim._memory.MemoryRules`); None or a
            capacity of None = unlimited memory (nothing is ever held back or retracted).
        off_cost: what a non-drafting iteration of a speculative server costs
            (default: :class:`~workbench.sim._policies.SpecOffCost`'s documented assumption).
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
        spec_policy: SpecPolicy | Callable[[int], bool] | None = None,
        memory: MemoryRules | None = None,
        off_cost: SpecOffCost | None = None,
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
        policy = (
            FunctionPolicy(spec_policy, spec.num_steps)
            if spec_policy is not None and not hasattr(spec_policy, "steps")
            else cast("SpecPolicy | None", spec_policy)
        )
        self.spec_policy: SpecPolicy | None = policy if spec.enabled else None
        self.memory = memory or MemoryRules()
        self.capacity = self.memory.capacity_tokens
        self.off_cost = off_cost or SpecOffCost()
        self.kv_used = 0  # tokens held in the KV pool (running requests and a chunked prefill)
        self.new_token_ratio = NewTokenRatio()
        self.total_retractions = 0
        self.last_retracted = 0
        self.current_steps = spec.num_steps if spec.enabled else 0
        self._specs: dict[int, SpecConfig] = {spec.num_steps: spec}
        self._probs_steps = spec.num_steps  # the draft steps the requests' cached depth_probs are for
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
        self.last_accept_length = 0.0  # the last log interval's, as SGLang's spec gauges
        self.last_accept_rate = 0.0

    @classmethod
    def from_config(cls, config: Any, *, rng: random.Random, cost: StepCost | None = None) -> EngineCore:
        """The engine a parsed server configuration runs (:class:`~workbench.sim._server_args.SimServerConfig`):
        its spec, caps, KV pool, speculation policy and off-cost; ``cost`` defaults to the profile's for its flags."""
        args = config.args
        return cls(
            cost=cost if cost is not None else config.profile.cost_for(args),
            acceptance=config.profile.acceptance_for(config.args.get("sim_prompt_set")),
            spec=config.spec,
            max_running_requests=config.max_running_requests,
            chunked_prefill_size=args.get("chunked_prefill_size") or 8192,
            decode_log_interval=args.get("decode_log_interval") or 40,
            rng=rng,
            spec_policy=config.make_policy(),
            memory=config.memory,
            off_cost=config.off_cost,
        )

    # -- requests -----------------------------------------------------------
    def submit(self, request: SimRequest) -> None:
        """Queue a request; it is admitted at the next prefill iteration.

        Only a request that will decode draws its acceptance from ``rng``, so one-token
        health probes (however many a ready check sends) leave the sampled sequence,
        and with it a seeded run, unchanged.
        """
        if self.spec.enabled and request.max_new_tokens > 1:
            request.request_alpha = (request.acceptance or self.acceptance).sample_request_alpha(self.rng)
        self.waiting.append(request)

    def abort(self, rid: str) -> None:
        """Drop a request (client went away); it emits nothing more and frees its KV."""
        for queue in (self.waiting, self.running):
            for req in list(queue):
                if req.rid == rid:
                    req.aborted = req.finished = True
                    queue.remove(req)
                    self.kv_used -= req.kv_held
                    req.kv_held = 0

    @property
    def token_usage(self) -> float:
        """Share of the KV pool held (SGLang's ``token_usage``); 0.0 with unlimited memory."""
        return self.kv_used / self.capacity if self.capacity else 0.0

    def spec_for_steps(self, steps: int) -> SpecConfig:
        """The server's settings with ``steps`` draft steps (a chain: ``steps + 1`` draft tokens when
        topk is 1, as SGLang's adaptive runtime states are built)."""
        spec = self._specs.get(steps)
        if spec is None:
            tokens = steps + 1 if self.spec.topk == 1 else min(self.spec.num_draft_tokens, steps * self.spec.topk + 1)
            spec = self._specs[steps] = dataclasses.replace(self.spec, num_steps=steps, num_draft_tokens=tokens)
        return spec

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
            iteration = self._prefill()
            if iteration is not None:
                return iteration
        if self.running:
            return self._decode()
        return None

    @property
    def _pool(self) -> int:
        """The KV pool's size in tokens: asked only where memory is limited (a capacity was given)."""
        assert self.capacity is not None, "asked only where memory is limited"
        return self.capacity

    def _rem_total_tokens(self) -> float:
        """``PrefillAdder.rem_total_tokens`` before anything is added: the free pool minus the running
        requests' estimated future tokens (0.5.9 ``srt/managers/schedule_policy.py``)."""
        ratio = self.new_token_ratio.value
        future = sum(min(r.max_new_tokens - r.output_tokens, CLIP_MAX_NEW_TOKENS) for r in self.running)
        return self._pool - self.kv_used - future * ratio

    def _prefill(self) -> Iteration | None:
        budget = self.chunked_prefill_size
        chunks: list[int] = []
        emissions: list[Emission] = []
        slots = self.max_running_requests - len(self.running)
        limited = self.capacity is not None
        paged = self.memory.page_size > 1
        rem_total = self._rem_total_tokens() if limited else 0.0
        while self.waiting and budget > 0 and slots > 0:
            req = self.waiting[0]
            fill = req.prompt_tokens + req.output_tokens  # a retracted request re-prefills its output too
            if limited and req.prefilled == 0:
                # add_one_req: the whole extend plus the tokens it may still generate must fit; with
                # nothing running and nothing admitted the head goes in regardless (no deadlock)
                total = fill + min(req.max_new_tokens - req.output_tokens, CLIP_MAX_NEW_TOKENS)
                if total >= rem_total and (self.running or chunks):
                    break
                rem_total -= fill + min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS)
            take = min(fill - req.prefilled, budget)
            req.prefilled += take
            held = self.memory.pages(req.prefilled) if paged else req.prefilled  # whole pages with --page-size > 1
            self.kv_used += held - req.kv_held
            req.kv_held = held
            budget -= take
            chunks.append(take)
            if req.prefilled < fill:
                break  # chunked: continues in the next prefill iteration
            self.waiting.popleft()
            slots -= 1
            req.output_tokens += 1  # a token is sampled at the end of prefill
            done = req.output_tokens >= req.max_new_tokens
            req.finished = done
            if done:
                self.kv_used -= req.kv_held
                req.kv_held = 0
            else:
                self.running.append(req)
            emissions.append(Emission(req, 1, done))
        if not chunks:
            return None
        duration_ms = self.cost.prefill_ms(chunks, self.spec)
        log = (
            f"Prefill batch, #new-seq: {len(emissions)}, #new-token: {sum(chunks)}, #cached-token: 0, "
            f"token usage: {self.token_usage:.2f}, #running-req: {len(self.running)}, #queue-req: {len(self.waiting)}, "
        )
        return Iteration("prefill", duration_ms / 1000.0, len(chunks), False, emissions, log)

    def _invalidate_probs(self, steps: int) -> None:
        """The draft steps changed: every request's cached per-depth probabilities are stale."""
        for queue in (self.running, self.waiting):
            for req in queue:
                req.depth_probs = None
        self._probs_steps = steps

    def _decode_need(self, reqs: list[SimRequest]) -> int:
        """Free KV tokens a decode step of ``reqs`` needs (``new_tokens_required_next_decode``)."""
        m = self.memory
        page = m.page_size
        if page > 1:  # 0.5.9: a page for each request whose committed KV fills its last page; spec page-aligned
            if not m.speculative:
                return page * sum(1 for r in reqs if (r.prompt_tokens + r.output_tokens - 1) % page == 0)
            return len(reqs) * m.spec_page_need
        if not (m.spec_v2 and m.tight_v2_check):
            return len(reqs) * m.step_need_per_request
        over = m.overalloc  # 0.5.12+ spec v2: what each request consumed of its over-allocation
        return sum(over + r.prompt_tokens + r.output_tokens - 1 - r.kv_held for r in reqs)

    def _retract(self) -> str:
        """``ScheduleBatch.retract_decode`` (0.5.9 ``srt/managers/schedule_batch.py``); returns the log line."""
        running = self.running
        if self.memory.speculative:
            order = list(running)  # spec: only from the back (the newest)
        else:
            order = sorted(running, key=lambda r: (r.output_tokens, -r.prompt_tokens), reverse=True)
        free_before = self._pool - self.kv_used
        retracted: list[SimRequest] = []
        while not retracted or self._pool - self.kv_used < self._decode_need(order):
            if len(order) == 1:
                break  # always keep one (SGLang raises if even that one does not fit)
            req = order.pop()
            self.kv_used -= req.kv_held
            req.kv_held = req.prefilled = 0
            req.retractions += 1
            retracted.append(req)
        kept = {id(r) for r in order}
        self.running = [r for r in running if id(r) in kept]
        self.waiting.extend(retracted)
        self.total_retractions += len(retracted)
        self.last_retracted = len(retracted)
        old = self.new_token_ratio.value
        self.new_token_ratio.after_retraction(
            sum(r.output_tokens for r in self.running), len(self.running), sum(r.max_new_tokens for r in self.running)
        )
        return (
            f"KV cache pool is full. Retract requests. #retracted_reqs: {len(retracted)}, "
            f"#new_tokens_gained: {self._pool - self.kv_used - free_before}, "
            f"#new_token_ratio: {old:.4f} -> {self.new_token_ratio.value:.4f}"
        )

    def _hold_kv(self, emissions: list[Emission]) -> None:
        """Set each decoded request's KV hold after the step and the pool's use from it.

        A running request holds its committed tokens (prompt + output - 1: the last sampled token
        has no KV yet) plus spec v2's over-allocation made before the step (``overalloc`` less the
        tokens the step committed), in whole pages with ``--page-size`` > 1; a finished one holds
        nothing. A pass of its own after the decode loop, so the loop has no per-request branch on
        whether a KV pool is modelled (``predict`` models none).
        """
        over = self.memory.overalloc
        pages = self.memory.pages if self.memory.page_size > 1 else None  # no call per request at page size 1
        delta = 0
        for e in emissions:
            req = e.request
            if e.finished:
                held = 0
            else:
                held = req.prompt_tokens + req.output_tokens - 1
                if over:
                    held += over - e.new_tokens
                if pages is not None:
                    held = pages(held)
            delta += held - req.kv_held
            req.kv_held = held
        self.kv_used += delta

    def _decode(self) -> Iteration:
        """One decode iteration over every running request, in one pass over them.

        The random draws, emitted tokens, KV accounting and counters are exactly those of the
        four-pass loop this replaces (``benchmarks/sim_engine_identity.py`` checks it byte for byte):
        requests are visited in running order, each draws its accepted drafts as
        :meth:`~workbench.sim._acceptance.AcceptanceModel.sample_accepted_drafts` does.
        """
        retract_log = None
        capacity = self.capacity
        if capacity is not None:
            if capacity - self.kv_used < self._decode_need(self.running):
                retract_log = self._retract()
            else:
                self.new_token_ratio.step()
        batch = self.running
        n = len(batch)
        server_spec = self.spec
        policy = self.spec_policy
        if not server_spec.enabled:
            steps = 0
        elif policy is None:
            steps = server_spec.num_steps
        else:
            steps = policy.steps(n)
        speculate = steps > 0
        spec = server_spec if steps == server_spec.num_steps else self.spec_for_steps(steps)
        if policy is not None and speculate and steps != self._probs_steps:
            self._invalidate_probs(steps)
        emissions: list[Emission] = []
        append = emissions.append
        still: list[SimRequest] = []  # the requests that keep running, in order
        keep = still.append
        kv_tokens = 0  # KV of the batch before the step (prompt + output of each request)
        accepted_total = 0
        if speculate:
            rand = self.rng.random
            engine_model = self.acceptance
            new_tokens = 0
            for req in batch:
                out = req.output_tokens
                kv_tokens += req.prompt_tokens + out
                probs = req.depth_probs
                if probs is None:
                    probs = req.depth_probs = (req.acceptance or engine_model).depth_probs(spec, req.request_alpha)
                drafts = 0  # the same draws as AcceptanceModel.sample_accepted_drafts, probabilities cached
                for p in probs:
                    if rand() >= p:
                        break
                    drafts += 1
                req.verify_ct += 1
                req.accepted_drafts += drafts
                hist = req.accept_histogram
                if len(hist) <= drafts:
                    hist.extend([0] * (drafts + 1 - len(hist)))
                hist[drafts] += 1
                gained = drafts + 1
                accepted_total += gained
                left = req.max_new_tokens - out
                if gained > left:
                    gained = left
                out += gained
                req.output_tokens = out
                new_tokens += gained
                done = out >= req.max_new_tokens
                if done:
                    req.finished = True
                else:
                    keep(req)
                append(Emission(req, gained, done))
        else:  # plain decode: one token each, no draws
            new_tokens = n
            for req in batch:
                out = req.output_tokens
                kv_tokens += req.prompt_tokens + out
                out += 1
                req.output_tokens = out
                done = out >= req.max_new_tokens
                if done:
                    req.finished = True
                else:
                    keep(req)
                append(Emission(req, 1, done))
        if capacity is not None:
            self._hold_kv(emissions)
        if speculate:
            duration_ms = self.cost.spec_decode_ms(n, kv_tokens, spec, accepted_total)
            self._interval_accepted += accepted_total
            self._interval_forward += n
        elif server_spec.enabled:  # a speculative server that does not draft: not free
            duration_ms = self.cost.decode_ms(n, kv_tokens) * (1.0 + self.off_cost.overhead(n))
        else:
            duration_ms = self.cost.decode_ms(n, kv_tokens)
        if policy is not None:
            if steps != self.current_steps:
                duration_ms += self.off_cost.switch_ms
                self.current_steps = steps
            policy.observe(n, accepted_total - n if speculate else 0)
        self.running = still
        self.decode_iterations += 1
        self._interval_tokens += new_tokens
        self._interval_time_s += duration_ms / 1000.0
        log = None
        if self.decode_iterations % self.decode_log_interval == 0:
            log = self._log_tick(n, kv_tokens)
        if retract_log is not None:
            log = retract_log if log is None else f"{retract_log}\n{log}"
        return Iteration("decode", duration_ms / 1000.0, n, speculate, emissions, log)

    def _log_tick(self, running: int, kv_tokens: int) -> str:
        """Fold interval counters into lifetime ones and build SGLang's decode log line."""
        self.last_gen_throughput = self._interval_tokens / self._interval_time_s if self._interval_time_s > 0 else 0.0
        msg = f"Decode batch, #running-req: {running}, #token: {kv_tokens}, token usage: {self.token_usage:.2f}, "
        if self.spec.enabled:
            forward = self._interval_forward
            accept_len = self._interval_accepted / forward if forward else 0.0
            rate = self._interval_accepted / (forward * self.spec.num_draft_tokens) if forward else 0.0
            self.total_accepted_tokens += self._interval_accepted
            self.total_forward_ct += forward
            msg += f"accept len: {accept_len:.2f}, accept rate: {rate:.2f}, "
            self.last_accept_length, self.last_accept_rate = accept_len, rate
        msg += (
            f"cuda graph: True, gen throughput (token/s): {self.last_gen_throughput:.2f}, "
            f"#queue-req: {len(self.waiting)}"
        )
        self._interval_accepted = self._interval_forward = self._interval_tokens = 0
        self._interval_time_s = 0.0
        return msg
