"""What ``workbench sim predict`` says of a prediction no held-out real-engine error covers, in plain words.

A newcomer read "checked: never for plain decoding at batch 1-64 on this profile" as a claim about plain decoding;
it meant that nothing was checked. The line now says "not checked" and why.
"""

from __future__ import annotations

from workbench.sim._held_out import parse_held_out, trust
from workbench.sim._spec import SpecConfig

CHAIN = {
    "regime": "chain",
    "batch": [1, 64],
    "metric": "output tok/s",
    "mean_abs_pct": 4.2,
    "worst_abs_pct": 6.7,
    "n": 21,
    "source": "a table",
}


def test_an_unchecked_prediction_says_not_checked_and_why() -> None:
    held = parse_held_out([CHAIN], "profile p")
    line = trust(held, SpecConfig(), [1, 8, 64])
    assert line == (
        "not checked: this profile holds no real-engine error for plain decoding at batch 1-64, so the prediction "
        "is unchecked there"
    )
    assert "never" not in line
    assert trust(held, SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4), [8]).startswith("checked: ")
