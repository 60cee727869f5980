"""What the workbench can learn about a host, and whether it can use it: ``workbench host check``.

:func:`check_host` asks the host three things (three round trips): its Python
(version and path), the SGLang it has (``remote/checkout_state.py``: the installed
package and optionally a checkout) and its GPUs (``remote/gpu_inventory.py``).
It returns a :class:`HostReport`; :func:`render_check` turns it into text. The
command line is ``workbench host check`` (:mod:`workbench.hosts.cli`). A host that
cannot be used at all (unreachable, authentication, host key, no Python 3.8+)
yields a report with ``usable=False`` and the reason, which says what to do.
Missing SGLang or GPUs are facts in the report, and problems only when required.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

from workbench.errors import ConfigError, HostError, WorkbenchError
from workbench.hosts import Host, get_host
from workbench.hosts._upload import MIN_PYTHON
from workbench.hosts._helpers import call_helper, last_json_object
from workbench.hosts._env import host_python

#: What ``--require`` accepts.
REQUIREMENTS = ("sglang", "gpu")

_PROBE = (
    "import json, platform, socket, sys; print(json.dumps({'executable': sys.executable, "
    "'version': '%d.%d.%d' % sys.version_info[:3], 'platform': platform.platform(), "
    "'hostname': socket.gethostname()}))"
)


@dataclasses.dataclass(frozen=True)
class HostReport:
    """What ``host check`` found.

    Attributes:
        host: the host's name (``local`` or the alias).
        usable: False when the host cannot be used at all (see ``error``).
        error: why it cannot be used, with what to do (None when usable).
        python: ``{"executable", "version", "platform", "hostname"}`` or None.
        sglang: the checkout_state answer (``installed``, ``checkouts``) or None.
        gpus: the gpu_inventory answer or None.
        problems: unmet requirements (each a sentence with what to do).
    """

    host: str
    usable: bool
    error: str | None = None
    python: dict[str, Any] | None = None
    sglang: dict[str, Any] | None = None
    gpus: dict[str, Any] | None = None
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Usable and every requirement met."""
        return self.usable and not self.problems

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``ok`` included)."""
        out = dataclasses.asdict(self)
        out["problems"] = list(self.problems)
        out["ok"] = self.ok
        return out


def parse_requirements(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"sglang,gpu"`` -> ``("sglang", "gpu")``.

    Raises:
        ConfigError: an unknown requirement.
    """
    if not text:
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    out = tuple(i.strip().lower() for i in items if i.strip())
    bad = [i for i in out if i not in REQUIREMENTS]
    if bad:
        raise ConfigError(f"--require takes {', '.join(REQUIREMENTS)} (comma separated), got {', '.join(bad)}")
    return out


def check_host(
    host: str | Host,
    *,
    config_file: str | os.PathLike[str] | None = None,
    python: str | None = None,
    sglang_path: str | None = None,
    require: Sequence[str] = (),
) -> HostReport:
    """Probe a host (see module docstring). Never raises for an unusable host: it is in the report.

    Args:
        host: ``"local"``, an ssh config alias, or a :class:`Host`.
        config_file: ssh config (like ``ssh -F``).
        python: interpreter to inspect (default: see :func:`~workbench.hosts._env.host_python`).
        sglang_path: an SGLang checkout on the host to inspect too.
        require: ``"sglang"`` and/or ``"gpu"``: missing ones become problems.

    Raises:
        ConfigError: a malformed alias or config file.
    """
    h = get_host(host, config_file=config_file)
    py = host_python(h, python)
    try:
        res = h.run([py, "-c", _PROBE], timeout_s=120, check=False)
    except HostError as exc:  # unreachable, authentication, host key: the message says what to do
        return HostReport(host=h.name, usable=False, error=str(exc))
    facts = last_json_object(res.stdout)
    if not res.ok or facts is None:
        return HostReport(
            host=h.name,
            usable=False,
            error=(
                f"No usable Python at `{py}` on host {h.name!r} (exit status {res.exit_status}: "
                f"{res.tail().strip() or 'no output'}). The workbench runs its helpers with the host's Python "
                f"{'.'.join(map(str, MIN_PYTHON))}+: install python3 there (e.g. `apt-get install python3`) or "
                "pass --python / set WORKBENCH_REMOTE_PYTHON to one that exists."
            ),
        )
    version = tuple(int(x) for x in facts["version"].split(".")[:2])
    if version < MIN_PYTHON:
        return HostReport(
            host=h.name,
            usable=False,
            python=facts,
            error=(
                f"{py} on host {h.name!r} is Python {facts['version']}; the workbench needs "
                f"{'.'.join(map(str, MIN_PYTHON))} or newer. Install a newer python3 there or pass --python."
            ),
        )
    try:
        sglang = call_helper(
            h, "checkout_state", {"paths": [sglang_path] if sglang_path else [], "installed": True}, python=py
        )
        gpus = call_helper(h, "gpu_inventory", {}, python=py)
    except WorkbenchError as exc:
        return HostReport(host=h.name, usable=False, python=facts, error=f"Helpers failed on host {h.name!r}: {exc}")
    unmet = (_UNMET[need](facts, sglang, gpus, sglang_path) for need in REQUIREMENTS if need in require)
    problems = [problem for problem in unmet if problem]
    return HostReport(host=h.name, usable=True, python=facts, sglang=sglang, gpus=gpus, problems=tuple(problems))


def _sglang_missing(
    python: dict[str, Any], sglang: dict[str, Any], gpus: dict[str, Any], sglang_path: str | None
) -> str | None:
    """``--require sglang``: the problem when neither the interpreter nor the checkout has SGLang."""
    if _has_sglang(sglang):
        return None
    return (
        f"SGLang is not installed for {python['executable']}"
        + (f" and {sglang_path} holds no SGLang checkout" if sglang_path else "")
        + ": pass --python with the SGLang environment's interpreter, or --sglang-path."
    )


def _gpus_missing(
    python: dict[str, Any], sglang: dict[str, Any], gpus: dict[str, Any], sglang_path: str | None
) -> str | None:
    """``--require gpu``: the problem when nvidia-smi lists no GPU."""
    if gpus.get("gpus"):
        return None
    why = gpus.get("error") or ("nvidia-smi not found" if not gpus.get("nvidia_smi") else "no GPUs listed")
    return f"No GPUs found ({why}): check the NVIDIA driver with `nvidia-smi` on the host."


#: Each requirement's check: (python, sglang, gpus answers, sglang_path) -> the problem, or None when met.
_UNMET: dict[str, Callable[[dict[str, Any], dict[str, Any], dict[str, Any], str | None], str | None]] = {
    "sglang": _sglang_missing,
    "gpu": _gpus_missing,
}


def _has_sglang(state: dict[str, Any]) -> bool:
    if (state.get("installed") or {}).get("version"):
        return True
    return any(c.get("version") for c in state.get("checkouts", []))


def _git_text(git: dict[str, Any] | None) -> str:
    if not git:
        return "not in a git checkout"
    commit = (git.get("commit") or "?")[:12]
    branch = f" on {git['branch']}" if git.get("branch") and git["branch"] != "HEAD" else ""
    if git.get("dirty"):
        state = f"dirty: {git.get('changed_count')} changed file(s)"
    elif git.get("dirty") is False:
        state = "clean"
    else:
        state = "state unknown"
    return f"git {commit}{branch} ({state})"


def render_check(report: HostReport) -> str:
    """The report as a few aligned lines of text, one per fact (``host``, ``python``, ``error``,
    ``sglang``, ``checkout``, ``gpus``, ``links``, ``problem``), as ``workbench host check`` prints it."""
    lines = [f"host      {report.host}: " + ("reachable" if report.python else "NOT usable")]
    if report.python:
        p = report.python
        lines.append(
            f"python    {p['executable']} ({p['version']}) on {p.get('hostname', '?')}, {p.get('platform', '')}"
        )
    if report.error:
        lines.append(f"error     {report.error}")
    if report.sglang is not None:
        inst = report.sglang.get("installed")
        if inst and inst.get("version"):
            where = inst.get("package_dir") or "?"
            editable = ", editable install" if inst.get("editable") else ""
            vcs = (inst.get("direct_url") or {}).get("vcs_info") or {}
            origin = (
                _git_text(inst.get("git"))
                if inst.get("git") or not vcs.get("commit_id")
                else f"installed from {inst['direct_url'].get('url')} at commit {vcs['commit_id'][:12]}"
            )
            lines.append(f"sglang    {inst['version']} at {where}{editable}; {origin}")
        else:
            lines.append(f"sglang    not installed for {report.python['executable'] if report.python else 'python'}")
        for c in report.sglang.get("checkouts", []):
            if c.get("error") and not c.get("version"):
                lines.append(f"checkout  {c['path']}: {c['error']}")
            else:
                lines.append(
                    f"checkout  {c['path']}: {c.get('version') or 'version unknown'}; {_git_text(c.get('git'))}"
                )
    if report.gpus is not None:
        g = report.gpus
        if not g.get("nvidia_smi"):
            lines.append("gpus      none (no nvidia-smi on this host)")
        elif not g.get("gpus"):
            lines.append(f"gpus      none listed ({g.get('error') or 'nvidia-smi printed no GPU'})")
        else:
            names = sorted({x["name"] for x in g["gpus"]})
            mem = sorted({x.get("memory_total_mib") for x in g["gpus"] if x.get("memory_total_mib")})
            used = sum(x.get("memory_used_mib") or 0 for x in g["gpus"])
            links = sorted({link["link"] for link in g.get("links", [])})
            lines.append(
                f"gpus      {len(g['gpus'])} x {' / '.join(names)} ({'/'.join(map(str, mem))} MiB each, "
                f"{used} MiB in use), driver {g.get('driver_version') or '?'}"
            )
            lines.append(f"links     {g.get('interconnect')}" + (f" ({', '.join(links)})" if links else ""))
    for problem in report.problems:
        lines.append(f"problem   {problem}")
    return "\n".join(lines)
