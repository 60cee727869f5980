"""One table of facts per SGLang release (workbench.releases): stated once, read by every package, and true
against the stored releases."""

from __future__ import annotations

import ast

import pytest

from workbench.paths import PACKAGE_ROOT
from workbench.releases import ADAPTIVE_SINCE, ADAPTIVE_TIERS_SINCE, release_at_least, release_number


def test_release_numbers_drop_suffixes_and_refuse_what_is_no_release() -> None:
    assert release_number("0.5.16.post1") == (0, 5, 16) and release_number("v0.5") == (0, 5, 0)
    assert release_number("0.5.10rc0") == (0, 5, 10) and release_number("main") == ()
    assert release_at_least("0.5.11", ADAPTIVE_SINCE) and not release_at_least("0.5.10.post1", ADAPTIVE_SINCE)
    assert not release_at_least("latest", ADAPTIVE_SINCE)


def test_no_other_module_states_a_release_fact() -> None:
    """Outside workbench/releases no module assigns a ``*_SINCE`` name a literal release (each reads the fact from
    the face; a value derived from one, such as the simulator's first emulated release, is not a restatement)."""
    stated = []
    for path in sorted((PACKAGE_ROOT / "workbench").rglob("*.py")):
        if "releases" in path.relative_to(PACKAGE_ROOT / "workbench").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            literal = isinstance(getattr(node, "value", None), (ast.Constant, ast.Tuple))
            stated += [
                f"{path.name}:{node.lineno} {t.id}"
                for t in targets
                if literal and isinstance(t, ast.Name) and t.id.endswith("_SINCE")
            ]
    assert stated == []


def test_each_package_words_the_same_fact() -> None:
    from workbench.analysis import Tier, sglang_policy
    from workbench.sim._spec import ADAPTIVE_EMULATED_SINCE, ALGORITHMS_BY_VERSION

    # the simulator emulates some releases only: its threshold is the first emulated one at or after the fact
    assert (
        ADAPTIVE_EMULATED_SINCE
        == min((v for v in ALGORITHMS_BY_VERSION if release_at_least(v, ADAPTIVE_SINCE)), key=release_number)
        == "0.5.12"
    )
    tiers = [
        Tier(start=1, best_steps=3, candidate_steps=(3,), variant="eagle3-steps3"),
        Tier(start=8, best_steps=0, candidate_steps=(0,), variant="baseline"),
    ]
    assert ADAPTIVE_TIERS_SINCE == "0.5.16"
    assert sglang_policy(tiers, None, sglang_version="0.5.16").kind == "adaptive_tiers"
    assert sglang_policy(tiers, None, sglang_version="0.5.15").kind == "threshold"
    assert f"arrived in {ADAPTIVE_SINCE}" in sglang_policy(tiers, None, sglang_version="0.5.11").note
    assert "no adaptive speculation" in sglang_policy(tiers, None, sglang_version="0.5.10").note


def test_the_adaptive_flag_arrives_in_the_release_the_fact_names() -> None:
    """Against the source package's stored releases (wheels in the cache): the flag is in ADAPTIVE_SINCE's
    ``srt/server_args.py`` and not in the release before it."""
    from workbench.errors import SourceError
    from workbench.source import server_flags

    try:
        here, before = server_flags(ADAPTIVE_SINCE), server_flags("0.5.10.post1")
    except SourceError as exc:  # pragma: no cover - a machine without the stored wheels and no network
        pytest.skip(f"SGLang wheels not available: {exc}")
    assert here.get("--speculative-adaptive") is not None and before.get("--speculative-adaptive") is None


#: The functions that compare releases: a literal release handed to one of them is a fact stated in place.
_COMPARERS = {"release_at_least", "release_number", "version_key"}


def test_no_other_module_compares_with_a_literal_release() -> None:
    """Outside workbench/releases no module hands ``release_at_least``, ``release_number`` or ``version_key`` a
    literal release (``release_at_least(v, "0.5.16")``): each threshold is a named fact of ``workbench.releases``
    (the source package's own parsing and its tests of it aside)."""
    stated = []
    for path in sorted((PACKAGE_ROOT / "workbench").rglob("*.py")):
        parts = path.relative_to(PACKAGE_ROOT / "workbench").parts
        if parts[0] in ("releases",) or parts[:2] == ("source", "_versions.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            if isinstance(node, ast.Call) and name in _COMPARERS:
                stated += [
                    f"{path.relative_to(PACKAGE_ROOT)}:{node.lineno} {ast.unparse(node)}"
                    for arg in node.args
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and release_number(arg.value)
                ]
    assert stated == []


def test_the_simulator_takes_each_fact_up_at_its_first_emulated_release() -> None:
    from workbench.releases import SPEC_V1_GONE_SINCE, SPEC_V2_DEFAULT_SINCE
    from workbench.sim._spec import (
        ALGORITHMS_BY_VERSION,
        SPEC_V2_DEFAULT_EMULATED_SINCE,
        SPEC_V2_ONLY_EMULATED_SINCE,
        first_emulated,
        resolve_spec,
    )

    assert (SPEC_V2_DEFAULT_SINCE, SPEC_V2_DEFAULT_EMULATED_SINCE) == ("0.5.11", "0.5.12")
    assert (SPEC_V1_GONE_SINCE, SPEC_V2_ONLY_EMULATED_SINCE) == ("0.5.13", "0.5.16")
    assert first_emulated("0.5.9") == "0.5.9" and set(ALGORITHMS_BY_VERSION) >= {"0.5.12", "0.5.16"}
    eagle = dict(algorithm="EAGLE3", num_steps=3, topk=4, num_draft_tokens=8, enable_spec_v2=None)
    assert not resolve_spec(**eagle, sglang_version="0.5.12").spec_v2  # topk > 1 falls back to v1 there
    assert resolve_spec(**eagle, sglang_version="0.5.16").spec_v2  # no v1 to fall back to
