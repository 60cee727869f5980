"""The words of a spec-versus-baseline study besides its verdict: comparability, acceptance, findings, provenance.

Functions of a study's tables (:class:`workbench.studies._tables.StudyTables`; the notebook reaches them
as :class:`workbench.studies.Study`'s ``comparability_text``, ``acceptance_text``, ``findings`` and
``provenance_line``), returning markdown; the verdict that opens the report is
:mod:`workbench.studies._study_verdict`, which takes its provenance line and load words from here.
Every name and value from the runs (variant names, settings, hosts, versions) is placed through
:func:`workbench.markup.literal` (or :func:`~workbench.markup.code`), so it displays as written.
Every sentence is written from the study's tables: the numbers come from
:mod:`workbench.analysis` (ratios, crossovers, intervals, the significance rule, fairness) and
are rounded here for reading, ratios to two decimals.
"""

from __future__ import annotations

import pandas as pd

from workbench._version import __version__
from workbench.analysis import not_tested_text
from workbench.markup import code, literal
from workbench.studies._conditions import conditions_text
from workbench.studies._tables import StudyTables

__all__ = ["acceptance_text", "at_levels", "comparability_text", "findings", "provenance_line"]


def at_levels(study: StudyTables, levels: object) -> str:
    """``"concurrency 1–2"`` or ``"request rate 1–2 req/s"``: measured levels in the study's load words."""
    axis = study.load_axis
    shown = f"{levels:g}" if isinstance(levels, (int, float)) else levels
    return f"{axis.words} {shown}{axis.unit}"


def comparability_text(study: StudyTables) -> str:
    """Markdown for the report's *Comparability* section: per speculative variant, each setting that
    differs from the baseline beyond speculation with what it does and how (or whether) it can be
    equalised, and the levels where a server's queue held requests."""
    unfair, held = study.comparability(), study.queued()
    same = [
        f"- **Same work** ({'FLAGGED' if w.flagged else 'checked' if w.checked else 'not checked'}): {w.text()}."
        for w in study.same_work()
    ]
    if not study.server_infos:
        return "\n".join(
            ["No server settings were recorded in these runs' manifests: comparability cannot be checked.", *same]
        )
    lines = list(same)
    base = literal(study.baseline)
    for spec in study.spec_variants:
        rows = unfair[unfair["variant"] == spec]
        if not len(rows):
            lines.append(
                f"- **{literal(spec)}**: like-for-like with {base} (the servers reported the same "
                "settings beyond speculation)."
            )
            continue
        lines.append(f"- **{literal(spec)}** differs from {base}:")
        for r in rows.itertuples():
            values = (
                f" ({base}: {literal(r.baseline_value)}, {literal(spec)}: {literal(r.spec_value)})"
                if r.baseline_value
                else ""
            )
            lines.append(f"  - {code(r.setting)}{values}: {r.effect}. To equalise: {r.equalise}.")
    if len(held):
        at = "; ".join(
            f"{literal(r.variant)} at {at_levels(study, getattr(r, study.load))}: "
            f"{r.queued_requests} over (cap {r.cap})"
            for r in held.itertuples()
        )
        lines.append(
            "- **Requests over the cap** (the tables' *over cap*: in flight beyond the server's max-running-requests, "
            f"so waiting whatever it does; ringed in red in the charts): {at}. The server's own queue, which also "
            "holds requests waiting for their prefill, is in *What the server saw* (*mean_queued_reqs*)."
        )
    elif study.load != "concurrency":
        lines.append(
            "- **Requests over the cap**: not known for open-loop levels (requests arrive at a rate, so how "
            "many wait in a server's queue is not fixed by the load)."
        )
    else:
        lines.append(
            "- **Requests over the cap**: none (the tables' *over cap* is 0 at every level); every level's "
            "concurrency is within each server's max-running-requests. A request can still wait in the server's "
            "own queue for its prefill (chunked prefill admits a budget of prompt tokens per step): *What the "
            "server saw* shows that queue as the server reported it (*mean_queued_reqs*), where it was observed."
        )
    return "\n".join(lines)


def acceptance_text(study: StudyTables) -> str:
    """Markdown for the report's acceptance in detail: per speculative variant and level, the
    acceptance rate at each draft position (n requests, verifies), then the accept length per
    prompt category; says so where the runs recorded no per-request histograms."""
    rates = study.position_rates()
    lines = []
    drafting = [v for v in study.variants if study.speculative(v)]  # a speculative baseline included
    for spec in drafting:
        mine = rates[rates["variant"] == spec]
        if not len(mine):
            lines.append(
                f"- **{literal(spec)}**: no per-position figures (the server sent no accept histogram: SGLang "
                "before 0.5.9, an OpenAI route, or an imported file without them)."
            )
            continue
        for level, group in mine.groupby(study.load, sort=True):
            shown = ", ".join(f"{r.position}: {r.rate:.2f}" for r in group.itertuples())
            first = group.iloc[0]
            where = (
                "from vLLM's file"
                if first["source"] == "vllm"
                else (f"n={int(first['n_requests'])} requests, {int(first['verifies'])} verifies")
            )
            lines.append(
                f"- **{literal(spec)}** at {at_levels(study, level)}: "
                f"acceptance rate by draft position {shown} ({where})."
            )
    cats = study.accept_by_category()
    for spec, group in cats[cats["variant"].isin(drafting)].groupby("variant", sort=False):
        shown = "; ".join(
            f"{literal(r.prompt_category)} {r.accept_length:.2f} (n={r.n_requests})" for r in group.itertuples()
        )
        lines.append(f"- **{literal(spec)}**, accept length by prompt category (every level pooled): {shown}.")
    return "\n".join(lines) if lines else "No speculative variant in these runs."


def findings(study: StudyTables) -> str:
    """A short markdown summary: crossovers, best policy, accept length vs model."""
    lines = []
    if study.simulated:
        lines.append(f"**{study.subtitle}.**\n")
    lines.append(f"- {study.repeats_line}.")
    for spec in study.spec_variants:
        for metric, c in study.crossovers(spec).items():
            lines.append(f"- **{literal(spec)}**, {metric}: {c.description}")
        if "mean_per_request_tok_s" not in study.compared(spec):
            lines.append(
                f"  - per-request tok/s: not recorded for both {literal(spec)} and {literal(study.baseline)} "
                "(not compared)."
            )
            continue
        if study.max_repeats > 1:
            for row in study.ratio_intervals(spec, "mean_per_request_tok_s").itertuples():
                interval = (
                    "no interval"
                    if row.n < 2
                    else f"95% CI {round(row.ratio_lo - 1, 2) + 0.0:+.0%} to {round(row.ratio_hi - 1, 2) + 0.0:+.0%}"
                )
                lines.append(
                    f"  - at {at_levels(study, getattr(row, study.load))}, {literal(spec)} is "
                    f"{round(row.ratio - 1, 2) + 0.0:+.0%} per request ({interval}, n={row.n} paired repeats): "
                    f"{row.verdict}."
                )
            continue
        ci = study.per_request_ci(spec).merge(
            study.ratios(spec)[[study.load, "queued_requests"]], on=study.load, how="left"
        )
        for row in ci.itertuples():
            if row.ratio > 1.0:
                level = getattr(row, study.load)
                queued = (
                    f"; {int(row.queued_requests)} of {level} requests queued in a server, so not like-for-like"
                    if row.queued_requests > 0
                    else ""
                )
                lines.append(
                    f"  - at {at_levels(study, level)}, {literal(spec)} is "
                    f"{round(row.ratio - 1, 2) + 0.0:+.0%} per request "
                    f"(requests' spread: {round(row.ratio_lo - 1, 2) + 0.0:+.0%} to "
                    f"{round(row.ratio_hi - 1, 2) + 0.0:+.0%}, "
                    f"{'paired ' if row.paired else ''}bootstrap over {row.n_spec} requests of one repeat; "
                    f"{not_tested_text(study.max_repeats)}{queued})."
                )
    pol = study.policy()
    runs = []
    for variant, group in pol.groupby((pol["best_variant"] != pol["best_variant"].shift()).cumsum()):
        levels = list(group[study.load])
        span = f"{levels[0]:g}" if levels[0] == levels[-1] else f"{levels[0]:g}–{levels[-1]:g}"
        runs.append(f"{literal(group['best_variant'].iloc[0])} at {at_levels(study, span)}")
    lines.append(f"- Best total output throughput: {'; '.join(runs)}.")
    for m in study.manifests:
        sim = m.get("simulation") or {}
        expected = sim.get("expected_accept_length")
        name = m.get("variant")
        got = study.levels.loc[study.levels["variant"] == name, "accept_length"].dropna()
        if expected and len(got):
            lines.append(
                f"- {literal(name)}: measured accept length {got.min():.2f}–{got.max():.2f} across levels and repeats "
                f"(n={len(got)} level measurements); "
                f"the simulator's acceptance model expects {expected:.2f} per verify step (before the "
                "prefill token and output-length truncation)."
            )
    return "\n".join(lines)


def provenance_line(study: StudyTables) -> str:
    """Where the figures come from: measured or simulated, engine, SGLang and workbench versions, host, n."""
    sims = [m.get("simulation") or {} for m in study.manifests]
    profile = next((s.get("profile") for s in sims if s.get("profile")), None)
    versions = sorted({str(m.get("sglang_version")) for m in study.manifests if m.get("sglang_version")})
    hosts = sorted({str(m.get("host")) for m in study.manifests if m.get("host")})
    engines = sorted(set(study.levels["engine"].dropna())) if "engine" in study.levels else []
    counts = (study.levels["num_requests"] if "num_requests" in study.levels else pd.Series(dtype=float)).dropna()
    if not len(counts) and "completed" in study.levels:  # a tool that records only the completed ones
        counts = study.levels["completed"].dropna()
    what = (
        "SIMULATED (a model, not a GPU measurement)"
        if study.simulated
        else (conditions_text(study.manifests) or "Measured")
    )
    parts = [
        what,
        f"engine {literal(', '.join(engines) or 'unknown')}" + (f" (profile {literal(profile)})" if profile else ""),
    ]
    if versions:
        parts.append(f"SGLang {literal(', '.join(versions))}" + (" rules" if study.simulated else ""))
    parts.append(f"workbench {literal(__version__)}")
    if hosts:
        parts.append(f"host {literal(', '.join(hosts))}")
    parts.append(study.repeats_words)
    if len(counts):
        lo, hi = int(counts.min()), int(counts.max())
        parts.append(f"{lo if lo == hi else f'{lo}–{hi}'} requests per level")
    if study.other_workloads:  # the runs hold more than the workload shown: say which one this is
        parts.append(f"workload {literal(study.workload)} (of {1 + len(study.other_workloads)} in these runs)")
    return ", ".join(parts) + "."
