"""The few sentences that open a report: the answer a person reads in ten seconds.

Each report opens with at most :data:`MAX_SENTENCES` short plain sentences (markdown, one paragraph):
what to run at which concurrency, where speculation stops paying (with its interval), the one caveat
that matters most, and whether the figures are simulated or measured. The detail (the verdict's
per-variant lines, the tables) follows below them, unchanged. Every sentence is written from the same
tables the detail uses (``tests/test_openings.py`` checks the facts against them and counts the words).
The inspect-source and variants reports' openings live beside their verdicts
(:func:`workbench.source.inspection_opening`, :func:`workbench.variants.findings_opening`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pandas as pd

from workbench.analysis import CrossoverInterval, bracket_levels, levels_text
from workbench.markup import code, literal
from workbench.studies._calibration_study import CalibrationStudy
from workbench.studies._conditions import conditions_text
from workbench.studies._policy_study import PolicyStudy
from workbench.studies._seed_pair import cap_split
from workbench.studies._tables import StudyTables
from workbench.studies._whatif import WhatIf

__all__ = ["MAX_SENTENCES", "calibration_opening", "policy_opening", "study_opening", "what_if_opening"]

#: The most sentences an opening has.
MAX_SENTENCES = 5

#: How an opening starts (the tests find it by this).
LEAD = "**In short** — "


def _listed(levels: Sequence[object]) -> str:
    """``"1, 4, 16 and 32"``."""
    return _and([str(c) for c in levels])


def _and(parts: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _join(sentences: list[str]) -> str:
    return LEAD + " ".join(s for s in sentences[:MAX_SENTENCES] if s)


def _interval_words(
    interval: CrossoverInterval,
    measured: Sequence[float],
    *,
    who: str,
    against: str,
    words: str = "concurrency",
    unit: str = "",
) -> str:
    """Where ``who`` stops paying against ``against``, from a :class:`workbench.analysis.CrossoverInterval`
    (``words`` and ``unit``: the load's, e.g. ``"request rate"`` and ``" req/s"``)."""
    if interval.kind == "claimed":
        lo, hi = bracket_levels(cast(float, interval.concurrency), list(measured))  # a claimed one has its concurrency
        return (
            f"{code(who)} stops paying against {code(against)} between {words} {lo:g} and {hi:g}{unit} "
            f"(≈ {interval.concurrency:.0f}, "
            f"95% interval {interval.lo:.0f}–{interval.hi:.0f}, n={interval.n})."
        )
    if interval.kind == "not_claimed":
        return (
            f"Where {code(who)} stops paying against {code(against)} cannot be pinned down: the 95% intervals overlap."
        )
    if interval.kind == "not_tested":
        return f"Where {code(who)} stops paying is not tested (n={interval.n}; 3 repeats are needed)."
    return ""


# -- spec_vs_baseline -------------------------------------------------------------------------------
def _runs_of(policy: pd.DataFrame, load: str = "concurrency") -> list[tuple[str, list]]:
    """The policy's best variant as runs of consecutive levels (of the ``load`` column):
    ``[(variant, [levels...]), ...]``."""
    out: list[tuple[str, list]] = []
    for variant, c in zip(policy["best_variant"], policy[load]):
        if out and out[-1][0] == variant:
            out[-1][1].append(c)
        else:
            out.append((variant, [c]))
    return out


def _at(study: StudyTables, levels: str) -> str:
    """``"concurrency 1–2"`` or ``"request rate 1–2 req/s"``: the study's load words."""
    axis = study.load_axis
    return f"{axis.words} {levels}{axis.unit}"


def _lead_spec(study: StudyTables) -> str | None:
    """The speculative variant the opening speaks of: the one best at the lowest level, else the one with
    the highest output-throughput ratio there."""
    if not study.spec_variants:
        return None
    pol = study.policy()
    first = pol.sort_values(study.load)["best_variant"].iloc[0]
    if first in study.spec_variants:
        return first
    ratios = {
        s: study.ratios(s).sort_values(study.load)["output_throughput_tok_s_ratio"].iloc[0]
        for s in study.spec_variants
        if "output_throughput_tok_s" in study.compared(s)
    }
    return max(ratios, key=lambda s: ratios[s]) if ratios else None


def _study_caveat(study: StudyTables, spec: str | None) -> str:
    """The caveat that matters most: a setting that differs beyond speculation (the lead pair's first,
    else any pair's), else that the levels between the measured ones are not measured."""
    unfair = study.comparability()
    differs = unfair[~unfair["setting"].str.startswith("preflight")]
    lead = differs[differs["variant"] == spec]
    if len(lead) or len(differs):
        r = (lead if len(lead) else differs).iloc[0]
        return (
            f"Caveat: {code(r.variant)} differs from {code(study.baseline)} beyond speculation ({literal(r.setting)}), so that "
            "pair is not like-for-like."
        )
    measured = sorted(study.levels[study.load].unique())
    return (
        f"Caveat: {study.load_axis.words} was measured only at {_listed([f'{c:g}' for c in measured])}"
        f"{study.load_axis.unit}, so a switch point lies between two measured levels."
    )


def _provenance_sentence(study: StudyTables) -> str:
    n = study.max_repeats
    if not study.simulated:
        hosts = sorted({str(m.get("host")) for m in study.manifests if m.get("host")})
        conditions = conditions_text(study.manifests, short=True)
        if conditions:  # a real engine under test conditions (random weights, forced acceptance): say which
            return f"{conditions}; host {literal(', '.join(hosts)) or 'unknown'}, {study.repeats_words}."
        return f"Measured on {literal(', '.join(hosts)) or 'the host'} with {study.repeats_words}."
    behind = study.levels.get("sim_behind_schedule_wall_s", pd.Series(dtype=float)).fillna(0.0)
    scale = study.time_scale  # None for runs that recorded none (imports of a simulated server)
    pace = f"{scale:g}x real time" if scale is not None else "time scale not recorded"
    late = int((behind > 0).sum())
    cpu = (
        f"; in {late} of {len(study.levels)} level measurements this machine's CPU could not keep the simulated "
        "clock's pace"
        if late
        else ""
    )
    return f"All figures are SIMULATED ({pace}, n={n} repeats{cpu}), not GPU measurements."


def _answer_sentence(study: StudyTables) -> str:
    """The short answer: at which levels speculation pays, ties with plain decoding or loses, on total output
    throughput (:meth:`StudyTables.policy_choices`: a level where a speculative and a plain-decoding server are not
    distinguishable is a tie), naming what to run where it pays and where it loses."""
    choices = study.policy_choices()
    measured = list(choices[study.load])
    best = study.policy().set_index(study.load)["best_variant"]
    if study.baseline_speculative:  # nothing decodes plainly: what to run, not whether speculation pays
        runs = _runs_of(best.reset_index(), study.load)
        spans = [
            f"{code(v)} at {_at(study, levels_text(c, measured)) if i == 0 else levels_text(c, measured)}"
            for i, (v, c) in enumerate(runs)
        ]
        return f"Run {_and(spans)}: the most total output tok/s there (every variant here drafts)."
    kinds = []
    for serve in choices["serve"]:
        drafting = [study.speculative(v) for v in serve]
        kinds.append("pays" if all(drafting) else "loses" if not any(drafting) else "ties")
    segments: list[tuple[str, list]] = []
    for kind, level in zip(kinds, measured):
        if segments and segments[-1][0] == kind:
            segments[-1][1].append(level)
        else:
            segments.append((kind, [level]))

    serving = dict(zip(measured, choices["serve"]))

    def names(levels: list) -> str:
        """The variants that serve at every level of ``levels`` ("a or b": the tables cannot tell them apart), else
        the best at each in turn ("a, then b")."""
        common = [v for v in serving[levels[0]] if all(v in serving[c] for c in levels)]
        if common:
            return " or ".join(code(v) for v in common)
        return ", then ".join(code(v) for v in dict.fromkeys(best[c] for c in levels))

    if len(segments) == 1:
        kind, levels = segments[0]
        every = f"every {study.load_axis.words} measured ({levels_text(levels, measured)}{study.load_axis.unit})"
        if kind == "pays":
            return f"On total output tok/s, speculation pays at {every}: run {names(levels)}."
        if kind == "loses":
            return f"On total output tok/s, speculation does not pay at {every}: run plain decoding ({names(levels)})."
        return f"On total output tok/s, speculation ties with plain decoding at {every}: either serves."
    said = []
    for i, (kind, levels) in enumerate(segments):
        at = levels_text(levels, measured)
        at = _at(study, at) if i == 0 else f"{at}{study.load_axis.unit}"
        if kind == "pays":
            said.append(f"pays at {at} ({names(levels)})")
        elif kind == "loses":
            said.append(f"loses at {at} (run plain decoding: {names(levels)})")
        else:
            said.append(f"ties with plain decoding at {at}")
    return f"On total output tok/s, speculation {_and(said)}."


def _lone_opening(study: StudyTables) -> str:
    """The opening of a study whose one variant drafts: there is no baseline, so it says so, gives the variant's own
    throughput, and what to measure."""
    means = study.means()
    tok_s = means["output_throughput_tok_s"]
    levels = sorted(means[study.load])
    return _join(
        [
            f"No baseline to compare to: these runs hold one variant, {code(study.baseline)}, and it drafts "
            "(speculative decoding), so nothing here says whether speculation pays.",
            f"On its own it gave {tok_s.min():,.0f}–{tok_s.max():,.0f} output tok/s at "
            f"{_at(study, levels_text(levels, levels))}.",
            "Measure plain decoding on the same model, GPU and workload (its variant without "
            "`--speculative-algorithm`) and report both runs together.",
            _provenance_sentence(study),
        ]
    )


def study_opening(study: StudyTables) -> str:
    """The spec-versus-baseline report's opening (markdown, at most :data:`MAX_SENTENCES` sentences).

    In order: the short answer, at which levels speculation pays, ties with plain decoding or loses on total output
    throughput, with what to run (:func:`_answer_sentence`); where the lead speculative variant stops paying against
    the baseline, with its 95% interval (:meth:`StudyTables.crossover_intervals`); with the seed's pair, what the
    48-request cap accounts for of its gap, and how many of the measurements it rests on are timing-flagged
    (:func:`workbench.studies._seed_pair.cap_split`); the caveat that matters most; simulated or measured, with n and
    the levels that fell behind the simulator's schedule. A study whose only variant drafts says that it has no
    baseline to compare to (:func:`_lone_opening`).
    """
    if study.baseline_speculative and not study.spec_variants:
        return _lone_opening(study) + _set_aside_paragraph(study)
    pol = study.policy()
    measured = sorted(pol[study.load])
    sentences = [_answer_sentence(study)]
    spec = _lead_spec(study)
    if spec is not None:
        interval = study.crossover_intervals(spec).get("output_throughput_tok_s")
        if interval is not None:
            crossover = study.crossovers(spec)["output_throughput_tok_s"]
            said = _interval_words(
                interval,
                measured,
                who=spec,
                against=study.baseline,
                words=study.load_axis.words,
                unit=study.load_axis.unit,
            )
            if not said:
                said = (
                    f"{code(spec)} beats {code(study.baseline)} at every level up to {max(measured)}."
                    if crossover.kind == "none_in_range" and pol["best_variant"].iloc[0] == spec
                    else f"{code(spec)} never beats {code(study.baseline)} on total output throughput."
                )
            sentences.append(said)
    split = cap_split(study)
    if split is not None and study.seed_pair is not None:  # a split is only made of a seed pair
        sentences.append(split.sentence(*study.seed_pair, study.baseline))
    if study.baseline_speculative:
        sentences.append(
            f"Caveat: no run here decodes plainly ({code(study.baseline)}, the baseline, drafts too), so these "
            "figures compare speculative settings with each other, not speculation with plain decoding."
        )
    else:
        sentences.append(_study_caveat(study, spec))
    sentences.append(_provenance_sentence(study))
    return _join(sentences) + _set_aside_paragraph(study)


def _set_aside_paragraph(study: StudyTables) -> str:
    """``"\n\n**Not compared** — ..."``: each run given that the study set aside (:attr:`StudyTables.set_aside`), with
    why, as a paragraph of its own after the opening's sentences; ``""`` when none was."""
    runs = study.set_aside
    if not runs:
        return ""
    items = [f"run {code(r.run_id)} (variant {code(r.variant)}): {literal(r.reason)}." for r in runs]
    many = len(runs) > 1
    return (
        f"\n\n**Not compared** — {len(runs)} of the runs given {'are' if many else 'is'} left out of every "
        f"figure below: " + " ".join(items)
    )


# -- dynamic_disable --------------------------------------------------------------------------------
def policy_opening(study: PolicyStudy) -> str:
    """The dynamic-disable report's opening: the threshold (what to run where), where drafting stops
    paying with its interval, the caveat of the measured levels, simulated or measured."""
    t = study.threshold()
    measured = sorted(int(c) for c in study.levels["concurrency"].unique())
    if t.kind == "always":
        what = f"Keep drafting with {code(t.spec)} at every measured concurrency (up to {max(measured)})."
    elif t.kind == "never":
        what = f"Do not draft: {code(t.baseline)} is ahead from concurrency {min(measured)}."
    else:
        what = f"Draft with {code(t.spec)} up to {t.no_draft_above} running requests, and run {code(t.baseline)} above."
    sentences = [what, _interval_words(t.crossover, measured, who=t.spec, against=t.baseline), _tiers_sentence(study)]
    tokens = sorted({int(v) for v in study.levels.get("max_new_tokens", pd.Series(dtype=float)).dropna()})
    length = f" with {_listed(tokens)} output tokens per request" if tokens else ""
    sentences.append(
        f"Caveat: measured only at concurrency {_listed(measured)}{length}; another output length or "
        "variant set (as in spec_vs_baseline) can move the switch."
    )
    n = study.repeats
    sentences.append(
        f"These figures are SIMULATED (n={n} repeats), not GPU measurements."
        if study.simulated
        else f"Measured with n={n} repeats per level."
    )
    return _join(sentences)


def _tiers_sentence(study: PolicyStudy) -> str:
    """Where SGLang's adaptive tiers (from the topk-1 variants only) stop drafting, when not where the threshold
    does (they agree by construction for the same variant, :func:`workbench.analysis.step_tiers`; a threshold
    drafting with a topk-4 variant can stop elsewhere); ``""`` when they agree or no topk-1 variant was swept."""
    if not study.topk_variants(1):
        return ""
    t = study.threshold()
    top = int(study.levels["concurrency"].max())
    drafting = [r for r in study.vllm_schedule() if r[2] > 0]
    tiers_up_to = drafting[-1][1] if drafting else 0
    threshold_up_to = top if t.kind == "always" else int(t.no_draft_above or 0)
    if tiers_up_to == threshold_up_to:
        return ""
    if not drafting:
        return "SGLang's adaptive tiers (topk 1 only) never draft: no topk-1 variant beats the baseline."
    return (
        f"SGLang's adaptive tiers (topk 1 only) draft up to {tiers_up_to} running requests instead: they choose "
        "among the topk-1 variants alone."
    )


# -- calibration ------------------------------------------------------------------------------------
def calibration_opening(study: CalibrationStudy) -> str:
    """The calibration report's opening: how well the fit predicts held-out GPU points, its largest
    miss, the what-if's answer (where EAGLE-3 stops paying, when the study holds one:
    :meth:`CalibrationStudy.with_whatif`), the caveat, measured and simulated parts."""
    from workbench.analysis import round_sig

    summary = study.summary()
    held = summary[summary["set"] == "held out"]
    pts = study.points()
    sentences = [
        f"The roofline fitted to {int(pts['fitted'].astype(bool).sum())} GPU points predicts the "
        f"{int((~pts['fitted'].astype(bool)).sum())} held-out ones with a median error of "
        f"{round_sig(float(pts.loc[~pts['fitted'].astype(bool), 'residual'].abs().median()) * 100, 2):g}%."
    ]
    if len(held):
        worst = held.loc[held["median_abs_error_pct"].idxmax()]
        sentences.append(
            f"It misses most on {worst['family']} at context {int(worst['context'])} "
            f"({round_sig(float(worst['median_abs_error_pct']), 2):g}% median)."
        )
    whatif = study.whatif
    if whatif is not None and len(whatif):
        variant, group = next(iter(whatif.sort_values("batch").groupby("variant", sort=False)))
        behind = group[group["speedup"] < 1.0]
        where = (
            f"stops paying between batch {int(group[group['batch'] < behind['batch'].iloc[0]]['batch'].max())} "
            f"and {int(behind['batch'].iloc[0])}"
            if len(behind)
            else f"pays at every batch up to {int(group['batch'].max())}"
        )
        sentences.append(
            f"What-if (SIMULATED): {code(variant)} is {group['speedup'].iloc[0]:.2f}x plain decode at batch "
            f"{int(group['batch'].iloc[0])} and {where}."
        )
    sentences.append("Caveat: attention was PyTorch SDPA, not SGLang's kernels, so long contexts say more about SDPA.")
    sentences.append("The timings are MEASURED on a GPU; the fit and the what-if are the model's.")
    return _join(sentences)


# -- what_if ----------------------------------------------------------------------------------------
def what_if_opening(wi: WhatIf) -> str:
    """The what-if report's opening: the recommended policy, the configuration that pays longest and
    where it stops, the caveat (extrapolated acceptance), MODEL PREDICTION."""
    pol = wi.policy()
    chosen = pol[pol["recommended"].astype(bool)]
    row = (chosen if len(chosen) else pol).iloc[0]
    if row["policy"] != "adaptive tiers":  # a threshold, or topk-1 tiers: said as the policy table says them
        sentences = [f"Run {row['settings']} ({row['policy']}, predicted)."]
    else:  # the grid's tiers: the best configuration at each level
        best = wi.best_table()
        measured = sorted(int(c) for c in best["concurrency"])
        spans = [f"{code(v)} at concurrency {levels_text(c, measured)}" for v, c in _runs_of(best)]
        sentences = [f"Run {_and(spans)} (predicted best at each level)."]
    xs = wi.crossover_table().dropna(subset=["crossover_concurrency"])
    if len(xs):
        best = xs.iloc[0]
        sentences.append(
            f"The configuration that pays longest, {code(best['variant'])}, stops paying near concurrency "
            f"{best['crossover_concurrency']:.0f} (one prediction: no interval)."
        )
    sentences.append(
        "Caveat: accept lengths are calibrated on the profile's own settings only; other settings' are extrapolated."
    )
    sentences.append(
        "Every figure is a MODEL PREDICTION: measure the chosen settings with the grid files it writes "
        "(*From prediction to measurement*, below)."
    )
    return _join(sentences)
