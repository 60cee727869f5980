"""A misspelt report parameter is refused with the closest names: through `workbench report --from-runs`
(workbench.report.cli.check_from_runs) and through run_notebook (workbench.report._params.check_parameters)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import ConfigError
from workbench.report import run_notebook


def test_from_runs_with_a_misspelt_parameter_says_which_was_meant() -> None:
    result = CliRunner().invoke(
        app, ["report", "--from-runs", "20260601T090000Z-baseline-3fa91c", "-p", "workloda", "chat"]
    )
    assert result.exit_code == 2, result.output
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("error: ")]
    assert line.startswith("error: 'workloda': did you mean 'workload'? --from-runs renders stored runs"), line


def test_run_notebook_with_a_misspelt_parameter_says_which_was_meant(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "a.ipynb", parameters="repeats = 1\nrepeat_gap_s = 0.0\nhost = 'local'")
    with pytest.raises(ConfigError) as info:
        run_notebook(nb, out_dir=tmp_path / "out", parameters={"repeets": 3})
    assert "has no parameter 'repeets'. 'repeets': did you mean 'repeats'? Known parameters:" in str(info.value)
    assert not (tmp_path / "out").exists()  # refused before anything ran
