"""Acceptance model: how many drafted tokens the target model accepts per verify step.

The model is a chain with per-depth acceptance probabilities. At depth ``d``
(1-based) of the draft tree, the target's token is among the ``w`` candidates the
draft proposed with probability::

    p_d = 1 - (1 - alpha * depth_decay ** (d - 1)) ** (w ** topk_exponent)

where ``alpha`` is the top-1 acceptance probability at depth 1 and ``w`` the tree's
effective width (``topk``, limited by the draft-token budget). A verify step accepts
``k`` drafts when depths 1..k match and depth k+1 does not; the accept length is
``k + 1`` (the bonus token the target samples itself is included, as in SGLang's
``spec_accept_length``, SGLang 0.5.9 ``tokenizer_manager._calculate_spec_decoding_metrics``). Requests differ: each draws its
own ``alpha`` from a Beta distribution with the profile's mean and
``concentration`` (a + b), so some prompts are easier to draft than others.

Sources of the shape: EAGLE (Li et al., 2024) and EAGLE-3 (Li et al., 2025) report
acceptance falling with depth and rising with tree width; the parameters are set
per profile, not taken from those papers.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from workbench.sim._spec import SpecConfig


@dataclasses.dataclass(frozen=True)
class AcceptanceModel:
    """Parameters of the acceptance model (see module docstring).

    Attributes:
        alpha: mean top-1 acceptance probability at depth 1, in (0, 1).
        depth_decay: factor applied to alpha per extra depth, in (0, 1].
        topk_exponent: how much a wider tree helps; 0 means not at all.
        concentration: Beta concentration (a + b) of the per-request alpha; larger
            means requests are more alike. ``float('inf')`` disables the spread.
    """

    alpha: float = 0.7
    depth_decay: float = 0.9
    topk_exponent: float = 0.5
    concentration: float = 20.0

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0.0 < self.depth_decay <= 1.0:
            raise ValueError(f"depth_decay must be in (0, 1], got {self.depth_decay}")
        if self.topk_exponent < 0 or self.concentration <= 0:
            raise ValueError("topk_exponent must be >= 0 and concentration > 0")

    # -- per-request and per-step sampling ---------------------------------
    def sample_request_alpha(self, rng: random.Random) -> float:
        """Draw one request's top-1 acceptance probability (Beta around ``alpha``)."""
        if self.concentration == float("inf"):
            return self.alpha
        a = self.alpha * self.concentration
        b = (1.0 - self.alpha) * self.concentration
        return rng.betavariate(a, b)

    def depth_probs(self, spec: SpecConfig, request_alpha: float | None = None) -> list[float]:
        """Probabilities ``[p_1, ..., p_D]`` that depth d matches given depths < d matched.

        ``D`` is the tree depth the spec settings allow (see :meth:`SpecConfig.tree_depth`).
        """
        alpha = self.alpha if request_alpha is None else request_alpha
        width = spec.tree_width()
        reach = width**self.topk_exponent
        return [
            1.0 - (1.0 - alpha * self.depth_decay ** (d - 1)) ** reach
            for d in range(1, spec.tree_depth() + 1)
        ]

    def sample_accepted_drafts(self, spec: SpecConfig, request_alpha: float, rng: random.Random) -> int:
        """Number of draft tokens accepted in one verify step (0..tree depth)."""
        accepted = 0
        for p in self.depth_probs(spec, request_alpha):
            if rng.random() >= p:
                break
            accepted += 1
        return accepted

    # -- expectations ------------------------------------------------------
    def expected_accept_length(self, spec: SpecConfig, *, samples: int = 200_000, seed: int = 0) -> float:
        """Mean accept length per verify step (bonus token included), over requests.

        ``E[1 + sum_i prod_{d<=i} p_d(alpha_r)]`` with ``alpha_r`` Beta-distributed;
        the expectation over ``alpha_r`` is taken by Monte Carlo with ``samples``
        draws (standard error below 1e-3 at the default).
        """
        if spec.tree_depth() == 0:
            return 1.0
        if self.concentration == float("inf"):
            alphas = np.array([self.alpha])
        else:
            gen = np.random.default_rng(seed)
            a = self.alpha * self.concentration
            b = (1.0 - self.alpha) * self.concentration
            alphas = gen.beta(a, b, size=samples)
        reach = spec.tree_width() ** self.topk_exponent
        survive = np.ones_like(alphas)
        total = np.ones_like(alphas)
        for d in range(1, spec.tree_depth() + 1):
            p = 1.0 - (1.0 - alphas * self.depth_decay ** (d - 1)) ** reach
            survive = survive * p
            total = total + survive
        return float(total.mean())
