"""What a spec-versus-baseline study recommends and what makes its pairs unlike: the best variant per level
with its paired margin (:func:`policy`), every variant that serves equally there (:func:`policy_choices`), and the
settings each speculative server differs in from the baseline (:func:`comparability`). Functions of
:class:`~workbench.studies._tables.StudyTables`, whose methods of the same names call them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.analysis import best_policy, ratio_intervals, settings_differences
from workbench.studies._run_facts import gpu_difference

if TYPE_CHECKING:
    from workbench.studies._tables import StudyTables

#: ``/server_info`` keys that change while a server runs or name where it listens, not how it serves: two
#: servers that differ only in these (and their request cap) are one server below the smaller cap.
_LIVE_KEYS = frozenset(
    {
        "port",
        "host",
        "status",
        "internal_states",
        "simulation",
        "log_level",
        "random_seed",
        "sim_seed",
        "decode_log_interval",
        "served_model_name",
        "weight_version",
        "max_total_num_tokens",
    }
)


def same_server_below(study: StudyTables, first: str, second: str) -> int | None:
    """The running-request count up to which ``first`` and ``second`` are one server: their ``/server_info``
    differs in ``max_running_requests`` alone (as ``baseline`` and ``baseline-cap48``), so below the smaller
    cap nothing tells them apart. None when either reported no settings or another setting differs."""
    infos = study.server_infos
    if first == second or first not in infos or second not in infos:
        return None
    a, b = infos[first], infos[second]
    differ = {k for k in set(a) | set(b) if k not in _LIVE_KEYS and a.get(k) != b.get(k)}
    if differ != {"max_running_requests"}:
        return None
    caps = study.caps
    if first not in caps or second not in caps:
        return None
    return min(caps[first], caps[second])


#: How the policy table says a paired margin's verdict.
_POLICY_WORDS = {"spec ahead": "ahead", "baseline ahead": "runner-up ahead (paired)"}


def policy(study: StudyTables, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
    """Best variant per concurrency on ``metric`` (mean over repeats; what to run at each load).

    Returns:
        One row per concurrency: :func:`workbench.analysis.best_policy`'s ``concurrency``,
        ``best_variant``, ``best_<metric>``, ``runner_up``, ``margin`` (best / runner-up - 1,
        of the means), then ``n`` (the best variant's repeats), ``best_<metric>_lo`` / ``_hi``
        (its 95% t interval over repeats; NaN for n=1), ``margin_lo`` / ``margin_hi`` (the
        95% t interval of the paired best/runner-up ratio minus 1,
        :func:`workbench.analysis.ratio_intervals`) and ``margin_verdict``: ``"ahead"``,
        ``"not distinguishable at this level"``, ``"runner-up ahead (paired)"`` or
        ``"not tested: <n> repeat(s)"`` under the significance rule.
    """
    means = study.means()
    out = best_policy(means, metric=metric, load=study.load)
    keyed = means.set_index(["variant", study.load])
    rows = []
    for row in out.itertuples():
        level = getattr(row, study.load)
        best = keyed.loc[(row.best_variant, level)]
        entry = {
            "n": int(best["n"]),
            f"best_{metric}_lo": best.get(f"{metric}_lo", float("nan")),
            f"best_{metric}_hi": best.get(f"{metric}_hi", float("nan")),
            "margin_lo": float("nan"),
            "margin_hi": float("nan"),
            "margin_verdict": None,
        }
        at = study.levels[
            (study.levels[study.load] == level) & study.levels["variant"].isin([row.runner_up, row.best_variant])
        ]
        if isinstance(row.runner_up, str) and (at[metric] > 0).all():  # a ratio needs both above 0
            paired = ratio_intervals(at, baseline=row.runner_up, spec=row.best_variant, metric=metric, load=study.load)
            if len(paired):
                first = paired.iloc[0]
                entry.update(
                    margin_lo=first["ratio_lo"] - 1.0,
                    margin_hi=first["ratio_hi"] - 1.0,
                    margin_verdict=_POLICY_WORDS.get(first["verdict"], first["verdict"]),
                )
        rows.append(entry)
    return pd.concat([out, pd.DataFrame(rows, index=out.index)], axis=1)


def policy_choices(study: StudyTables, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
    """What to run at each level, naming every variant that serves equally there (:meth:`policy` says only the best).

    At each level: the best variant, then the runner-up where the best is not distinguishable from it (its
    paired margin's interval holds 0; a margin not tested, with fewer than 3 repeats, names the best alone and
    the verdict says it is untested), then any variant that is the same server as the best
    at that level (:meth:`same_server_below`: the two differ only in their request cap, both above the level).

    Returns:
        One row per level: the load column, ``serve`` (a tuple of variant names, the best first) and ``why``
        (``""`` for one variant, else why the others serve equally: ``"not distinguishable"``,
        ``"the runner-up ahead in paired repeats"`` (the means and the pairs disagree) or ``"the
        same server below N running requests"``, joined by ``"; "``).
    """
    pol = study.policy(metric)
    levels = study.levels
    rows = []
    for row in pol.itertuples():
        level = getattr(row, study.load)
        serve, why = [str(row.best_variant)], []
        verdict = row.margin_verdict
        if (
            isinstance(row.runner_up, str)
            and isinstance(verdict, str)
            and verdict != "ahead"
            and not verdict.startswith("not tested")
        ):  # untested: the best alone, the verdict says so
            serve.append(row.runner_up)
            why.append(
                "not distinguishable"
                if verdict.startswith("not distinguishable")
                else "the runner-up ahead in paired repeats"
            )
        measured = set(levels.loc[levels[study.load] == level, "variant"])
        for other in study.variants:
            below = study.same_server_below(serve[0], other)
            if other in measured and below is not None and study.load == "concurrency" and level <= below:
                if other not in serve:
                    serve.append(other)
                why = [w for w in why if w != "not distinguishable"] if other == row.runner_up else why
                why.append(f"the same server below {below} running requests")
        rows.append({study.load: level, "serve": tuple(serve), "why": "; ".join(dict.fromkeys(why))})
    return pd.DataFrame(rows, columns=[study.load, "serve", "why"])


def comparability(study: StudyTables) -> pd.DataFrame:
    """Server settings in which each speculative variant differs from the baseline, beyond speculation.

    One row per (variant, setting) (:func:`workbench.analysis.settings_differences` on the
    ``/server_info`` both servers reported), plus the pre-flight and effective-settings
    warnings the runs' manifests recorded (``setting`` ``"preflight: <flag>"``). Empty when
    the pairs are like-for-like or the manifests carry no server info.
    """
    infos = study.server_infos
    frames = []
    for spec in study.spec_variants:
        if study.baseline in infos and spec in infos:
            frames.append(settings_differences(infos[study.baseline], infos[spec], spec=spec, baseline=study.baseline))
    rows: list[dict[str, Any]] = []
    for spec in study.spec_variants:  # a pair on two GPUs compares cards as well as speculation
        if study.gpus(study.baseline) and study.gpus(spec) and study.gpus(spec) != study.gpus(study.baseline):
            rows.append(gpu_difference(study.baseline, study.gpus(study.baseline), spec, study.gpus(spec)))
    for m in study.manifests:
        for f in [*(m.get("preflight_findings") or []), *(m.get("effective_findings") or [])]:
            if f.get("severity") in ("warning", "error") and m.get("variant") != study.baseline:
                rows.append(
                    {
                        "variant": m.get("variant"),
                        "setting": f"preflight: {f.get('flag')}",
                        "baseline_value": "",
                        "spec_value": "",
                        "effect": f.get("problem", ""),
                        "equalise": f.get("fix", ""),
                    }
                )
    frames.append(
        pd.DataFrame(rows, columns=["variant", "setting", "baseline_value", "spec_value", "effect", "equalise"])
    )
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["variant", "setting", "baseline_value", "spec_value", "effect", "equalise"])
    return pd.concat(frames, ignore_index=True).drop_duplicates(subset=["variant", "setting"])
