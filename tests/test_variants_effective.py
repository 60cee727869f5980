"""confirm_effective: what the running server reports, against what the variant asked for.

The /server_info bodies and log lines are shaped like SGLang's (a flat echo of the
resolved ServerArgs; the 0.5.12+ fallback warning "speculative_adaptive disabled:
<reason>. Falling back to static speculative params.").
"""

from __future__ import annotations

from workbench.variants._variant import load_variant
from workbench.variants import confirm_effective, effective_settings
from workbench.variants._effective import LOUD


def info(**over):
    base = {"version": "0.5.9", "speculative_algorithm": "EAGLE3", "speculative_num_steps": 2,
            "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 16, "max_running_requests": 48,
            "disable_overlap_schedule": True}  # fmt: skip
    return {**base, **over}


def test_matching_server_gives_only_notes() -> None:
    found = confirm_effective(load_variant("eagle3-topk4"), info())
    assert {f.severity for f in found} == {"info"}
    assert effective_settings(info())["spec_version"] == "v1"
    assert any("chose 48" in f.problem for f in found)


def test_forced_draft_tokens_and_wrong_spec_version_are_loud() -> None:
    v = load_variant("eagle3-topk1-v2")
    v = type(v)(**{**v.__dict__, "flags": {**v.flags, "speculative-num-draft-tokens": 8}})
    found = confirm_effective(
        v,
        info(speculative_eagle_topk=1, speculative_num_draft_tokens=3),
        "Overlap scheduler is disabled when spec v2 is off or using unsupported ...",
    )
    loud = [f for f in found if f.severity == "warning"]
    assert {f.flag for f in loud} == {"--speculative-num-draft-tokens", "env SGLANG_ENABLE_SPEC_V2"}
    assert all(f.problem.startswith(LOUD) for f in loud)
    assert any("num_steps + 1" in f.problem for f in loud) and any("spec v1" in f.problem for f in loud)


def test_adaptive_silently_off_is_read_from_the_log() -> None:
    v = load_variant("adaptive")
    body = info(version="0.5.12", speculative_eagle_topk=1, speculative_num_steps=3, speculative_num_draft_tokens=4,
                disable_overlap_schedule=False, speculative_adaptive=False)  # fmt: skip
    log = (
        "[2026-01-01] speculative_adaptive disabled: enable_dp_attention=True is not supported (adaptive tier "
        "decisions are not synchronized across DP ranks). Falling back to static speculative params.\n"
    )
    f = next(x for x in confirm_effective(v, body, log) if x.flag == "--speculative-adaptive")
    assert f.severity == "warning" and "SILENTLY OFF" in f.problem and "enable_dp_attention" in f.problem
    on_body = {**body, "speculative_adaptive": True}
    on = next(x for x in confirm_effective(v, on_body) if x.flag == "--speculative-adaptive")
    assert on.severity == "info"
    old = next(x for x in confirm_effective(v, info()) if x.flag == "--speculative-adaptive")
    assert old.severity == "error" and "SGLang 0.5.12, the release it is written for" in old.fix


def test_speculation_missing_is_an_error() -> None:
    found = confirm_effective(load_variant("eagle3-topk4"), info(speculative_algorithm=None))
    assert [f.severity for f in found] == ["error"] and "without speculative decoding" in found[0].problem


def test_sim_stand_in_is_confirmed() -> None:
    v = load_variant("eagle3-topk4-off-above-8")
    body = info(simulated=True, simulation={"spec_off_above": 8})
    stand_in = [f for f in confirm_effective(v, body) if f.check == "stand-in"]
    assert stand_in[0].severity == "info" and "SIMULATOR STAND-IN" in stand_in[0].problem
    wrong = [f for f in confirm_effective(v, info(simulated=True, simulation={"spec_off_above": None}))
             if f.check == "effective-stand-in"]  # fmt: skip
    assert wrong[0].severity == "warning" and "--sim-spec-off-above 8" in wrong[0].fix
