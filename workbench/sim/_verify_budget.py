"""Policies beyond thresholds, at the step level: adaptive verification and a goodput controller.

Both choose, every decode step, how many drafted tokens the target verifies; neither changes what
the draft proposes. They are predicted here in the steady state of a batch (every request at the same
context, the batch's requests spread over the acceptance model's per-request rates), beside static
speculation, from the profile's own cost model and acceptance model:

- **adaptive verification** (vLLM PR #47808, "DSpark confidence-scheduled verification", and PR #52228,
  "Acceptance estimation for adaptive verification", which extends it to EAGLE-3 and every draft-model
  speculator): the draft proposes ``K`` tokens per request; each drafted slot ``(request r, position j)``
  has a survival probability ``s_r(j)`` (the product of the per-position acceptance up to ``j``); the
  slots are ranked by ``s`` and the prefix that maximises expected accepted tokens per millisecond over
  the profiled step-cost curve is verified (a request verifies its ``j`` best positions, ``0..K`` of
  them, so the verify is ragged: ``batch + n`` query tokens for ``n`` admitted slots). Here the survival
  probabilities are each request's own (its acceptance bin), i.e. a **perfect estimator**: vLLM's is
  learned online (a logistic model of the draft's ``logit(max q)`` in #52228, a confidence head in
  #47808), so this is an upper bound on what the policy gains. The cost curve is the profile's roofline
  (what vLLM profiles with dummy steps at start-up).
- **goodput controller** (the rule of vLLM PR #44336, "Adaptive K*", closed unmerged: ``goodput(K) =
  E[accepted](K) / cost(K)``): one speculation length ``K`` for the whole batch, the one in ``0..K_max``
  that maximises expected tokens per millisecond at this batch size (``K = 0`` is plain decoding on a
  speculative server, which pays the profile's off-cost). A per-batch oracle, not an EMA: the upper
  bound of any controller that picks one length per step.
- **static**: the server's ``K`` every step.

Which engine runs them (the what-if says so): static speculation in every SGLang release; SGLang's own
adaptive speculation (an EMA over candidate steps, 0.5.11+; batch-size tiers 0.5.16+) is simulated by
:mod:`workbench.sim._policies`; adaptive verification runs in vLLM's Model Runner V2 (PR #52228, merged
2026-08) and, in SGLang, only for the DSPARK algorithm from 0.5.16 (its ``spec_cap_*`` metrics;
``../shared/sglang-facts.md``), not for EAGLE-3; the goodput controller runs nowhere (a simulated policy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from workbench.errors import ConfigError
from workbench.sim._spec import SpecConfig

#: The policies :func:`step_policies` predicts, in the order it reports them.
POLICIES = ("static", "goodput", "adaptive_verification")


def survival(acceptance, max_drafts: int, batch: int) -> list[list[float]]:
    """Per request of a batch, ``[s(1), ..., s(K)]``: the probability its position ``j`` is accepted.

    The batch's requests take the acceptance model's per-request rates in equal shares (request ``i`` of
    ``batch`` gets bin ``floor((i + 0.5) x bins / batch)``), the steady state of a long run.
    """
    if max_drafts < 1:
        raise ConfigError(f"adaptive verification needs at least one draft token, got {max_drafts}")
    spec = SpecConfig(algorithm="EAGLE3", num_steps=max_drafts, topk=1, num_draft_tokens=max_drafts + 1)
    alphas = acceptance.request_alphas
    table = {}
    out = []
    for i in range(batch):
        a = alphas[min(len(alphas) - 1, int((i + 0.5) * len(alphas) / batch))]
        if a not in table:
            s, row = 1.0, []
            for h in acceptance.depth_probs(spec, a):
                s *= h
                row.append(s)
            table[a] = row
        out.append(table[a])
    return out


@dataclasses.dataclass(frozen=True)
class StepChoice:
    """What one policy does at one batch size.

    Attributes:
        policy: a name in :data:`POLICIES`.
        batch: running requests.
        verify_tokens: target query tokens of the verify (``batch`` plus the admitted draft slots).
        drafts: draft tokens proposed per request (0: no drafting).
        tokens_per_step: expected tokens emitted per step (every request's bonus token included).
        step_ms: the iteration's time (the profile's cost model, CPU phases included).
    """

    policy: str
    batch: int
    verify_tokens: int
    drafts: int
    tokens_per_step: float
    step_ms: float

    @property
    def tok_s(self) -> float:
        """Expected output tokens per second."""
        return 1e3 * self.tokens_per_step / self.step_ms


def step_policies(
    cost, acceptance, spec: SpecConfig, batch: int, kv_tokens: int, *, off_overhead: float = 0.0
) -> dict[str, StepChoice]:
    """Each policy's choice at one batch size (see the module docstring).

    Args:
        cost: the profile's :class:`~workbench.sim._roofline.RooflineCost` for the server's flags.
        acceptance: the acceptance model of the workload.
        spec: the server's speculative settings: a chain (``topk`` 1); ``num_steps`` is ``K_max``.
        batch: running requests; kv_tokens: their cached tokens.
        off_overhead: a non-drafting step's extra cost over plain decoding (fraction; the profile's
            ``[policies].spec_off_overhead`` at this batch), paid by the goodput controller's ``K = 0``.

    Raises:
        ConfigError: a tree (``topk > 1``): adaptive verification ranks a chain's positions.
    """
    if spec.topk != 1:
        raise ConfigError(
            f"adaptive verification and the goodput controller rank a chain's positions; "
            f"topk {spec.topk} is a tree (use topk 1)"
        )
    K = spec.num_steps
    surv = survival(acceptance, K, batch)
    out: dict[str, StepChoice] = {}

    def spec_ms(k: int, verify_tokens: int, accepted: float) -> float:
        s = SpecConfig(algorithm=spec.algorithm, num_steps=k, topk=1, num_draft_tokens=k + 1, spec_v2=spec.spec_v2)
        return cost.spec_decode_ms(batch, kv_tokens, s, max(batch, round(accepted)), verify_tokens=verify_tokens)

    static_tokens = batch + sum(sum(row) for row in surv)
    out["static"] = StepChoice(
        "static", batch, batch * (K + 1), K, static_tokens, spec_ms(K, batch * (K + 1), static_tokens)
    )
    off = StepChoice("goodput", batch, batch, 0, float(batch), cost.decode_ms(batch, kv_tokens) * (1 + off_overhead))
    best = off
    for k in range(1, K + 1):
        tokens = batch + sum(sum(row[:k]) for row in surv)
        c = StepChoice("goodput", batch, batch * (k + 1), k, tokens, spec_ms(k, batch * (k + 1), tokens))
        if c.tok_s > best.tok_s:
            best = c
    out["goodput"] = best
    slots = sorted((p for row in surv for p in row), reverse=True)
    best_av: StepChoice | None = None
    gained = 0.0
    for n in range(len(slots) + 1):
        if n:
            gained += slots[n - 1]
        c = StepChoice(
            "adaptive_verification", batch, batch + n, K, batch + gained, spec_ms(K, batch + n, batch + gained)
        )
        if best_av is None or c.tok_s > best_av.tok_s:
            best_av = c
    if best_av is not None:  # always: the loop runs at least once (n = 0)
        out["adaptive_verification"] = best_av
    return out


def policy_support(sglang_version: str) -> dict[str, str]:
    """Which engine can run each policy, for a user on SGLang ``sglang_version`` (see the module docstring)."""
    from workbench.releases import ADAPTIVE_SINCE, DSPARK_SINCE
    from workbench.releases import release_at_least

    adaptive = (
        "SGLang --speculative-adaptive (EMA over candidate steps) runs here"
        if release_at_least(sglang_version, ADAPTIVE_SINCE)
        else f"SGLang's adaptive speculation needs >= {ADAPTIVE_SINCE}"
    )
    return {
        "static": f"every SGLang release (this one: {sglang_version})",
        "goodput": f"no engine: a simulated per-batch oracle of one speculation length ({adaptive}, a rule on accepted "
        "drafts, not on cost)",
        "adaptive_verification": "vLLM Model Runner V2 with PR #52228 (EAGLE-3 and other draft models); in SGLang only the "
        f"DSPARK algorithm (>= {DSPARK_SINCE}) caps verification"
        + ("" if release_at_least(sglang_version, DSPARK_SINCE) else f", not {sglang_version}")
        + "; no emulated SGLang release (0.5.9-0.5.23) is known to run it for EAGLE-3",
    }


def policy_table(profile, variant, baseline: str, *, batches: Sequence[int], context: int = 1024) -> list[dict]:
    """Per (batch, policy): the step-level prediction and its gain over plain decoding.

    Args:
        profile: a loaded :class:`~workbench.sim._profiles.SimProfile` (or its name).
        variant: a chain EAGLE-3 variant's name, or a :class:`~workbench.sim._configurations.Configuration` (its flags:
            ``num_steps`` is ``K_max``, spec v1 or v2).
        baseline: the plain-decoding variant.
        batches: running requests; context: cached tokens per request.

    Returns:
        Rows with ``batch``, ``policy``, ``drafts``, ``verify_tokens``, ``tokens_per_step``, ``step_ms``,
        ``tok_s``, ``baseline_tok_s`` and ``gain`` (tok/s over the baseline's, minus 1). A MODEL PREDICTION.
    """
    from workbench.sim import load_profile
    from workbench.sim._policies import SpecOffCost
    from workbench.sim._configurations import variant_configuration

    prof = load_profile(profile) if isinstance(profile, str) else profile
    cfg = variant_configuration(prof, variant) if isinstance(variant, str) else variant
    base_cfg = variant_configuration(prof, baseline)
    cost, base_cost = prof.cost_for(cfg.args), prof.cost_for(base_cfg.args)
    acceptance = prof.acceptance
    off = SpecOffCost.from_table(prof.policies)
    rows = []
    for b in batches:
        kv = b * context
        base = 1e3 * b / base_cost.decode_ms(b, kv)
        for name, choice in step_policies(cost, acceptance, cfg.spec, b, kv, off_overhead=off.overhead(b)).items():
            rows.append(
                {
                    "batch": b,
                    "policy": name,
                    "drafts": choice.drafts,
                    "verify_tokens": choice.verify_tokens,
                    "tokens_per_step": choice.tokens_per_step,
                    "step_ms": choice.step_ms,
                    "tok_s": choice.tok_s,
                    "baseline_tok_s": base,
                    "gain": choice.tok_s / base - 1.0,
                }
            )
    return rows
