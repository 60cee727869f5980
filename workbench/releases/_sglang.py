"""Facts about SGLang releases that more than one package states: which release first has what.

Each fact is the first release whose wheel has the thing, read from the unpacked PyPI wheels (the team's
notes, ``../shared/sglang-facts.md``, "Corrections, checked against every 0.5.x final wheel", and the
``source`` package's stored releases: ``tests/test_releases.py`` checks the flag against them). A
package that emulates only some releases (the simulator) derives its own threshold from these, never
restates one.
"""

from __future__ import annotations

import re

#: First release with ``--speculative-adaptive`` (``srt/server_args.py``) and ``adaptive_unsupported_reason``
#: (``srt/speculative/adaptive_spec_params.py``): 0.5.11; 0.5.10.post1 has neither. In 0.5.11 it runs only
#: under spec v1 (``adaptive is only implemented for EAGLEWorker v1``), a single EMA over candidate steps.
ADAPTIVE_SINCE = "0.5.11"

#: First release whose ``--speculative-adaptive-config`` holds batch-size tiers (PR #24055;
#: ``srt/speculative/adaptive_spec_params.py`` ``_load_adaptive_config``), with default tiers when none is given.
ADAPTIVE_TIERS_SINCE = "0.5.16"

_RELEASE = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def release_number(version: object) -> tuple[int, ...]:
    """``"0.5.16.post1"`` -> ``(0, 5, 16)`` (``"v0.5"`` -> ``(0, 5, 0)``); ``()`` when it does not start with a
    release number (suffixes such as ``.post1``, ``rc0`` or ``.dev1`` are dropped)."""
    match = _RELEASE.match(str(version))
    return tuple(int(g) for g in match.groups(default="0")) if match else ()


def release_at_least(version: object, fact: str) -> bool:
    """True when ``version`` is the release ``fact`` names or later (False for a text that is no release)."""
    number = release_number(version)
    return bool(number) and number >= release_number(fact)
