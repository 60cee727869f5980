"""Speculative-decoding settings as a server resolves them from its flags.

Defaulting rules follow SGLang 0.5.9 (``srt/server_args.py``,
``_handle_speculative_decoding`` / ``auto_choose_speculative_params``, read from the
release wheel): topk or draft tokens given without num_steps is an error; with
topk 1 the draft-token count is forced to num_steps + 1; the EAGLE family caps max
running requests at 48 unless set; spec v2 (overlap scheduler) is
switched on by ``SGLANG_ENABLE_SPEC_V2`` and, in 0.5.9, refuses an explicit topk > 1.

Later versions (read from the 0.5.12 and 0.5.16 wheels):

- 0.5.12 (``srt/server_args.py``): ``SGLANG_ENABLE_SPEC_V2`` defaults to true; an explicit
  topk > 1 (or the variable set to 0) quietly falls back to spec v1 with overlap off.
  ``--speculative-adaptive`` needs EAGLE/EAGLE3 and topk 1, else SGLang warns and runs static
  settings (``adaptive_unsupported_reason`` in ``srt/speculative/adaptive_spec_params.py``).
- 0.5.16 and 0.5.23 (``srt/arg_groups/speculative_hook.py``): spec v2 always runs (the
  variable is gone); under ``--speculative-adaptive`` topk defaults to 1, num_steps to the
  middle of the union of the tiers' candidate steps, a num_steps outside that union is an
  error, and num_draft_tokens is num_steps + 1 (``_init_adaptive_speculative_params``).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from workbench.errors import ConfigError
from workbench.sim._api_shapes import DEFAULT_RELEASE
from workbench.releases import (
    ADAPTIVE_SINCE,
    ADAPTIVE_TIERS_SINCE,
    SPEC_V1_GONE_SINCE,
    SPEC_V2_DEFAULT_SINCE,
    release_at_least,
    release_number,
)

Algorithm = Literal["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]

#: Algorithms each emulated SGLang version accepts for --speculative-algorithm (../shared/sglang-facts.md
#: section 4: argparse choices in 0.5.9; a free string checked against the registry from 0.5.12).
ALGORITHMS_BY_VERSION: dict[str, tuple[str, ...]] = {
    "0.5.9": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"),
    "0.5.12": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH"),
    "0.5.16": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK"),
    "0.5.23": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO"),
}


def first_emulated(fact: str) -> str:
    """The first release of :data:`ALGORITHMS_BY_VERSION` at or after the release a fact names
    (:mod:`workbench.releases`): where the simulator's rules take the fact up."""
    return min((v for v in ALGORITHMS_BY_VERSION if release_at_least(v, fact)), key=release_number)


#: First emulated version with ``--speculative-adaptive``: the first emulated at or after the release that has
#: the flag (:data:`workbench.releases.ADAPTIVE_SINCE`, 0.5.11, which runs it only under spec v1 and is not
#: emulated), so 0.5.12.
ADAPTIVE_EMULATED_SINCE = first_emulated(ADAPTIVE_SINCE)

#: First emulated version whose ``SGLANG_ENABLE_SPEC_V2`` defaults to true
#: (:data:`workbench.releases.SPEC_V2_DEFAULT_SINCE`, 0.5.11, not emulated), so 0.5.12.
SPEC_V2_DEFAULT_EMULATED_SINCE = first_emulated(SPEC_V2_DEFAULT_SINCE)

#: First emulated version without spec v1, where v2 always runs (:data:`workbench.releases.SPEC_V1_GONE_SINCE`,
#: 0.5.13, not emulated), so 0.5.16.
SPEC_V2_ONLY_EMULATED_SINCE = first_emulated(SPEC_V1_GONE_SINCE)

#: max_running_requests default for the EAGLE family (SGLang 0.5.9 ``srt/server_args.py``).
EAGLE_MAX_RUNNING_REQUESTS = 48


@dataclasses.dataclass(frozen=True)
class SpecConfig:
    """Resolved speculative settings of one server.

    Attributes:
        algorithm: upper-cased algorithm name, or None for plain decoding.
        num_steps: draft steps per verify (``--speculative-num-steps``).
        topk: branching factor per draft step (``--speculative-eagle-topk``).
        num_draft_tokens: tokens verified per request per step, root included
            (``--speculative-num-draft-tokens``).
        spec_v2: True when the overlap (v2) worker runs.
    """

    algorithm: str | None = None
    num_steps: int = 0
    topk: int = 1
    num_draft_tokens: int = 1
    spec_v2: bool = False

    @property
    def enabled(self) -> bool:
        """True when speculative decoding is on."""
        return self.algorithm is not None

    def tree_depth(self) -> int:
        """Deepest draft position a verify can accept: min(num_steps, num_draft_tokens - 1)."""
        if not self.enabled:
            return 0
        return max(0, min(self.num_steps, self.num_draft_tokens - 1))

    def tree_width(self) -> float:
        """Effective candidates per depth: topk, limited by the draft-token budget per depth."""
        depth = self.tree_depth()
        if depth == 0:
            return 1.0
        return max(1.0, min(float(self.topk), (self.num_draft_tokens - 1) / depth))

    def label(self) -> str:
        """Short human label, e.g. ``EAGLE3 topk4 steps2 draft16 v1``."""
        if not self.enabled:
            return "baseline"
        v = "v2" if self.spec_v2 else "v1"
        return f"{self.algorithm} topk{self.topk} steps{self.num_steps} draft{self.num_draft_tokens} {v}"


def resolve_spec(
    *,
    algorithm: str | None,
    num_steps: int | None,
    topk: int | None,
    num_draft_tokens: int | None,
    enable_spec_v2: bool | None,
    sglang_version: str = DEFAULT_RELEASE,
    adaptive_steps: list[int] | None = None,
) -> SpecConfig:
    """Resolve speculative flags the way the emulated SGLang version does.

    Args:
        algorithm: ``--speculative-algorithm`` (any case) or None.
        num_steps, topk, num_draft_tokens: the flags as given (None when omitted).
        enable_spec_v2: value of ``SGLANG_ENABLE_SPEC_V2`` (None: unset, the version's default:
            off in 0.5.9, on in 0.5.12, always on from 0.5.16).
        sglang_version: emulated version (a key of :data:`ALGORITHMS_BY_VERSION`).
        adaptive_steps: under ``--speculative-adaptive`` from 0.5.16, the union of the tiers'
            candidate steps (num_steps defaults to its middle and must be one of them).

    Returns:
        The resolved :class:`SpecConfig`.

    Raises:
        ConfigError: the same combinations the real server rejects, with its message.
    """
    if sglang_version not in ALGORITHMS_BY_VERSION:
        raise ConfigError(
            f"SGLang {sglang_version} is not emulated; emulated versions: {sorted(ALGORITHMS_BY_VERSION)}"
        )
    if algorithm is None:
        return SpecConfig()
    algo = algorithm.upper()
    allowed = ALGORITHMS_BY_VERSION[sglang_version]
    if algo not in allowed:
        raise ConfigError(
            f"--speculative-algorithm {algorithm!r} is not a choice in SGLang {sglang_version}; "
            f"choose from {', '.join(allowed)}"
        )
    if algo == "NEXTN":
        algo = "EAGLE"
    if num_steps is None and (topk is not None or num_draft_tokens is not None):
        raise ConfigError(
            "--speculative-eagle-topk or --speculative-num-draft-tokens given without "
            "--speculative-num-steps: SGLang asserts here; pass all three explicitly"
        )
    if adaptive_steps is not None and release_at_least(sglang_version, ADAPTIVE_TIERS_SINCE):
        # 0.5.16 _init_adaptive_speculative_params (srt/arg_groups/speculative_hook.py)
        topk = 1 if topk is None else topk
        if num_steps is None:
            num_steps = adaptive_steps[len(adaptive_steps) // 2]
        if num_steps not in adaptive_steps:
            raise ConfigError(
                f"--speculative-num-steps={num_steps} is not in the adaptive config candidate_steps "
                f"{adaptive_steps} (SGLang {sglang_version}); pass one of those values"
            )
        num_draft_tokens = num_steps + 1
    v2_default = release_at_least(sglang_version, SPEC_V2_DEFAULT_EMULATED_SINCE)
    v2_only = release_at_least(sglang_version, SPEC_V2_ONLY_EMULATED_SINCE)
    if v2_only:
        enable_spec_v2 = True  # the variable is gone; V1 was deleted (PR #25464)
    elif enable_spec_v2 is None:
        enable_spec_v2 = v2_default
    if enable_spec_v2 and topk is not None and topk > 1 and not v2_default:
        raise ConfigError(
            "Spec v2 currently only supports topk = 1 (SGLang 0.5.9 with SGLANG_ENABLE_SPEC_V2=1); "
            "use --speculative-eagle-topk 1 or unset SGLANG_ENABLE_SPEC_V2"
        )
    if enable_spec_v2 and topk is not None and topk > 1 and not v2_only:
        enable_spec_v2 = False  # 0.5.12: an explicit topk > 1 quietly falls back to v1, overlap off
    if algo == "NGRAM" and not v2_only:
        enable_spec_v2 = False  # spec v2 covers EAGLE, EAGLE3 and STANDALONE up to 0.5.12
    if num_steps is None:
        # 0.5.9 auto_choose_speculative_params for architectures other than Llama/Grok;
        # the Llama-family default (5, 4, 8) applies to the profiles shipped here.
        num_steps, topk, num_draft_tokens = 5, 4, 8
    topk = 1 if topk is None else topk
    if topk == 1:
        num_draft_tokens = num_steps + 1
    elif num_draft_tokens is None:
        num_draft_tokens = num_steps * topk + 1
    if num_steps < 0 or topk < 1 or num_draft_tokens < 1 or (num_steps < 1 and adaptive_steps is None):
        raise ConfigError(
            f"speculative settings must be positive: num_steps={num_steps}, topk={topk}, "
            f"num_draft_tokens={num_draft_tokens}"
        )
    return SpecConfig(algo, num_steps, topk, num_draft_tokens, spec_v2=enable_spec_v2)
