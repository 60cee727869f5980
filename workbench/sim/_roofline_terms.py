"""The roofline's inputs and its output as values: the efficiency terms a calibration may fit
(:class:`Efficiency`, :data:`FITTABLE`), the deployment a step runs on (:class:`Deployment`: GPU, interconnect,
tensor parallelism, CUDA graphs) and one step's time by kernel group (:class:`StepBreakdown`).
:mod:`workbench.sim._roofline` costs a step from them."""

from __future__ import annotations

import dataclasses

from workbench.sim._hardware import GpuSpec, Interconnect, check_non_negative


@dataclasses.dataclass(frozen=True)
class Efficiency:
    """The few terms a profile may fit, and the fixed ones beside them.

    Attributes:
        hbm_efficiency: achieved fraction of the data-sheet HBM bandwidth (0..1].
        flops_efficiency: achieved fraction of the data-sheet dense FLOP/s (0..1].
        interconnect_efficiency: achieved fraction of the interconnect's one-way bandwidth
            in an all-reduce (0..1].
        cpu_overhead_ms: CPU time per scheduler phase (ms): scheduling, batch preparation,
            launching the step.
        cpu_per_request_ms: CPU time per running request per phase (ms): the per-request
            bookkeeping of a step (preparing inputs, appending tokens, finish checks; under
            EAGLE v1 each of its phases walks the requests: draft inputs, accepting the
            verified drafts, draft-extend inputs).
        allreduce_latency_us: fixed latency of one NCCL collective (µs).
        custom_allreduce_latency_us: fixed latency of one custom all-reduce (µs).
        eager_layer_us: launch cost per layer when a step runs without a CUDA graph (µs).
        layer_fixed_us: GPU time per decoder layer per forward, CUDA graph or not, that scales
            with neither bytes nor FLOPs (µs): kernel gaps and tails, small kernels' fixed cost.
        spec_cpu_phases: CPU phases of one speculative iteration (draft, verify, extend).
        moe_layer_floor_us: fixed GPU time of one MoE layer's fused-MoE call per forward (µs), on top
            of the experts' bytes or FLOPs; 0 for a dense model.
        routing_overlap: share of a request's extra tokens in one step (beyond its first) whose
            expert picks repeat its other tokens' (0..1): 0 is independent uniform routing.
        moe_token_us: GPU time per token per MoE layer at TP 1 (µs; divided by ``tp``), added to
            the touched experts' weight reads: the routing, permutation and grouped-GEMM tiles of
            one token at a few tokens per expert; 0 for a dense model (and in profiles before it).
        cpu_per_draft_step_ms: host time per draft forward after the first of a speculative
            iteration (ms; ``num_steps - 1`` of them, exposed under spec v1): SGLang v0.4.4's
            ``FlashInferMultiStepDraftBackend.common_template`` plans FlashInfer's decode attention on
            the host (``fast_decode_plan``) once per draft step before the draft's CUDA graph replays,
            so a deep tree pays more host time than a short chain; 0 unless fitted.
        verify_mask_ns: time per element of the verify's custom attention mask (ns), per verify:
            SGLang v0.4.4 builds a ``seq_lens_sum x num_draft_tokens + num_draft_tokens^2 x batch``
            boolean mask (``build_tree_kernel``), packs it (FlashInfer's ``segment_packbits`` in
            the prefill ``plan``) and its custom-mask prefill kernel reads it in every layer; 0 unless
            fitted.
        host_exposed_ms: host time per iteration the GPU waits on although the scheduler overlaps the next
            batch's host work with this one's GPU work (ms; overlap schedule only): the synchronisation and launch
            gaps the overlap leaves. MEASURED, not fitted: SGLang 0.5.17's own profiler traces on one H100 show the
            GPU busy 94-98% of an iteration, 0.47 ms median idle for an 8B dense model and 0.93 ms for a 30B-A3B MoE
            (``data/calibration/h100-sglang-0.5.17-2026-12-06-real``); 0 in profiles before it.
        expert_flops_efficiency: achieved fraction of the data-sheet dense FLOP/s in an MoE layer's grouped
            expert GEMMs (0..1]; None (the default) uses ``flops_efficiency``. A grouped GEMM over 128
            small experts reaches far less than a dense GEMM: torch ``grouped_mm`` on one H200 reached
            198 TFLOP/s (0.20 of the data sheet) for Qwen3-30B-A3B's experts at 4,096 tokens
            (``data/calibration/h200-2026-12-01/qwen3-30b-a3b.csv``), where a dense GEMM reaches about 0.5.
    """

    hbm_efficiency: float = 0.8
    flops_efficiency: float = 0.6
    interconnect_efficiency: float = 0.5
    cpu_overhead_ms: float = 0.0
    cpu_per_request_ms: float = 0.0
    allreduce_latency_us: float = 25.0
    custom_allreduce_latency_us: float = 8.0
    eager_layer_us: float = 30.0
    spec_cpu_phases: int = 3
    layer_fixed_us: float = 0.0
    moe_layer_floor_us: float = 0.0
    routing_overlap: float = 0.0
    moe_token_us: float = 0.0
    cpu_per_draft_step_ms: float = 0.0
    verify_mask_ns: float = 0.0
    expert_flops_efficiency: float | None = None
    host_exposed_ms: float = 0.0

    def __post_init__(self) -> None:
        for name in ("hbm_efficiency", "flops_efficiency", "interconnect_efficiency"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        check_non_negative(
            self,
            (
                "cpu_overhead_ms",
                "cpu_per_request_ms",
                "allreduce_latency_us",
                "custom_allreduce_latency_us",
                "eager_layer_us",
                "layer_fixed_us",
                "moe_layer_floor_us",
                "moe_token_us",
                "cpu_per_draft_step_ms",
                "verify_mask_ns",
                "host_exposed_ms",
            ),
        )
        if self.expert_flops_efficiency is not None and not 0.0 < self.expert_flops_efficiency <= 1.0:
            raise ValueError(f"expert_flops_efficiency must be in (0, 1], got {self.expert_flops_efficiency}")
        if not 0.0 <= self.routing_overlap < 1.0:
            raise ValueError(f"routing_overlap must be in [0, 1), got {self.routing_overlap}")


#: Efficiency terms a calibration may fit.
FITTABLE = (
    "hbm_efficiency",
    "flops_efficiency",
    "interconnect_efficiency",
    "cpu_overhead_ms",
    "cpu_per_request_ms",
    "layer_fixed_us",
    "moe_layer_floor_us",
    "routing_overlap",
    "cpu_per_draft_step_ms",
    "verify_mask_ns",
)


@dataclasses.dataclass(frozen=True)
class Deployment:
    """Where and how the model runs: the GPU, TP, the interconnect and SGLang's flags.

    Attributes:
        gpu: the GPU's data sheet.
        interconnect: how the TP ranks talk.
        tp_size: tensor-parallel ranks (``--tp-size``).
        custom_all_reduce: custom all-reduce requested (``--disable-custom-all-reduce`` absent);
            it runs only where the interconnect allows (:attr:`uses_custom_all_reduce`).
        cuda_graph_max_bs: largest batch replayed from a CUDA graph (``--cuda-graph-max-bs``;
            0 with ``--disable-cuda-graph``).
        overlap_schedule: the overlap scheduler is on (off under spec v1, or with
            ``--disable-overlap-schedule``).
    """

    gpu: GpuSpec
    interconnect: Interconnect
    tp_size: int = 1
    custom_all_reduce: bool = True
    cuda_graph_max_bs: int = 160
    overlap_schedule: bool = True

    @property
    def uses_custom_all_reduce(self) -> bool:
        """Custom all-reduce runs: requested, and the interconnect supports it (SGLang turns it
        off on more than two PCIe-only GPUs: ``srt/distributed/device_communicators/custom_all_reduce.py``)."""
        if not self.custom_all_reduce or self.tp_size < 2:
            return False
        return self.interconnect.custom_all_reduce or self.tp_size <= 2


@dataclasses.dataclass(frozen=True)
class StepBreakdown:
    """Where one scheduler iteration's time goes (milliseconds; the parts sum to :attr:`total_ms`).

    Attributes:
        kind: ``"decode"``, ``"spec"`` (draft + verify + extend) or ``"prefill"``.
        batch: requests in the iteration.
        tokens: target query tokens (``S`` decode, ``S x num_draft_tokens`` verify, prompt tokens prefill).
        weights_ms: kernel groups bound by reading weights.
        kv_ms: kernel groups bound by reading the KV cache.
        compute_ms: kernel groups bound by FLOPs.
        communication_ms: all-reduces and the logits gather of the target model.
        draft_ms: every draft-model forward of the iteration (its own roofline and collectives).
        overhead_ms: exposed CPU time, eager launch costs and the fixed GPU time per layer.
        touched_experts: experts per MoE layer the target's tokens touch (None for dense models).
        kernels_ms: the speculative step's small kernels (draft top-k, tree selection and building,
            verification, KV bookkeeping), from the profile's measured table
            (:class:`~workbench.sim._spec_kernels.SpecKernelCosts`); 0 without one.
    """

    kind: str
    batch: int
    tokens: int
    weights_ms: float
    kv_ms: float
    compute_ms: float
    communication_ms: float
    draft_ms: float
    overhead_ms: float
    touched_experts: float | None = None
    kernels_ms: float = 0.0

    @property
    def total_ms(self) -> float:
        """The iteration's duration."""
        return (
            self.weights_ms
            + self.kv_ms
            + self.compute_ms
            + self.communication_ms
            + self.draft_ms
            + self.overhead_ms
            + self.kernels_ms
        )

    def as_dict(self) -> dict[str, float | int | str | None]:
        """A flat row (with ``total_ms``) for a table."""
        out: dict[str, float | int | str | None] = dataclasses.asdict(self)
        out["total_ms"] = self.total_ms
        return out
