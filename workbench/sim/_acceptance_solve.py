"""Solving the acceptance model's parameters from published (or measured) accept lengths.

A profile's ``[acceptance]`` table gives some parameters of
:class:`~workbench.sim._acceptance.AcceptanceModel` and published points (:class:`AcceptPoint`: a mean
accept length at one speculative setting) from which the others are solved
(:func:`solve_table`): one chain point (``topk 1``) sets ``alpha``; two chain points at different
depths set ``alpha`` and ``depth_decay``; one tree point (``topk > 1``) sets ``sibling`` (or, with
``sibling`` given, ``draft_calibration``); two tree points set both. :func:`solve` matches the model's
exact expected accept lengths to the points by bisection; where no value meets a point, ConfigError
says by how much and why. Never a throughput.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.sim._spec import SpecConfig

if TYPE_CHECKING:  # the model module imports this one to solve its tables
    from workbench.sim._acceptance import AcceptanceModel


@dataclasses.dataclass(frozen=True)
class AcceptPoint:
    """A published (or measured) mean accept length at one speculative setting.

    Attributes:
        num_steps: ``--speculative-num-steps``.
        accept_length: mean accept length per verify, bonus token included.
        topk: ``--speculative-eagle-topk`` (1: a chain).
        num_draft_tokens: ``--speculative-num-draft-tokens`` (default ``num_steps + 1`` for a chain,
            ``num_steps * topk + 1`` for a tree, as SGLang 0.5.9 fills it in).
        source: where the figure comes from.
    """

    num_steps: int
    accept_length: float
    topk: int = 1
    num_draft_tokens: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.num_steps < 1 or self.topk < 1:
            raise ValueError(f"accept point needs num_steps >= 1 and topk >= 1, got {self.num_steps}, {self.topk}")
        if not 1.0 < self.accept_length <= self.num_steps + 1:
            raise ValueError(f"accept_length {self.accept_length} must be in (1, num_steps + 1]")

    @property
    def spec(self) -> SpecConfig:
        """The speculative settings the point was measured with."""
        if self.topk == 1:
            n = self.num_steps + 1
        else:
            n = self.num_draft_tokens or self.num_steps * self.topk + 1
        return SpecConfig("EAGLE3", num_steps=self.num_steps, topk=self.topk, num_draft_tokens=n)


def solve_table(model_type: type[AcceptanceModel], table: Mapping[str, Any]) -> AcceptanceModel:
    """A ``model_type`` from a profile's ``[acceptance]`` table: its given values, the rest solved from its points
    (the keys and rules of :meth:`~workbench.sim._acceptance.AcceptanceModel.from_table`).

    Raises:
        ConfigError: an unknown key, a parameter given and solved, a malformed or misplaced point, too many
            points, or a point no parameter value reaches.
    """
    fields = {"alpha", "depth_decay", "sibling", "concentration", "bins", "draft_calibration"}
    unknown = set(table) - fields - {"chain", "tree", "source", "why", "prompt_sets"}
    if unknown:
        raise ConfigError(
            f"[acceptance] unknown keys {sorted(unknown)}; known: {sorted(fields)}, chain, tree, "
            "source, why, prompt_sets"
        )
    given = {k: table[k] for k in fields if k in table}
    chain = table.get("chain", [])
    chain = [chain] if isinstance(chain, Mapping) else list(chain)
    tree = table.get("tree", [])
    tree = [tree] if isinstance(tree, Mapping) else list(tree)
    try:
        chain_pts = tuple(AcceptPoint(**dict(p)) for p in chain)
        tree_pts = tuple(AcceptPoint(**dict(p)) for p in tree)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[acceptance] point is malformed: {exc}") from exc
    if any(p.topk != 1 for p in chain_pts) or any(p.topk < 2 for p in tree_pts):
        raise ConfigError("[acceptance] chain points need topk 1 and tree points topk > 1")
    if len(chain_pts) > 2 or len(tree_pts) > 2:
        raise ConfigError(
            "[acceptance] at most two chain points (they set alpha and depth_decay) and two tree "
            "points (sibling and draft_calibration)"
        )
    solved = ({"alpha"} if chain_pts else set()) | ({"depth_decay"} if len(chain_pts) == 2 else set())
    if len(tree_pts) == 2:
        solved |= {"sibling", "draft_calibration"}
    elif tree_pts:
        solved |= {"draft_calibration"} if "sibling" in given and "draft_calibration" not in given else {"sibling"}
    if solved & set(given):
        raise ConfigError(f"[acceptance] {sorted(solved & set(given))} given and solved from a point; give one")
    model = model_type(**given)
    return solve(model, chain_pts, tree_pts, solve_draft="draft_calibration" in solved)


def _bisect(f, lo: float, hi: float, what: str, iterations: int = 48) -> float:
    """Root of an increasing ``f`` on [lo, hi]; ConfigError when it does not change sign."""
    flo, fhi = f(lo), f(hi)
    if flo > 0 or fhi < 0:
        raise ConfigError(
            f"[acceptance] no {what} in [{lo:g}, {hi:g}] reaches the published accept length "
            f"(the model gives {flo:+.3f} .. {fhi:+.3f} around it)"
        )
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-7:
            break
    return 0.5 * (lo + hi)


#: Range of the draft calibration exponent a tree point may solve.
DRAFT_CALIBRATION_RANGE = (0.25, 8.0)
#: Largest miss (accept length) allowed where the tree's shape changes in steps with the draft calibration.
TREE_STEP_TOLERANCE = 0.05


def _shape(p: AcceptPoint) -> str:
    return f"{p.num_steps}/{p.topk}/{p.spec.num_draft_tokens}"


def _two_trees_unmet(
    model: AcceptanceModel,
    large: AcceptPoint,
    small: AcceptPoint,
    grid: Sequence[float],
    at: Callable[[float], AcceptanceModel],
) -> str:
    """Why no (sibling, draft_calibration) meets both trees, with the numbers: the range of accept lengths the
    model gives the small tree at every draft calibration that holds the large tree, against the published one."""
    reach: list[tuple[float, float]] = []
    for c in grid:
        try:
            reach.append((c, at(c).expected_accept_length(small.spec)))
        except ConfigError:
            continue
    head = (
        f"[acceptance] no (sibling, draft_calibration) meets both trees ({large.accept_length} at "
        f"{_shape(large)}, {small.accept_length} at {_shape(small)})"
    )
    if not reach:
        return (
            f"{head}: no draft_calibration in [{grid[0]:.3g}, {grid[-1]:.3g}] reaches the {_shape(large)} tree's "
            f"{large.accept_length} at any sibling; drop that point or give depth_decay"
        )
    lo = min(v for _, v in reach)
    hi = max(v for _, v in reach)
    cs = [c for c, _ in reach]
    side = "below" if small.accept_length < lo else "above"
    gap = lo - small.accept_length if side == "below" else small.accept_length - hi
    published = large.accept_length - small.accept_length
    model_gain = large.accept_length - (lo if side == "below" else hi)
    limit = "at most" if side == "below" else "at least"
    why = (
        "a draft's acceptance that does not fall with depth (depth_decay 1, the largest) still prices the extra "
        "depth below the pair; the pair would need acceptance rising with depth, which no draft of this kind "
        "(one acceptance per depth, a sibling gain, a calibration exponent) has: the two figures likely come from "
        "runs that differ in more than the tree (engine release, prompts, or settings assumed for one of them). "
        "Use two trees from one run, or keep one tree"
        if side == "below" and model.depth_decay >= 1.0
        else "no draft of this kind (one acceptance per depth, a sibling gain, a calibration exponent) meets both. "
        "Use two trees from one run, give another depth_decay (or a second chain point), or keep one tree"
    )
    return (
        f"{head}: holding the {_shape(large)} tree at {large.accept_length}, this model (alpha {model.alpha:.3f}, "
        f"depth_decay {model.depth_decay:.2f}) gives the {_shape(small)} tree {lo:.2f} to {hi:.2f} at every "
        f"draft_calibration from {min(cs):.3g} to {max(cs):.3g} (beyond them the large tree is out of reach), "
        f"never {small.accept_length}: {gap:.2f} {side} it. The pair says the trees differ by {published:.2f} "
        f"tokens; the model makes it {limit} {model_gain:.2f}: {why}"
    )


def solve(
    model: AcceptanceModel,
    chain: Sequence[AcceptPoint] = (),
    tree: AcceptPoint | Sequence[AcceptPoint] | None = None,
    *,
    solve_draft: bool = False,
) -> AcceptanceModel:
    """``model`` with ``alpha`` (one chain point), ``depth_decay`` (two), ``sibling`` (a tree point) and
    ``draft_calibration`` (``solve_draft``: from a second tree point, or from the one point with ``sibling``
    given) solved so that its expected accept lengths equal the points'. Exact expectations, bisection.

    The accept length falls as ``draft_calibration`` rises (the draft spends the tree on siblings), but in
    steps where the tree's shape changes; where no value lands within :data:`TREE_STEP_TOLERANCE` of a
    point, ConfigError says so.
    """
    chain = tuple(sorted(chain, key=lambda p: p.num_steps))
    trees: tuple[AcceptPoint, ...] = () if tree is None else (tree,) if isinstance(tree, AcceptPoint) else tuple(tree)
    trees = tuple(sorted(trees, key=lambda p: (-p.spec.num_draft_tokens, -p.num_steps)))  # the largest tree first

    def with_alpha(m: AcceptanceModel, point: AcceptPoint) -> AcceptanceModel:
        f = lambda a: dataclasses.replace(m, alpha=a).expected_accept_length(point.spec) - point.accept_length  # noqa: E731
        return dataclasses.replace(m, alpha=_bisect(f, 1e-4, 1.0 - 1e-4, "alpha"))

    def with_sibling(m: AcceptanceModel, point: AcceptPoint) -> AcceptanceModel:
        g = lambda s: dataclasses.replace(m, sibling=s).expected_accept_length(point.spec) - point.accept_length  # noqa: E731
        if m.draft_calibration != 1.0 and g(0.0) > 0:
            # a miscalibrated draft's tree is its chain at sibling 0 (no sibling scores), dips below it, then
            # rises with sibling: take the root on the rising branch (where a wider tree gains, as at c = 1)
            grid = [i / 20 for i in range(20)] + [0.999]
            values = [g(v) for v in grid]
            rising = [(a, b) for a, b, fa, fb in zip(grid, grid[1:], values, values[1:]) if fa < 0 <= fb]
            if rising:
                lo, hi = rising[-1]
                return dataclasses.replace(m, sibling=_bisect(g, lo, hi, "sibling", iterations=24))
        try:
            return dataclasses.replace(m, sibling=_bisect(g, 0.0, 0.999, "sibling", iterations=30))
        except ConfigError as exc:
            if g(0.0) > 0 and not solve_draft:
                raise ConfigError(
                    f"[acceptance] the tree {point.num_steps}/{point.topk}/{point.spec.num_draft_tokens} accepts "
                    f"{point.accept_length}, less than a calibrated draft's tree ever does ({g(0.0) + point.accept_length:.3f} "
                    "at sibling 0): its draft does not rank candidates by the target's acceptance. Give a second, "
                    "larger tree point (or sibling) so that draft_calibration is solved too"
                ) from exc
            raise

    def with_draft(m: AcceptanceModel, point: AcceptPoint) -> AcceptanceModel:
        lo, hi = DRAFT_CALIBRATION_RANGE

        def h(c: float) -> float:  # increasing in c: the model falls below the point as c rises
            return point.accept_length - dataclasses.replace(m, draft_calibration=c).expected_accept_length(point.spec)

        c = _bisect(h, lo, hi, "draft_calibration", iterations=40)
        best = min((c, hi, lo, 1.0), key=lambda v: abs(h(v)))
        if abs(h(best)) > TREE_STEP_TOLERANCE:
            raise ConfigError(
                f"[acceptance] no draft_calibration lands the tree {point.num_steps}/{point.topk}/"
                f"{point.spec.num_draft_tokens} on {point.accept_length} (closest {point.accept_length - h(best):.3f} at "
                f"{best:.3g}: the tree's shape changes in steps there); drop the point or give draft_calibration"
            )
        return dataclasses.replace(m, draft_calibration=best)

    if len(chain) == 1:
        model = with_alpha(model, chain[0])
    elif len(chain) == 2:
        if chain[0].num_steps == chain[1].num_steps:
            raise ConfigError("[acceptance] two chain points need different num_steps")
        deep = chain[1]

        def f(decay: float) -> float:
            try:
                m = with_alpha(dataclasses.replace(model, depth_decay=decay), chain[0])
            except ConfigError:  # so steep a decay that no alpha reaches the shallow point: decay must rise
                return -1.0
            return m.expected_accept_length(deep.spec) - deep.accept_length

        decay = _bisect(f, 0.3, 1.0, "depth_decay", iterations=30)
        model = with_alpha(dataclasses.replace(model, depth_decay=decay), chain[0])
    if len(trees) == 1:
        model = with_draft(model, trees[0]) if solve_draft else with_sibling(model, trees[0])
    elif len(trees) == 2:
        large, small = trees

        def at(c: float) -> AcceptanceModel:
            return with_sibling(dataclasses.replace(model, draft_calibration=c), large)

        def k(c: float) -> float:
            try:
                m = at(c)
            except ConfigError:  # the large tree is out of reach at this c: c is too large
                return 1.0
            return small.accept_length - m.expected_accept_length(small.spec)

        # k is not monotone in c (sibling moves with it to hold the large tree): scan, then bisect the
        # sign change nearest c = 1 (the least miscalibrated draft that meets both points)
        lo, hi = DRAFT_CALIBRATION_RANGE
        grid = [lo * (hi / lo) ** (i / 15) for i in range(16)] + [1.0]
        grid.sort()
        values = [k(c) for c in grid]
        brackets = [(a, b) for (a, fa), (b, fb) in zip(zip(grid, values), zip(grid[1:], values[1:])) if fa * fb <= 0]
        if brackets:
            a, b = min(brackets, key=lambda ab: min(abs(math.log(ab[0])), abs(math.log(ab[1]))))
            fa = k(a)
            for _ in range(20):
                mid = math.sqrt(a * b)
                fm = k(mid)
                if fm * fa <= 0:
                    b = mid
                else:
                    a, fa = mid, fm
            best = math.sqrt(a * b)
        else:
            best = min(grid, key=lambda v: abs(k(v)))
        if abs(k(best)) > TREE_STEP_TOLERANCE:
            raise ConfigError(_two_trees_unmet(model, large, small, grid, at))
        model = at(best)
    return dataclasses.replace(model, points=tuple(chain) + trees)
