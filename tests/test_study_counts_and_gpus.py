"""Reports that contradicted themselves (newcomer reviews): each case as the report now says it.

- a caveat said "every server ... both are full" of five servers: sentences count the servers and pairs they name;
- the results table's ``queued`` (0) and *What the server saw*'s queue (14) at one level: two different counts,
  each now labelled for what it is;
- a lone speculative run was taken as the baseline ("No speculative variant"): it is recognised as speculative,
  and the report says there is no baseline to compare to;
- runs on two GPUs were described as one GPU: each GPU is named with the runs that used it;
- the seed pair's decomposition rested on a timing-flagged level without saying so.

The real runs are those stored under data/measured/ (SGLang 0.5.17 on an H200 and on an H100).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench import Study
from workbench.report._scope import report_scope
from workbench.studies import load_study
from workbench.studies._conditions import conditions_text
from workbench.studies._server_view import server_series, server_series_summary, server_series_table

MEASURED = Path(__file__).resolve().parents[1] / "data" / "measured"
H200 = sorted((MEASURED / "h200-sglang-0.5.17-2026-12-06" / "runs").iterdir())  # baseline, chain, tree, failed
H100 = sorted((MEASURED / "h100-sglang-0.5.17-2026-12-06" / "runs").iterdir())  # one adaptive EAGLE-3 run
LEVELS = (1, 16, 64)


def _five_servers(*, overlap_off: bool) -> Study:
    """baseline-cap48 and three speculative variants capped at 48, and the seed's uncapped baseline: at 64 the four
    capped servers hold 16 requests over their cap, the uncapped one none."""
    totals = {"baseline-cap48": 100.0, "eagle3-a": 120.0, "eagle3-b": 110.0, "eagle3-c": 90.0, "baseline": 101.0}
    rows = [
        {
            "variant": v,
            "concurrency": c,
            "repeat": 0,
            "simulated": True,
            "engine": "sim",
            "output_throughput_tok_s": t * c**0.5,
            "mean_per_request_tok_s": t / c**0.5,
        }
        for v, t in totals.items()
        for c in LEVELS
    ]
    base = {"tp_size": 8, "disable_overlap_schedule": False, "max_running_requests": 48}
    infos = {
        "baseline-cap48": base,
        "baseline": {**base, "max_running_requests": 4096},
        **{
            v: {**base, "speculative_algorithm": "EAGLE3", "disable_overlap_schedule": overlap_off and v == "eagle3-c"}
            for v in ("eagle3-a", "eagle3-b", "eagle3-c")
        },
    }
    manifests = [{"variant": v, "host": "local", "server_info": infos[v]} for v in totals]
    return Study.from_frames(
        pd.DataFrame(rows), pd.DataFrame(), manifests, "baseline-cap48", seed_pair=("baseline", "eagle3-a")
    )


def _queue_caveats(study: Study) -> list[str]:
    return [line for line in study.verdict().splitlines() if "full" in line]


def test_a_queue_caveat_over_five_servers_counts_the_servers_and_pairs_it_names() -> None:
    (said,) = _queue_caveats(_five_servers(overlap_off=False))
    assert said == (
        "  - At concurrency 64 baseline-cap48 and the 3 variants compared with it (eagle3-a, eagle3-b, eagle3-c) "
        "each queue 16 of 64 requests (max-running-requests 48 each): these 4 servers are full, so the 3 pairs are "
        "like-for-like there."
    )
    (unlike,) = _queue_caveats(_five_servers(overlap_off=True))
    assert unlike.endswith(
        "these 4 servers are full, so queueing favours none of the 3 pairs there (some of their other settings "
        "differ: next caveat)."
    )
    for text in (said, unlike):  # the uncapped fifth server holds no request over its cap: never "every server"
        assert "both" not in text and "every server" not in text


def test_the_results_tables_over_cap_and_the_servers_own_queue_are_labelled_apart(monkeypatch) -> None:
    """On the H200 at concurrency 64 the servers' cap is 64: no request is over it, while the server's own waiting
    queue (its /metrics ``num_queue_reqs``, requests not yet started) held some 19-24 on average."""
    study = load_study(H200)
    table = study.table("throughput").set_index(["variant", "concurrency"])
    assert "queued" not in table.columns and (table["over cap"] == 0).all()
    assert study.tables.caps == {"real-baseline": 64, "real-eagle3-chain": 64, "real-eagle3-tree": 64}
    saw = server_series_summary(server_series_table(server_series(H200)[0])).set_index(["variant", "concurrency"])
    assert float(saw.loc[("real-baseline", 64), "mean_queued_reqs"]) > 10  # the server's queue: not over the cap
    assert "*What the server saw* shows that queue as the server reported it (*mean_queued_reqs*)" in (
        study.comparability_text()
    )
    shown: list[str] = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj, *a, **k: shown.append(str(getattr(obj, "data", obj))))
    from workbench.studies._server_view import show_server_series

    show_server_series(H200)
    assert "*mean_queued_reqs* is the server's own waiting queue" in shown[0] and "*over cap* is 0" in shown[0]


def test_a_lone_speculative_run_is_speculative_and_has_no_baseline_to_compare_to() -> None:
    study = load_study(H100)
    tables = study.tables
    assert tables.speculative("real-eagle3-adaptive-tiers") and tables.baseline_speculative
    opening = study.opening()
    assert opening.startswith(
        "**In short** — No baseline to compare to: these runs hold one variant, `real-eagle3-adaptive-tiers`, and it "
        "drafts (speculative decoding), so nothing here says whether speculation pays."
    )
    verdict = study.verdict()
    assert "- **No baseline to compare to**: the runs hold one variant, real-eagle3-adaptive-tiers" in verdict
    assert "Recommended policy" not in verdict and "Run `" not in opening
    acceptance = study.acceptance_text()
    assert "No speculative variant" not in acceptance
    assert acceptance.startswith("- **real-eagle3-adaptive-tiers** at concurrency 1: acceptance rate by draft position")


def test_speculative_runs_without_a_plain_one_say_they_compare_speculation_with_itself() -> None:
    chain, tree = H200[1], H200[2]
    study = load_study([chain, tree])
    assert study.baseline == "real-eagle3-chain" and study.tables.baseline_speculative
    assert "Caveat: no run here decodes plainly (`real-eagle3-chain`, the baseline, drafts too)" in study.opening()
    assert "No plain-decoding run: the baseline real-eagle3-chain drafts too" in study.verdict()
    # given with a plain run after it, the plain run is the baseline (it was the first run's variant)
    assert load_study([chain, H200[0]]).baseline == "real-baseline"


def test_runs_on_two_gpus_name_the_gpu_of_each_run() -> None:
    runs = [*H200, *H100]
    study = load_study(runs)
    words = conditions_text(study.manifests)
    assert words.startswith(
        "MEASURED on real SGLang 0.5.17, NVIDIA H100 80GB HBM3 (real-eagle3-adaptive-tiers) and NVIDIA H200 "
        "(real-baseline, real-eagle3-chain, real-eagle3-tree); random weights"
    )
    differs = study.tables.comparability().set_index(["variant", "setting"])
    row = differs.loc[("real-eagle3-adaptive-tiers", "GPU")]
    assert (row["baseline_value"], row["spec_value"]) == ("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    assert ("real-eagle3-chain", "GPU") not in differs.index  # the same card as the baseline
    assert "Caveat: `real-eagle3-adaptive-tiers` differs from `real-baseline` beyond speculation (GPU)" in (
        study.opening()
    )
    scope = report_scope({"from_runs": [str(r) for r in runs]})  # the index's GPU column
    assert scope.gpu == (
        "NVIDIA H200 (real-baseline, real-eagle3-chain, real-eagle3-tree); "
        "NVIDIA H100 80GB HBM3 (real-eagle3-adaptive-tiers)"
    )
    assert report_scope({"from_runs": [str(r) for r in H200]}).gpu == "NVIDIA H200"


@pytest.mark.parametrize("flagged", [False, True])
def test_the_seed_pairs_split_says_when_it_rests_on_a_timing_flagged_level(flagged: bool) -> None:
    study = _five_servers(overlap_off=False)
    problem = "the simulator fell 0.18 wall s behind its schedule"
    levels = study.levels.assign(
        sim_schedule_problem=[
            problem if flagged and (v, c) == ("baseline", 64) else None
            for v, c in zip(study.levels["variant"], study.levels["concurrency"])
        ]
    )
    study = Study.from_frames(
        levels, pd.DataFrame(), study.manifests, "baseline-cap48", seed_pair=("baseline", "eagle3-a")
    )
    split = study.tables.seed_pair and study.cap_split()
    assert split and split.concurrency == 64 and split.measurements == 3
    line = next(x for x in study.verdict().splitlines() if x.startswith("- **The seed's pair**"))
    if not flagged:
        assert split.flagged == () and line.endswith("speculation.") and "flagged" not in study.opening()
        return
    assert split.flagged == (f"baseline: timings not the model's: {problem}",)
    assert "; 1 of its 3 measurements is timing-flagged (see the verdict)." in study.opening()
    assert line.endswith(
        "; 1 of the 3 measurements it rests on is timing-flagged, so take the split as approximate: baseline: "
        f"timings not the model's: {problem}."
    )


def test_the_timing_flag_count_adds_up_to_the_levels_it_lists() -> None:
    """'Timings not the model's in 12 of 105 level measurements' listed 11 variant-levels: a level flagged in two
    repeats was named once. It now says '(2 repeats)', so the list adds up to the count. Flags planted on stored
    runs with two repeats at a level (the H100's interrupted 3-repeat run)."""
    import dataclasses

    from workbench.studies._study_verdict import _schedule_text

    runs = (
        Path(__file__).resolve().parents[1] / "data" / "measured" / "h100-sglang-0.5.17-2026-12-06-repeats-interrupted"
    )
    tables = load_study(sorted((runs / "runs").iterdir())).tables
    levels = tables.levels.copy()
    planted = ((levels["variant"] == "real-eagle3-chain") & (levels["concurrency"] == 4)) | (
        (levels["variant"] == "real-baseline") & (levels["concurrency"] == 1) & (levels["repeat"] == 0)
    )
    assert int(planted.sum()) == 3
    levels["sim_schedule_problem"] = None
    levels.loc[planted, "sim_schedule_problem"] = "the simulator fell behind its schedule (planted)"
    text = _schedule_text(dataclasses.replace(tables, levels=levels))
    assert f"in 3 of {len(levels)} level measurements" in text and len(levels) == 13
    assert "(real-baseline at concurrency 1, real-eagle3-chain at concurrency 4 (2 repeats)); the first:" in text


def test_the_cap_split_factors_as_shown_multiply_to_the_gap_as_shown() -> None:
    """A report read '1.90x ...: 1.00x of it is the 48-request cap, 1.91x speculation' (1.00 x 1.91 = 1.91): where
    two decimals do not multiply to the gap shown, the factors get three."""
    from workbench.studies._seed_pair import CapSplit

    cap, speculation = 0.9975, 1.9076
    split = CapSplit(64, cap * speculation, cap, speculation, 0.0)
    said = split.sentence("baseline", "eagle3-topk4", "baseline-cap48")
    assert "gives 1.90x" in said and "0.998x of it is the 48-request cap" in said and "1.908x speculation" in said
    usual = CapSplit(64, 1.05 * 1.93, 1.05, 1.93, 0.0).sentence("baseline", "eagle3-topk4", "baseline-cap48")
    assert "gives 2.03x" in usual and "1.05x of it" in usual and "1.93x speculation" in usual
