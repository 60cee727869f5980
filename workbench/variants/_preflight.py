"""Before and after a launch: pre-flight checks, the tree to launch from, and the run's provenance.

:func:`prepare_launch` is what :func:`workbench.sweeps.benchmark_variant`
wraps a server in::

    with prepare_launch(variant, host=host, engine=engine) as prep:     # checks; patched tree
        with ServerHandle.start(prep.launch_variant, ...) as server:      # PYTHONPATH=<tree>/python
            extra = prep.manifest_extra(server_info=..., log_text=..., launch_command=server.command)
    # the isolated tree is removed here

Every engine gets the same pre-flight (:func:`preflight`): every check of
:func:`workbench.variants._check.check_variant`, the one the notebooks run, against the
SGLang the variant targets (the host's installed SGLang for the real engine, the release
the simulator emulates otherwise); errors raise :class:`ConfigError` (the message lists
them) before anything launches, so a simulated run is never stored as a run of a release
that would refuse the variant. What differs is after it, as the engine answers
(:class:`workbench.engines.Engine`). An engine that runs the variant's own SGLang
(``runs_variant_tree``: SGLang itself) launches it from its tree (a patched worktree or
release copy, see :mod:`workbench.variants._trees`), or from the SGLang installed for the
host's Python. On any other engine (the simulated one) nothing of SGLang runs: patches are
recorded (text and sha256) but not applied, and what the engine runs in their place
(:meth:`~workbench.engines.Engine.stand_in`: the variant's ``sim_policy``) is labelled as
such in the manifest (``sim_stand_in``) and in every stored row; a release whose flags
cannot be read (offline, no cached wheel) is a warning there, since that engine does not
run it. The provenance's sentences about the engine are written here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

from workbench.engines import Engine, resolve_engine
from workbench.errors import ConfigError, WorkbenchError
from workbench.hosts import Host, get_host
from workbench.hosts import call_helper
from workbench.hosts import host_python
from workbench.variants._variant import Variant
from workbench.variants._check import check_variant
from workbench.variants._effective import confirm_effective, effective_settings
from workbench.variants._findings import Finding, has_errors, sort_findings
from workbench.variants._patchfile import load_patch
from workbench.variants._trees import LaunchTree, prepare_tree

#: Lines of the server log read for :func:`confirm_effective` (fallbacks are logged at start-up).
LOG_LINES = 5000


class EffectiveSettingWarning(UserWarning):
    """The running server does not run what the variant asked for (see the run manifest)."""


@dataclasses.dataclass
class PreparedLaunch:
    """A variant ready to launch.

    Attributes:
        variant: the variant as defined.
        launch_variant: what to launch (the variant with PYTHONPATH pointing into its tree).
        engine: the engine it runs on.
        host: the host's name.
        preflight: findings of the pre-flight checks.
        tree: the tree it launches from (None: the installed package, or the sim).
        installed: the host's installed sglang as ``remote/checkout_state.py`` reports it
            (real engine without a tree), else None.
    """

    variant: Variant
    launch_variant: Variant
    engine: Engine
    host: str
    preflight: list[Finding]
    tree: LaunchTree | None = None
    installed: dict[str, Any] | None = None

    @property
    def sim_stand_in(self) -> str | None:
        """What stands in for the variant's patches on this engine (the simulator's label), else None."""
        return self.engine.stand_in(self.variant)

    def provenance(self, *, server_info: dict[str, Any] | None,
                   launch_command: list[str] | str | None) -> dict[str, Any]:  # fmt: skip
        """SGLang version, base, commit, dirty state, patches (sha256 and text), launch command and env."""
        v = self.variant
        env = dict(self.launch_variant.env)
        common = {"launch_command": launch_command, "launch_env": env, "sim_stand_in": self.sim_stand_in}
        called = self.engine.called
        if not self.engine.runs_variant_tree:
            note = f"not applied: {called} runs no SGLang code"
            patches = [dict(load_patch(p).provenance(), applied=False, note=note) for p in v.patches]
            return {"engine_runs_sglang_code": False, "tree_kind": None, "base": str(v.parsed_base),
                    "sglang_version": (server_info or {}).get("version"), "sglang_version_meaning":
                    f"the SGLang version whose HTTP API {called} emulates", "base_commit": None,
                    "dirty": None, "patches": patches, **common}  # fmt: skip
        if self.tree is not None:
            return {"engine_runs_sglang_code": True, **self.tree.provenance(), **common}
        inst = self.installed or {}
        git = inst.get("git") or {}
        return {"engine_runs_sglang_code": True, "tree_kind": "installed", "base": str(v.parsed_base),
                "sglang_version": inst.get("version") or (server_info or {}).get("version"),
                "package_dir": inst.get("package_dir"), "editable": inst.get("editable"),
                "base_commit": git.get("commit"), "dirty": git.get("dirty"),
                "dirty_files": git.get("changed") or [], "patches": [], **common}  # fmt: skip

    def confirm(self, server_info: dict[str, Any], log_text: str) -> list[Finding]:
        """:func:`confirm_effective`, with a Python warning for every warning or error it finds."""
        found = confirm_effective(self.variant, server_info, log_text)
        for f in found:
            if f.severity != "info":
                warnings.warn(f"{self.variant.name}: {f.message}", EffectiveSettingWarning, stacklevel=3)
        return found

    def manifest_extra(self, *, server_info: dict[str, Any], log_text: str,
                       launch_command: list[str] | str | None) -> dict[str, Any]:  # fmt: skip
        """Manifest keys: provenance, sim_stand_in, preflight, effective settings and findings."""
        confirmed = self.confirm(server_info, log_text)
        return {
            "provenance": self.provenance(server_info=server_info, launch_command=launch_command),
            "sim_stand_in": self.sim_stand_in,
            "preflight_findings": [f.to_dict() for f in sort_findings(self.preflight)],
            "effective_settings": effective_settings(server_info),
            "effective_findings": [f.to_dict() for f in sort_findings(confirmed)],
        }

    def label_level(self, level: Any) -> Any:
        """``level`` (a sweep's LevelResult) with a ``sim_stand_in`` column on its rows (None when not one)."""
        label = self.sim_stand_in
        requests = level.requests.assign(sim_stand_in=label)
        info = level.info.assign(sim_stand_in=label)
        return dataclasses.replace(level, requests=requests, info=info)


def preflight(variant: Variant, *, host: str | Host = "local", engine: str | Engine | None = None) -> list[Finding]:
    """The pre-flight checks of ``variant`` on ``host`` and ``engine``: the findings, or the refusal.

    The same checks on every engine (the module docstring): flags, spec rules, patches and host
    resources (:func:`workbench.variants._check.check_variant`).

    Raises:
        ConfigError: the checks found errors (listed in the message, which says nothing was launched),
            or the engine name is unknown.
    """
    h = get_host(host)
    eng = resolve_engine(h, engine)
    findings = check_variant(variant, host=h, engine=eng).findings
    if not eng.runs_variant_tree:  # it runs no SGLang, so an unreadable release only limits the check
        findings = [
            dataclasses.replace(f, severity="warning", fix=f"{f.fix}; the flags were not checked")
            if f.check == "target" and f.severity == "error"
            else f
            for f in findings
        ]
    if has_errors(findings):
        lines = "\n".join(f.line() for f in sort_findings(findings) if f.severity == "error")
        raise ConfigError(f"Pre-flight checks of variant {variant.name!r} for host {h.name!r} ({eng.name}) found "
                          f"errors; nothing was launched:\n{lines}")  # fmt: skip
    return findings


@contextlib.contextmanager
def prepare_launch(
    variant: Variant,
    *,
    host: str | Host = "local",
    engine: str | Engine | None = None,
    python: str | None = None,
    check: bool = True,
    findings: list[Finding] | None = None,
) -> Iterator[PreparedLaunch]:
    """Check ``variant`` for ``host`` and ``engine``, prepare its tree, and remove the tree afterwards.

    Args:
        variant: the variant.
        host: where it will run.
        engine: the engine, a name or an Engine (default: the host's,
            :func:`workbench.engines.resolve_engine`). Every engine: :func:`preflight`. The
            simulated engine: patches recorded, not applied. SGLang: then the patched tree.
        python: the host's interpreter for the server (default: see :func:`host_python`).
        check: run the pre-flight checks (default True).
        findings: the findings of a :func:`preflight` already run for this variant, host and
            engine (a sweep checks every variant before its first launch); not checked again.

    Raises:
        ConfigError: the checks found errors (listed in the message), a patch does not apply,
            or the engine name is unknown.
    """
    h = get_host(host)
    eng = resolve_engine(h, engine)
    py = host_python(h, python)
    if findings is None:
        findings = preflight(variant, host=h, engine=eng) if check else []
    tree = prepare_tree(variant, host=h, python=py) if eng.runs_variant_tree else None
    try:
        installed = None
        if eng.runs_variant_tree and tree is None:  # the variant names no base: the installed SGLang runs
            try:
                state = call_helper(h, "checkout_state", {"paths": [], "installed": True}, python=py)
                installed = state.get("installed")
            except WorkbenchError as exc:
                installed = {"error": str(exc)}
        launch = dataclasses.replace(variant, env=tree.launch_env(variant.env)) if tree else variant
        yield PreparedLaunch(variant, launch, eng, h.name, findings, tree, installed)
    finally:
        if tree is not None:
            tree.close()
