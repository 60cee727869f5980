"""``check_variants``: every pre-flight check of a set of variants, against the SGLang each will run.

For each variant the target SGLang is, in this order: the ``sglang`` argument (a
release); the variant's base (a release, or a checkout on its host); the package
the host's Python imports, when a host is named and the engine that would run
there runs the variant's own SGLang (``Engine.runs_variant_tree``: SGLang, the
default on an ssh host; on this machine the simulated engine runs by default, so an
SGLang installed here is not what runs); the variant's ``sglang_version``; the
version the simulated engine emulates. Its flags come from
:func:`workbench.source.server_flags` (that version's own source) and its
speculative rules from :func:`workbench.variants._rules.read_rules`.

Then: flags (:func:`~workbench.variants._validate.check_flags`), the multi-node flags
(:func:`~workbench.variants._multinode.check_multinode`), speculative rules,
patches (checked on a scratch copy of the target: file and hunk named on failure),
host resources (paths, disk, GPUs), and each speculative variant against the
baseline for comparability.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import pandas as pd

from workbench.engines import Engine, get_engine, resolve_engine
from workbench.errors import ConfigError, HostAuthError, HostKeyError, WorkbenchError
from workbench.hosts import Host, get_host
from workbench.hosts import call_helper
from workbench.hosts import host_python
from workbench.variants._variant import UnknownVariantError, Variant, list_variants, load_variant
from workbench.source import FlagTable, server_flags
from workbench.source import sglang_release
from workbench.source import version_key
from workbench.variants._findings import Finding, findings_table
from workbench.variants._multinode import check_multinode
from workbench.variants._patchcheck import trial_apply
from workbench.variants._resources import check_resources
from workbench.variants._rules import SpecRules, read_rules, tree_version
from workbench.variants._trees import same_host
from workbench.variants._template import apply_parameters, parameters_given
from workbench.variants._validate import check_flags, check_spec, compare_pair, implicit_notes


@dataclasses.dataclass(frozen=True)
class Target:
    """The SGLang a variant is checked against.

    Attributes:
        kind: ``"release"``, ``"checkout"`` or ``"installed"``.
        version: its version (read from ``version.py`` for trees; None when unreadable).
        host: where its source is (``"local"`` for releases: the wheel cache).
        package_dir: the ``sglang`` package directory there.
        label: for messages (``"sglang==0.5.9"``, ``"gpu1:/root/sglang (0.5.20)"``).
        note: why this target was chosen, when it was a fallback.
    """

    kind: Literal["release", "checkout", "installed"]
    version: str | None
    host: str
    package_dir: str
    label: str
    note: str = ""


#: The SGLang version a variant that names none is checked against: the seed investigation's
#: release (../shared/DESIGN.md), which the simulated engine emulates by default (its default
#: profile's ``sglang_version``; tests/test_variants_validate.py keeps the two equal).
DEFAULT_SGLANG_VERSION = "0.5.9"


def default_version() -> str:
    """:data:`DEFAULT_SGLANG_VERSION`: the version checked against when a variant names none."""
    return DEFAULT_SGLANG_VERSION


def resolve_target(
    variant: Variant,
    *,
    host: str | Host | None = None,
    sglang: str | None = None,
    engine: str | Engine | None = None,
) -> Target:
    """Which SGLang ``variant`` is checked against (see the module docstring for the order).

    Args:
        variant: the variant.
        host: where it would run (``"local"``, an ssh alias or a Host); None: not named.
        sglang: a release that overrides everything else.
        engine: what would run on ``host``, a name or an Engine (default:
            :func:`workbench.engines.resolve_engine`: the simulated engine on this machine,
            SGLang elsewhere); the host's installed SGLang is the target only for an engine
            that runs it (SGLang).

    Raises:
        ConfigError: a malformed version or an unknown engine. SourceError: a release
            cannot be fetched. HostError: the host cannot be reached.
    """
    base = variant.parsed_base
    if sglang:
        return _release(sglang)
    if base.kind == "release":
        return _release(str(base.version))
    if base.kind == "checkout":
        run_host = get_host(host).name if host is not None else "local"
        holder = base.host_for(run_host)
        where = get_host(run_host if same_host(holder, run_host) else holder)
        pkg = f"{base.path}/python/sglang"
        return Target("checkout", tree_version(where, pkg), where.name, pkg, f"{where.name}:{base.path}")
    if host is not None and resolve_engine(host, engine).runs_variant_tree:
        h = get_host(host)
        state = call_helper(h, "checkout_state", {"paths": [], "installed": True}, python=host_python(h))
        installed = state.get("installed") or {}
        if installed.get("package_dir"):
            version = installed.get("version") or installed.get("distribution_version")
            return Target("installed", version, h.name, installed["package_dir"],
                          f"sglang {version} installed on {h.name}")  # fmt: skip
        fallback = variant.sglang_version or default_version()
        target = _release(fallback)
        return dataclasses.replace(target, note=f"no sglang is installed for {host_python(h)} on host {h.name!r}; "
                                                f"checked against release {fallback} instead")  # fmt: skip
    if variant.sglang_version:
        return _release(variant.sglang_version)
    version = default_version()
    return dataclasses.replace(_release(version), note=f"no base or sglang_version: checked against {version}, "
                                                       "the version the simulated engine emulates")  # fmt: skip


def _release(version: str) -> Target:
    release = sglang_release(version)
    return Target("release", version, "local", str(release.package_dir), f"sglang=={version}")


class _Cache:
    """Flag tables and rules per target, built once per :func:`check_variants` call."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, str], FlagTable] = {}
        self.rules: dict[tuple[str, str], SpecRules] = {}

    def get(self, target: Target) -> tuple[FlagTable, SpecRules]:
        key = (target.host, target.package_dir)
        if key not in self.tables:
            if target.kind == "release":
                self.tables[key] = server_flags(str(target.version))
            else:
                self.tables[key] = server_flags(target.package_dir, host=target.host, previous=None)
            self.rules[key] = read_rules(get_host(target.host), target.package_dir,
                                         version=target.version or target.label)  # fmt: skip
        return self.tables[key], self.rules[key]


@dataclasses.dataclass
class VariantCheck:
    """Everything checked for one variant (what :func:`check_variants` builds on)."""

    variant: Variant
    target: Target | None
    findings: list[Finding]
    resolved: dict[str, Any]
    rules: SpecRules | None


def check_variant(
    variant: Variant,
    *,
    host: str | Host | None = None,
    sglang: str | None = None,
    engine: str | Engine | None = None,
    resources: bool = True,
    cache: _Cache | None = None,
) -> VariantCheck:
    """Every check of one variant except the pair comparisons (see :func:`check_variants`).

    Raises:
        ConfigError: an unknown engine name (other problems are findings).
    """
    cache = cache or _Cache()
    name, out = variant.name, []
    engine = None if engine is None else get_engine(engine)  # an unknown name is a ConfigError, not a finding
    try:
        target = resolve_target(variant, host=host, sglang=sglang, engine=engine)
        table, rules = cache.get(target)
    except WorkbenchError as exc:
        out.append(Finding("error", name, None, f"cannot read the flags of the target SGLang: {exc}",
                           "fix the variant's base or pass --sglang VERSION", "target"))  # fmt: skip
        return VariantCheck(variant, None, out, dict(variant.flags), None)
    out.append(Finding("info", name, None, f"checked against {target.label}" +
                       (f" ({target.note})" if target.note else "") + ".", "", "target"))  # fmt: skip
    if variant.sglang_version and target.version and variant.sglang_version != target.version:
        out.append(Finding("warning", name, "sglang_version", f"the variant is written for SGLang "
                           f"{variant.sglang_version} but is checked against {target.label}.",
                           "update sglang_version in the variant file, or check with --sglang "
                           f"{variant.sglang_version}", "target-version"))  # fmt: skip
    later = functools.cache(lambda: _later_table(variant, target, cache))
    flag_findings, resolved = check_flags(variant, table, later=later)
    out += flag_findings
    out += check_multinode(variant)
    has_adaptive = table.get("--speculative-adaptive") is not None
    out += check_spec(variant, resolved, rules, has_adaptive_flag=has_adaptive)
    out += implicit_notes(variant, resolved, rules)
    out += _patch_findings(variant, target, host)
    if resources:
        run_host = host if host is not None else "local"
        try:
            out += check_resources(variant, host=run_host, engine=resolve_engine(run_host, engine),
                                   resolved=resolved)  # fmt: skip
        except (HostKeyError, HostAuthError) as exc:  # the host refuses us: nothing can run there, an error
            out.append(Finding("error", name, None, f"the host refused the connection: {exc}",
                               "fix the host key or credentials as the message says, then check again",
                               "host"))  # fmt: skip
        except WorkbenchError as exc:
            out.append(Finding("warning", name, None, f"host resources not checked: {exc}",
                               "check that the host is reachable", "resources"))  # fmt: skip
    return VariantCheck(variant, target, out, resolved, rules)


def _later_table(variant: Variant, target: Target, cache: _Cache) -> FlagTable | None:
    """The flags of the release ``variant`` is written for, when it is later than ``target``; else None.

    Asked only when a flag is unknown to the target. It costs that release's wheel
    (fetched once and cached); an unreadable release or version means None.
    """
    own, checked = variant.target_version, target.version
    if not own or not checked or own == checked:
        return None
    try:
        if version_key(own) <= version_key(checked):
            return None
        return cache.get(_release(own))[0]
    except WorkbenchError:
        return None


def _patch_findings(variant: Variant, target: Target, host: str | Host | None) -> list[Finding]:
    if not variant.patches:
        return []
    version = target.version if target.kind == "release" else None
    try:
        trial = trial_apply(variant, version=version, host=host if host is not None else "local")
    except WorkbenchError as exc:
        return [Finding("error", variant.name, "patches", f"the patches could not be tried: {exc}",
                        "fix the variant's base or patch paths", "patch-trial")]  # fmt: skip
    out = []
    for check in trial.checks:
        if check.ok:
            out.append(Finding("info", variant.name, f"patch {check.patch}", f"applies cleanly to {trial.target} "
                               "(git apply --check, on a scratch copy).", "", "patch-ok"))  # fmt: skip
        else:
            out.append(Finding("error", variant.name, f"patch {check.patch}", check.message.split(" Fix: ")[0],
                               check.message.split(" Fix: ")[1] if " Fix: " in check.message else "",
                               "patch-fails"))  # fmt: skip
    return out


def check_variants(
    variants: Sequence[str | Path | Variant] | None = None,
    *,
    host: str | Host | None = None,
    sglang: str | None = None,
    engine: str | Engine | None = None,
    baseline: str | None = None,
    resources: bool = True,
    parameters: Mapping[str, Any] | None = None,
) -> list[Finding]:
    """Pre-flight checks of ``variants`` (default: every shipped variant), nothing launched.

    Args:
        variants: names (``data/variants/<name>.toml``), files or :class:`Variant` objects.
        host: the host they would run on (``"local"`` or an ssh alias); an ssh host (or
            ``engine="sglang"``) also makes the host's installed SGLang the target of
            variants without a base. On ``"local"`` with the simulated engine each such
            variant is checked against its own ``sglang_version``, as with no host.
        sglang: check against this release instead (overrides bases and ``sglang_version``).
        engine: what would run them, a name (``"sim"``, ``"sglang"``) or an Engine (default:
            sim on this machine, sglang on an ssh host; :func:`workbench.engines.resolve_engine`):
            it picks the resource checks and, for SGLang, makes the host's installed SGLang
            the target.
        baseline: the variant every speculative variant is compared with (loaded from
            ``data/variants`` when not among ``variants``). None (default): each speculative
            variant is compared with a plain variant of its own deployment
            (:func:`default_baseline`: same model and TP size; one being checked before the
            shipped ones, ``baseline`` or ``*-baseline`` by name first), so ``llama3-8b-eagle3``
            meets ``llama3-8b-baseline``, not the 70B TP-8 ``baseline``; a variant with none is
            named in a note and not compared.
        resources: check paths, disk and GPUs on the host.
        parameters: template parameters applied to every variant and the baseline
            (``model_path``, ``draft_model_path``, ``tp_size``, ``gpus``;
            :func:`workbench.variants.apply_parameters`), so what is checked is what would run.

    Returns:
        Findings, errors first within each variant's order (see :func:`findings_table`).

    Raises:
        UnknownVariantError: a variant or ``baseline`` name with no file (bad input, as for
            ``workbench bench``: its message has the closest names).
        ConfigError: an unknown engine name, or a template parameter that is unknown or does not fit a
            variant (e.g. fewer ``gpus`` than its TP size); every other problem (an invalid variant
            file included) is a finding.
    """
    engine = None if engine is None else get_engine(engine)
    given = parameters_given(parameters)
    names = list(variants) if variants else list_variants()
    cache, checks, out = _Cache(), [], []
    for item in names:
        try:
            v = item if isinstance(item, Variant) else load_variant(item)
        except UnknownVariantError:
            raise  # a misspelt name is bad input, not a finding about a file
        except ConfigError as exc:
            out.append(Finding("error", str(item), None, str(exc), "fix the variant file or the name", "load"))
            continue
        v = apply_parameters(v, **given)  # a bad parameter is bad input (ConfigError), not a finding
        check = check_variant(v, host=host, sglang=sglang, engine=engine, resources=resources, cache=cache)
        checks.append(check)
        out += check.findings
    out += _pairs(checks, baseline=baseline, host=host, sglang=sglang, engine=engine, cache=cache, parameters=given)
    return out


def default_baseline(variant: Variant, checked: Sequence[Variant], shipped: Sequence[Variant] = ()) -> Variant | None:
    """The plain (non-speculative) variant ``variant`` is compared with when no baseline is named.

    The rule: a variant that is not speculative, with the same ``model_path`` and TP size
    (``tp-size``, 1 when unset), so the pair differs only in speculation; one of ``checked``
    (the variants being checked) before one of ``shipped``; within each, one named
    ``baseline`` or ``*-baseline`` first, then the earliest. None when there is none. This is
    the pairing the simulator profiles' calibration points declare (``llama3-8b-eagle3`` with
    ``llama3-8b-baseline`` in ``data/profiles/h100-llama3-8b-eagle3.toml``), and checking
    ``baseline-cap48 eagle3-topk4`` pairs those two.
    """

    def tp(v: Variant) -> Any:
        return v.flags.get("tp-size", 1)

    for group in (checked, shipped):
        fits = [c for c in group if not c.speculative and c.model_path == variant.model_path and tp(c) == tp(variant)]
        named = [c for c in fits if c.name == "baseline" or c.name.endswith("-baseline")]
        if fits:
            return (named or fits)[0]
    return None


def _shipped(*, exclude: set[str], parameters: Mapping[str, Any]) -> list[Variant]:
    """The shipped variants not in ``exclude``, with ``parameters`` applied; those the parameters do
    not fit (e.g. fewer ``gpus`` than their TP size) or that do not load are left out: they could not
    run as the baseline of what is checked."""
    out = []
    for name in list_variants():
        if name in exclude:
            continue
        try:
            out.append(apply_parameters(load_variant(name), **parameters))
        except ConfigError:
            continue
    return out


def _pairs(checks: list[VariantCheck], *, baseline: str | None, host: str | Host | None, sglang: str | None,
           engine: str | Engine | None, cache: _Cache, parameters: Mapping[str, Any]) -> list[Finding]:  # fmt: skip
    specs = [c for c in checks if c.variant.speculative and c.rules is not None]
    if not specs:
        return []
    by_name = {c.variant.name: c for c in checks}

    def checked(v: Variant) -> VariantCheck:
        if v.name not in by_name:
            by_name[v.name] = check_variant(v, host=host, sglang=sglang, engine=engine, resources=False, cache=cache)
        return by_name[v.name]

    if baseline is not None:
        named = (
            by_name[baseline].variant if baseline in by_name else apply_parameters(load_variant(baseline), **parameters)
        )
        chosen: dict[str, Variant | None] = {c.variant.name: named for c in specs}
    else:
        shipped = _shipped(exclude=set(by_name), parameters=parameters)
        chosen = {c.variant.name: default_baseline(c.variant, [k.variant for k in checks], shipped) for c in specs}
    out = []
    for c in specs:
        plain = chosen[c.variant.name]
        if plain is not None and plain.name == c.variant.name:
            continue
        if plain is None:
            out.append(Finding("info", c.variant.name, None, f"not compared with a baseline: no plain variant of "
                               f"{c.variant.model_path} at TP {c.variant.flags.get('tp-size', 1)} among those checked "
                               "or shipped.", "write one (e.g. NAME-baseline.toml) or pass --baseline NAME",
                               "pair-none"))  # fmt: skip
            continue
        base = checked(plain)
        same = (base.target is not None and c.target is not None and base.target.version == c.target.version
                and "checkout" not in (base.target.kind, c.target.kind))  # fmt: skip
        rules = cast(SpecRules, c.rules)  # specs are the checks whose rules were read
        out += compare_pair(base.variant, c.variant, base.resolved, c.resolved, rules, same_sglang=same)
        if base.target is not None and c.target is not None and base.target.label != c.target.label:
            out.append(
                Finding(
                    "warning",
                    f"{c.variant.name} vs {base.variant.name}",
                    "sglang_version",
                    f"the pair targets different SGLang: {base.target.label} vs {c.target.label}.",
                    "check and run both on the same version (e.g. --sglang VERSION)",
                    "pair-version",
                )
            )
    return out


def variants_table(variants: Sequence[str | Path | Variant] | None = None) -> pd.DataFrame:
    """One row per variant: name, description, base, target version, speculative settings, patches, stand-in.

    Settings a variant does not give are empty strings; the others keep their type
    (``topk`` 4 stays the int 4: the frame has object columns, so no column turns into floats).
    """
    rows = []
    for item in list(variants) if variants else list_variants():
        v = item if isinstance(item, Variant) else load_variant(item)
        f = v.flags
        rows.append({
            "variant": v.name, "description": v.description, "base": str(v.parsed_base),
            "sglang_version": v.target_version, "algorithm": f.get("speculative-algorithm"),
            "num_steps": f.get("speculative-num-steps"), "topk": f.get("speculative-eagle-topk"),
            "draft_tokens": f.get("speculative-num-draft-tokens"),
            "env": ", ".join(f"{k}={val}" for k, val in v.env.items()),
            "patches": ", ".join(p.name for p in v.patches), "sim_stand_in": v.sim_stand_in(),
        })  # fmt: skip
    return pd.DataFrame([{k: "" if v is None else v for k, v in row.items()} for row in rows], dtype=object)


__all__ = ["Target", "VariantCheck", "check_variant", "check_variants", "default_baseline", "findings_table",
           "resolve_target", "variants_table"]  # fmt: skip
