"""``workbench report``'s "reused:" lines: one per run, with the counts of what was stored before the notebook ran.

A sweep of several repeats reopens its run once per repeat's pass, and each reopening records what the run held
then; the lines must not count a repeat this same notebook measured as reused, nor say a run twice.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app
from workbench.report.cli import reuse_lines

runner = CliRunner()
SMALL = ["--levels", "1,2", "--requests", "2", "--max-new-tokens", "8", "--time-scale", "20", "--no-progress"]


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _write_run(root: Path, name: str, *, created: datetime, reopened: list[tuple[datetime, int]], stored: int) -> None:
    """A run's manifest as the store writes it: created at ``created``, reopened at each time with that many units
    stored then, ``stored`` units in it now (units are (repeat, level) pairs, measured in order)."""
    units = [[r, lv] for r in range(4) for lv in range(2)]
    manifest = {
        "run_id": name,
        "variant": name.split("-", 1)[1],
        "started_at": _iso(created),
        "units_completed": units[:stored],
        "resumed": [
            {"at": _iso(at), "units_reused": units[:held], "units_to_measure": units[held:stored]}
            for at, held in reopened
        ],
    }
    (root / name).mkdir(parents=True)
    (root / name / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_run_reopened_once_per_repeat_is_said_once_with_what_was_stored_before(tmp_path: Path) -> None:
    start = datetime(2026, 12, 6, 8, 0, tzinfo=timezone.utc)
    end = start + timedelta(minutes=5)
    # stored 3 units in an earlier session; this notebook's three passes reopened it, measuring 5 more
    _write_run(
        tmp_path,
        "r1-baseline",
        created=start - timedelta(hours=1),
        reopened=[
            (start - timedelta(minutes=30), 1),  # an earlier notebook's reopening: not this one
            (start + timedelta(seconds=5), 3),
            (start + timedelta(minutes=2), 6),
            (start + timedelta(minutes=4), 8),
        ],
        stored=8,
    )
    # created by this notebook and reopened by its second repeat: nothing in it is older than the notebook
    _write_run(tmp_path, "r2-eagle3", created=start + timedelta(seconds=1), reopened=[(start + timedelta(minutes=1), 2)],
               stored=4)  # fmt: skip
    assert reuse_lines(tmp_path, start, end) == [
        "reused: baseline: 3 stored unit(s) (level x repeat) from run r1-baseline, stored since "
        f"{(start - timedelta(hours=1)).strftime('%Y-%m-%d %H:%M')} UTC; measured now: 5"
    ]


def test_a_sweep_of_two_repeats_says_nothing_when_new_and_one_line_when_run_again(tmp_path: Path) -> None:
    """Real sweeps (``workbench bench --repeats 2`` on the simulator): each repeat's pass reopens the run."""
    args = ["bench", "baseline", *SMALL, "--repeats", "2", "--runs-dir", str(tmp_path)]
    first_from = datetime.now(timezone.utc)
    assert runner.invoke(app, args).exit_code == 0
    first_to = datetime.now(timezone.utc)
    (run,) = [p.parent for p in tmp_path.glob("*/manifest.json")]
    reopenings = json.loads((run / "manifest.json").read_text())["resumed"]
    assert len(reopenings) >= 1  # the second repeat reopened the run it had just created
    assert reuse_lines(tmp_path, first_from, first_to) == []  # a new run: nothing reused, though reopened

    again_from = datetime.now(timezone.utc)
    assert runner.invoke(app, args).exit_code == 0
    again_to = datetime.now(timezone.utc)
    since = json.loads((run / "manifest.json").read_text())["started_at"][:16].replace("T", " ")
    assert reuse_lines(tmp_path, again_from, again_to) == [
        f"reused: baseline: 4 stored unit(s) (level x repeat) from run {run.name}, stored since {since} UTC; "
        "measured now: 0"
    ]
