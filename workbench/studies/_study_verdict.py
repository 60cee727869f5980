"""The verdict that opens a spec-versus-baseline report: what to run where, each pair against the baseline,
and the caveats that limit the conclusion, as markdown.

A function of the study's tables (:class:`workbench.studies._tables.StudyTables`; the notebook reaches it as
:meth:`workbench.studies.Study.verdict`), written from them as :mod:`workbench.studies._study_words` writes the
report's other words (and with its provenance line and load words): names and values from the runs placed through
:func:`workbench.markup.literal`, the numbers from :mod:`workbench.analysis` (ratios, crossovers, intervals, the
significance rule, fairness), ratios rounded to two decimals and crossovers said as the measured levels that
bracket them (the interpolated point only as "≈ c").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pandas as pd

from workbench.analysis import (
    MIN_TEST_REPEATS,
    SIGNIFICANCE_RULE,
    Crossover,
    CrossoverInterval,
    bracket_levels,
    levels_text,
    not_tested_text,
    ratio_spans,
)
from workbench.markup import literal
from workbench.studies._seed_pair import cap_split
from workbench.studies._study_words import at_levels, provenance_line
from workbench.studies._tables import COMPARED, StudyTables

__all__ = ["choice_spans", "verdict"]


def choice_spans(
    study: StudyTables,
    metric: str = "output_throughput_tok_s",
    *,
    name: Callable[[str], str] = literal,
    brief: bool = False,
) -> list[str]:
    """What to run where, as phrases over runs of consecutive levels (:meth:`StudyTables.policy_choices`): a
    level where several variants serve equally names them all with "either" and says why, so no phrase
    recommends one of two settings the tables cannot tell apart.

    Example: ``["a at concurrency 1–8", "either a or b at concurrency 16 (not distinguishable)", "either b or
    c at concurrency 32–64 (the same server below 48 running requests at 32; not distinguishable at 64)"]``
    (``name`` formats each variant name: :func:`workbench.markup.literal`, or :func:`~workbench.markup.code`;
    ``brief``: without the parenthesis saying why, for an opening that says it once).
    """
    choices = study.policy_choices(metric)
    measured = list(choices[study.load])
    groups: list[tuple[tuple[str, ...], list[float], list[str]]] = []
    for level, serve, why in zip(choices[study.load], choices["serve"], choices["why"]):
        if groups and set(groups[-1][0]) == set(serve):
            groups[-1][1].append(level)
            groups[-1][2].append(why)
        else:
            groups.append((tuple(serve), [level], [why]))
    out = []
    for serve, levels, whys in groups:
        at = at_levels(study, levels_text(levels, measured))
        if len(serve) == 1:
            out.append(f"{name(serve[0])} at {at}")
            continue
        names = [name(v) for v in serve]
        who = (
            f"either {names[0]} or {names[1]}" if len(names) == 2 else f"any of {', '.join(names[:-1])} or {names[-1]}"
        )
        said = list(dict.fromkeys(whys))
        reason = (
            said[0]
            if len(said) == 1
            else "; ".join(f"{w} at {levels_text([c for c, x in zip(levels, whys) if x == w], measured)}" for w in said)
        )
        out.append(f"{who} at {at}" if brief else f"{who} at {at} ({reason})")
    return out


def _metric_sentence(
    study: StudyTables, spec: str, metric: str, crossover: Crossover, interval: CrossoverInterval
) -> str:
    """``"ahead at 1 (1.03x), behind at 2–64 (0.46x–0.91x); crossover between concurrency 1 and 2 (≈ 1.2)"``."""
    ratios = study.ratios(spec)
    load, axis = study.load, study.load_axis
    measured = list(ratios[load])
    spans = ratio_spans(ratios[load], ratios[f"{metric}_ratio"])
    by_level = dict(zip(ratios[load], ratios[f"{metric}_ratio"]))
    parts = []
    for side in ("ahead", "even", "behind"):
        levels = spans[side]
        if not levels:
            continue
        values = sorted(f"{by_level[c]:.2f}" for c in levels)
        shown = f"{values[0]}x" if values[0] == values[-1] else f"{values[0]}x–{values[-1]}x"
        parts.append(f"{side} at {levels_text(levels, measured)} ({shown})")
    text = ", ".join(parts)
    if study.max_repeats >= MIN_TEST_REPEATS:
        words = {
            "spec ahead": "speculation ahead",
            "baseline ahead": "baseline ahead",
            "not distinguishable at this level": "not distinguishable",
        }
        tested = [
            f"{words.get(v, v)} at {levels_text(list(g[load]), measured)}"
            for v, g in ratios.groupby(f"{metric}_verdict", sort=False)
        ]
        text += f" (tested: {', '.join(tested)})"
    if interval.kind == "claimed":
        lower, upper = bracket_levels(cast(float, interval.concurrency), measured)  # claimed: it has one
        text += (
            f"; crossover between {axis.words} {lower} and {upper}{axis.unit} (≈ {interval.concurrency:.1f}, 95% "
            f"interval {interval.lo:.1f}–{interval.hi:.1f}, n={interval.n} repeats)"
        )
    elif interval.kind == "not_claimed":
        text += "; no crossover can be claimed (the 95% intervals do not separate on both sides)"
    elif crossover.kind == "interpolated":
        first = "first " if len(crossover.crossings) > 1 else ""
        text += (
            f"; {first}crossover between {axis.words} {crossover.lower:g} and {crossover.upper:g}{axis.unit} "
            f"(≈ {crossover.concurrency:.1f})"
        )
        if len(crossover.crossings) > 1:
            text += f", {len(crossover.crossings)} crossings in all"
    elif crossover.kind == "below_range":
        text += f"; crossover below {at_levels(study, f'{min(measured):g}')}, the lowest level"
    elif crossover.kind == "none_in_range":
        text += f"; no crossover up to {at_levels(study, f'{max(measured):g}')}"
    return text


def _time_scale_text(study: StudyTables) -> str:
    """The simulator's time scale, and the levels where this machine's CPU set part of the timings
    (``sim_behind_schedule_wall_s`` > 0), as one or two sentences, then the levels past the stated bounds
    (``sim_schedule_problem``, :func:`workbench.bench.schedule_problem`); "" when it ran in real time
    and no level was marked."""
    scale = study.time_scale
    marked = _schedule_text(study)
    if scale is None or scale == 1.0:
        return marked
    text = (
        f" It ran {scale:g}x faster than real time (times are simulated seconds), so this machine's CPU "
        "can shave the busiest levels (docs/PERFORMANCE.md)"
    )
    behind = study.levels.get("sim_behind_schedule_wall_s", pd.Series(dtype=float)).fillna(0.0)
    late = study.levels.loc[behind[behind > 0].index]
    if late.empty:
        return text + "; no level fell behind the simulator's schedule." + marked
    return (
        text + f"; {len(late)} of {len(study.levels)} level measurements fell behind its schedule (up to "
        f"{late['sim_behind_schedule_wall_s'].max():.2f} wall s, at "
        f"{at_levels(study, ', '.join(f'{c:g}' for c in sorted(set(late[study.load]))))})."
    ) + marked


def _schedule_text(study: StudyTables) -> str:
    """ " **Timings not the model's** at ...: <why>." for the levels marked ``sim_schedule_problem``; "" for none."""
    problems = study.levels.get("sim_schedule_problem", pd.Series(dtype=object)).dropna()
    if problems.empty:
        return ""
    marked = study.levels.loc[problems.index]
    counts: dict[tuple[str, float], int] = {}
    for v, c in zip(marked["variant"], marked[study.load]):
        counts[(str(v), float(c))] = counts.get((str(v), float(c)), 0) + 1
    where = ", ".join(  # a level flagged in several repeats says how many, so the list adds up to the count
        f"{literal(v)} at {at_levels(study, f'{c:g}')}" + (f" ({n} repeats)" if n > 1 else "")
        for (v, c), n in sorted(counts.items())
    )
    first = "" if len(marked) == 1 else "the first: "
    return (
        f" **Timings not the model's** in {len(marked)} of {len(study.levels)} level measurements ({where}); "
        f"{first}{literal(problems.iloc[0])}."
    )


def _policy_caveat(study: StudyTables, pol: pd.DataFrame, measured: list[float]) -> str:
    """What the policy's margins over the runner-up support: the levels where the best is not
    distinguishable from it, or that the margins were not tested (fewer than 3 repeats)."""
    said = pol["margin_verdict"].dropna()
    if said.empty:
        return ""
    untested = said[said.str.startswith("not tested")]
    if len(untested):
        return f" (margins over the runner-up {untested.iloc[0]})"
    even = pol.loc[said.index[said == "not distinguishable at this level"], study.load]
    if even.empty:
        return f" (ahead of the runner-up at every level, n={int(pol['n'].min())} repeats)"
    return (
        f" (at {at_levels(study, levels_text(list(even), measured))} not distinguishable from the runner-up, "
        f"n={int(pol['n'].min())} repeats: either serves there)"
    )


def verdict(study: StudyTables) -> str:
    """The report's answer, as markdown, written from the data: it opens the report.

    What it says, in order: the recommended policy (the variant with the highest total
    output throughput at each level, :meth:`StudyTables.policy`); per speculative variant, where it is
    ahead of and behind the baseline on total and per-request throughput (ratios to 3
    significant figures) and its crossover, said as the two measured levels that bracket it
    (the interpolated point only as "≈ concurrency", with its 95% interval when tested);
    then the caveats that limit the conclusion: settings that differ beyond speculation
    (:meth:`StudyTables.comparability`), levels where a server's queue held requests (:meth:`StudyTables.queued`),
    the significance rule (:data:`workbench.analysis.SIGNIFICANCE_RULE`: with fewer than 3
    repeats, "not tested"), and, for the simulated engine, that the figures are a model's;
    last, the provenance (:func:`provenance_line`).
    """
    lines = [f"**Verdict** — {provenance_line(study)}", ""]
    if study.baseline_speculative and not study.spec_variants:
        lines.append(
            f"- **No baseline to compare to**: the runs hold one variant, {literal(study.baseline)}, and it drafts "
            "(speculative decoding). Whether speculation pays needs a plain-decoding run of the same model, GPU and "
            "workload (its variant without `--speculative-algorithm`), reported with this one; the figures below "
            "are this variant's own."
        )
    elif len(study.variants) == 1:  # one plain-decoding run: nothing to compare it with
        measured_levels = sorted(study.levels[study.load].unique())
        lines.append(
            f"- **No speculative variant to compare**: the runs hold one variant, {literal(study.baseline)}, and it "
            "does not draft. Whether speculation pays needs a speculative run of the same model, GPU and workload "
            "(an EAGLE-3 variant of it), reported with this one; the figures below are this variant's own, "
            f"at {at_levels(study, levels_text(measured_levels, measured_levels))}."
        )
    pol = study.policy()
    measured = list(pol[study.load])
    spans = choice_spans(study, name=lambda v: f"**{literal(v)}**")
    caveat = _policy_caveat(study, pol, measured)
    if "either serves there" in caveat:  # the spans name both already, with why
        caveat = f" (n={int(pol['n'].min())} repeats)"
    if len(study.variants) > 1:  # one variant is no choice
        lines.append(
            f"- **Recommended policy** (highest total output throughput at each level): {'; '.join(spans)}{caveat}."
        )
    lines += _goodput_lines(study)
    names = {"output_throughput_tok_s": "total output throughput", "mean_per_request_tok_s": "per request"}
    unfair = study.comparability()
    held = study.queued()
    alike: dict[tuple[float, int, object], list[str]] = {}  # (level, queued, cap) -> the specs queueing as the baseline
    for spec in study.spec_variants:
        crossovers, intervals = study.crossovers(spec), study.crossover_intervals(spec)
        said = "; ".join(
            f"{names[m]}: {_metric_sentence(study, spec, m, crossovers[m], intervals[m])}"
            if m in crossovers
            else f"{names[m]}: not recorded for both (not compared)"
            for m in COMPARED
        )
        lines.append(f"- **{literal(spec)}** against {literal(study.baseline)} — {said}.")
        same, unequal = _queue_sentences(study, spec, held)
        for key in same:
            alike.setdefault(key, []).append(spec)  # said once, among the caveats
        lines += [f"  - {text}" for text in unequal]
    split = cap_split(study)
    if split is not None and study.seed_pair is not None:  # a split is only made of a seed pair
        lines.append(
            f"- **The seed's pair** (uncapped, as the seed measured it): "
            f"{split.sentence(*study.seed_pair, study.baseline, detail=True)}"
        )
    differs = unfair[~unfair["setting"].str.startswith("preflight")]
    unlike = set(differs["variant"])
    caveats = [_queued_alike(study, key, specs, unlike) for key, specs in alike.items()]
    for work in study.same_work():
        if work.flagged:
            caveats.append(f"Not the same work: {work.text()} (*Comparability* below).")
    caveats.extend(_unmeasured(study))
    if study.baseline_speculative and study.spec_variants:
        caveats.append(
            f"No plain-decoding run: the baseline {literal(study.baseline)} drafts too, so each pair compares two "
            "speculative settings, not speculation with plain decoding."
        )
    for spec, group in differs.groupby("variant", sort=False):
        settings = ", ".join(
            f"{literal(r.setting)} {literal(r.baseline_value)} (baseline) vs {literal(r.spec_value)}"
            for r in group.itertuples()
        )
        caveats.append(
            f"Not like-for-like: {literal(spec)} differs from {literal(study.baseline)} beyond speculation in {settings} "
            "(*Comparability* below says what each does and what can be equalised)."
        )
    n = study.max_repeats
    if n < MIN_TEST_REPEATS:
        caveats.append(
            f"Nothing here is tested for significance ({not_tested_text(n)} per level); the rule: "
            f"{SIGNIFICANCE_RULE}. Measure with {MIN_TEST_REPEATS} repeats to test (`-p repeats "
            f"{MIN_TEST_REPEATS}` in a report that measures, `workbench bench VARIANT... --repeats "
            f"{MIN_TEST_REPEATS}`)."
        )
    else:
        caveats.append(f"Significance rule: {SIGNIFICANCE_RULE}.")
    if study.simulated:
        caveats.append(
            "The figures are the simulated engine's: a model calibrated to a few GPU measurements "
            "(docs/SIMULATOR.md), to choose what to measure, not a measurement." + _time_scale_text(study)
        )
    stand_ins = [str(m.get("variant")) for m in study.manifests if m.get("sim_stand_in")]
    if stand_ins:
        caveats.append(f"{literal(', '.join(stand_ins))}: the simulator runs a stand-in for the patch, not the patch.")
    lines.append("- **Caveats**:")
    lines += [f"  - {c}" for c in caveats]
    return "\n".join(lines)


def _queued_alike(study: StudyTables, key: tuple[float, int, object], specs: list[str], unlike: set[str]) -> str:
    """The caveat for the pairs whose two servers queue alike at a level (``key``: the level, how many requests
    wait in each, their cap), for the ``specs`` it holds for, counting the servers and pairs it names. A pair whose
    settings differ beyond speculation (``unlike``, the next caveat says how) is not called like-for-like: queueing
    favours neither there."""
    c, q, cap = key
    base, pairs = literal(study.baseline), len(specs)
    held = f"queue {q} of {c:g} requests (max-running-requests {literal(cap)} each)"
    if pairs == 1:
        who, full, pair = f"both servers {held}", "both are full", "the pair"
    else:
        of = "the" if pairs == len(study.spec_variants) else f"{pairs} of the {len(study.spec_variants)}"
        names = literal(", ".join(specs))
        who = f"{base} and {of} {pairs} variants compared with it ({names}) each {held}"
        full, pair = f"these {pairs + 1} servers are full", f"the {pairs} pairs"
    if set(specs) & unlike:
        neither = "neither" if pairs == 1 else f"none of {pair}"
        other = "their other settings differ" if pairs == 1 else "some of their other settings differ"
        return f"At {at_levels(study, c)} {who}: {full}, so queueing favours {neither} there ({other}: next caveat)."
    return f"At {at_levels(study, c)} {who}: {full}, so {pair} {'is' if pairs == 1 else 'are'} like-for-like there."


def _goodput_lines(study: StudyTables) -> list[str]:
    """The verdict's goodput line, beside the throughput policy, when latency targets are set: the best
    variant by goodput (requests meeting every target per second) and each variant's share meeting them."""
    if not study.goodput:
        return []
    means = study.means()
    if "goodput_req_s" not in means or means["goodput_req_s"].isna().all():
        return [f"- **Goodput** ({study.goodput.words}): not known (the runs have no per-request timings)."]
    pol = study.policy("goodput_req_s")
    measured = list(pol[study.load])
    none = pol[~(pol["best_goodput_req_s"] > 0)]
    pol = pol[pol["best_goodput_req_s"] > 0]
    spans = [
        f"**{v}** at {at_levels(study, levels_text(list(g[study.load]), measured))}"
        for v, g in pol.groupby("best_variant", sort=False)
    ]
    if len(none):
        spans.append(f"no variant meets them at {at_levels(study, levels_text(list(none[study.load]), measured))}")
    shares = []
    for variant, group in means.groupby("variant", sort=False):
        lo, hi = group["goodput_fraction"].min(), group["goodput_fraction"].max()
        name = literal(variant)
        shares.append(f"{name} {lo:.0%}" if round(lo, 2) == round(hi, 2) else f"{name} {lo:.0%}–{hi:.0%}")
    return [
        f"- **Goodput** (requests meeting {study.goodput.words}, per second): best {'; '.join(spans)}"
        f"{_policy_caveat(study, pol, measured)}; share of requests meeting the targets across levels: "
        f"{', '.join(shares)}."
    ]


def _unmeasured(study: StudyTables) -> list[str]:
    """A caveat per run given to the study that measured nothing (its server never started): named, with why."""
    out = []
    for m in study.manifests:
        if m.get("levels_completed") != 0 or m.get("status") not in ("failed", "incomplete", "interrupted"):
            continue
        error = str(m.get("error") or "no error recorded").split("\n")
        first = error[0].split(": ", 1)[-1] if ": " in error[0] else error[0]
        advice = next((line.removeprefix("What to do: ") for line in error if line.startswith("What to do: ")), "")
        out.append(
            f"Not measured: {literal(str(m.get('variant')))} ({m.get('status')}, run "
            f"{literal(str(m.get('run_id')))}): {literal(first.rstrip('.'))}"
            + (f"; {literal(advice.rstrip('.'))}" if advice else "")
            + "."
        )
    return out


def _queue_sentences(
    study: StudyTables, spec: str, held: pd.DataFrame
) -> tuple[list[tuple[float, int, object]], list[str]]:
    """Per level where either server of the pair queued: ``(alike, unequal)``, the levels where both queued alike
    as ``(level, queued, cap)`` (:func:`_queued_alike` words them, once for every pair they hold for), and a
    not-like-for-like sentence per level where they did not."""
    alike: list[tuple[float, int, object]] = []
    out = []
    caps = study.caps
    pair = held[held["variant"].isin([spec, study.baseline])]
    for c, group in pair.groupby(study.load):
        q = dict(zip(group["variant"], group["queued_requests"]))
        qb, qs = q.get(study.baseline, 0), q.get(spec, 0)
        if qb == qs:
            alike.append((c, int(qs), caps.get(spec)))
            continue
        who = [
            f"{q_} of {c} requests wait in {literal(v)}'s queue (max-running-requests {literal(caps.get(v))})"
            for v, q_ in ((spec, qs), (study.baseline, qb))
            if q_
        ]
        others = [
            f"{literal(v)} (max-running-requests {literal(caps.get(v, 'unknown'))}) admits {'all' if not q_ else c - q_}"
            for v, q_ in ((spec, qs), (study.baseline, qb))
            if not q_
        ]
        out.append(
            f"Not like-for-like at concurrency {c}: {' and '.join(who)}"
            f"{', while ' + ' and '.join(others) if others else ''}; the figures there compare a full "
            "server with one that is not."
        )
    return alike, out
