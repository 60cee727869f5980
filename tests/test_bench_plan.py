"""Tests for workbench.bench._plan: the sweep plan is built and validated once, with one set of defaults,
one message per mistake, and a JSON form that round-trips (to the host-side runner and the manifest)."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math

import nbformat
import pytest

from workbench.bench import DEFAULT_CONCURRENCY_LEVELS, ClosedLoop, SweepPlan, default_requests_per_level
from workbench.bench._prompts import PROMPTS_DIR, Prompt
from workbench.errors import ConfigError
from workbench.paths import resolve

PROMPTS = [Prompt("a", "coding", "first prompt"), Prompt("b", "agentic", "second \u00e9 prompt")]


def test_build_resolves_levels_requests_and_prompt_sets() -> None:
    plan = SweepPlan.build(concurrency_levels=[1, 4.0], requests_per_level=lambda c: 3 * c, prompt_set="default")
    assert plan.mode == "closed" and plan.concurrency_levels == (1, 4) and plan.request_rates is None
    assert plan.requests_per_level == (3, 12) and plan.total_requests == 15 and plan.num_levels == 2
    assert len(plan.prompts) > 10 and all(p.text for p in plan.prompts)  # texts travel in the plan
    assert plan.prompt_set == "default" and plan.level_label(1) == "concurrency=4"
    open_plan = SweepPlan.build(
        request_rates=[2.5, math.inf], requests_per_level=4, prompt_set=["x"], max_concurrency=2
    )
    assert open_plan.mode == "open" and open_plan.concurrency_levels == ()
    assert open_plan.request_rates == (2.5, math.inf) and open_plan.requests_per_level == (4, 4)
    assert open_plan.prompts == (Prompt("p0", "coding", "x"),) and open_plan.prompt_set is None
    assert open_plan.level_label(0) == "request_rate=2.5 req/s"


@pytest.mark.parametrize(
    "given",
    [
        {"concurrency_levels": (1, 1)},
        {"concurrency_levels": (0,)},
        {"requests_per_level": 0},
        {"concurrency_levels": (1, 64), "requests_per_level": 8},
        {"max_new_tokens": 0},
        {"seed": 1.5},
    ],
)
def test_the_closed_loop_refuses_what_the_sweep_plan_refuses_with_its_message(given: dict) -> None:
    """One set of checks: the offline predictions' ClosedLoop and SweepPlan.build say the same thing."""
    with pytest.raises(ConfigError) as plan_error:
        SweepPlan.build(prompt_set=PROMPTS, **given)
    with pytest.raises(ConfigError) as loop_error:
        ClosedLoop(**given)
    assert str(loop_error.value).split(" for ")[0] == str(plan_error.value).split(" for ")[0]


def test_defaults_are_defined_once() -> None:
    from workbench import benchmark_variant
    from workbench.sim import _offline_figures as offline

    plan = SweepPlan.build(prompt_set=PROMPTS)
    assert plan.concurrency_levels == DEFAULT_CONCURRENCY_LEVELS == (1, 2, 4, 8, 16, 32, 64)
    assert plan.requests_per_level == tuple(max(16, 2 * c) for c in DEFAULT_CONCURRENCY_LEVELS)
    # the notebooks' entry point, the simulator's calibration and the bench share the very objects
    assert inspect.signature(benchmark_variant).parameters["concurrency_levels"].default is DEFAULT_CONCURRENCY_LEVELS
    assert inspect.signature(benchmark_variant).parameters["requests_per_level"].default is None
    sweep_stats = inspect.signature(offline.sweep_stats).parameters
    assert sweep_stats["concurrency_levels"].default is DEFAULT_CONCURRENCY_LEVELS
    assert sweep_stats["requests"].default is default_requests_per_level
    assert inspect.signature(offline.figures).parameters["concurrency_levels"].default is DEFAULT_CONCURRENCY_LEVELS
    # the offline predictions' closed loop: the plan's defaults, and a profile's workload through its checks
    loop = ClosedLoop()
    assert loop.concurrency_levels == DEFAULT_CONCURRENCY_LEVELS and loop.max_new_tokens == plan.max_new_tokens
    assert [loop.requests(c) for c in DEFAULT_CONCURRENCY_LEVELS] == list(plan.requests_per_level)
    # the notebook's parameters cell must write a literal; it writes the same levels
    nb = nbformat.read(resolve("notebooks/spec_vs_baseline.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    scope: dict = {}
    exec(cell.source, scope)  # noqa: S102 - the project's own parameters cell
    assert tuple(scope["concurrency_levels"]) == DEFAULT_CONCURRENCY_LEVELS and scope["requests_per_level"] is None


def test_plan_round_trips_through_json_and_records_prompt_ids() -> None:
    for plan in (
        SweepPlan.build(
            request_rates=[math.inf, 0.5],
            requests_per_level=2,
            prompt_set=PROMPTS,
            max_new_tokens=7,
            seed=9,
            time_scale="auto",
            warmup_requests=0,
            flush=False,
            unique_prompts=True,
            timeout_s=None,
            max_concurrency=3,
            extra_sampling_params={"top_p": 0.5},
        ),
        SweepPlan.build(concurrency_levels=[1, 8], prompt_set="default", time_scale=2.0),
    ):
        text = json.dumps(plan.to_json())
        assert SweepPlan.from_json(json.loads(text)) == plan
        record = json.loads(json.dumps(plan.to_json(prompt_texts=False)))
        assert "prompts" not in record and record["prompt_ids"] == [p.id for p in plan.prompts]
        assert record["prompts_sha256"] == hashlib.sha256("\0".join(p.text for p in plan.prompts).encode()).hexdigest()
        assert {k: v for k, v in record.items() if k not in ("prompt_ids", "prompts_sha256")} == {
            k: v for k, v in json.loads(text).items() if k != "prompts"
        }
    with pytest.raises(ConfigError, match="unknown \\['surprise'\\]"):
        SweepPlan.from_json({**plan.to_json(), "surprise": 1})


GOOD = dict(concurrency_levels=[1], requests_per_level=1, prompt_set=PROMPTS)


@pytest.mark.parametrize(
    "mistake, message",
    [
        (
            dict(concurrency_levels=[]),
            "concurrency_levels is empty; give at least one concurrency (requests in flight), e.g. [1, 2, 4]",
        ),
        (
            dict(concurrency_levels=[1.5]),
            "concurrency_levels must be whole numbers >= 1 (requests in flight), got 1.5 in [1.5]; e.g. [1, 2, 4]",
        ),
        (
            dict(concurrency_levels=[0, 2]),
            "concurrency_levels must be whole numbers >= 1 (requests in flight), got 0 in [0, 2]; e.g. [1, 2, 4]",
        ),
        (
            dict(concurrency_levels=[math.inf]),
            "concurrency_levels must be whole numbers >= 1 (requests in flight), got inf in [inf]; e.g. [1, 2, 4]",
        ),
        (
            dict(concurrency_levels=[True]),
            "concurrency_levels must be whole numbers >= 1 (requests in flight), got True in [True]; e.g. [1, 2, 4]",
        ),
        (
            dict(concurrency_levels=None, request_rates=[]),
            "request_rates is empty; give at least one rate (requests/s), or None for a closed-loop sweep over "
            "concurrency_levels",
        ),
        (
            dict(concurrency_levels=None, request_rates=[0.0]),
            "request_rates must be numbers > 0 (engine-time requests/s; inf sends all at once), got 0.0 in [0.0]",
        ),
        (dict(request_rates=[1.0]), "give concurrency_levels (closed loop) or request_rates (open loop), not both"),
        (
            dict(requests_per_level=0),
            "requests_per_level must be a whole number >= 1 (or a function of the concurrency returning one), got 0 "
            "for concurrency=1",
        ),
        (
            dict(requests_per_level=2.5),
            "requests_per_level must be a whole number >= 1 (or a function of the concurrency returning one), got 2.5 "
            "for concurrency=1",
        ),
        (
            dict(prompt_set=[]),
            "prompt_set holds no prompts; give a prompt-set name (data/prompts/<name>.jsonl), a JSONL path, or a "
            "non-empty list of prompts",
        ),
        (dict(max_new_tokens=0), "max_new_tokens must be a whole number >= 1 (output tokens per request), got 0"),
        (dict(seed=0.5), "seed must be an integer (it seeds the prompt order and arrivals), got 0.5"),
        (
            dict(time_scale=0.0),
            "time_scale must be a finite number > 0 (engine seconds per wall second; 1.0 for a "
            "real server) or 'auto' (what a simulated server reports), got 0.0",
        ),
        (
            dict(warmup_requests=-1),
            "warmup_requests must be a whole number >= 0 (requests before the first level; "
            "0 disables the warmup), got -1",
        ),
        (dict(flush=1), "flush must be True or False, got 1"),
        (dict(unique_prompts=None), "unique_prompts must be True or False, got None"),
        (dict(timeout_s=0), "timeout_s must be a number of seconds > 0, or None for no limit, got 0"),
        (
            dict(max_concurrency=4),
            "max_concurrency caps an open-loop sweep (request_rates) only; in a closed loop the "
            "concurrency is the level, so leave max_concurrency None",
        ),
        (
            dict(concurrency_levels=None, request_rates=[1.0], max_concurrency=0),
            "max_concurrency must be a whole number >= 1 (requests in flight; None for no cap), got 0",
        ),
        (
            dict(extra_sampling_params=[("top_p", 1)]),
            "extra_sampling_params must be a mapping of SGLang sampling params (e.g. {'top_p': 0.9}), got [('top_p', 1)]",
        ),
    ],
)
def test_one_message_per_mistake(mistake: dict, message: str) -> None:
    with pytest.raises(ConfigError) as built:
        SweepPlan.build(**(GOOD | mistake))
    assert str(built.value) == message
    # the same check, and the same words, when the plan comes back from JSON (as on the host)
    good = SweepPlan.build(**GOOD).to_json()
    if "concurrency_levels" in mistake and mistake["concurrency_levels"] is not None:
        good |= {"concurrency_levels": list(mistake["concurrency_levels"])}
        good["requests_per_level"] = [1] * len(mistake["concurrency_levels"])
    elif "requests_per_level" in mistake:
        good["requests_per_level"] = [mistake["requests_per_level"]]
    elif "prompt_set" in mistake:
        good["prompts"] = []
    elif set(mistake) <= {f.name for f in dataclasses.fields(SweepPlan)} and "request_rates" not in mistake:
        good |= mistake
    else:
        return
    with pytest.raises(ConfigError) as loaded:
        SweepPlan.from_json(good)
    assert str(loaded.value) == message


def test_a_prompt_set_that_cannot_be_read_fails_at_build() -> None:
    with pytest.raises(ConfigError, match="no-such-set"):
        SweepPlan.build(prompt_set="no-such-set")
    assert (PROMPTS_DIR / "default.jsonl").is_file()


def test_counts_must_match_the_levels() -> None:
    with pytest.raises(ConfigError, match="requests_per_level has 1 counts for 2 levels; give one count per level"):
        SweepPlan(concurrency_levels=(1, 2), requests_per_level=(4,), prompts=tuple(PROMPTS))


@pytest.mark.parametrize(
    "build, named",
    [
        (dict(concurrency_levels=[1, 2, 2]), "concurrency_levels names 2 more than once"),
        (dict(request_rates=[1.0, 1.0]), "request_rates names 1.0 more than once"),
        (
            dict(concurrency_levels=[1], input_len=None, sweep="output_len", sweep_values=[64, 64]),
            "sweep_values (output_len) names 64 more than once",
        ),
    ],
)
def test_a_level_named_twice_is_refused_not_measured_twice(build: dict, named: str) -> None:
    # measured twice with one seed and prompt order, it would be stored and shown as n=2 with an interval
    with pytest.raises(ConfigError) as err:
        SweepPlan.build(requests_per_level=4, prompt_set=["x"], **build)
    assert named in str(err.value) and "repeats" in str(err.value)


@pytest.mark.parametrize(
    "build, bound",
    [
        (dict(concurrency_levels=[1, 1_000_000]), "above 16,384 requests in flight"),
        (dict(concurrency_levels=[1], input_len=99_999_999), "input_len 99,999,999 is above 1,048,576 tokens"),
        (dict(concurrency_levels=[1], max_new_tokens=10**8), "max_new_tokens 100,000,000 is above 1,048,576 tokens"),
        (dict(concurrency_levels=[1], requests_per_level=10**7), "is above 1,000,000, the most one level may send"),
    ],
)
def test_sizes_have_bounds_that_say_why(build: dict, bound: str) -> None:
    with pytest.raises(ConfigError) as err:
        SweepPlan.build(prompt_set=["x"], **{"requests_per_level": 4, **build})
    assert bound in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "text, where",
    [
        ("1,,2", "has an empty part (position 2)"),
        ("1,2,", "has an empty part (position 3)"),
        (",", "is empty"),
        ("", "is empty"),
        (" ", "is empty"),
    ],
)
def test_an_empty_level_on_the_command_line_is_refused(text: str, where: str) -> None:
    from workbench.bench import parse_number_list

    with pytest.raises(ConfigError) as err:
        parse_number_list("--levels", text, int, "whole numbers", "1,2,4")
    assert f"--levels {where}" in str(err.value)
    assert parse_number_list("--levels", " 1, 2 ,4", int, "whole numbers", "1,2,4") == [1, 2, 4]
    with pytest.raises(ConfigError, match="'x' is not one"):
        parse_number_list("--levels", "1,x", int, "whole numbers", "1,2,4")


def test_a_rate_whose_level_would_not_end_within_a_day_is_refused_with_the_lowest_rate_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        SweepPlan.build(request_rates=[2.0, 1e-9], requests_per_level=16, prompt_set=PROMPTS, time_scale=2.0)
    assert str(err.value) == (
        "request_rates: 1e-09 req/s is too low: its level's 16 requests would arrive over about 2,222,222 hours of "
        "wall time (at time scale 2), and a level may take at most 24 hours; give rates of at least 9.26e-05 req/s "
        "(engine time), or fewer requests per level"
    )
    # just inside the bound: 16 requests over 23.1 hours (at real time) is a plan, however slow
    plan = SweepPlan.build(request_rates=[16 / (23.1 * 3600)], requests_per_level=16, prompt_set=PROMPTS)
    assert plan.num_levels == 1


@pytest.mark.parametrize("typed", ["1e400", "2,-1e999", "0.5, 9" + "9" * 400])
def test_a_rate_too_large_for_a_float_is_refused_not_taken_as_inf(typed: str) -> None:
    from workbench.bench import parse_number_list

    with pytest.raises(ConfigError, match="is too large for a number \\(it overflows to infinity"):
        parse_number_list("--request-rates", typed, float, "numbers (requests per second)", "0.5,2,8")
    assert parse_number_list("--request-rates", "0.5,inf", float, "numbers", "0.5,2,8") == [0.5, math.inf]
