"""Tests for workbench.bench._measure: the sweep plan (validation, JSON round trip) and the stdlib-only core."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from blocked_imports import BLOCKED, blocking_dir

from workbench.bench._measure import SweepPlan, make_plan
from workbench.bench._prompts import Prompt
from workbench.errors import ConfigError

PROMPTS = [Prompt("a", "coding", "first prompt"), Prompt("b", "agentic", "second \u00e9 prompt")]


def test_make_plan_resolves_levels_requests_and_prompt_sets() -> None:
    plan = make_plan(concurrency_levels=[1, 4], requests_per_level=lambda c: 3 * c, prompts="default")
    assert plan.mode == "closed" and plan.levels == ((1, 3), (4, 12)) and plan.total_requests == 15
    assert len(plan.prompts) > 10 and all(p.text for p in plan.prompts)  # texts travel in the plan
    assert plan.parameters("http://h:1", 2.0)["requests_per_level"] == [3, 12]
    open_plan = make_plan(concurrency_levels=[1], request_rates=[2.5, math.inf], requests_per_level=4,
                          prompts=["x"], max_concurrency=2)
    assert open_plan.mode == "open" and open_plan.levels == ((2.5, 4), (math.inf, 4))
    assert open_plan.prompts == (Prompt("p0", "coding", "x"),)


def test_plan_round_trips_through_json() -> None:
    plan = make_plan(concurrency_levels=[1], request_rates=[math.inf, 0.5], requests_per_level=2, prompts=PROMPTS,
                     max_new_tokens=7, seed=9, time_scale="auto", warmup_requests=0, flush=False, unique_prefix=True,
                     timeout_s=None, max_concurrency=3, extra_sampling_params={"top_p": 0.5})
    text = json.dumps(plan.to_json())
    assert SweepPlan.from_json(json.loads(text)) == plan
    with pytest.raises(ConfigError, match="unknown \\['surprise'\\]"):
        SweepPlan.from_json({**plan.to_json(), "surprise": 1})


@pytest.mark.parametrize("kwargs, match", [
    (dict(concurrency_levels=[]), "no levels"),
    (dict(concurrency_levels=[1.5]), "integers >= 1"),
    (dict(concurrency_levels=[math.inf]), "integers >= 1"),
    (dict(concurrency_levels=[True]), "integers >= 1"),
    (dict(request_rates=[0.0]), "request rates must be > 0"),
    (dict(requests_per_level=0), "requests_per_level must be >= 1"),
    (dict(requests_per_level=2.5), "requests_per_level must be >= 1"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(warmup_requests=-1), "warmup_requests"),
    (dict(time_scale=0.0), "time_scale"),
    (dict(timeout_s=0), "timeout_s"),
    (dict(request_rates=[1.0], max_concurrency=0), "max_concurrency"),
    (dict(prompts=[]), "prompts is empty"),
])
def test_plan_validation(kwargs, match) -> None:
    args = dict(concurrency_levels=[1], requests_per_level=1, prompts=PROMPTS) | kwargs
    with pytest.raises(ConfigError, match=match):
        make_plan(**args)


def test_host_side_modules_import_without_pandas_numpy_tqdm(tmp_path) -> None:
    code = ("import sys, workbench.bench._remote_run, workbench.bench._sweeplog; "
            f"print(sorted(m for m in {list(BLOCKED)!r} if m in sys.modules))")
    env = dict(os.environ, PYTHONPATH=str(blocking_dir(tmp_path)))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    blocked = subprocess.run([sys.executable, "-c", "import pandas"], env=env, capture_output=True, text=True)
    assert "pandas is blocked" in blocked.stderr  # the stubs do block
