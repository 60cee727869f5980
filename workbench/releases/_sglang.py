"""Facts about SGLang releases that more than one package states: which release first has what.

Each fact is the first release whose wheel has the thing, read from the unpacked PyPI wheels (the team's
notes, ``../shared/sglang-facts.md``, "Corrections, checked against every 0.5.x final wheel", and the
``source`` package's stored releases: ``tests/test_releases.py`` checks the flag against them). A
package that emulates only some releases (the simulator) derives its own threshold from these, never
restates one. Where a fact was first read in a sampled wheel rather than checked against every release,
its comment says so: the name then holds the release the workbench applies it from.
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

#: First release whose adaptive default tiers give tier 1 the candidate steps ``[1, 3, 5, 7]`` (0.5.16's has
#: ``[1, 3, 7]``), read from the 0.5.23 wheel (``srt/speculative/adaptive_spec_params.py``); the releases
#: between them were not read for it.
ADAPTIVE_DEFAULT_TIERS_REVISED_SINCE = "0.5.23"

#: Spec v2 (the overlap worker) under EAGLE3 too, beside EAGLE and NEXTN (``SGLANG_ENABLE_SPEC_V2``,
#: ``srt/server_args.py``).
SPEC_V2_EAGLE3_SINCE = "0.5.7"

#: Spec v2 under STANDALONE too (``srt/server_args.py``); 0.5.9 runs EAGLE, EAGLE3, STANDALONE and NEXTN on it.
SPEC_V2_STANDALONE_SINCE = "0.5.8"

#: ``SGLANG_ENABLE_SPEC_V2`` defaults to true (every 0.5.x final wheel checked: the notes' corrections); an
#: explicit topk > 1, or the variable set to 0, quietly falls back to spec v1 with overlap off.
SPEC_V2_DEFAULT_SINCE = "0.5.11"

#: Spec v1 is gone: class ``EAGLEWorker`` left ``srt/speculative/eagle_worker.py`` (every 0.5.x final wheel
#: checked), so spec v2 always runs, with topk > 1 and NGRAM alike (the variable itself left in 0.5.16, PR #25464).
SPEC_V1_GONE_SINCE = "0.5.13"

#: Spec v2's decode check counts what each request consumed of its over-allocation
#: (``managers/schedule_batch._new_tokens_required_next_decode_spec_v2``) instead of twice the allocation length
#: per request as 0.5.9 does; first read in the 0.5.12 wheel.
SPEC_V2_DECODE_CHECK_SINCE = "0.5.12"

#: Spec v2's draft extend after a verify runs the draft over the whole tree width, ``num_draft_tokens`` rows per
#: request with logits for each (``srt/speculative/eagle_worker_v2.py`` ``_draft_extend_for_decode``:
#: ``num_tokens_per_req=self.speculative_num_draft_tokens``); 0.5.12.post1 runs it over ``num_steps + 1`` rows
#: (read in the 0.5.12.post1, 0.5.13, 0.5.14 and 0.5.17 wheels).
SPEC_V2_WIDE_DRAFT_EXTEND_SINCE = "0.5.13"

#: ``get_alloc_len_per_decode`` moved to ``srt/mem_cache/common.py`` and uses ``max_speculative_num_draft_tokens``
#: (new in ``ServerArgs``), and page size > 1 with topk > 1 reserves the worst-case page-aligned tree instead of
#: raising NotImplementedError (every 0.5.x final wheel checked).
PAGED_DRAFT_TREE_SINCE = "0.5.13"

#: An EAGLE target's KV cell is scaled by ``1 + draft layers / target layers``, the draft sharing the target's
#: token count (``srt/model_executor/pool_configurator.py``); first read in the 0.5.16 wheel (0.5.12 sizes the
#: target's pool alone).
DRAFT_KV_IN_TARGET_POOL_SINCE = "0.5.16"

#: ``--speculative-algorithm DSPARK``, the one SGLang algorithm that caps verification; first read in the 0.5.16
#: wheel (``srt/speculative/spec_info.py``).
DSPARK_SINCE = "0.5.16"

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
