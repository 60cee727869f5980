"""What a profile predicts for speculative decoding: the step-level speedup of EAGLE-3 settings, and its crossover.

For a batch of ``b`` requests each reading ``context`` cached tokens, a plain decode step makes
``b`` tokens in the profile's decode iteration; an EAGLE-3 iteration (draft, verify, draft
extend, with each variant's own flags) makes ``b x`` the expected accept length of its settings
(the profile's acceptance model). The speedup is their tokens per millisecond's ratio; the
crossover is the batch above which it falls below 1 (:func:`workbench.analysis.find_crossover`,
interpolated on log batch). A steady state: no prefill, no queueing, every request at the same
context (the offline engine's sweeps add those).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

#: Batches the what-if is computed at.
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128)


def whatif_speedup(
    profile: str,
    *,
    baseline: str,
    spec_variants: Sequence[str],
    context: int = 1024,
    batches: Sequence[int] = DEFAULT_BATCHES,
) -> pd.DataFrame:
    """Per (variant, batch): decode and speculative iteration times, accept length, tok/s, speedup.

    Args:
        profile: a simulator profile (``data/profiles/<profile>.toml``).
        baseline: the plain-decoding variant (``data/variants/<name>.toml``).
        spec_variants: EAGLE-3 variants.
        context: cached tokens per request.
        batches: running requests.

    Returns:
        Columns ``variant``, ``batch``, ``context``, ``baseline_ms``, ``spec_ms``, ``accept_length``,
        ``baseline_tok_s``, ``spec_tok_s``, ``speedup``.
    """
    from workbench.sim import load_profile, step_breakdown, variant_config

    prof = load_profile(profile)
    rows = []
    for variant in spec_variants:
        accept = prof.acceptance.expected_accept_length(variant_config(prof, variant).spec, samples=20000)
        for b in batches:
            base = step_breakdown(prof, baseline, batch=b, kv_tokens=b * context).total_ms
            spec = step_breakdown(
                prof, variant, batch=b, kv_tokens=b * context, accepted_tokens=round(b * accept)
            ).total_ms
            rows.append(
                {
                    "variant": variant,
                    "batch": b,
                    "context": context,
                    "baseline_ms": base,
                    "spec_ms": spec,
                    "accept_length": accept,
                    "baseline_tok_s": 1e3 * b / base,
                    "spec_tok_s": 1e3 * b * accept / spec,
                    "speedup": (b * accept / spec) / (b / base),
                }
            )
    return pd.DataFrame(rows)


def whatif_crossovers(speedups: pd.DataFrame) -> pd.DataFrame:
    """One row per variant: the crossover batch (None when none in range) and its description."""
    from workbench.analysis import find_crossover

    rows = []
    for variant, d in speedups.groupby("variant", sort=False):
        c = find_crossover(d["batch"], d["speedup"], metric="output tok/s")
        rows.append(
            {
                "variant": variant,
                "accept_length": float(d["accept_length"].iloc[0]),
                "speedup_at_1": float(d["speedup"].iloc[0]),
                "crossover_batch": c.concurrency,
                "kind": c.kind,
                "description": c.description,
            }
        )
    return pd.DataFrame(rows)
