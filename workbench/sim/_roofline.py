"""Roofline cost model: a step's time from the batch, the model's shape and the GPU's data sheet.

A forward of a model over ``T`` query tokens of ``S`` requests that read ``K`` cached tokens,
on one tensor-parallel rank (every size below is divided by ``tp``), is four kernel groups,
each timed as ``max(bytes / achieved bandwidth, FLOPs / achieved FLOP/s)``:

- dense GEMMs: the attention projections, a dense MLP (or an MoE layer's shared expert and
  router), an EAGLE-3 draft's feature-fusion FC; weights read once per step, ``2 T`` FLOPs
  per weight;
- experts (MoE only): the experts the batch's tokens touch, ``E (1 - (1 - k/E)^T_eff)`` of ``E``
  with ``k`` per token, so the weight bytes grow with the tokens. Requests route independently
  (uniformly over the experts), but the several tokens of one request in one step (a verify's draft
  tree, a prompt chunk) share their context and repeat each other's experts: with
  ``routing_overlap`` ``rho``, each token beyond a request's first counts as ``1 - rho`` of an
  independent token, ``T_eff = S + (T - S)(1 - rho)`` (``rho = 0``: uniform, independent routing;
  a decode step, one token per request, is unaffected);
- attention: KV bytes of the ``K`` cached tokens plus the new ones, and ``4 nh hd`` FLOPs per
  (query, key) pair;
- LM head: the vocabulary GEMM over the tokens that need logits (a draft's LM head uses its
  draft vocabulary: its vocab GEMM is most of a draft step's bytes);

plus, with ``tp > 1``, two all-reduces per layer of ``T x hidden`` activations (ring:
``latency + 2 (tp-1)/tp x bytes / achieved bandwidth``; SGLang's custom all-reduce, where
the interconnect allows it and the message is at most 8 MiB, has a smaller latency) and one
all-gather of the logits. A step that cannot replay a CUDA graph (batch above
``--cuda-graph-max-bs``, and every prefill in SGLang 0.5.9) pays an eager launch cost per layer.
Every forward, graph or not, also pays a fixed GPU time per decoder layer (``layer_fixed_us``):
the gaps and tails of a layer's dozen kernels and the fixed cost of its small ones (norms,
rotary, elementwise), which scales with neither bytes nor FLOPs (fitted to GPU timings by
``workbench calibrate``; 0 in profiles fitted before it existed). An MoE layer adds its fused-MoE
floor (``moe_layer_floor_us``): the routing top-k, the block alignment of the tokens per expert,
two grouped-GEMM launches, the activation and the weighted sum, whose time at one token is several
times the bytes it reads (the intercept of a published kernel time against touched experts). Its
grouped GEMMs at a few tokens per expert do not hide their work under the weight reads: each token
adds ``moe_token_us`` per layer (at TP 1; divided by ``tp``, whose ranks each hold a ``1/tp`` slice of
every expert) on top of the touched experts' bytes, until the FLOPs ceiling takes over. On one H200
(``data/calibration/h200-2026-12-01/qwen3-30b-a3b.csv``, its rows at contexts 0 and 2,048: the expert
group timed alone at 1-1,024 tokens) the expert time per layer is 57 us + 2.91 us per touched expert +
0.192 us per token (within 5% from 4 tokens up): once every expert is touched, more tokens still cost,
which a ``max(bytes, FLOPs)`` cannot say below the compute knee.

A scheduler iteration adds CPU work (per phase, ``cpu_overhead_ms`` plus ``cpu_per_request_ms``
per running request): with the overlap
scheduler (the default for plain decoding, and spec v2) it hides under the GPU's time
(``max``); spec v1 runs without overlap, so its phases (draft, verify, draft extend;
SGLang 0.5.9 ``EAGLEWorker.forward_batch_generation``) add up.

The efficiency terms (achieved fraction of HBM bandwidth, of FLOP/s, of interconnect
bandwidth, and the CPU time) are the only numbers a calibration may fit; everything else
comes from data sheets and model configs. :class:`RooflineCost` precomputes per-profile
constants so one step costs a few dozen float operations.
"""

from __future__ import annotations

from typing import Literal

from workbench.errors import ConfigError
from workbench.sim._hardware import ModelConfig
from workbench.sim._roofline_terms import Deployment, Efficiency, StepBreakdown
from workbench.sim._spec import SpecConfig

#: Largest message SGLang's custom all-reduce takes (8 MiB; larger ones go to NCCL).
CUSTOM_ALL_REDUCE_MAX_BYTES = 8 * 1024 * 1024
#: Bytes per activation element moved by the all-reduces and the logits gather (bf16).
ACTIVATION_BYTES = 2


class _Forward:
    """One model's forward on one deployment, with every per-step constant precomputed."""

    def __init__(self, model: ModelConfig, dep: Deployment, eff: Efficiency, gemm=None) -> None:
        tp = dep.tp_size
        self.gemm, self.sheet = gemm, (eff.hbm_efficiency, eff.flops_efficiency)
        h, hd, b = model.hidden_size, model.head_dim, model.dtype_bytes
        layers = model.num_hidden_layers
        self.layers = layers
        self.is_moe = model.is_moe
        # bytes per millisecond and FLOPs per millisecond actually achieved
        bw = dep.gpu.hbm_bandwidth_gb_s * 1e9 * eff.hbm_efficiency / 1e3
        tflops = dep.gpu.dense_fp8_tflops if b == 1 else dep.gpu.dense_bf16_tflops
        flops = tflops * 1e12 * eff.flops_efficiency / 1e3
        attn_params = (
            h * (model.num_attention_heads + 2 * model.num_key_value_heads) * hd + model.num_attention_heads * hd * h
        )
        if model.is_moe:
            dense_params = attn_params + 3 * h * model.shared_expert_intermediate_size + h * model.num_experts
        else:
            dense_params = attn_params + 3 * h * model.intermediate_size
        dense_params = layers * dense_params + model.eagle_fused_layers * h * h
        self.dense_mem = dense_params * b / tp / bw  # ms
        self.dense_flop = 2.0 * dense_params / tp / flops  # ms per query token
        expert_params = 3 * h * model.moe_intermediate_size
        self.n_experts = model.num_experts
        self.route_keep = 1.0 - model.num_experts_per_tok / model.num_experts if model.is_moe else 1.0
        self.expert_mem = layers * expert_params * b / tp / bw  # ms per touched expert
        expert_eff = eff.flops_efficiency if eff.expert_flops_efficiency is None else eff.expert_flops_efficiency
        expert_flops = tflops * 1e12 * expert_eff / 1e3
        self.expert_flop = 2.0 * layers * model.num_experts_per_tok * expert_params / tp / expert_flops  # ms per token
        self.expert_token = layers * eff.moe_token_us / tp / 1e3 if model.is_moe else 0.0  # ms per token
        kv_heads = max(1.0, model.num_key_value_heads / tp)  # SGLang replicates KV heads when tp > kv heads
        self.kv_mem = layers * 2 * kv_heads * hd * b / bw  # ms per token read
        self.attn_flop = layers * 4.0 * (model.num_attention_heads / tp) * hd / flops  # ms per (query, key) pair
        vocab = model.lm_head_vocab
        self.lm_mem = vocab * h * b / tp / bw
        self.lm_flop = 2.0 * vocab * h / tp / flops  # ms per logit row
        # collectives
        self.tp = tp
        if tp > 1:
            link = dep.interconnect.bandwidth_gb_s * 1e9 * eff.interconnect_efficiency / 1e3  # bytes per ms
            self.ar_count = 2 * layers
            self.ar_bytes_per_token = h * ACTIVATION_BYTES
            self.ar_ms_per_byte = 2.0 * (tp - 1) / tp / link
            self.nccl_latency = eff.allreduce_latency_us / 1e3
            self.custom_latency = eff.custom_allreduce_latency_us / 1e3 if dep.uses_custom_all_reduce else None
            self.gather_ms_per_row = (tp - 1) / tp * vocab * ACTIVATION_BYTES / link
        self.eager_ms = layers * eff.eager_layer_us / 1e3
        self.fixed_ms = layers * (eff.layer_fixed_us + (eff.moe_layer_floor_us if model.is_moe else 0.0)) / 1e3
        self.own_token = 1.0 - eff.routing_overlap  # an extra token of a request counts this much

    def touched(self, tokens: float, seqs: int | None = None) -> float:
        """Experts per layer the batch's tokens touch: ``seqs`` requests route independently, each
        request's tokens beyond its first count ``1 - routing_overlap`` (None: every token independent)."""
        if seqs is not None and 0 < seqs < tokens:
            tokens = seqs + (tokens - seqs) * self.own_token
        return self.n_experts * (1.0 - self.route_keep**tokens)

    def groups(self, tokens: int, seqs: int, kv_tokens: int, logits: int) -> dict[str, tuple[float, float]]:
        """(bytes ms, FLOPs ms) of each kernel group of one forward: ``dense``, ``experts`` (MoE only),
        ``attention``, ``lm_head``; a group takes the larger of the two."""
        out = {"dense": (self.dense_mem, self.dense_flop * tokens)}
        if self.is_moe:
            out["experts"] = (
                self.expert_mem * self.touched(tokens, seqs) + self.expert_token * tokens,
                self.expert_flop * tokens,
            )
        per_seq = tokens / seqs if seqs else 0.0
        pairs = per_seq * kv_tokens + tokens * (per_seq + 1.0) / 2.0
        out["attention"] = (self.kv_mem * (kv_tokens + tokens), self.attn_flop * pairs)
        out["lm_head"] = (self.lm_mem, self.lm_flop * logits)
        if self.gemm is not None:  # the real engine's GEMMs by rows: the data sheet's roofline over their efficiency
            (hbm, fl), e, e_lm = self.sheet, self.gemm(tokens), self.gemm(logits)
            out["dense"] = (self.dense_mem * hbm / e, self.dense_flop * tokens * fl / e)
            out["lm_head"] = (self.lm_mem * hbm / e_lm, self.lm_flop * logits * fl / e_lm)
        return out

    def parts(
        self, tokens: int, seqs: int, kv_tokens: int, logits: int, *, attention: bool = True
    ) -> tuple[float, float, float, float]:
        """(weights, kv, compute, communication) milliseconds of one forward (without :attr:`fixed_ms`);
        ``attention=False`` leaves the attention group out (a measured table charges it instead)."""
        weights = kv = compute = 0.0
        for group, (mem, flop) in self.groups(tokens, seqs, kv_tokens, logits).items():
            if group == "attention" and not attention:
                continue
            if mem < flop:
                compute += flop
            elif group == "attention":
                kv += mem
            else:
                weights += mem
        comm = 0.0
        if self.tp > 1:
            size = tokens * self.ar_bytes_per_token
            latency = self.nccl_latency
            if self.custom_latency is not None and size <= CUSTOM_ALL_REDUCE_MAX_BYTES:
                latency = self.custom_latency
            comm = (
                self.ar_count * (latency + size * self.ar_ms_per_byte)
                + self.nccl_latency
                + logits * self.gather_ms_per_row
            )
        return weights, kv, compute, comm

    def total(self, tokens: int, seqs: int, kv_tokens: int, logits: int) -> float:
        """Milliseconds of one forward (the sum of :meth:`parts`, plus :attr:`fixed_ms`)."""
        if tokens <= 0:
            return 0.0
        w, k, c, m = self.parts(tokens, seqs, kv_tokens, logits)
        return w + k + c + m + self.fixed_ms


class RooflineCost:
    """Iteration costs of the simulated engine from physics (see module docstring).

    Speaks the engine's cost interface (:meth:`prefill_ms`, :meth:`decode_ms`,
    :meth:`spec_decode_ms`, milliseconds) and, for notebooks, the same steps as
    :class:`StepBreakdown` values (:meth:`decode_breakdown`, :meth:`spec_breakdown`,
    :meth:`prefill_breakdown`).

    Args:
        target: the target model's shape.
        deployment: GPU, TP, interconnect and SGLang flags.
        efficiency: fitted and fixed efficiency terms.
        draft: the draft model's shape (None: speculative steps cannot be costed).
        spec_kernels: the measured small kernels of a speculative step
            (:class:`~workbench.sim._spec_kernels.SpecKernelCosts`); None charges them nothing.
        extend_attention: the real engine's measured extend attention per speculative iteration
            (:class:`~workbench.sim._spec_kernels.ExtendAttentionCosts`), charged instead of the roofline's verify
            attention; None costs the verify's attention as the roofline costs any forward's.
        full_width_draft_extend: the draft's side of a spec v2 iteration as SGLang 0.5.13+ runs it
            (``srt/speculative/eagle_worker_v2.py``): ``num_steps - 1`` draft forwards of ``batch x topk`` tokens (the
            first draft token of an iteration comes from the previous draft extend's logits, ``draft`` skips the last
            forward), then the draft extend over the whole tree width, ``batch x num_draft_tokens`` rows with a logit
            row each (``_draft_extend_for_decode``). False (profiles fitted before it) charges one draft forward over
            ``batch`` tokens, ``num_steps - 1`` over ``batch x topk`` and the extend over the accepted tokens.
        gemm: the real engine's weight GEMMs by rows (:class:`~workbench.sim._gemm_costs.GemmCosts`), charged for
            the target's and the draft's dense layers and LM heads; None: ``hbm_efficiency``/``flops_efficiency``.

    Raises:
        ConfigError: ``tp_size`` < 1.
    """

    def __init__(
        self,
        target: ModelConfig,
        deployment: Deployment,
        efficiency: Efficiency,
        draft: ModelConfig | None = None,
        spec_kernels=None,
        extend_attention=None,
        full_width_draft_extend: bool = False,
        gemm=None,
    ) -> None:
        if deployment.tp_size < 1:
            raise ConfigError(f"--tp-size must be >= 1, got {deployment.tp_size}")
        self.target_config, self.draft_config = target, draft
        self.deployment, self.efficiency = deployment, efficiency
        self.target = _Forward(target, deployment, efficiency, gemm)
        self.draft = _Forward(draft, deployment, efficiency, gemm) if draft is not None else None
        self.spec_kernels = spec_kernels
        self.extend_attention = extend_attention
        self.full_width_draft_extend = full_width_draft_extend
        self._cpu = efficiency.cpu_overhead_ms
        self._cpu_req = efficiency.cpu_per_request_ms
        self._graph_bs = deployment.cuda_graph_max_bs

    # -- helpers --------------------------------------------------------------------------
    def _draft(self, tokens: int, seqs: int, kv_tokens: int, logits: int) -> float:
        if self.draft is None:
            raise ConfigError(
                f"a speculative step needs a draft model; the profile names none for {self.target_config.name}"
            )
        return self.draft.total(tokens, seqs, kv_tokens, logits)

    def _iteration(self, gpu_ms: float, phases: int, overlap: bool, batch: int, extra_cpu_ms: float = 0.0) -> float:
        cpu = phases * (self._cpu + self._cpu_req * batch) + extra_cpu_ms
        return max(gpu_ms + self.efficiency.host_exposed_ms, cpu) if overlap else gpu_ms + cpu

    def _eager(self, batch: int, forward: _Forward) -> float:
        return forward.eager_ms if batch > self._graph_bs else 0.0

    # -- the engine's interface (fast) ----------------------------------------------------
    def decode_ms(self, batch: int, kv_tokens: int) -> float:
        """One plain decode iteration: one token per running request."""
        if batch <= 0:
            return 0.0
        gpu = self.target.total(batch, batch, kv_tokens, batch) + self._eager(batch, self.target)
        return self._iteration(gpu, 1, self.deployment.overlap_schedule, batch)

    def spec_decode_ms(
        self, batch: int, kv_tokens: int, spec: SpecConfig, accepted_tokens: int, *, verify_tokens: int | None = None
    ) -> float:
        """One EAGLE iteration: ``num_steps`` draft forwards, a verify, a draft extend.

        ``verify_tokens``: the verify's query tokens when they are not ``batch x num_draft_tokens`` (a ragged
        verify, as adaptive verification runs: :mod:`workbench.sim._verify_budget`); default the full tree.
        """
        if batch <= 0:
            return 0.0
        return self._spec_parts(batch, kv_tokens, spec, accepted_tokens, verify_tokens)[3]

    def spec_gpu_ms(self, batch: int, kv_tokens: int, spec: SpecConfig, accepted_tokens: int) -> tuple[float, float]:
        """(GPU milliseconds, of which the small kernels) of one EAGLE iteration replayed from CUDA graphs:
        :meth:`spec_decode_ms` without its CPU phases (what a GPU timing of the whole step measures)."""
        parts = self._spec_parts(batch, kv_tokens, spec, accepted_tokens)
        return parts[2], parts[4]

    def prefill_ms(self, prompt_tokens: list[int], spec: SpecConfig) -> float:
        """One prefill iteration over these prompt chunks (tokens each); the draft runs too when speculative."""
        if not prompt_tokens:
            return 0.0
        return self._prefill_parts(prompt_tokens, spec)[-1]

    # -- parts ----------------------------------------------------------------------------
    def _spec_parts(
        self, batch: int, kv_tokens: int, spec: SpecConfig, accepted: int, verify_tokens: int | None = None
    ):
        if verify_tokens is None:
            verify_tokens = batch * spec.num_draft_tokens
        if self.extend_attention is None:
            target = self.target.parts(verify_tokens, batch, kv_tokens, verify_tokens)
        else:  # the real engine's extend kernel, measured, for the verify's (and the draft extend's) attention
            w, k, c, m = self.target.parts(verify_tokens, batch, kv_tokens, verify_tokens, attention=False)
            target = (w, k + self.extend_attention.iteration_ms(batch, kv_tokens), c, m)
        wide = batch * spec.topk
        if self.full_width_draft_extend:
            draft = 0.0
            for step in range(spec.num_steps - 1):
                draft += self._draft(wide, batch, kv_tokens + step * wide, wide)
            rows = batch * spec.num_draft_tokens
            draft += self._draft(rows, batch, kv_tokens, rows)
        else:
            draft = self._draft(batch, batch, kv_tokens, batch)
            for step in range(1, spec.num_steps):
                draft += self._draft(wide, batch, kv_tokens + step * wide, wide)
            draft += self._draft(max(accepted, batch), batch, kv_tokens, batch)
        eager = self._eager(batch, self.target) + (self._eager(batch, self.draft) if self.draft else 0.0)
        kernels = (
            0.0
            if self.spec_kernels is None
            else self.spec_kernels.step_ms(batch, spec.num_steps, spec.topk, max(1, round(verify_tokens / batch)))
        )
        mask = (
            self.efficiency.verify_mask_ns * 1e-6 * (kv_tokens + verify_tokens) * max(1, round(verify_tokens / batch))
        )
        gpu = sum(target) + self.target.fixed_ms + draft + eager + kernels + mask
        host = self.efficiency.cpu_per_draft_step_ms * max(0, spec.num_steps - 1)
        total = self._iteration(gpu, self.efficiency.spec_cpu_phases, spec.spec_v2, batch, host)
        return target, draft, gpu, total, kernels

    def _prefill_parts(self, prompt_tokens: list[int], spec: SpecConfig):
        tokens, seqs = sum(prompt_tokens), len(prompt_tokens)
        target = self.target.parts(tokens, seqs, 0, seqs)
        draft = (
            self._draft(tokens, seqs, 0, seqs) + self.draft.eager_ms if spec.enabled and self.draft is not None else 0.0
        )
        gpu = (
            sum(target) + self.target.fixed_ms + draft + self.target.eager_ms
        )  # SGLang 0.5.9 runs extend without CUDA graphs
        overlap = self.deployment.overlap_schedule and (not spec.enabled or spec.spec_v2)
        total = self._iteration(gpu, 1, overlap, seqs)
        return target, draft, gpu, total

    # -- one forward by kernel group (GPU timings, ``workbench calibrate``) -----------------
    def forward_groups(
        self, tokens: int, seqs: int, kv_tokens: int, logits: int, *, model: Literal["target", "draft"] = "target"
    ) -> dict[str, float]:
        """GPU milliseconds of one forward replayed from a CUDA graph, by kernel group.

        Args:
            tokens: query tokens of the step (all sequences).
            seqs: sequences they belong to.
            kv_tokens: cached tokens the sequences read (sum over them).
            logits: rows the LM head computes.
            model: the target or the draft.

        Returns:
            ``dense``, ``experts`` (MoE only), ``attention``, ``lm_head`` (each the larger of its
            bytes and FLOPs time), ``fixed`` (:attr:`Efficiency.layer_fixed_us` per layer) and
            ``communication`` (TP collectives); they sum to the forward's time (no CPU, no eager cost).

        Raises:
            ConfigError: ``model="draft"`` and the cost model has no draft.
        """
        fwd = self.target if model == "target" else self.draft
        if fwd is None:
            raise ConfigError(f"no draft model beside {self.target_config.name}")
        out = {group: max(mem, flop) for group, (mem, flop) in fwd.groups(tokens, seqs, kv_tokens, logits).items()}
        out["fixed"] = fwd.fixed_ms
        out["communication"] = fwd.parts(tokens, seqs, kv_tokens, logits)[3]
        return out

    # -- breakdowns (for notebooks) -------------------------------------------------------
    def _breakdown(
        self, kind: str, batch: int, tokens: int, target, draft: float, total: float, kernels: float = 0.0
    ) -> StepBreakdown:
        w, k, c, m = target
        touched = self.target.touched(tokens, batch) if self.target.is_moe else None
        return StepBreakdown(
            kind, batch, tokens, w, k, c, m, draft, total - (w + k + c + m + draft + kernels), touched, kernels
        )

    def decode_breakdown(self, batch: int, kv_tokens: int) -> StepBreakdown:
        """:meth:`decode_ms` split into its parts."""
        target = self.target.parts(batch, batch, kv_tokens, batch)
        return self._breakdown("decode", batch, batch, target, 0.0, self.decode_ms(batch, kv_tokens))

    def spec_breakdown(self, batch: int, kv_tokens: int, spec: SpecConfig, accepted_tokens: int) -> StepBreakdown:
        """:meth:`spec_decode_ms` split into its parts (the verify's in weights..communication)."""
        target, draft, _, total, kernels = self._spec_parts(batch, kv_tokens, spec, accepted_tokens)
        return self._breakdown("spec", batch, batch * spec.num_draft_tokens, target, draft, total, kernels)

    def prefill_breakdown(self, prompt_tokens: list[int], spec: SpecConfig) -> StepBreakdown:
        """:meth:`prefill_ms` split into its parts."""
        target, draft, _, total = self._prefill_parts(prompt_tokens, spec)
        return self._breakdown("prefill", len(prompt_tokens), sum(prompt_tokens), target, draft, total)
