"""How one SGLang version treats speculative settings, read from that version's own source.

Launch-time rules that are not argparse flags (spec v2's switch and its topk limit,
the implicit max-running-requests cap, overlap scheduling under spec v1, mixed
chunked prefill) are found by looking for the statements that implement them in the
version's ``srt/`` tree, one ``grep -F`` on the host that holds it:

=====================================================  ==========================================
text in the source                                     rule
=====================================================  ==========================================
``SGLANG_ENABLE_SPEC_V2 = EnvBool(False|True)``        spec v2 is switched by that env var, with
                                                       that default (``srt/environ.py``, 0.5.6-0.5.13)
``Spec v2 currently only supports topk = 1``           spec v2 with an explicit topk > 1 is an error
                                                       (a ``raise`` in 0.5.8-0.5.10)
``class EAGLEWorker(``                                 spec v1 still exists: without v2, overlap
                                                       scheduling is off (``eagle_worker.py``, <= 0.5.12)
``def adaptive_unsupported_reason``                    adaptive speculative decoding exists (>= 0.5.11)
``adaptive is only implemented for EAGLEWorker v1``    adaptive is off under spec v2 (overlap on): a
                                                       reason it gives in 0.5.11 only
``max_running_requests = 48`` (or ``=48``)             the EAGLE family caps max running requests
``Mixed chunked prefill is disabled``                  speculation turns mixed chunked prefill off
=====================================================  ==========================================

Which algorithms spec v2 covers is the one fact kept by version (the condition spans
lines): EAGLE in 0.5.6; EAGLE and EAGLE3 in 0.5.7; plus STANDALONE from 0.5.8
(``srt/server_args.py``, ``_handle_speculative_decoding``).
"""

from __future__ import annotations

import dataclasses
import re
import shlex

from workbench.errors import SourceError
from workbench.hosts import Host
from workbench.releases import SPEC_V2_EAGLE3_SINCE, SPEC_V2_STANDALONE_SINCE
from workbench.source import version_key

#: Files searched, relative to the ``sglang`` package directory.
RULE_FILES = (
    "srt/environ.py", "srt/server_args.py", "srt/arg_groups/speculative_hook.py",
    "srt/speculative/eagle_worker.py", "srt/speculative/adaptive_spec_params.py",
)  # fmt: skip

_ENV_FALSE = "SGLANG_ENABLE_SPEC_V2 = EnvBool(False)"
_ENV_TRUE = "SGLANG_ENABLE_SPEC_V2 = EnvBool(True)"
_V2_TOPK = "Spec v2 currently only supports topk = 1"
_V1 = "class EAGLEWorker("
_ADAPTIVE = "def adaptive_unsupported_reason"
_ADAPTIVE_V1 = "adaptive is only implemented for EAGLEWorker v1"
_CAP48 = ("max_running_requests = 48", "max_running_requests=48")
_MIXED = "Mixed chunked prefill is disabled"
PATTERNS = (_ENV_FALSE, _ENV_TRUE, _V2_TOPK, _V1, _ADAPTIVE, _ADAPTIVE_V1, *_CAP48, _MIXED)


#: The EAGLE family (NEXTN is an alias of EAGLE).
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")


@dataclasses.dataclass(frozen=True)
class SpecRules:
    """Speculative-decoding rules of one SGLang version.

    Attributes:
        version: the version (``"0.5.9"``), or ``"unknown"``.
        spec_v2_env_default: default of ``SGLANG_ENABLE_SPEC_V2``; None when the
            version has no such switch (before 0.5.6: none or ``--enable-beta-spec``;
            from 0.5.14: v2 is the only worker).
        v2_rejects_topk_gt1: spec v2 with an explicit topk > 1 is an error.
        has_spec_v1: the v1 worker exists (without v2, overlap scheduling is off).
        has_adaptive: adaptive speculative decoding exists.
        adaptive_needs_v1: adaptive runs only on the v1 worker: with overlap scheduling on
            (spec v2) the server switches it off (0.5.11).
        caps_max_running_48: the EAGLE family defaults max running requests to 48.
        disables_mixed_chunk: speculation turns mixed chunked prefill off.
        where: what was searched (host and directory), for messages.
    """

    version: str
    spec_v2_env_default: bool | None
    v2_rejects_topk_gt1: bool
    has_spec_v1: bool
    has_adaptive: bool
    caps_max_running_48: bool
    disables_mixed_chunk: bool
    where: str = ""
    adaptive_needs_v1: bool = False

    def v2_algorithms(self) -> tuple[str, ...]:
        """Algorithms that run the v2 (overlap) worker when spec v2 is on."""
        if self.version == "unknown" or version_key(self.version) >= version_key(SPEC_V2_STANDALONE_SINCE):
            return ("EAGLE", "EAGLE3", "STANDALONE", "NEXTN")
        if version_key(self.version) >= version_key(SPEC_V2_EAGLE3_SINCE):
            return ("EAGLE", "EAGLE3", "NEXTN")
        return ("EAGLE", "NEXTN")

    def spec_v2_effective(self, *, algorithm: str | None, topk: int | None, env: dict[str, str]) -> bool | None:
        """Whether a server with these settings runs spec v2; None without speculation.

        Args:
            algorithm: ``--speculative-algorithm`` (any case) or None.
            topk: explicit ``--speculative-eagle-topk`` or None.
            env: the server's environment variables.
        """
        if not algorithm:
            return None
        if not self.has_spec_v1:
            return True
        if self.spec_v2_env_default is None:
            return False
        if algorithm.upper() not in self.v2_algorithms():
            return False
        raw = env.get("SGLANG_ENABLE_SPEC_V2")
        on = self.spec_v2_env_default if raw is None else raw.strip().lower() in ("1", "true", "yes", "on")
        if on and topk is not None and topk > 1 and not self.v2_rejects_topk_gt1:
            return False  # 0.5.11-0.5.12: quietly back to v1
        return on


def rules_from_matches(version: str, found: set[str], *, where: str = "") -> SpecRules:
    """:class:`SpecRules` from the set of :data:`PATTERNS` found in a version's source (pure)."""
    env_default = True if _ENV_TRUE in found else False if _ENV_FALSE in found else None
    return SpecRules(
        version=version,
        spec_v2_env_default=env_default,
        v2_rejects_topk_gt1=_V2_TOPK in found,
        has_spec_v1=_V1 in found,
        has_adaptive=_ADAPTIVE in found,
        caps_max_running_48=any(p in found for p in _CAP48),
        disables_mixed_chunk=_MIXED in found,
        where=where,
        adaptive_needs_v1=_ADAPTIVE_V1 in found,
    )


def read_rules(host: Host, package_dir: str, *, version: str, timeout_s: float = 60.0) -> SpecRules:
    """Search the ``sglang`` package at ``package_dir`` on ``host`` (one command) for the rules.

    Args:
        host: where the tree is.
        package_dir: the ``sglang`` package directory (holding ``srt/``).
        version: its version, for messages.
        timeout_s: limit for the search in seconds.

    Raises:
        SourceError: ``package_dir`` has no ``srt/server_args.py``.
        HostError: the host cannot be reached.
    """
    args = " ".join(f"-e {shlex.quote(p)}" for p in PATTERNS)
    files = " ".join(shlex.quote(f) for f in RULE_FILES)
    line = (f"cd {shlex.quote(package_dir)} && test -f srt/server_args.py && "
            f"{{ grep -h -o -F {args} -- {files} 2>/dev/null; true; }}")  # fmt: skip
    result = host.run(["sh", "-c", line], timeout_s=timeout_s, check=False)
    if not result.ok:
        raise SourceError(
            f"No SGLang source at {package_dir} on host {host.name!r} (no srt/server_args.py); "
            "point the variant's base at a checkout root or a package directory"
        )
    found = {ln.strip() for ln in result.stdout.splitlines() if ln.strip()}
    return rules_from_matches(version, found, where=f"{host.name}:{package_dir}")


_VERSION_LINE = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)


def tree_version(host: Host, package_dir: str, *, timeout_s: float = 60.0) -> str | None:
    """The SGLang version of the ``sglang`` package at ``package_dir`` on ``host``, or None.

    Read from ``version.py`` or setuptools-scm's generated ``_version.py``
    (``__version__ = version = '0.5.9'``, as in the 0.5.9 wheel), else from the
    checkout's latest tag (``git describe --tags --abbrev=0``, ``v0.5.9`` -> ``0.5.9``).
    """
    q = shlex.quote(package_dir)
    line = (f"cat {q}/version.py {q}/_version.py 2>/dev/null | grep -E '^__version__'; "
            f"echo TAG $(git -C {q} describe --tags --abbrev=0 2>/dev/null)")  # fmt: skip
    out = host.run(["sh", "-c", line], check=False, timeout_s=timeout_s).stdout
    found = _VERSION_LINE.search(out)
    if found:
        return found.group(1)
    tag = next((ln.split()[1] for ln in out.splitlines() if ln.startswith("TAG ") and len(ln.split()) > 1), None)
    return tag[1:] if tag and tag.startswith("v") else tag
