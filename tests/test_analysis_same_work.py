"""workbench.analysis._same_work: greedy outputs of a spec server and its baseline, prompt by prompt."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.analysis import SAME_WORK_TOLERANCE, same_outputs
from workbench.errors import ConfigError


def _rows(variant: str, hashes: list[str], *, temperature: float = 0.0) -> list[dict]:
    return [
        {
            "variant": variant,
            "concurrency": c,
            "repeat": 0,
            "request_index": i,
            "prompt_id": f"p{i}",
            "output_hash": h,
            "temperature": temperature,
            "error": None,
        }
        for c in (1, 4)
        for i, h in enumerate(hashes)
    ]


def test_identical_outputs_are_the_same_work() -> None:
    hashes = [f"h{i}" for i in range(20)]
    work = same_outputs(pd.DataFrame(_rows("base", hashes) + _rows("spec", hashes)), baseline="base", spec="spec")
    assert (work.prompts, work.differing, work.pairs, work.differing_pairs) == (20, 0, 40, 0)
    assert work.checked and not work.flagged and "0 of 20 prompts" in work.text() and "the same work" in work.text()


def test_outputs_that_differ_beyond_the_tolerance_are_flagged() -> None:
    hashes = [f"h{i}" for i in range(20)]
    one_off = hashes[:19] + ["other"]  # 1 of 20 = 5%: at the tolerance, not above it
    assert not same_outputs(
        pd.DataFrame(_rows("base", hashes) + _rows("spec", one_off)), baseline="base", spec="spec"
    ).flagged
    three_off = ["x", "y"] + hashes[2:19] + ["z"]
    work = same_outputs(pd.DataFrame(_rows("base", hashes) + _rows("spec", three_off)), baseline="base", spec="spec")
    assert work.differing == 3 and work.share == pytest.approx(0.15) and work.flagged
    assert work.examples == ("p0", "p1", "p19") and "3 of 20 prompts (15%" in work.text()
    assert "did not do the same work" in work.text() and f"{SAME_WORK_TOLERANCE:.0%} tolerance" in work.text()
    assert not same_outputs(
        pd.DataFrame(_rows("base", hashes) + _rows("spec", three_off)), baseline="base", spec="spec", tolerance=0.2
    ).flagged


def test_sampled_failed_or_unhashed_requests_are_not_compared() -> None:
    hashes = [f"h{i}" for i in range(4)]
    sampled = pd.DataFrame(_rows("base", hashes, temperature=1.0) + _rows("spec", ["x"] * 4, temperature=1.0))
    work = same_outputs(sampled, baseline="base", spec="spec")
    assert not work.checked and not work.flagged and "not compared" in work.text()
    no_column = sampled.drop(columns=["output_hash"])
    assert not same_outputs(no_column, baseline="base", spec="spec").checked
    with pytest.raises(ConfigError, match="tolerance must be in"):
        same_outputs(sampled, baseline="base", spec="spec", tolerance=1.0)
