"""The words of a policy study: its verdict, how far to trust it, and the policy files it wrote, as markdown.

Functions of :class:`workbench.studies._policy_tables.PolicyTables` (they import it for real);
:class:`workbench.studies.PolicyStudy` forwards to them.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from workbench import paths
from workbench.markup import code, literal
from workbench.studies._policy_tables import MEASURED, PolicyTables

__all__ = ["policy_files", "trust_line", "trust_subtitle", "verdict"]


def policy_files(study: PolicyTables) -> str:
    """Markdown: each written policy's variant name, what the name means, and its file (relative to the project
    or ``~``, :func:`workbench.paths.shown`: a shared report prints no absolute path of the machine).

    Names are generated: ``<spec>-off-above-<N>`` is ``<spec>`` with no drafting above N running requests;
    ``adaptive-tiers-<hash>`` runs SGLang's ``--speculative-adaptive-config``, ``<hash>`` being the first 8 hex
    digits of the config's SHA-256 (the same config always gets the same name). ``""`` before
    :func:`workbench.sweeps.write_policies`.
    """
    lines = []
    for run in study.runs.values():
        name = run.variant.name
        if run.policy == "threshold":  # N as the file says it (what the name was made from)
            what = (
                f"{code(run.always_on)} with no drafting above {run.variant.sim_policy.get('spec_off_above')} "
                "running requests (the name ends in the threshold)"
            )
        else:
            what = (
                f"SGLang's adaptive num_steps per batch-size tier; the name ends in the first 8 hex digits of "
                f"its config's SHA-256 ({code(paths.shown(run.config_path)) if run.config_path else 'no file'})"
            )
        lines.append(f"- **{literal(run.policy)}**: variant {code(name)}, {what}; file {code(paths.shown(run.path))}")
    if not lines:
        return ""
    return "\n".join(
        [
            "The policies as variant files, each measured below as one server (measure one yourself "
            "with `workbench bench FILE`):",
            "",
            *lines,
        ]
    )


def trust_line(study: PolicyTables) -> str:
    """The verdict's line on how far to trust the recommendations (markdown): on the simulated engine, each
    one's held-out error where it drafts and the table it came from (or that none checked it); measured on a
    real engine, that no model error stands between the sweep and them."""
    checks = study.held_out
    if checks is None:
        return f"- **How far to trust it**: {MEASURED}; the intervals over repeats are the uncertainty."
    said = "; ".join(f"the {literal(name)}: {literal(check.words())}" for name, check in checks.items())
    return f"- **How far to trust it** (SIMULATED: the profile's `[[held_out]]` table, where each drafts): {said}."


def trust_subtitle(study: PolicyTables) -> list[str]:
    """The charts' line on how far to trust the recommendations (none for a sweep measured on a real engine)."""
    checks = study.held_out
    if checks is None:
        return []
    return ["how far to trust it: " + "; ".join(f"{name} {check.figures()}" for name, check in checks.items())]


def verdict(study: PolicyTables) -> str:
    """The answer first (threshold, adaptive config, vLLM schedule, gains), then how far to trust it
    (:func:`trust_line`), the caveats and provenance (markdown)."""
    m = study.metric
    t = study.threshold
    lines = [f"**Verdict ({literal(study.subtitle[0])}).** Objective: {study.objective} ({m})."]
    if t.kind == "always":
        lines.append(f"- **Keep drafting**: {literal(t.description)}")
    elif t.kind == "never":
        lines.append(f"- **Do not draft**: {literal(t.description)}")
    else:  # the description opens with the rule itself: said once, in bold
        said = t.description.removeprefix(f"No drafting above {t.no_draft_above} running requests: ")
        lines.append(
            f"- **No drafting above {t.no_draft_above} running requests**, drafting with "
            f"{literal(t.spec)}: {literal(said)}"
        )
    if study.topk_variants(1):
        p = study.sglang_policy()
        if p.config:
            lines.append(
                f"- SGLang {study.adaptive_version}+ `--speculative-adaptive-config`: `{json.dumps(p.config)}`"
            )
        lines.append(f"- vLLM `num_speculative_tokens_per_batch_size`: `{json.dumps(study.vllm_schedule())}`")
    g = study.gains_on(m)
    for (policy, against), part in g.groupby(["policy", "against"], sort=False) if len(g) else []:
        if (part["predicted_gain"] == 1.0).all():
            lines.append(
                f"- {literal(policy)} runs the same variant as {literal(against)} at every level: predicted gain 0; "
                + (
                    "measured "
                    + ", ".join(f"{_pct(r, 'measured_gain')} at {int(r['concurrency'])}" for _, r in part.iterrows())
                    if "measured_gain" in part and part["measured_gain"].notna().any()
                    else "not run"
                )
                + f" (n={int(part['n'].min())} repeats)."
            )
            continue
        best = part.loc[part["predicted_gain"].idxmax()]
        text = (
            f"- {literal(policy)} over {literal(against)}: predicted up to {_pct(best, 'predicted_gain')} at concurrency "
            f"{int(best['concurrency'])}"
        )
        if "measured_gain" in part and part["measured_gain"].notna().any():
            text += f", measured {_pct(best, 'measured_gain')} there ({best['agreement']})"
        lines.append(text + f"; n={int(best['n'])} repeats.")
    lines.append(trust_line(study))
    lines.append(
        f"- Caveats: {literal('; '.join(study.subtitle))}. Levels "
        f"{', '.join(str(int(c)) for c in sorted(set(study.levels['concurrency'])))} only: the switch "
        "lies somewhere between the last level ahead and the next; a policy's prediction is assembled "
        "from static variants and leaves out what switching costs (measured: the policy run as one "
        f"server). Adaptive tiers run under SGLang {literal(study.adaptive_version)}'s rules, the sweep under its "
        "variants' own."
    )
    return "\n".join(lines)


def _pct(row: pd.Series, col: str) -> str:
    value, lo, hi = row[col], row.get(f"{col}_lo"), row.get(f"{col}_hi")
    text = f"{value - 1:+.1%}"
    if lo is not None and not (isinstance(lo, float) and math.isnan(lo)):
        text += f" (95% CI {lo - 1:+.1%} to {hi - 1:+.1%})"
    return text
