"""The openings of the six reports: at most five short sentences, and the facts they state match the tables."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench import Study
from workbench.studies._openings import LEAD, MAX_SENTENCES
from workbench.analysis import levels_text
from workbench.source import inspection_opening
from workbench.variants import Finding, findings_opening

LEVELS = (1, 2, 4, 8, 16, 32, 64)
#: Output tok/s per variant and level (repeat 1; repeats 2 and 3 move by -1% and +1%).
TOTALS = {
    "baseline-cap48": (94, 171, 289, 442, 574, 680, 700),
    "eagle3-topk1-v2": (140, 232, 364, 482, 560, 620, 640),
    "eagle3-topk4": (96, 156, 230, 300, 337, 359, 363),
    "baseline": (94, 171, 289, 442, 574, 680, 739),
}


def sentences(text: str) -> list[str]:
    """The opening's sentences (a full stop, then a capital or a backquoted name)."""
    assert text.startswith(LEAD)
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`])", text[len(LEAD) :]) if s]


def short(text: str) -> list[str]:
    said = sentences(text)
    assert 1 <= len(said) <= MAX_SENTENCES, said
    assert len(text.split()) <= 120, len(text.split())
    assert all(len(s.split()) <= 35 for s in said), [len(s.split()) for s in said]
    return said


def _study(seed_pair: tuple[str, str] | None = ("baseline", "eagle3-topk4")) -> Study:
    rows = []
    for name, totals in TOTALS.items():
        for c, total in zip(LEVELS, totals):
            for r, wiggle in enumerate((0.99, 1.0, 1.01)):
                rows.append(
                    {
                        "variant": name,
                        "concurrency": c,
                        "repeat": r,
                        "simulated": True,
                        "engine": "sim",
                        "output_throughput_tok_s": total * wiggle,
                        "mean_per_request_tok_s": total * wiggle / c * (1.0 if c == 1 else 0.97),
                        "sim_behind_schedule_wall_s": 0.2 if (name, c, r) == ("baseline", 64, 2) else 0.0,
                    }
                )
    manifests = [{"variant": v, "simulation": {"time_scale": 8.0, "profile": "seed-pcie-8gpu"}} for v in TOTALS]
    return Study.from_frames(pd.DataFrame(rows), pd.DataFrame(), manifests, "baseline-cap48", seed_pair=seed_pair)


def test_spec_vs_baseline_opening_states_what_the_tables_say() -> None:
    study = _study()
    said = short(study.opening())
    policy = study.policy_table()
    spans = policy.groupby((policy["best variant"] != policy["best variant"].shift()).cumsum())
    runs = [(g["best variant"].iloc[0], list(g["concurrency"])) for _, g in spans]
    assert [(v, levels_text(c, LEVELS)) for v, c in runs] == [
        ("eagle3-topk1-v2", "1–8"),
        ("baseline-cap48", "16–32"),
        ("baseline", "64"),
    ]
    # baseline-cap48 and baseline tie at 16–32 (the same figures), and baseline is ahead at 64: the one plain
    # variant that serves at every level where speculation loses is baseline
    assert set(policy.set_index("concurrency").loc[[16, 32], "best vs runner-up"]) == {
        "not distinguishable at this level"
    }
    assert said[0] == (
        "On total output tok/s, speculation pays at concurrency 1–8 (`eagle3-topk1-v2`) and loses at 16–64 (run "
        "plain decoding: `baseline`)."
    )
    assert "either" not in study.opening()  # issue: "either ... either ..." in the first sentence
    row = study.crossover_table().set_index(["variant", "metric"]).loc[("eagle3-topk1-v2", "output_throughput_tok_s")]
    assert row["kind"] == "claimed"
    lo, hi = row["between"].split("–")
    assert said[1] == (
        f"`eagle3-topk1-v2` stops paying against `baseline-cap48` between concurrency {lo} and {hi} (≈ "
        f"{row['crossover_concurrency']:.0f}, 95% interval {row['crossover_lo']:.0f}–"
        f"{row['crossover_hi']:.0f}, n=3)."
    )
    means = study.means().set_index(["variant", "concurrency"])["output_throughput_tok_s"]
    gap, cap = (
        means[("baseline", 64)] / means[("eagle3-topk4", 64)],
        means[("baseline", 64)] / means[("baseline-cap48", 64)],
    )
    # the factors get a third decimal where two would not multiply to the gap as shown
    d = 2 if round(round(cap, 2) * round(gap / cap, 2), 2) == round(gap, 2) else 3
    # baseline's third repeat at 64 fell behind the simulator's schedule: the split says it rests on it
    assert said[2] == (
        f"At concurrency 64 the seed's `baseline` gives {gap:.2f}x `eagle3-topk4`'s output tok/s: "
        f"{cap:.{d}f}x of it is the 48-request cap (against `baseline-cap48`), {gap / cap:.{d}f}x speculation; "
        "1 of its 9 measurements is timing-flagged (see the verdict)."
    )
    assert said[3].startswith("Caveat: ")
    assert said[4] == (
        "All figures are SIMULATED (8x real time, n=3 repeats; in 1 of 84 level measurements this "
        "machine's CPU could not keep the simulated clock's pace), not GPU measurements."
    )
    # the seed's uncapped baseline is no speculative variant: it is compared only as the seed's pair
    assert study.spec_variants == ["eagle3-topk1-v2", "eagle3-topk4"]
    # the verdict's line says the same split, and which measurement is flagged and why
    split = said[2].split(";")[0]
    assert (
        f"- **The seed's pair** (uncapped, as the seed measured it): {split}; 1 of the 9 measurements it rests on is "
        "timing-flagged, so take the split as approximate: baseline, repeat 3: fell 0.20 wall s behind the "
        "simulator's schedule."
    ) in study.verdict().splitlines()


def test_two_variants_the_tables_cannot_tell_apart_are_named_with_either() -> None:
    """Issue 33: the In short recommended baseline-cap48 at one level and baseline at the next, where the policy
    table said they were not distinguishable (they are one server below 48 running requests)."""
    info = {"tp_size": 8, "disable_overlap_schedule": False, "chunked_prefill_size": 8192, "port": 1}
    infos = {
        "baseline-cap48": {**info, "max_running_requests": 48},
        "baseline": {**info, "max_running_requests": 4096, "port": 2},
        "eagle3-topk1-v2": {**info, "max_running_requests": 48, "speculative_algorithm": "EAGLE3"},
    }
    totals = {
        "baseline-cap48": (94, 171, 289, 442, 574, 650, 710),
        "baseline": (94, 171, 289, 442, 574, 660, 716),
        "eagle3-topk1-v2": (140, 232, 364, 482, 577, 620, 640),
    }
    noise = {"baseline-cap48": (0.99, 1.0, 1.01), "baseline": (1.0, 1.01, 0.99), "eagle3-topk1-v2": (1.01, 0.97, 1.02)}
    rows = [
        {
            "variant": v,
            "concurrency": c,
            "repeat": r,
            "simulated": True,
            "engine": "sim",
            "output_throughput_tok_s": t * noise[v][r],
            "mean_per_request_tok_s": t * noise[v][r] / c,
        }
        for v, ts in totals.items()
        for c, t in zip(LEVELS, ts)
        for r in range(3)
    ]
    manifests = [{"variant": v, "server_info": infos[v], "simulation": {"time_scale": 8.0}} for v in totals]
    study = Study.from_frames(pd.DataFrame(rows), pd.DataFrame(), manifests, "baseline-cap48")
    assert study.tables.same_server_below("baseline", "baseline-cap48") == 48
    assert study.tables.same_server_below("eagle3-topk1-v2", "baseline-cap48") is None  # speculation differs
    policy = study.policy_table().set_index("concurrency")
    assert policy.loc[32, "best variant"] == "baseline" and policy.loc[32, "runner-up"] == "baseline-cap48"
    assert policy.loc[32, "best vs runner-up"] == "the same server below 48 running requests: either"
    said = short(study.opening())
    assert said[0] == (
        "On total output tok/s, speculation pays at concurrency 1–8 (`eagle3-topk1-v2`), ties with plain decoding "
        "at 16 and loses at 32–64 (run plain decoding: `baseline` or `baseline-cap48`)."
    )
    verdict = study.verdict()
    assert (
        "either **baseline** or **baseline-cap48** at concurrency 32–64 (the same server below 48 running "
        "requests at 32; not distinguishable at 64)"
    ) in verdict
    assert "either **eagle3-topk1-v2** or **baseline-cap48** at concurrency 16 (not distinguishable)" in verdict


def test_seed_figures_against_the_seed_investigation() -> None:
    table = _study().seed_figures().set_index(["figure", "variant"])
    c1 = table.loc[("per-request tok/s at concurrency 1", "eagle3-topk4")]
    assert c1["seed"] == 96.0 and c1["error_pct"] == 0.0 and c1["within"] and c1["same_sign"]
    sat = table.loc[("saturation output tok/s (highest level mean)", "baseline")]
    assert sat["seed"] == 773.0 and sat["error_pct"] == pytest.approx(-4.4) and sat["within"] and sat["same_sign"]
    assert table.loc[("saturation output tok/s (highest level mean)", "eagle3-topk4"), "error_pct"] == pytest.approx(
        2.5
    )
    assert _study(seed_pair=None).seed_figures().empty and _study(seed_pair=None).cap_split() is None
    assert len(sentences(_study(seed_pair=None).opening())) == 4


def test_variants_and_source_openings() -> None:
    findings = [
        Finding(
            "error", "adaptive", "--speculative-adaptive", "not a flag of SGLang 0.5.9.", "use 0.5.12", "unknown-flag"
        ),
        Finding(
            "warning",
            "eagle3-topk4 vs baseline-cap48",
            "--disable-overlap-schedule",
            "spec v1 turns overlap off.",
            "",
            "implicit-overlap",
        ),
        Finding("info", "eagle3-topk1-v2 vs baseline-cap48", "patches", "nothing to say", "", "pair-patched"),
    ]
    said = short(
        findings_opening(
            findings,
            variants=["baseline-cap48", "eagle3-topk4", "eagle3-topk1-v2", "adaptive"],
            baseline="baseline-cap48",
        )
    )
    assert said[:3] == [
        "3 of 4 variants would start; `adaptive` would not (see its finding).",
        "Like-for-like with `baseline-cap48`: `eagle3-topk1-v2`.",
        "Not like-for-like with `baseline-cap48`: `eagle3-topk4` (--disable-overlap-schedule).",
    ]
    assert said[-1] == "Nothing was launched or measured."
    definitions = pd.DataFrame(
        [
            {"version": "0.5.9", "found": True, "path": "srt/managers/utils.py", "start_line": 182, "end_line": 206},
            {"version": "0.5.2", "found": False, "path": None, "start_line": None, "end_line": None},
        ]
    )
    history = pd.DataFrame(
        [
            {
                "version": "0.5.2",
                "found": False,
                "status": "absent",
                "path": None,
                "start_line": None,
                "end_line": None,
                "sha256": None,
                "changed_since_previous": False,
                "moved": False,
                "previous_path": None,
            },
            {
                "version": "0.5.9",
                "found": True,
                "status": "added",
                "path": "srt/managers/utils.py",
                "start_line": 182,
                "end_line": 206,
                "sha256": "6320e692aaf2",
                "changed_since_previous": True,
                "moved": False,
                "previous_path": None,
            },
        ]
    )
    said = short(inspection_opening("get_alloc_len_per_decode", definitions, history))
    assert said[:3] == [
        "`get_alloc_len_per_decode` is defined in 0.5.9 in `srt/managers/utils.py` lines 182–206.",
        "It is not defined in 0.5.2.",
        "Over 2 selected releases it was added in 0.5.9.",
    ]


def test_policy_opening_from_the_stored_study() -> None:
    study = wb.load_dynamic_disable(Path(__file__).parent / "fixtures" / "dynamic_disable" / "policies", progress=False)
    said = short(wb.policy_opening(study))
    t = study.threshold()
    if t.kind == "threshold":
        assert (
            said[0] == f"Draft with `{t.spec}` up to {t.no_draft_above} running requests, and run `{t.baseline}` above."
        )
    assert said[-1] == f"These figures are SIMULATED (n={study.repeats} repeats), not GPU measurements."


def test_what_if_and_calibration_openings() -> None:
    wi = wb.what_if(
        "seed-pcie-8gpu",
        topk=(1,),
        num_steps=(1, 2),
        num_draft_tokens=(2, 3),
        spec_v2=(True,),
        concurrency_levels=(1, 16, 64),
        requests_per_level=64,
        max_new_tokens=32,
    )
    said = short(wb.what_if_opening(wi))
    chosen = wi.policy()[wi.policy()["recommended"].astype(bool)].iloc[0]
    if chosen["policy"] != "adaptive tiers":
        assert said[0] == f"Run {chosen['settings']} ({chosen['policy']}, predicted)."
    else:
        best = wi.best_table()
        for variant in best["best_variant"]:
            assert f"`{variant}`" in said[0]
        assert said[0].endswith("(predicted best at each level).")
    assert said[-1].startswith("Every figure is a MODEL PREDICTION")
    study = wb.load_calibration("data/calibration/h200-2026-12-01/llama3-8b.json", gpu="h200", profile="h200-llama3-8b")
    said = short(wb.calibration_opening(study))
    held = study.points()[~study.points()["fitted"].astype(bool)]
    assert f"the {len(held)} held-out ones" in said[0]
    assert said[-1] == "The timings are MEASURED on a GPU; the fit and the what-if are the model's."
    assert not [s for s in said if s.startswith("What-if")]  # none asked for: none said
    asked = study.with_whatif(baseline="llama3-8b-baseline", spec_variants=["llama3-8b-eagle3-bs1"])
    crossing = asked.whatif_crossovers().set_index("variant").loc["llama3-8b-eagle3-bs1"]
    [whatif] = [s for s in short(wb.calibration_opening(asked)) if s.startswith("What-if")]
    assert (
        whatif.startswith("What-if (SIMULATED): `llama3-8b-eagle3-bs1` is ") and "stops paying between batch" in whatif
    )
    assert crossing["kind"] == "interpolated" and "whatif" in asked.charts() and "whatif" not in study.charts()
