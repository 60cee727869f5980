"""Pre-flight validation against real SGLang releases (flag tables and rules read from the cached wheels).

One test per mistake the validator must catch; each asserts the severity, the flag
and that the message names the flag and the fix.
"""

from __future__ import annotations

import pytest

from workbench.variants._variant import Variant, load_variant
from workbench.source import sglang_release
from workbench.hosts import LocalHost
from workbench.source._flags import server_flags
from workbench.variants import check_variant, check_variants, read_rules, resolve_target
from workbench.releases import ADAPTIVE_SINCE
from workbench.variants._findings import Finding, findings_table, has_errors
from workbench.variants._resources import HostFacts, judge_resources

MODEL, DRAFT = "meta-llama/Llama-3.3-70B-Instruct", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"
EAGLE = {"speculative-algorithm": "EAGLE3", "speculative-num-steps": 2, "speculative-eagle-topk": 4,
         "speculative-num-draft-tokens": 16}  # fmt: skip


def findings(variant: Variant, version: str) -> list[Finding]:
    return check_variant(variant, sglang=version, resources=False).findings


def one(found: list[Finding], check: str) -> Finding:
    hits = [f for f in found if f.check == check]
    assert len(hits) == 1, [f.line() for f in found]
    return hits[0]


def test_removed_flag_is_ambiguous_on_0520_with_its_successor() -> None:
    f = one(findings(Variant("v", MODEL, flags={"cuda-graph-max-bs": 32}), "0.5.20"), "flag-ambiguous")
    assert f.severity == "error" and f.flag == "--cuda-graph-max-bs"
    assert "--cuda-graph-max-bs-decode" in f.problem and "cuda-graph-max-bs-decode = ..." in f.fix
    on_059 = findings(Variant("v", MODEL, flags={"cuda-graph-max-bs": 32}), "0.5.9")
    assert not [x for x in on_059 if x.severity != "info"]


def test_unknown_flag() -> None:
    f = one(findings(Variant("v", MODEL, flags={"no-such-flag": 1}), "0.5.9"), "flag-unknown")
    assert f.severity == "error" and "--no-such-flag" in f.problem and "remove `no-such-flag`" in f.fix


def test_spec_v2_with_topk_4_on_059() -> None:
    v = Variant("v", MODEL, draft_model_path=DRAFT, flags=EAGLE, env={"SGLANG_ENABLE_SPEC_V2": "1"})
    f = one(findings(v, "0.5.9"), "spec-v2-topk")
    assert f.severity == "error" and f.flag == "--speculative-eagle-topk"
    assert "Spec v2 currently only supports topk = 1" in f.problem and "speculative-eagle-topk = 1" in f.fix
    assert one(findings(v, "0.5.12"), "spec-v2-fallback").severity == "warning"  # 0.5.12 falls back quietly
    assert not [x for x in findings(v, "0.5.23") if x.check.startswith("spec-v2")]  # v2 takes topk > 1 there
    unused = one(findings(v, "0.5.23"), "env-spec-v2-unused")
    assert unused.flag == "env SGLANG_ENABLE_SPEC_V2" and "no effect" in unused.problem


def test_adaptive_against_059_names_the_release_it_is_written_for() -> None:
    adaptive = load_variant("adaptive")
    found = findings(adaptive, "0.5.9")
    f = next(x for x in found if x.flag == "--speculative-adaptive")
    assert f.severity == "error" and f.check == "flag-unknown"
    assert "not a flag of SGLang 0.5.9; it is one of SGLang 0.5.12" in f.problem  # the variant's own release
    assert f"source from {ADAPTIVE_SINCE}" in f.problem and ">= 0.5.12" not in f.problem  # no contradiction
    assert "Did you mean" not in f.problem and "SGLang 0.5.12" in f.fix
    assert not has_errors(findings(adaptive, "0.5.12"))
    # without a release of its own there is no later table to ask: no look-alike flags either
    bare = Variant("v", MODEL, draft_model_path=DRAFT, flags={**EAGLE, "speculative-eagle-topk": 1,
                                                              "speculative-num-draft-tokens": 3,
                                                              "speculative-adaptive": True})  # fmt: skip
    f = one(findings(bare, "0.5.9"), "flag-unknown")
    assert "Did you mean" not in f.problem and f"SGLang {ADAPTIVE_SINCE} or later" in f.fix


def test_adaptive_since_is_what_the_sources_say() -> None:
    assert server_flags(ADAPTIVE_SINCE).get("--speculative-adaptive") is not None
    assert server_flags("0.5.10.post1").get("--speculative-adaptive") is None  # the release before it


def test_adaptive_on_0511_only_under_spec_v1() -> None:
    adaptive = load_variant("adaptive")  # no SGLANG_ENABLE_SPEC_V2: spec v2 is 0.5.11's default
    f = one(findings(adaptive, "0.5.11"), "adaptive-spec-v2")
    assert f.severity == "error" and "EAGLEWorker v1" in f.problem and 'SGLANG_ENABLE_SPEC_V2 = "0"' in f.fix
    v1 = Variant("v", MODEL, draft_model_path=DRAFT, flags=dict(adaptive.flags), env={"SGLANG_ENABLE_SPEC_V2": "0"})
    assert not [x for x in findings(v1, "0.5.11") if x.check.startswith("adaptive")]
    assert not [x for x in findings(adaptive, "0.5.12") if x.check.startswith("adaptive")]


def test_adaptive_constraints_on_0512() -> None:
    topk4 = Variant("v", MODEL, draft_model_path=DRAFT, flags={**EAGLE, "speculative-adaptive": True})
    f = one(findings(topk4, "0.5.12"), "adaptive-topk")
    assert f.severity == "error" and "silently" in f.problem and "speculative-eagle-topk = 1" in f.fix
    ngram = Variant("v", MODEL, flags={"speculative-algorithm": "NGRAM", "speculative-num-steps": 2,
                                       "speculative-eagle-topk": 1, "speculative-adaptive": True})  # fmt: skip
    assert "EAGLE or EAGLE3" in one(findings(ngram, "0.5.12"), "adaptive-algorithm").problem
    dp = Variant("v", MODEL, draft_model_path=DRAFT,
                 flags={**EAGLE, "speculative-eagle-topk": 1, "speculative-num-draft-tokens": 3,
                        "speculative-adaptive": True, "enable-dp-attention": True})  # fmt: skip
    assert one(findings(dp, "0.5.12"), "adaptive-blocked").flag == "--enable-dp-attention"


def test_algorithm_the_version_lacks() -> None:
    v = Variant("v", MODEL, draft_model_path=DRAFT, flags={**EAGLE, "speculative-algorithm": "DFLASH"})
    f = one(findings(v, "0.5.9"), "flag-invalid_choice")
    assert f.severity == "error" and f.flag == "--speculative-algorithm" and "EAGLE3" in f.problem
    assert not [x for x in findings(v, "0.5.23") if x.check.startswith("flag-")]


def test_topk_without_num_steps() -> None:
    v = Variant(
        "v", MODEL, draft_model_path=DRAFT, flags={"speculative-algorithm": "EAGLE3", "speculative-eagle-topk": 1}
    )
    f = one(findings(v, "0.5.9"), "spec-steps-missing")
    assert f.severity == "error" and "--speculative-num-steps" in f.problem and "speculative-num-steps = N" in f.fix


def test_argparse_semantics_abbreviation_alias_store_true_choices() -> None:
    found = findings(Variant("v", MODEL, flags={"tp": 8}), "0.5.9")
    f = one(found, "flag-abbreviation")
    assert f.severity == "warning" and "--tp" in f.problem and "--tp-size" in f.problem and "tp-size = ..." in f.fix
    alias = one(findings(Variant("v", MODEL, flags={"tp-size": 8}), "0.5.9"), "flag-alias")
    assert alias.severity == "info" and "--tensor-parallel-size" in alias.problem
    dup = one(findings(Variant("v", MODEL, flags={"tp": 8, "tp-size": 4}), "0.5.9"), "flag-duplicate")
    assert dup.severity == "error" and "keep one" in dup.fix
    yes = Variant("v", MODEL, flags={"disable-custom-all-reduce": "yes"})
    st = one(findings(yes, "0.5.9"), "flag-unexpected_value")
    assert st.flag == "--disable-custom-all-reduce" and "store_true" in st.problem and "= true" in st.fix
    missing = one(findings(Variant("v", MODEL, flags={"tp-size": True}), "0.5.9"), "flag-missing_value")
    assert "needs a value" in missing.problem and "tp-size" in missing.fix
    bad = one(
        findings(
            Variant(
                "v",
                MODEL,
                flags={
                    "speculative-algorithm": "EAGLE9",
                    **{k: v for k, v in EAGLE.items() if k != "speculative-algorithm"},
                },
            ),
            "0.5.9",
        ),
        "flag-invalid_choice",
    )
    assert "choose from" in bad.problem


def test_draft_tokens_forced_with_topk_1() -> None:
    v = Variant(
        "v",
        MODEL,
        draft_model_path=DRAFT,
        flags={**EAGLE, "speculative-eagle-topk": 1, "speculative-num-draft-tokens": 8},
    )
    f = one(findings(v, "0.5.9"), "spec-draft-forced")
    assert f.flag == "--speculative-num-draft-tokens" and "speculative-num-draft-tokens = 3" in f.fix


def test_pairs_that_are_not_comparable() -> None:
    base = Variant("baseline", MODEL, flags={"tp-size": 8, "mem-fraction-static": 0.85, "enable-mixed-chunk": True},
                   env={"NCCL_P2P_DISABLE": "1"})  # fmt: skip
    spec = Variant("spec", MODEL, draft_model_path=DRAFT, flags={"tp-size": 8, "mem-fraction-static": 0.8, **EAGLE})
    found = check_variants([base, spec], sglang="0.5.9", resources=False)
    found = [f for f in found if f.variant == "spec vs baseline"]
    by = {f.check: f for f in found}
    assert by["pair-flag"].flag == "--mem-fraction-static" and "0.85" in by["pair-flag"].problem
    assert by["pair-env"].flag == "env NCCL_P2P_DISABLE"
    assert "48" in by["implicit-max-running"].problem and "--max-running-requests" in by["implicit-max-running"].fix
    overlap = by["implicit-overlap"]
    assert "overlap scheduling off" in overlap.problem and "disable-overlap-schedule = true" in overlap.fix
    assert by["implicit-mixed-chunk"].flag == "--enable-mixed-chunk"
    assert all(f.severity == "warning" for f in found)
    # spec v2 keeps overlap on in 0.5.9: no overlap warning for the topk-1 v2 variant
    v2 = [f.check for f in check_variants(["baseline", "eagle3-topk1-v2"], sglang="0.5.9", resources=False)]
    assert "implicit-overlap" not in v2 and "implicit-max-running" in v2
    # a baseline with the EAGLE cap of 48 matches the speculative variant's implicit 48: no warning on it
    matched = check_variants(
        ["baseline-cap48", "eagle3-topk1-v2"], sglang="0.5.9", resources=False, baseline="baseline-cap48"
    )
    assert not [f.line() for f in matched if f.severity == "warning" and "max-running" in f.flag]


def test_forced_acceptance_on_the_speculative_arm_only_is_like_for_like() -> None:
    """SGLANG_SIMULATE_ACC_LEN acts only in the verify: set on the speculative variant and not on its baseline
    (benchmarks/real_sglang/variants/) it is no difference beyond speculation; any other variable still is."""
    base = Variant("baseline", MODEL, flags={"tp-size": 8})
    spec = Variant(
        "spec",
        MODEL,
        draft_model_path=DRAFT,
        flags={"tp-size": 8, **EAGLE},
        env={"SGLANG_SIMULATE_ACC_LEN": "3.0", "SGLANG_SIMULATE_ACC_METHOD": "match-expected", "NCCL_P2P_DISABLE": "1"},
    )
    found = [f for f in check_variants([base, spec], sglang="0.5.9", resources=False) if f.check == "pair-env"]
    assert [f.flag for f in found] == ["env NCCL_P2P_DISABLE"]


def test_shipped_variants_have_no_errors_against_their_own_versions() -> None:
    found = check_variants()
    assert not has_errors(found), [f.line() for f in found if f.severity == "error"]
    # on "local" the simulated engine runs: each variant is still checked against its own version
    on_local = check_variants(["adaptive"], host="local", resources=False)
    target = one(on_local, "target")
    assert target.problem == "checked against sglang==0.5.12." and not has_errors(on_local)
    assert resolve_target(load_variant("adaptive"), host="local").version == "0.5.12"
    table = findings_table(found)
    assert list(table.columns) == ["severity", "variant", "flag", "check", "message"]
    assert any(f.check == "patch-ok" and f.variant == "eagle3-topk4-off-above-8" for f in found)


@pytest.mark.parametrize(("version", "v2_default", "rejects", "v1", "adaptive"), [
    ("0.5.2", None, False, True, False), ("0.5.9", False, True, True, False), ("0.5.12", True, False, True, True),
    ("0.5.23", None, False, False, True),
])  # fmt: skip
def test_rules_read_from_source(version, v2_default, rejects, v1, adaptive) -> None:
    r = read_rules(LocalHost(), str(sglang_release(version).package_dir), version=version)
    got = (r.spec_v2_env_default, r.v2_rejects_topk_gt1, r.has_spec_v1, r.has_adaptive)
    assert got == (v2_default, rejects, v1, adaptive)
    assert not r.adaptive_needs_v1  # 0.5.11 only (test_adaptive_on_0511_only_under_spec_v1)
    assert r.caps_max_running_48 and r.disables_mixed_chunk


def test_paths_disk_and_gpus_are_judged() -> None:
    v = Variant(
        "v", "/models/llama", draft_model_path="/models/draft", flags={"tp-size": 8, "mem-fraction-static": 0.85}
    )
    resolved = {"tp_size": 8, "mem_fraction_static": 0.85}
    gpus = [{"index": i, "name": "H100", "memory_total_mib": 81559, "memory_used_mib": 4} for i in range(8)]
    facts = HostFacts("gpu1", {"/models/llama": {"exists": True, "kib": 140 * 2**20},
                               "/models/draft": {"exists": False, "kib": None}}, 500 * 2**20,
                      {"nvidia_smi": True, "gpus": gpus})  # fmt: skip
    found = judge_resources(v, facts, engine="sglang", resolved=resolved)
    assert [f.check for f in found] == ["path-missing"] and found[0].severity == "error"
    assert "/models/draft" in found[0].problem and "draft_model_path" in found[0].fix
    busy = [dict(g, memory_used_mib=30000) if g["index"] == 3 else g for g in gpus[:4]]
    found = judge_resources(v, HostFacts("gpu1", {}, 1024, {"nvidia_smi": True, "gpus": busy}), engine="sglang",
                            resolved=resolved)  # fmt: skip
    assert {f.check for f in found} == {"gpu-count", "disk"}
    found = judge_resources(v, HostFacts("gpu1", {}, None, {"nvidia_smi": True, "gpus": busy + gpus[4:]}),
                            engine="sglang", resolved=resolved)  # fmt: skip
    assert [f.check for f in found] == ["gpu-memory"] and "GPU 3" in found[0].problem
    no_smi = judge_resources(v, HostFacts("local", {}, None, {"nvidia_smi": False, "gpus": []}), engine="sglang")
    assert [f.check for f in no_smi if f.flag == "gpu"] == ["gpu-skipped"]


def test_local_sim_checks_only_filesystem_paths() -> None:
    found = check_variant(load_variant("eagle3-topk4"), resources=True).findings
    hub = [f for f in found if f.check == "path-hub-id"]
    assert {f.flag for f in hub} == {"model_path", "draft_model_path"} and "loads no weights" in hub[0].problem
    missing = Variant("v", "/no/such/model")
    f = one(check_variant(missing, sglang="0.5.9").findings, "path-missing")
    assert f.severity == "warning" and "does not read it" in f.problem  # on the sim, a warning only


def test_the_default_check_version_is_the_one_the_simulator_emulates() -> None:
    from workbench.sim import load_profile
    from workbench.variants._check import DEFAULT_SGLANG_VERSION

    assert load_profile().sglang_version == DEFAULT_SGLANG_VERSION
