"""Server configurations to predict: a shipped variant's, or a point of a speculative grid.

A *configuration* is what a server would be launched with: a shipped variant (its flags and
environment parsed exactly as ``python -m workbench.sim`` parses them,
:func:`variant_configuration`), or a point of a speculative grid (``topk``, ``num_steps``,
``num_draft_tokens``, spec v1 or v2) built on a template variant's flags
(:func:`configuration`) and resolved under SGLang 0.5.9's rules (:func:`spec_grid`, which also
says which asked points SGLang adjusts, merges or refuses). :mod:`workbench.sim._predict` runs them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.sim._api_shapes import DEFAULT_RELEASE
from workbench.sim._profiles import SimProfile
from workbench.sim._spec import SpecConfig, resolve_spec
from workbench.sim._variant_flags import variant_argv


@dataclasses.dataclass(frozen=True)
class Configuration:
    """One server configuration to predict.

    Attributes:
        name: its label (a variant's name, or ``topk4-steps2-draft16-v1`` for a grid point).
        spec: the resolved speculative settings.
        args: the parsed flags (SGLang's ``ServerArgs`` names), which build the cost model.
        max_running_requests: the scheduler's cap.
        spec_off_above: no drafting while more than this many requests run (a stand-in
            policy, ``--sim-spec-off-above``), or None.
    """

    name: str
    spec: SpecConfig
    args: dict[str, Any] = dataclasses.field(hash=False, compare=False)
    max_running_requests: int = 4096
    spec_off_above: int | None = None

    def spec_policy(self) -> Callable[[int], bool] | None:
        """The engine's per-iteration drafting switch, or None (always draft)."""
        t = self.spec_off_above
        return None if t is None else (lambda batch: batch <= t)

    def describe(self) -> dict[str, Any]:
        """The configuration's columns in a prediction row."""
        s = self.spec
        return {
            "variant": self.name,
            "speculative": s.enabled,
            "topk": s.topk if s.enabled else None,
            "num_steps": s.num_steps if s.enabled else None,
            "num_draft_tokens": s.num_draft_tokens if s.enabled else None,
            "spec_v2": s.spec_v2 if s.enabled else None,
            "spec_off_above": self.spec_off_above,
            "max_running_requests": self.max_running_requests,
        }


def _parsed(profile: SimProfile, argv: list[str], env: dict[str, str]):
    from workbench.sim._server_args import parse_server_args

    return parse_server_args([*argv, "--sim-profile", str(profile.path)], environ=env)


def variant_configuration(profile: SimProfile, variant: str | Path, *, name: str | None = None) -> Configuration:
    """A shipped variant (name or file) on this profile, its flags parsed as the simulated server parses them.

    Raises:
        ConfigError: unknown variant, or flags the server would refuse.
    """
    vname, argv, env = variant_argv(variant)
    cfg = _parsed(profile, argv, env)
    return Configuration(
        name or vname, cfg.spec, cfg.args, cfg.max_running_requests, cfg.args.get("sim_spec_off_above")
    )


def configuration(
    profile: SimProfile,
    template: str | Path,
    *,
    topk: int,
    num_steps: int,
    num_draft_tokens: int,
    spec_v2: bool = False,
    spec_off_above: int | None = None,
    max_running_requests: int | None = None,
    name: str | None = None,
) -> Configuration:
    """A speculative configuration: the template variant's flags with these speculative settings.

    The settings go through the same parsing and SGLang 0.5.9 rules as a launched server
    (:func:`~workbench.sim._spec.resolve_spec`: topk 1 forces ``num_draft_tokens = num_steps + 1``,
    spec v2 refuses topk > 1, ...) and :func:`check_draft_budget`. ``spec_off_above`` adds the
    stand-in policy ``--sim-spec-off-above``; ``max_running_requests`` replaces the template's
    ``--max-running-requests`` (the EAGLE family's default cap is 48).

    Raises:
        ConfigError: a combination SGLang 0.5.9 refuses or cannot run; the message says why.
    """
    _, argv, env = variant_argv(template)
    drop = {
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--sim-spec-off-above",
        *(["--max-running-requests"] if max_running_requests is not None else []),
    }
    kept: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token in drop:
            skip = True
            continue
        kept.append(token)
    if "--speculative-algorithm" not in kept:
        raise ConfigError(f"template variant {template!r} is not speculative; name one with --speculative-algorithm")
    kept += [
        "--speculative-num-steps",
        str(num_steps),
        "--speculative-eagle-topk",
        str(topk),
        "--speculative-num-draft-tokens",
        str(num_draft_tokens),
    ]
    if spec_off_above is not None:
        kept += ["--sim-spec-off-above", str(spec_off_above)]
    if max_running_requests is not None:
        kept += ["--max-running-requests", str(max_running_requests)]
    env = {k: v for k, v in env.items() if k != "SGLANG_ENABLE_SPEC_V2"}
    if spec_v2:
        env["SGLANG_ENABLE_SPEC_V2"] = "1"
    cfg = _parsed(profile, kept, env)
    check_draft_budget(cfg.spec)
    label = name or grid_name(cfg.spec) + (f"-off-above-{spec_off_above}" if spec_off_above is not None else "")
    return Configuration(label, cfg.spec, cfg.args, cfg.max_running_requests, spec_off_above)


def grid_name(spec: SpecConfig) -> str:
    """``topk4-steps2-draft16-v1``: a grid point's label."""
    return f"topk{spec.topk}-steps{spec.num_steps}-draft{spec.num_draft_tokens}-{'v2' if spec.spec_v2 else 'v1'}"


def check_draft_budget(spec: SpecConfig) -> None:
    """Refuse draft-token counts SGLang 0.5.9 cannot pick from its draft tree.

    The rule is the variants pre-flight's (:func:`workbench.variants.draft_tree_problem`:
    ``num_draft_tokens - 1 <= topk + (num_steps - 1) * topk**2``, from SGLang's
    ``eagle_utils.organize_draft_results``); a larger value fails at the first verify.

    Raises:
        ConfigError: the count exceeds the tree's candidates.
    """
    from workbench.variants import draft_tree_problem

    if not spec.enabled:
        return
    problem = draft_tree_problem(spec.topk, spec.num_steps, spec.num_draft_tokens, version=DEFAULT_RELEASE)
    if problem is not None:
        raise ConfigError(f"{problem[0]} Fix: {problem[1]}")


@dataclasses.dataclass(frozen=True)
class GridPoint:
    """One (topk, num_steps, num_draft_tokens, spec v2) combination as asked and as SGLang 0.5.9 takes it.

    Attributes:
        topk, num_steps, num_draft_tokens, spec_v2: as asked.
        name: the resolved configuration's label (None when refused).
        status: ``"ok"``, ``"adjusted"`` (SGLang changes a setting: topk 1 forces
            ``num_draft_tokens = num_steps + 1``), ``"duplicate"`` (resolves to a point
            already in the grid) or ``"refused"``.
        reason: why it was adjusted, duplicated or refused.
    """

    topk: int
    num_steps: int
    num_draft_tokens: int
    spec_v2: bool
    name: str | None
    status: str
    reason: str = ""


def spec_grid(
    *,
    topk: Iterable[int] = (1, 2, 4, 8),
    num_steps: Iterable[int] = (1, 2, 3, 4, 5),
    num_draft_tokens: Iterable[int] = (2, 4, 8, 16, 32),
    spec_v2: Iterable[bool] = (False, True),
    algorithm: str = "EAGLE3",
    sglang_version: str = DEFAULT_RELEASE,
) -> list[GridPoint]:
    """Every combination of the grid, each resolved (or refused) under SGLang's rules.

    :func:`~workbench.sim._spec.resolve_spec` applies the flag rules of the server (spec v2
    refuses topk > 1; topk 1 forces ``num_draft_tokens = num_steps + 1``) and
    :func:`check_draft_budget` the draft tree's limit. Combinations resolving to the same
    settings are kept once (the first), the others marked ``duplicate``.

    Returns:
        One :class:`GridPoint` per combination asked, in grid order.
    """
    out: list[GridPoint] = []
    seen: set[str] = set()
    for k, s, d, v2 in itertools.product(topk, num_steps, num_draft_tokens, spec_v2):
        try:
            spec = resolve_spec(
                algorithm=algorithm,
                num_steps=s,
                topk=k,
                num_draft_tokens=d,
                enable_spec_v2=v2,
                sglang_version=sglang_version,
            )
            check_draft_budget(spec)
        except ConfigError as exc:
            out.append(GridPoint(k, s, d, v2, None, "refused", str(exc)))
            continue
        name = grid_name(spec)
        if name in seen:
            out.append(GridPoint(k, s, d, v2, name, "duplicate", f"resolves to {name}"))
            continue
        seen.add(name)
        if spec.num_draft_tokens != d:
            out.append(
                GridPoint(
                    k,
                    s,
                    d,
                    v2,
                    name,
                    "adjusted",
                    f"topk 1: SGLang sets num_draft_tokens = num_steps + 1 = {spec.num_draft_tokens}",
                )
            )
        else:
            out.append(GridPoint(k, s, d, v2, name, "ok"))
    return out


def grid_configurations(profile: SimProfile, template: str | Path, grid: Iterable[GridPoint]) -> list[Configuration]:
    """The configurations of a grid's usable points (``ok`` and ``adjusted``) on the template's flags."""
    return [
        configuration(
            profile,
            template,
            topk=p.topk,
            num_steps=p.num_steps,
            num_draft_tokens=p.num_draft_tokens,
            spec_v2=p.spec_v2,
        )
        for p in grid
        if p.status in ("ok", "adjusted")
    ]


def profile_variants(profile: SimProfile) -> tuple[str, str]:
    """(baseline, speculative template) variants of a profile: the first plain and the first
    speculative variant its calibration points name.

    Raises:
        ConfigError: the profile's points do not name both kinds.
    """
    from workbench.variants import load_variant

    names = list(dict.fromkeys(p["variant"] for p in profile.calibration.get("points", []) if "variant" in p))
    plain = [n for n in names if not load_variant(n).speculative]
    spec = [n for n in names if load_variant(n).speculative]
    if not plain or not spec:
        raise ConfigError(
            f"profile {profile.name}: its calibration points do not name a baseline and a speculative "
            "variant; pass baseline= and template= explicitly"
        )
    return plain[0], spec[0]
