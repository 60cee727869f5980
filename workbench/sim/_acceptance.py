"""Acceptance model: how many drafted tokens the target model accepts per verify step.

**Per-position acceptance.** At draft depth ``d`` (1-based), given that the verify reached a node
at depth ``d - 1``, the target's next token is the draft's best candidate with probability::

    p_d = alpha_r * depth_decay ** (d - 1)

and, when it is not, the next-ranked candidate holds it with probability ``sibling`` (given that
every better-ranked one missed). The events are exclusive (the target picks one token), so the
candidate of rank ``j`` holds it with::

    m_d(1) = p_d
    m_d(j) = (1 - p_d) * sibling * (1 - sibling) ** (j - 2)        (j >= 2)

and the ``k`` best candidates together with ``1 - (1 - p_d) (1 - sibling) ** (k - 1)``: each extra
candidate adds less than the one before.

**Tree shape** (SGLang 0.5.9 ``srt/speculative/eagle_utils.py``: ``select_top_k_tokens`` and
``organize_draft_results``). A node's score is the product of the draft's probabilities along its
path; the draft is taken as calibrated (its probability for the rank-``j`` candidate at depth ``d``
is ``m_d(j)``), so a node's score is the probability that the verify reaches it. The candidates are
the root's ``topk`` children (depth 1) and, at each depth ``i`` from 2 to ``num_steps``, the
``topk`` children of each of the ``topk`` best depth-``i - 1`` candidates (the beam). The verified
tree is the root plus the ``num_draft_tokens - 1`` best candidates by score. With ``topk = 1`` it
is a chain of ``num_steps`` drafts.

**Accept length** is ``1 +`` the depth of the deepest accepted node (the longest accepted path;
the bonus token the target samples itself is included, as in SGLang's ``spec_accept_length``).
Because the matches at one node are exclusive, the accepted path is unique, and its distribution
is exact::

    P(the path ends at node v) = reach(v) * (1 - sum of m(c) over v's children c in the tree)

with ``reach(v)`` the product of ``m`` along the path to ``v`` (the root's reach is 1).

**Requests differ**: each draws its own ``alpha_r`` from a Beta distribution with mean ``alpha``
and concentration ``concentration`` (a + b), discretised into ``bins`` bins of equal probability
(each represented by its conditional mean, so the mean stays ``alpha``). The emitted distribution
is the mixture over the bins, which :meth:`AcceptanceModel.accept_distribution` gives exactly and
the sampler draws from: a request picks its bin once, and each verify draws its accepted drafts
from that bin's precomputed table.

**Parameters from published accept lengths** (:meth:`AcceptanceModel.from_table`): a chain point
(``topk 1`` at a given ``num_steps``) sets ``alpha``; two chain points at different depths set
``alpha`` and ``depth_decay``; one tree point (``topk > 1``) sets ``sibling``. Never a throughput.
The points and the solver are :mod:`workbench.sim._acceptance_solve`.

Sources of the shape: EAGLE (Li et al., 2024) and EAGLE-3 (Li et al., 2025) report acceptance
falling with depth (EAGLE-3's Figure 7: almost flat) and rising with tree width.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from collections.abc import Mapping
from typing import Any

from workbench.errors import ConfigError
from workbench.sim._acceptance_solve import AcceptPoint, solve_table
from workbench.sim._spec import SpecConfig

#: Equal-probability bins of the per-request Beta distribution.
DEFAULT_BINS = 16


@functools.lru_cache(maxsize=16384)
def tree_pmf(
    alpha: float,
    depth_decay: float,
    sibling: float,
    num_steps: int,
    topk: int,
    num_draft_tokens: int,
    draft_calibration: float = 1.0,
) -> tuple[float, ...]:
    """Exact distribution of the drafts one verify accepts, for one request's ``alpha``.

    Args:
        alpha: the request's top-1 acceptance at depth 1.
        depth_decay: factor on the top-1 acceptance per extra depth.
        sibling: probability that the next-ranked candidate holds the target's token.
        num_steps, topk, num_draft_tokens: the speculative settings (SGLang's flags).
        draft_calibration: exponent ``c`` of the draft's own probability for its best candidate,
            ``p_d ** c`` (its other candidates share the rest as the target's do); the tree is built
            and pruned by these draft scores, the acceptance follows the target's ``m_d``. 1: a
            calibrated draft (scores = reach probabilities); above 1 the draft under-rates its best
            candidate and spends the budget on siblings, so a small tree can accept less than its chain.

    Returns:
        ``(P(0 accepted), P(1), ..., P(D))``, ``D`` the deepest depth in the verified tree.
    """
    top = [alpha * depth_decay**d for d in range(num_steps)]  # p_d, depth d + 1

    def match(depth: int, rank: int) -> float:
        p = top[depth - 1]
        return p if rank == 0 else (1.0 - p) * sibling * (1.0 - sibling) ** (rank - 1)

    def score(depth: int, rank: int) -> float:
        if draft_calibration == 1.0:
            return match(depth, rank)
        q = top[depth - 1] ** draft_calibration
        return q if rank == 0 else (1.0 - q) * sibling * (1.0 - sibling) ** (rank - 1)

    # candidates: (draft score, depth, parent index or -1, match probability, reach probability)
    nodes: list[tuple[float, int, int, float, float]] = [
        (score(1, j), 1, -1, match(1, j), match(1, j)) for j in range(topk)
    ]
    beam = list(range(len(nodes)))
    for depth in range(2, num_steps + 1):
        fresh = []
        for b in beam:
            for j in range(topk):
                m = match(depth, j)
                nodes.append((nodes[b][0] * score(depth, j), depth, b, m, nodes[b][4] * m))
                fresh.append(len(nodes) - 1)
        beam = sorted(fresh, key=lambda i: (-nodes[i][0], i))[:topk]
    chosen = sorted(sorted(range(len(nodes)), key=lambda i: (-nodes[i][0], i))[: num_draft_tokens - 1])
    kept: set[int] = set()
    for i in chosen:  # parents precede children; a node whose parent was not chosen is unreachable
        if nodes[i][2] == -1 or nodes[i][2] in kept:
            kept.add(i)
    children_mass = {-1: 0.0}
    for i in kept:
        children_mass[nodes[i][2]] = children_mass.get(nodes[i][2], 0.0) + nodes[i][3]
    deepest = max((nodes[i][1] for i in kept), default=0)
    pmf = [0.0] * (deepest + 1)
    pmf[0] = 1.0 - children_mass[-1]
    for i in kept:
        pmf[nodes[i][1]] += nodes[i][4] * (1.0 - children_mass.get(i, 0.0))
    return tuple(max(0.0, x) for x in pmf)


@functools.lru_cache(maxsize=256)
def beta_bins(mean: float, concentration: float, bins: int) -> tuple[float, ...]:
    """Conditional means of ``bins`` equal-probability bins of Beta(mean * c, (1 - mean) * c).

    Computed on a fine grid (no SciPy); the bins' average is the mean to within 1e-6.
    """
    if math.isinf(concentration) or bins == 1:
        return (mean,)
    import numpy as np

    a, b = mean * concentration, (1.0 - mean) * concentration
    x = (np.arange(200_000) + 0.5) / 200_000
    logpdf = (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x)
    w = np.exp(logpdf - logpdf.max())
    w /= w.sum()
    cdf = np.cumsum(w)
    edges = np.searchsorted(cdf, np.arange(1, bins) / bins)
    out = []
    for lo, hi in zip(np.concatenate([[0], edges]), np.concatenate([edges, [len(x)]])):
        mass = w[lo:hi].sum()
        out.append(float((w[lo:hi] * x[lo:hi]).sum() / mass) if mass > 0 else float(x[min(lo, len(x) - 1)]))
    shift = mean - sum(out) / len(out)  # grid error, a few 1e-7
    return tuple(min(max(v + shift, 1e-9), 1.0 - 1e-9) for v in out)


@dataclasses.dataclass(frozen=True)
class AcceptanceModel:
    """Parameters of the acceptance model (see module docstring).

    Attributes:
        alpha: mean top-1 acceptance probability at depth 1, in (0, 1).
        depth_decay: factor on the top-1 acceptance per extra depth, in (0, 1].
        sibling: probability that the next-ranked candidate holds the target's token when the
            better-ranked ones do not, in [0, 1); what a wider tree gains.
        concentration: Beta concentration (a + b) of the per-request alpha; larger means requests
            are more alike; ``float('inf')`` disables the spread.
        bins: equal-probability bins the per-request Beta is discretised into.
        draft_calibration: exponent ``c`` of the draft's own score for its best candidate
            (``p_d ** c``, :func:`tree_pmf`), which builds and prunes the tree; 1 (the default) is a
            calibrated draft; > 0. Changes only trees (``topk > 1``).
        points: the published accept lengths the parameters were solved from (provenance).
    """

    alpha: float = 0.7
    depth_decay: float = 0.9
    sibling: float = 0.2
    concentration: float = 20.0
    bins: int = DEFAULT_BINS
    draft_calibration: float = 1.0
    points: tuple[AcceptPoint, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0.0 < self.depth_decay <= 1.0:
            raise ValueError(f"depth_decay must be in (0, 1], got {self.depth_decay}")
        if not 0.0 <= self.sibling < 1.0:
            raise ValueError(f"sibling must be in [0, 1), got {self.sibling}")
        if self.concentration <= 0 or self.bins < 1:
            raise ValueError("concentration must be > 0 and bins >= 1")
        if not self.draft_calibration > 0.0:
            raise ValueError(f"draft_calibration must be > 0, got {self.draft_calibration}")

    # -- per-request and per-step sampling ---------------------------------
    @property
    def request_alphas(self) -> tuple[float, ...]:
        """The per-request top-1 rates a request can draw (one per bin, equally likely)."""
        return beta_bins(self.alpha, self.concentration, self.bins)

    def sample_request_alpha(self, rng: random.Random) -> float:
        """Draw one request's top-1 acceptance probability (one of :attr:`request_alphas`)."""
        alphas = self.request_alphas
        return alphas[min(int(rng.random() * len(alphas)), len(alphas) - 1)]

    def request_pmf(self, spec: SpecConfig, request_alpha: float | None = None) -> tuple[float, ...]:
        """``P(k drafts accepted)``, k = 0..D, for one request (default: top-1 rate ``alpha``)."""
        if not spec.enabled:
            return (1.0,)
        alpha = self.alpha if request_alpha is None else request_alpha
        return tree_pmf(
            alpha,
            self.depth_decay,
            self.sibling,
            spec.num_steps,
            spec.topk,
            spec.num_draft_tokens,
            self.draft_calibration if spec.topk > 1 else 1.0,
        )

    def depth_probs(self, spec: SpecConfig, request_alpha: float | None = None) -> list[float]:
        """Continuation probabilities ``[h_1, ..., h_D]``: ``P(accepted >= d | accepted >= d - 1)``.

        Drawing ``u < h_d`` depth by depth until the first miss emits exactly :meth:`request_pmf`
        (what the engine does, with these cached per request).
        """
        pmf = self.request_pmf(spec, request_alpha)
        out, survive = [], 1.0
        for d in range(1, len(pmf)):
            nxt = survive - pmf[d - 1]
            out.append(min(1.0, max(0.0, nxt / survive)) if survive > 1e-15 else 0.0)
            survive = nxt
        return out

    def sample_accepted_drafts(self, spec: SpecConfig, request_alpha: float, rng: random.Random) -> int:
        """Number of draft tokens accepted in one verify step (0..tree depth)."""
        accepted = 0
        for h in self.depth_probs(spec, request_alpha):
            if rng.random() >= h:
                break
            accepted += 1
        return accepted

    # -- expectations ------------------------------------------------------
    def accept_distribution(self, spec: SpecConfig) -> tuple[float, ...]:
        """``P(k drafts accepted)`` per verify over requests: the mixture over :attr:`request_alphas`."""
        tables = [self.request_pmf(spec, a) for a in self.request_alphas]
        depth = max(len(t) for t in tables)
        return tuple(sum(t[k] for t in tables if k < len(t)) / len(tables) for k in range(depth))

    def expected_accept_length(self, spec: SpecConfig, *, samples: int | None = None, seed: int | None = None) -> float:
        """Mean accept length per verify step (bonus token included), over requests; exact.

        ``samples`` and ``seed`` are ignored (the Monte Carlo version took them; callers may still pass them).
        """
        return 1.0 + sum(k * p for k, p in enumerate(self.accept_distribution(spec)))

    # -- from published figures ---------------------------------------------
    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> AcceptanceModel:
        """Build from a profile's ``[acceptance]`` table, solving parameters from published points.

        Keys: ``alpha``, ``depth_decay``, ``sibling``, ``concentration``, ``bins``, ``draft_calibration``
        (given values), and ``chain`` (one point table or a list of up to two, ``topk`` 1: ``num_steps``,
        ``accept_length``, ``source``) and ``tree`` (one point or a list of up to two, ``topk > 1``,
        ``num_draft_tokens``). One chain point solves ``alpha`` (``depth_decay`` given), two solve both.
        One tree point solves ``sibling`` (at the given ``draft_calibration``, default 1), or, with
        ``sibling`` given, ``draft_calibration``; two tree points solve both (a tree that accepts less
        than its chain needs the draft calibration). A solved parameter may not also be given. Other keys
        (``source``, ``why``, ``prompt_sets``) are ignored here.

        Raises:
            ConfigError: a parameter given twice, a malformed point, or a point no parameter value reaches.
        """
        import json

        return _from_json(json.dumps(dict(table), sort_keys=True, default=str))


#: SGLang's benchmark knob that forces the mean accept length per verify (``srt/speculative/spec_utils.py``, read
#: once at import; <= 0 turns it off), and its method (only ``match-expected``, the default, is emulated).
FORCED_ACCEPTANCE_ENV = "SGLANG_SIMULATE_ACC_LEN"
FORCED_METHOD_ENV = "SGLANG_SIMULATE_ACC_METHOD"


def forced_length(raw: object) -> float | None:
    """The accept length a ``SGLANG_SIMULATE_ACC_LEN`` value forces, as SGLang reads it: a float, off at 0 or
    below (and NaN); None for off, unset (None) or empty. ``inf`` forces the longest (SGLang clips to
    ``num_steps + 1``).

    Raises:
        ConfigError: a value that is not a number.
    """
    if raw is None or not str(raw).strip():
        return None
    try:
        value = float(str(raw))
    except ValueError:
        raise ConfigError(
            f"{FORCED_ACCEPTANCE_ENV}={raw!r} is not a number (SGLang reads it as a float: the mean "
            "accept length per verify, e.g. 3.0)"
        ) from None
    return value if value > 0 else None  # NaN > 0 is False: off


def forced_accept_length(environ: Mapping[str, str]) -> float | None:
    """The accept length ``environ`` forces (:func:`forced_length` of its ``SGLANG_SIMULATE_ACC_LEN``), or None.

    Raises:
        ConfigError: a value that is not a number, or a method other than ``match-expected``.
    """
    value = forced_length(environ.get(FORCED_ACCEPTANCE_ENV))
    method = environ.get(FORCED_METHOD_ENV, "match-expected")
    if value is not None and method != "match-expected":
        raise ConfigError(
            f"{FORCED_METHOD_ENV}={method!r}: the simulator emulates only SGLang's default "
            "'match-expected' (the rounded-down or rounded-up length, weighted to the mean)"
        )
    return value


@dataclasses.dataclass(frozen=True)
class ForcedAcceptance(AcceptanceModel):
    """Acceptance forced as SGLang's ``SGLANG_SIMULATE_ACC_LEN`` forces it (method ``match-expected``).

    Each verify accepts ``floor(L)`` or ``floor(L) + 1`` tokens (bonus included), the upper with probability
    ``L - floor(L)``, so the mean is ``L``; ``L`` is clipped to ``[1, num_steps + 1]`` first (SGLang's
    ``_sample_simulated_acc_len`` with ``max_len = spec_steps + 1``). The draft's quality plays no part, so the
    other parameters are unused. SGLang draws one length per verify for the whole batch; here each request
    draws its own (the same mean, a narrower spread of a batch's step).

    Attributes:
        forced_length: ``L``, the mean accept length per verify to force.
    """

    forced_length: float = 1.0

    def request_pmf(self, spec: SpecConfig, request_alpha: float | None = None) -> tuple[float, ...]:
        """``P(k drafts accepted)``, k = 0..num_steps: two neighbouring lengths weighted to the forced mean."""
        if not spec.enabled:
            return (1.0,)
        longest = spec.num_steps + 1
        length = max(1.0, min(float(longest), self.forced_length))
        lower = int(length)
        pmf = [0.0] * longest
        upper_weight = length - lower if lower < longest else 0.0
        pmf[lower - 1] += 1.0 - upper_weight
        if upper_weight:
            pmf[lower] += upper_weight
        return tuple(pmf)


@functools.lru_cache(maxsize=64)
def _from_json(text: str) -> AcceptanceModel:
    """:meth:`AcceptanceModel.from_table` behind a cache (solving a tree point takes a fraction of a second)."""
    import json

    return solve_table(AcceptanceModel, json.loads(text))
