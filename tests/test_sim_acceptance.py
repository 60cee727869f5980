"""The acceptance model: per-position chains and SGLang-shaped trees, exact distributions, the sampler
(and the engine) emitting that distribution, parameters solved from published accept lengths, and
acceptance per prompt set."""

from __future__ import annotations

import collections
import dataclasses
import math
import random

import pytest

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel, beta_bins, tree_pmf
from workbench.sim._acceptance_solve import AcceptPoint
from workbench.sim._cost_model import CostModel
from workbench.sim._engine import EngineCore, SimRequest
from workbench.sim._profiles import load_profile
from workbench.sim._spec import SpecConfig

CHAIN3 = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4)
TREE = SpecConfig("EAGLE3", num_steps=2, topk=4, num_draft_tokens=16)
DEEP = SpecConfig("EAGLE3", num_steps=8, topk=8, num_draft_tokens=64)


def test_chain_is_the_product_of_per_position_rates() -> None:
    a, r = 0.7, 0.9
    pmf = tree_pmf(a, r, 0.3, 3, 1, 4)
    reach = [1.0, a, a * a * r, a * a * r * a * r * r]
    expected = [reach[k] - (reach[k + 1] if k < 3 else 0.0) for k in range(4)]
    assert pmf == pytest.approx(expected)
    model = AcceptanceModel(alpha=a, depth_decay=r, sibling=0.3, concentration=float("inf"))
    assert model.expected_accept_length(CHAIN3) == pytest.approx(1 + sum(reach[1:]))


def test_tree_follows_sglang_selection() -> None:
    # topk 2, two steps, all 2 + 4 candidates fit (7 tokens): depth 1 holds the target with
    # 1 - (1 - p)(1 - s); depth 2 likewise below whichever depth-1 node matched.
    p, s = 0.6, 0.5
    pmf = tree_pmf(p, 1.0, s, 2, 2, 7)
    hit = 1 - (1 - p) * (1 - s)
    assert pmf == pytest.approx([1 - hit, hit * (1 - hit), hit * hit])
    # Pruned to 3 tokens (2 candidates): the two best by cumulative score are rank 1 at depth 1 (0.6) and
    # its rank-1 child (0.36), which beats the depth-1 sibling (0.4 x 0.5 = 0.2): a chain of 2.
    assert tree_pmf(p, 1.0, s, 2, 2, 3) == pytest.approx([0.4, 0.6 * 0.4, 0.36])
    # With a strong sibling the depth-1 sibling wins the second slot: a star of depth 1.
    assert tree_pmf(0.5, 1.0, 0.9, 2, 2, 3) == pytest.approx([0.05, 0.95])
    # topk 1 forces a chain whatever the draft-token count says.
    assert tree_pmf(p, 1.0, s, 3, 1, 4) == tree_pmf(p, 1.0, 0.0, 3, 1, 4)


def test_wider_and_deeper_trees_accept_more_and_width_has_diminishing_returns() -> None:
    model = AcceptanceModel(alpha=0.65, depth_decay=0.95, sibling=0.4, concentration=30.0)
    lengths = [model.expected_accept_length(SpecConfig("EAGLE3", 4, k, 4 * k * k + 1)) for k in (1, 2, 3, 4)]
    assert lengths == sorted(lengths)
    gains = [b - a for a, b in zip(lengths, lengths[1:])]
    assert gains[0] > gains[1] > gains[2] >= 0
    budget = [model.expected_accept_length(SpecConfig("EAGLE3", 6, 4, n)) for n in (4, 8, 16, 32, 64)]
    assert budget == sorted(budget)
    assert model.expected_accept_length(SpecConfig()) == 1.0


def test_beta_bins_keep_the_mean_and_spread() -> None:
    bins = beta_bins(0.7, 20.0, 16)
    assert len(bins) == 16 and list(bins) == sorted(bins)
    assert sum(bins) / 16 == pytest.approx(0.7, abs=1e-6)
    var = sum((b - 0.7) ** 2 for b in bins) / 16
    assert var == pytest.approx(0.7 * 0.3 / 21, rel=0.1)  # between-bin variance: most of Beta's
    assert beta_bins(0.7, float("inf"), 16) == (0.7,)


def _chi_square(counts: dict[int, int], pmf: tuple[float, ...], n: int) -> tuple[float, int]:
    """Pearson's statistic over the categories (those expected below 5 pooled) and its degrees of freedom."""
    cells, pooled_obs, pooled_exp = [], 0, 0.0
    for k, p in enumerate(pmf):
        if n * p >= 5:
            cells.append((counts.get(k, 0), n * p))
        else:
            pooled_obs += counts.get(k, 0)
            pooled_exp += n * p
    if pooled_exp > 0:
        cells.append((pooled_obs, pooled_exp))
    return sum((o - e) ** 2 / e for o, e in cells), len(cells) - 1


#: 0.999 quantiles of chi-square with 1..12 degrees of freedom (standard tables).
CHI2_999 = [10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59, 31.26, 32.91]


@pytest.mark.parametrize("spec", [CHAIN3, TREE, DEEP], ids=["chain3", "topk4x2-16", "topk8x8-64"])
def test_sampler_emits_the_model_distribution(spec: SpecConfig) -> None:
    model = AcceptanceModel(alpha=0.64, depth_decay=0.97, sibling=0.5, concentration=25.0)
    rng = random.Random(11)
    counts: collections.Counter[int] = collections.Counter()
    n = 40_000
    for _ in range(n):  # one verify per request: independent draws from the mixture, so the test is exact
        counts[model.sample_accepted_drafts(spec, model.sample_request_alpha(rng), rng)] += 1
    pmf = model.accept_distribution(spec)
    stat, dof = _chi_square(counts, pmf, n)
    assert stat < CHI2_999[dof - 1], (stat, dof, pmf, sorted(counts.items()))
    mean = sum(k * c for k, c in counts.items()) / n
    sd = math.sqrt(sum(k * k * p for k, p in enumerate(pmf)) - (model.expected_accept_length(spec) - 1) ** 2)
    assert abs(1 + mean - model.expected_accept_length(spec)) < 4 * sd / math.sqrt(n)


def test_sampler_per_request_is_exact() -> None:
    """One request (fixed alpha): independent draws, so the chi-square test is exact at 0.999."""
    model = AcceptanceModel(alpha=0.7, depth_decay=0.9, sibling=0.35, concentration=float("inf"))
    rng = random.Random(5)
    n = 40_000
    counts = collections.Counter(model.sample_accepted_drafts(TREE, 0.7, rng) for _ in range(n))
    stat, dof = _chi_square(counts, model.request_pmf(TREE), n)
    assert stat < CHI2_999[dof - 1]


def test_engine_emits_the_model_distribution() -> None:
    """The engine's cached per-request draws give the same histogram as the model (SGLang's
    ``spec_accept_histogram`` per request, summed)."""
    model = AcceptanceModel(alpha=0.6, depth_decay=1.0, sibling=0.45, concentration=40.0)
    engine = EngineCore(
        cost=CostModel(base_ms=10, per_token_ms=0.1),
        acceptance=model,
        spec=TREE,
        max_running_requests=64,
        rng=random.Random(3),
    )
    for i in range(600):
        engine.submit(SimRequest(rid=f"r{i}", prompt_tokens=8, max_new_tokens=80))
    finished = []
    while not engine.idle:
        it = engine.step()
        finished += [e.request for e in it.emissions if e.finished]
    counts: collections.Counter[int] = collections.Counter()
    for req in finished:
        for k, c in enumerate(req.accept_histogram):
            counts[k] += c
    n = sum(counts.values())
    mean = sum(k * c for k, c in counts.items()) / n
    assert 1 + mean == pytest.approx(model.expected_accept_length(TREE), abs=0.06)
    stat, dof = _chi_square(counts, model.accept_distribution(TREE), n)
    # Verifies of one request share its alpha, so the counts are clustered by request (600 of them) and
    # the statistic's spread is wider than chi-square's; three times the 0.999 quantile allows for it.
    assert stat < CHI2_999[dof - 1] * 3


def test_parameters_solved_from_published_accept_lengths() -> None:
    table = {
        "depth_decay": 1.0,
        "concentration": 50.0,
        "chain": {"num_steps": 7, "accept_length": 2.77},
        "tree": {"num_steps": 8, "topk": 8, "num_draft_tokens": 64, "accept_length": 5.39},
    }
    model = AcceptanceModel.from_table(table)
    chain7 = SpecConfig("EAGLE3", 7, 1, 8)
    assert model.expected_accept_length(chain7) == pytest.approx(2.77, abs=1e-4)
    assert model.expected_accept_length(DEEP) == pytest.approx(5.39, abs=1e-4)
    assert [p.accept_length for p in model.points] == [2.77, 5.39]
    two = AcceptanceModel.from_table(
        {
            "concentration": 50.0,
            "chain": [{"num_steps": 3, "accept_length": 2.2}, {"num_steps": 7, "accept_length": 2.45}],
        }
    )
    assert two.depth_decay < 1.0
    assert two.expected_accept_length(CHAIN3) == pytest.approx(2.2, abs=1e-4)
    assert two.expected_accept_length(chain7) == pytest.approx(2.45, abs=1e-4)
    with pytest.raises(ConfigError, match="given and solved"):
        AcceptanceModel.from_table({**table, "alpha": 0.6})
    # a calibrated draft's tree never accepts less than its chain: the error names the draft calibration
    with pytest.raises(ConfigError, match="less than a calibrated draft's tree.*draft_calibration"):
        AcceptanceModel.from_table(
            {**table, "tree": {"num_steps": 8, "topk": 8, "num_draft_tokens": 64, "accept_length": 2.0}}
        )
    with pytest.raises(ConfigError, match="unknown keys"):
        AcceptanceModel.from_table({"topk_exponent": 0.5})
    with pytest.raises(ConfigError, match="topk 1"):
        AcceptanceModel.from_table({"chain": {"num_steps": 3, "topk": 4, "accept_length": 2.0}})
    assert AcceptPoint(3, 2.0, topk=4).spec.num_draft_tokens == 13


def test_shipped_profiles_keep_their_published_accept_lengths() -> None:
    prof = load_profile("h100-llama3-8b-eagle3")
    h100 = prof.acceptance  # the workload's: greedy
    assert h100 is prof.acceptance_for(temperature=0.0) is prof.acceptance_for(top_k=1)
    assert h100.expected_accept_length(SpecConfig("EAGLE3", 7, 1, 8)) == pytest.approx(3.53, abs=1e-3)  # vLLM #26191
    assert h100.expected_accept_length(DEEP) == pytest.approx(5.39, abs=1e-3)  # PR #4247
    assert h100.expected_accept_length(CHAIN3) == pytest.approx(2.69, abs=5e-3)  # the paper's chain of 3
    sampled = prof.acceptance_for(temperature=1.0)
    assert sampled.expected_accept_length(SpecConfig("EAGLE3", 7, 1, 8)) == pytest.approx(2.77, abs=1e-3)
    assert sampled.expected_accept_length(CHAIN3) == pytest.approx(2.33, abs=5e-3)
    assert sampled.sibling == h100.sibling  # carried: no sampled tree figure
    gsm8k = prof.acceptance_for("gsm8k", temperature=0.7)
    assert gsm8k.expected_accept_length(SpecConfig("EAGLE3", 7, 1, 8)) == pytest.approx(3.34, abs=1e-3)
    assert prof.acceptance_for("gsm8k", temperature=0.0) is h100  # no greedy GSM8K figure: MT-bench's
    assert prof.prompt_sets == ("gsm8k", "humaneval")
    seed = load_profile("seed-pcie-8gpu").acceptance
    assert seed.expected_accept_length(TREE) == pytest.approx(2.729, abs=1e-3)
    assert seed.expected_accept_length(SpecConfig("EAGLE3", 2, 1, 3)) == pytest.approx(2.20, abs=5e-3)


def test_acceptance_per_prompt_set(tmp_path) -> None:
    text = load_profile("h100-llama3-8b-eagle3").path.read_text()
    text = text.replace(
        "[calibration]\n",
        """[acceptance.prompt_sets.code]
chain = { num_steps = 7, accept_length = 3.4, source = "test" }

[acceptance.prompt_sets.fixed]
alpha = 0.5

[calibration]
""",
        1,
    )
    text = text.replace("[workload]\n", '[workload]\nprompt_set = "code"\n', 1)
    path = tmp_path / "p.toml"
    path.write_text(text)
    prof = load_profile(path)
    chain7 = SpecConfig("EAGLE3", 7, 1, 8)
    assert prof.acceptance.expected_accept_length(chain7) == pytest.approx(3.4, abs=1e-3)  # the workload's set
    assert prof.acceptance_for("code") is prof.acceptance
    base = prof.acceptance_for("mtbench")  # no table of its own: [acceptance] (greedy, the workload's regime)
    assert base.expected_accept_length(chain7) == pytest.approx(3.53, abs=1e-3)
    # a set's figures lie over the regime's: under the sampled regime the set's chain still wins
    assert prof.acceptance_for("code", temperature=1.0).expected_accept_length(chain7) == pytest.approx(3.4, abs=1e-3)
    fixed = prof.acceptance_for("fixed")
    # the set's alpha replaces the chain point; the tree point stays and re-solves sibling at the new alpha
    assert fixed.alpha == 0.5 and fixed.sibling > base.sibling
    assert fixed.expected_accept_length(DEEP) == pytest.approx(5.39, abs=1e-3)


def test_model_validates_its_parameters() -> None:
    for bad in ({"alpha": 1.2}, {"depth_decay": 0.0}, {"sibling": 1.0}, {"bins": 0}):
        with pytest.raises(ValueError):
            AcceptanceModel(**bad)
    assert dataclasses.replace(AcceptanceModel(), sibling=0.0).sibling == 0.0


def test_chain_positions_match_the_published_per_position_rates() -> None:
    """vLLM issue #26191: EAGLE-3 on Llama-3.1-8B, 7 speculative tokens, 80 MT-bench prompts, temperature 0:
    "acceptance at token i" (drafts whose position i was accepted, over all drafts), two digits."""
    from workbench.sim import load_profile
    from workbench.sim._spec import SpecConfig

    published = [0.74, 0.54, 0.41, 0.31, 0.23, 0.17, 0.13]
    acc = load_profile("h100-llama3-8b-eagle3").acceptance_for(regime="greedy")
    pmf = acc.accept_distribution(SpecConfig(algorithm="EAGLE3", num_steps=7, topk=1, num_draft_tokens=8))
    at_least = [sum(pmf[d:]) for d in range(1, 8)]
    for d, (model, pub) in enumerate(zip(at_least, published), 1):
        assert abs(model - pub) <= 0.006, (d, model, pub)


def test_a_tree_below_its_chain_solves_the_draft_calibration() -> None:
    """A draft that under-rates its best candidate (``p_d ** c``, c > 1) spends a small tree on siblings and
    accepts less than the chain of the same depth; such a point solves ``draft_calibration`` instead of
    being refused, with ``sibling`` given or from a second, larger tree."""
    chain = {"num_steps": 7, "accept_length": 3.53}
    base = AcceptanceModel.from_table({"depth_decay": 1.0, "concentration": 50.0, "sibling": 0.3, "chain": chain})
    small = SpecConfig("EAGLE3", 3, 4, 8)
    truth = dataclasses.replace(base, draft_calibration=4.0)
    assert truth.expected_accept_length(small) < base.expected_accept_length(CHAIN3)  # below its chain
    assert base.expected_accept_length(small) > base.expected_accept_length(CHAIN3)  # a calibrated draft is above
    assert truth.expected_accept_length(CHAIN3) == base.expected_accept_length(CHAIN3)  # chains are unchanged
    published = round(truth.expected_accept_length(small), 3)
    one = AcceptanceModel.from_table(
        {
            "depth_decay": 1.0,
            "concentration": 50.0,
            "sibling": 0.3,
            "chain": chain,
            "tree": {"num_steps": 3, "topk": 4, "num_draft_tokens": 8, "accept_length": published},
        }
    )
    assert one.sibling == 0.3 and one.draft_calibration > 1.0
    assert one.expected_accept_length(small) == pytest.approx(published, abs=0.05)
    # two trees solve both: the values that made them come back
    wide = SpecConfig("EAGLE3", 5, 4, 16)
    points = [
        {
            "num_steps": 5,
            "topk": 4,
            "num_draft_tokens": 16,
            "accept_length": round(truth.expected_accept_length(wide), 3),
        },
        {"num_steps": 3, "topk": 4, "num_draft_tokens": 8, "accept_length": published},
    ]
    two = AcceptanceModel.from_table({"depth_decay": 1.0, "concentration": 50.0, "chain": chain, "tree": points})
    assert two.sibling == pytest.approx(0.3, abs=0.01)
    assert two.draft_calibration == pytest.approx(4.0, rel=0.05)
    assert two.expected_accept_length(small) == pytest.approx(published, abs=0.01)
    assert len(two.points) == 3
    with pytest.raises(ConfigError, match="given and solved"):
        AcceptanceModel.from_table(
            {
                "sibling": 0.3,
                "chain": chain,
                "tree": [
                    {"num_steps": 8, "topk": 8, "num_draft_tokens": 64, "accept_length": 4.45},
                    {"num_steps": 3, "topk": 4, "num_draft_tokens": 8, "accept_length": 2.6},
                ],
            }
        )
    with pytest.raises(ValueError, match="draft_calibration must be > 0"):
        dataclasses.replace(base, draft_calibration=0.0)
