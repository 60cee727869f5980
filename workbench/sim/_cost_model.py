"""Linear cost model (legacy profiles) and the interface every cost model speaks.

One forward pass of the target model over a batch costs::

    forward_ms = base_ms + per_token_ms * tokens + per_seq_ms * seqs + per_kv_token_us/1000 * kv_tokens

``base_ms`` is what a forward costs at batch size one (weights read once from HBM,
kernel launches, the latency of the tensor-parallel all-reduces); ``per_token_ms``
is the marginal cost of one more query token (matmul compute plus the bytes each
all-reduce moves, which dominates with TP 8 over PCIe and custom all-reduce off);
``per_seq_ms`` is per-request scheduler and sampling work; ``per_kv_token_us`` is
attention reading the KV cache. The draft model (an EAGLE head, one decoder layer)
has its own ``draft_base_ms`` and ``draft_per_token_ms``.

One speculative decode iteration (EAGLE worker, SGLang 0.5.9
``srt/speculative/eagle_worker.py``: draft, verify, draft-extend) costs::

    num_steps draft forwards   (batch * topk tokens each; batch tokens in the first)
    + one target verify        (batch * num_draft_tokens tokens)
    + one draft extend         (batch * accepted tokens)
    + spec_overhead_ms + spec_per_seq_ms * batch   (tree building, CPU work)

With spec v2 the CPU part overlaps the GPU and only ``v2_cpu_fraction`` of it stays
on the critical path. Prefill of new requests runs as its own iteration (mixed
chunked prefill is off under speculation and by default, SGLang 0.5.9 ``srt/server_args.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from workbench.sim._hardware import check_non_negative
from workbench.sim._spec import SpecConfig


class StepCost(Protocol):
    """What the engine asks a cost model: each iteration's duration in milliseconds.

    Implemented by :class:`CostModel` (linear, legacy profiles) and by
    :class:`~workbench.sim._roofline.RooflineCost` (physical profiles).
    """

    def prefill_ms(self, prompt_tokens: list[int], spec: SpecConfig) -> float: ...

    def decode_ms(self, batch: int, kv_tokens: int) -> float: ...

    def spec_decode_ms(self, batch: int, kv_tokens: int, spec: SpecConfig, accepted_tokens: int) -> float: ...


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Per-iteration costs of the simulated engine, all in milliseconds (see module docstring).

    Attributes:
        base_ms: target forward cost at batch size one.
        per_token_ms: target cost per query token in the batch.
        per_seq_ms: per-request cost per target forward (scheduling, sampling).
        per_kv_token_us: attention cost per cached token read, in microseconds.
        draft_base_ms: draft-model forward cost at batch size one.
        draft_per_token_ms: draft-model cost per token.
        spec_overhead_ms: fixed CPU/GPU overhead per speculative iteration.
        spec_per_seq_ms: per-request overhead per speculative iteration.
        v2_cpu_fraction: share of the speculative overheads left on the critical
            path when spec v2 overlaps scheduling with the GPU (0..1).
    """

    base_ms: float
    per_token_ms: float
    per_seq_ms: float = 0.0
    per_kv_token_us: float = 0.0
    draft_base_ms: float = 0.0
    draft_per_token_ms: float = 0.0
    spec_overhead_ms: float = 0.0
    spec_per_seq_ms: float = 0.0
    v2_cpu_fraction: float = 0.5

    def __post_init__(self) -> None:
        check_non_negative(self, (field.name for field in dataclasses.fields(self)), what="cost model ")

    def target_forward_ms(self, tokens: int, seqs: int, kv_tokens: int = 0) -> float:
        """Target forward over ``tokens`` query tokens of ``seqs`` requests reading ``kv_tokens``."""
        if tokens <= 0:
            return 0.0
        return (
            self.base_ms
            + self.per_token_ms * tokens
            + self.per_seq_ms * seqs
            + self.per_kv_token_us * kv_tokens / 1000.0
        )

    def draft_forward_ms(self, tokens: int) -> float:
        """Draft-model forward over ``tokens`` tokens (0 when there are none)."""
        if tokens <= 0:
            return 0.0
        return self.draft_base_ms + self.draft_per_token_ms * tokens

    def prefill_ms(self, prompt_tokens: list[int], spec: SpecConfig) -> float:
        """One prefill iteration over new requests with these prompt lengths (tokens).

        Speculative servers also run the draft model over the prompt.
        """
        total = sum(prompt_tokens)
        cost = self.target_forward_ms(total, len(prompt_tokens))
        if spec.enabled:
            cost += self.draft_forward_ms(total)
        return cost

    def decode_ms(self, batch: int, kv_tokens: int) -> float:
        """One plain decode iteration: one token per running request."""
        return self.target_forward_ms(batch, batch, kv_tokens)

    def spec_decode_ms(self, batch: int, kv_tokens: int, spec: SpecConfig, accepted_tokens: int) -> float:
        """One speculative iteration (draft, verify, draft extend) for ``batch`` requests.

        Args:
            batch: running requests.
            kv_tokens: total cached tokens of those requests.
            spec: resolved settings (num_steps, topk, num_draft_tokens, v1/v2).
            accepted_tokens: tokens accepted this iteration over the whole batch
                (bonus tokens included); the draft extend runs over them.
        """
        if batch <= 0:
            return 0.0
        draft = self.draft_forward_ms(batch)  # first step: one token per request
        for _ in range(spec.num_steps - 1):
            draft += self.draft_forward_ms(batch * spec.topk)
        verify = self.target_forward_ms(batch * spec.num_draft_tokens, batch, kv_tokens)
        extend = self.draft_forward_ms(accepted_tokens)
        overhead = self.spec_overhead_ms + self.spec_per_seq_ms * batch
        if spec.spec_v2:
            overhead *= self.v2_cpu_fraction
        return draft + verify + extend + overhead
