"""The KV pool of the simulated engine: how many tokens it holds, what a decode step reserves.

SGLang sizes one token-to-KV pool at start-up and every scheduling decision checks it. The
simulator keeps the same three numbers (all in tokens, page size 1):

- **capacity** (``max_total_num_tokens``): :meth:`~workbench.sim._profiles.SimProfile.kv_capacity_tokens`,
  i.e. ``mem_fraction_static x GPU memory - weights / tp`` over the KV bytes per token
  (SGLang 0.5.9 ``srt/model_executor/model_runner_kv_cache_mixin.py`` ``profile_max_num_token``:
  ``rest = available_after_weights - total x (1 - mem_fraction_static)``, divided by the cell size);
- **held** by each running request: its committed KV (``prompt + output - 1``: the last sampled
  token's KV is written by the next forward), plus, under spec v2, the over-allocation of
  ``2 x alloc_len_per_decode`` that ``EagleDraftInput.prepare_for_decode`` keeps ahead of it
  (0.5.9 ``srt/speculative/eagle_info_v2.py``: ``x = kv_committed + 2 alloc - kv_allocated``);
- **needed** free before a decode step (``ScheduleBatch.new_tokens_required_next_decode``,
  ``srt/managers/schedule_batch.py``): 1 per request without speculation; under spec v1
  ``alloc_len_per_decode`` per request (the draft allocates ``topk x num_steps`` slots and gives
  them back, then the verify allocates ``num_draft_tokens`` and frees the rejected ones, so the
  peak is the larger of the two and nothing stays held after the step); under spec v2 twice that
  per request in 0.5.9 (``num_tokens * (1 + is_spec_v2)``), and from 0.5.12 the tight figure
  ``kv_committed + 2 alloc - kv_allocated`` per request (``_new_tokens_required_next_decode_spec_v2``),
  i.e. what the last step consumed of the over-allocation.

``alloc_len_per_decode`` follows ``get_alloc_len_per_decode`` of the emulated version (see
:func:`alloc_len_per_decode`).
"""

from __future__ import annotations

import dataclasses
from workbench.errors import ConfigError
from workbench.releases import (
    DRAFT_KV_IN_TARGET_POOL_SINCE,
    PAGED_DRAFT_TREE_SINCE,
    SPEC_V2_DECODE_CHECK_SINCE,
    release_at_least,
)
from workbench.sim._hardware import ModelConfig
from workbench.sim._spec import SpecConfig

#: SGLang's ``SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`` (0.5.9 ``srt/managers/schedule_policy.py``): the
#: admission estimate counts at most this many future tokens per request.
CLIP_MAX_NEW_TOKENS = 4096
#: ``SGLANG_INIT_NEW_TOKEN_RATIO`` x ``--schedule-conservativeness`` (1.0) (0.5.9 ``srt/environ.py``).
INIT_NEW_TOKEN_RATIO = 0.7
#: ``SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR`` (0.5.9 ``srt/environ.py``): the ratio decays to init x this.
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
#: ``SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS`` (0.5.9 ``srt/environ.py``): decode steps from init to min.
NEW_TOKEN_RATIO_DECAY_STEPS = 600
#: ``SGLANG_RETRACT_DECODE_STEPS`` (0.5.9 ``srt/environ.py``): the decode steps a retraction plans for.
RETRACT_DECODE_STEPS = 20


def weight_bytes_per_gpu(model: ModelConfig, tp_size: int) -> float:
    """Bytes of one model's weights on one TP rank: the weights a forward reads plus the input
    embedding table (separate from the LM head unless ``tie_word_embeddings``; the shipped models
    set it false)."""
    params = model.weight_params()
    if not getattr(model, "tie_word_embeddings", False):
        params += model.vocab_size * model.hidden_size
    return params * model.dtype_bytes / tp_size


def kv_bytes_per_token(model: ModelConfig, tp_size: int) -> float:
    """KV bytes one token takes on one TP rank (K and V of every layer; KV heads replicated below 1 per rank)."""
    return (
        model.num_hidden_layers * 2 * max(1.0, model.num_key_value_heads / tp_size) * model.head_dim * model.dtype_bytes
    )


def kv_capacity_tokens(
    *,
    memory_gb: float,
    mem_fraction_static: float,
    target: ModelConfig,
    draft: ModelConfig | None,
    tp_size: int,
    sglang_version: str,
) -> int:
    """``max_total_num_tokens``: the KV tokens the pool holds, from memory, weights and the fraction.

    SGLang 0.5.9 (``ModelRunner.profile_max_num_token``, ``model_runner_kv_cache_mixin.py``) sizes
    the target's pool after loading the target's weights:
    ``(available - total x (1 - mem_fraction_static)) / cell_size`` = ``(fraction x memory - weights)
    / KV bytes per token``. A speculative server's draft worker is built afterwards and gets a pool of
    the same number of tokens (``draft_runner_cache_size``), so neither the draft's weights nor its KV
    enter the target's figure (up to 0.5.12). From 0.5.16 (``srt/model_executor/pool_configurator.py``)
    an EAGLE target's cell size is scaled by ``1 + draft layers / target layers`` (its draft shares the
    token count). Activations, CUDA graphs and the draft's weights live in the ``1 - fraction`` left over
    (an approximation: SGLang measures what is free after loading, the simulator subtracts the weights).

    Args:
        memory_gb: one GPU's memory (GB, 1e9 bytes: the data sheet's unit).
        mem_fraction_static: ``--mem-fraction-static``.
        target, draft: model shapes (:class:`~workbench.sim._hardware.ModelConfig`); draft None when
            not speculative.
        tp_size: tensor-parallel ranks.
        sglang_version: the emulated version.

    Returns:
        Tokens, at least 0.
    """
    cell = kv_bytes_per_token(target, tp_size)
    if draft is not None and release_at_least(sglang_version, DRAFT_KV_IN_TARGET_POOL_SINCE):
        cell *= 1 + draft.num_hidden_layers / target.num_hidden_layers
    free = mem_fraction_static * memory_gb * 1e9 - weight_bytes_per_gpu(target, tp_size)
    return max(0, int(free // cell))


def alloc_len_per_decode(
    spec: SpecConfig, sglang_version: str, *, page_size: int = 1, max_num_draft_tokens: int | None = None
) -> int:
    """KV slots one request takes per decode step: SGLang's ``get_alloc_len_per_decode``.

    Read from each release's wheel (the EAGLE family; every one of them keeps draft KV):

    - 0.5.9 and 0.5.12 (``srt/managers/utils.py``): 1 without speculation; with page size 1 or topk 1,
      ``max(num_steps x topk, num_draft_tokens)``; page size > 1 with topk > 1 raises NotImplementedError.
    - 0.5.13-0.5.15 (``srt/mem_cache/common.py``) and 0.5.16-0.5.23 (``srt/mem_cache/allocation_sizing.py``):
      the same with ``max_speculative_num_draft_tokens`` (under adaptive speculation ``max(candidate_steps) + 1``,
      ``ServerArgs.max_speculative_num_draft_tokens``, new in 0.5.13); page size > 1 with topk > 1 reserves the
      worst-case page-aligned tree, ``ceil((page_size - 1 + num_steps) / page_size)`` pages per topk branch,
      every branch its own copy: ``max(that x page_size x topk, num_draft_tokens)``. 0.5.14 adds the
      ``has_draft_kv()`` test (an algorithm without draft KV, e.g. NGRAM, keeps the plain rule: not one the
      simulator runs); 0.5.18 reads the settings from its config bags and 0.5.19 the page size from
      ``get_alloc_page_size()`` (same values); 0.5.20 adds UNO's ``num_draft_tokens + 1`` (not simulated).

    Args:
        spec: the resolved speculative settings.
        sglang_version: the SGLang version (its exact release: 0.5.14's rule is not 0.5.12's).
        page_size: ``--page-size``.
        max_num_draft_tokens: ``max_speculative_num_draft_tokens`` when it differs from
            ``spec.num_draft_tokens`` (adaptive speculation; 0.5.13+).

    Raises:
        ConfigError: page size > 1 with topk > 1 before 0.5.13 (SGLang raises NotImplementedError).
    """
    if not spec.enabled:
        return 1
    tokens = spec.num_draft_tokens
    paged_tree_rule = release_at_least(sglang_version, PAGED_DRAFT_TREE_SINCE)
    if max_num_draft_tokens is not None and paged_tree_rule:
        tokens = max(tokens, max_num_draft_tokens)
    steps, topk = max(spec.num_steps, 1), spec.topk
    if page_size <= 1 or topk == 1:
        return max(steps * topk, tokens)
    if not paged_tree_rule:
        raise ConfigError(
            f"get_alloc_len_per_decode is not implemented for page_size {page_size} > 1 with "
            f"topk {topk} > 1 (SGLang {sglang_version}); use --page-size 1, or SGLang 0.5.13 or later"
        )
    pages_per_branch = (page_size - 1 + steps + page_size - 1) // page_size
    return max(pages_per_branch * page_size * topk, tokens)


@dataclasses.dataclass(frozen=True)
class MemoryRules:
    """The KV-pool rules of one server (see module docstring).

    Attributes:
        capacity_tokens: ``max_total_num_tokens``; None = unlimited (no memory modelled).
        alloc_len: ``get_alloc_len_per_decode`` (1 without speculation).
        spec_v2: the overlap (v2) speculative worker runs (over-allocates ``2 x alloc_len``).
        tight_v2_check: the decode check counts what each request consumed of its
            over-allocation (0.5.12+) rather than ``2 x alloc_len`` per request (0.5.9).
        speculative: speculation is configured (retraction then takes the newest requests).
        page_size: ``--page-size``: a request holds its KV in whole pages (its held tokens rounded up).
        spec_page_need: with ``page_size > 1`` under speculation, the page-aligned tokens one request needs
            before a decode step (0.5.9 ``ScheduleBatch.new_tokens_required_next_decode``: ``max(ceil(num_steps
            [+ page_size when topk > 1], page) x topk, ceil(num_draft_tokens, page))``, doubled under spec v2).
    """

    capacity_tokens: int | None = None
    alloc_len: int = 1
    spec_v2: bool = False
    tight_v2_check: bool = False
    speculative: bool = False
    page_size: int = 1
    spec_page_need: int = 0

    def pages(self, tokens: int) -> int:
        """``tokens`` KV slots as whole pages, in tokens (``ceil(tokens / page_size) x page_size``)."""
        page = self.page_size
        return -(-tokens // page) * page if page > 1 else tokens

    @property
    def overalloc(self) -> int:
        """Tokens a running spec-v2 request holds beyond its committed KV (``2 x alloc_len``)."""
        return 2 * self.alloc_len if self.spec_v2 else 0

    @property
    def step_need_per_request(self) -> int:
        """Free tokens one request needs before a decode step (0.5.9's rule; see module docstring)."""
        return self.alloc_len * (2 if self.spec_v2 else 1)


def memory_rules(
    spec: SpecConfig,
    sglang_version: str,
    capacity_tokens: int | None,
    *,
    page_size: int = 1,
    max_num_draft_tokens: int | None = None,
) -> MemoryRules:
    """The :class:`MemoryRules` of a server with these settings (see :func:`alloc_len_per_decode`)."""
    alloc = alloc_len_per_decode(spec, sglang_version, page_size=page_size, max_num_draft_tokens=max_num_draft_tokens)
    need = 0
    if page_size > 1 and spec.enabled:  # 0.5.9 new_tokens_required_next_decode, page-aligned
        align = lambda n: -(-n // page_size) * page_size  # noqa: E731
        per_branch = align(max(spec.num_steps, 1) + (page_size if spec.topk > 1 else 0))
        need = max(per_branch * spec.topk, align(spec.num_draft_tokens)) * (2 if spec.spec_v2 else 1)
    return MemoryRules(
        capacity_tokens=capacity_tokens,
        alloc_len=alloc,
        spec_v2=spec.enabled and spec.spec_v2,
        tight_v2_check=release_at_least(sglang_version, SPEC_V2_DECODE_CHECK_SINCE),
        speculative=spec.enabled,
        page_size=max(1, page_size),
        spec_page_need=need,
    )


def default_max_running_requests(capacity_tokens: int | None, context_len: int) -> int:
    """``max_running_requests`` of a server without speculation when the flag is absent.

    SGLang 0.5.9 ``ModelRunner``: ``min(max_total_num_tokens // 2, req_to_token_pool.size)``, the
    pool holding ``min(max(int(max_total_num_tokens / context_len * 512), 2048), 4096)`` requests
    (``model_runner_kv_cache_mixin.py`` ``init_memory_pool``). 4096 with unlimited memory.
    """
    if capacity_tokens is None:
        return 4096
    pool = min(max(int(capacity_tokens / context_len * 512), 2048), 4096)
    return max(1, min(capacity_tokens // 2, pool))


class NewTokenRatio:
    """SGLang's estimate of the share of ``max_new_tokens`` running requests will still generate.

    Starts at :data:`INIT_NEW_TOKEN_RATIO`, drops by ``(init - min) / 600`` every decode step
    without retraction, down to ``init x 0.14``; a retraction resets it to
    ``min(1, (decoded + 20 x running) / (sum of max_new_tokens + 1))`` over the requests left
    (0.5.9 ``Scheduler.update_running_batch`` and ``ScheduleBatch.retract_decode``).
    """

    def __init__(self) -> None:
        self.init = INIT_NEW_TOKEN_RATIO
        self.min = self.init * MIN_NEW_TOKEN_RATIO_FACTOR
        self.decay = (self.init - self.min) / NEW_TOKEN_RATIO_DECAY_STEPS
        self.value = self.init

    def step(self) -> None:
        """One decode step without retraction."""
        self.value = max(self.value - self.decay, self.min)

    def after_retraction(self, decoded_tokens: int, running: int, max_new_tokens: int) -> None:
        """Reset after a retraction (counts over the requests that stay)."""
        self.value = min(1.0, (decoded_tokens + RETRACT_DECODE_STEPS * running) / (max_new_tokens + 1))
