"""Imported records keep their identity, and values no benchmark can give are refused, through
``workbench import`` (typer's CliRunner) and the store it writes: a record repeated in its file, or a
file given twice, is kept once with one line saying how many were dropped; the same figures in two
files under one tag are refused, never pooled into "n=2" with an interval of zero width; a duration
of 0, a concurrency of 1e300, a number too large for a float end in one line, exit status 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.imports import import_results
from workbench.store import load_run

FIX = Path(__file__).parent / "fixtures" / "imports"
BS = FIX / "bench_serving"
runner = CliRunner()


def _record(name: str = "bs046_baseline.jsonl", line: int = 0) -> dict:
    return json.loads((BS / name).read_text().splitlines()[line])


def _write(path: Path, *records: dict | str) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def _import(*argv: str | Path):
    result = runner.invoke(app, ["import", *map(str, argv)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def _stored(runs: Path) -> list[Path]:
    return sorted(p for p in runs.iterdir() if p.is_dir()) if runs.exists() else []


# -- exact duplicates: dropped, counted in one line ------------------------------------------------


def test_a_file_pasted_onto_itself_is_one_record_and_one_line_says_so(tmp_path: Path) -> None:
    record = _record()
    pasted = _write(tmp_path / "pasted.jsonl", record, record)
    result = _import(pasted, "--runs-dir", tmp_path / "runs", "--engine", "sim")
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "duplicate" in line]
    assert said == [
        "dropped 1 exact duplicate record(s): the same figures from the same file as a record read "
        "before (first: pasted.jsonl line 2 repeats line 1); each record is kept once"
    ]
    (run,) = _stored(tmp_path / "runs")
    levels = load_run(run).levels
    assert len(levels) == 1 and list(levels["repeat"]) == [0]
    assert levels["record_sha256"].str.fullmatch(r"[0-9a-f]{64}").all()  # the record's identity, kept
    means = wb.load_study([run], baseline="pasted").means()
    assert list(means["n"]) == [1]  # not "n=2" with a zero-width interval


def test_one_line_repeated_thousands_of_times_is_one_record(tmp_path: Path) -> None:
    line = json.dumps(_record())
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text((line + "\n") * 3000)
    result = _import(repeated, "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.output.count("duplicate") == 1
    assert result.output.startswith("dropped 2999 exact duplicate record(s): ")
    assert "1 level rows, 0 quarantined" in result.output


def test_the_same_file_given_twice_is_read_once(tmp_path: Path) -> None:
    file = BS / "bs059_baseline_details.jsonl"
    result = _import(file, file, "--json", "--dry-run")
    assert result.exit_code == 0, result.output
    assert [r["concurrency"] for r in json.loads(result.stdout)] == [1, 2, 4]  # three levels, not six
    assert [r["repeat"] for r in json.loads(result.stdout)] == [0, 0, 0]
    assert result.stderr.startswith("dropped 3 exact duplicate record(s): ")  # beside the JSON, not in it
    assert len({r["record_sha256"] for r in json.loads(result.stdout)}) == 3


# -- the same figures in two files: refused, never pooled -------------------------------------------


def test_the_same_figures_in_two_files_under_one_tag_are_refused_not_pooled(tmp_path: Path) -> None:
    first = shutil.copy(BS / "bs059_eagle3.jsonl", tmp_path / "monday.jsonl")
    copy = shutil.copy(BS / "bs059_eagle3.jsonl", tmp_path / "tuesday.jsonl")
    runs = tmp_path / "runs"
    result = _import(first, copy, "--runs-dir", runs)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"error: {copy} line 1 holds the same figures, to every digit, as {first} line 1 (run name 'eagle3'): one "
        "measurement in two files, not two repeats, and pooled they would make an interval of zero width. Import "
        "one of the two files; if they are two measurements, their tool wrote one of them wrong"
    )
    assert _stored(runs) == []  # nothing stored
    with pytest.raises(ConfigError, match="same figures, to every digit"):
        import_results([first, copy], store=False)


def test_two_files_of_one_tag_with_different_figures_are_still_repeats(tmp_path: Path) -> None:
    record = _record("bs059_eagle3.jsonl")
    again = dict(record, output_throughput=record["output_throughput"] * 1.01)
    a, b = _write(tmp_path / "a.jsonl", record), _write(tmp_path / "b.jsonl", again)
    result = import_results([a, b], store=False)
    assert list(result.levels["repeat"]) == [0, 1] and result.notes == ()


# -- values no benchmark can give: refused with the field and the record ---------------------------

BIG = "1" + "0" * 400  #: JSON text of an integer too large for a float (strings below are written verbatim)
IMPOSSIBLE = {
    "duration 0": ({"duration": 0}, "duration_s = 0: a run's duration must be above 0 s"),
    "duration -5": ({"duration": -5}, "duration_s = -5: a run's duration must be above 0 s"),
    "concurrency 1e300": (
        {"max_concurrency": 1e300},
        "concurrency = 1e+300: a concurrency must be from 1 to 1,000,000",
    ),
    "concurrency 0": ({"max_concurrency": 0}, "concurrency = 0: a concurrency must be from 1"),
    "rate 0": (
        {"request_rate": 0, "max_concurrency": None},
        "request_rate_req_s = 0: an offered request rate must be above 0",
    ),
    "rate -2": ({"request_rate": -2}, "request_rate_req_s = -2: an offered request rate must be above 0"),
    "rate 1e300": (
        {"request_rate": 1e300},
        "request_rate_req_s = 1e+300: an offered request rate must be above 0 and at most 1,000,000 req/s",
    ),
    "throughput 1e300": (
        {"output_throughput": 1e300},
        "output_throughput_tok_s = 1e+300: no token throughput is above 1,000,000,000 tok/s",
    ),
    "request throughput 1e12": (
        {"request_throughput": 1e12},
        "request_throughput_req_s = 1e+12: no request throughput is above 1,000,000 req/s",
    ),
    "duration 10^400": (
        {"duration": BIG},
        "duration_s = inf: no measured figure is infinite (a number too large "
        "for a float, such as 1e400, reads as inf)",
    ),
    "ttft 1e400": ({"mean_ttft_ms": "1e400"}, "mean_ttft_ms = inf: no measured figure is infinite"),
    "completed of 6000 digits": ({"completed": "7" * 6000}, "completed = inf: no measured figure is infinite"),
    "an ITL of 10^400": ({"itls": f"[[{BIG}]]"}, "request 0's bench_serving_itl_ms is infinite"),
}


def _edited(tmp_path: Path, change: dict) -> Path:
    """bs059's details record as line 2 of a file (line 1 untouched), with ``change`` in it (a string as JSON text)."""
    text = json.dumps(dict(_record("bs059_baseline_details.jsonl"), **{k: f"@{k}@" for k in change}))
    for key, value in change.items():
        text = text.replace(f'"@{key}@"', value if isinstance(value, str) else json.dumps(value))
    return _write(tmp_path / "edited.jsonl", _record("bs059_baseline_details.jsonl", 1), text)


@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_an_impossible_value_is_one_line_naming_file_record_and_field(tmp_path: Path, case: str) -> None:
    change, said = IMPOSSIBLE[case]
    path = _edited(tmp_path, change)
    runs = tmp_path / "runs"
    result = _import(path, "--runs-dir", runs)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert result.output.startswith(f"error: {path} line 2: {said}"), result.output
    assert result.output.strip().endswith(
        "correct or remove that record (the file was edited, cut short or not written by the tool), then import again"
    )
    assert _stored(runs) == []


def test_an_infinite_rate_is_what_bench_serving_writes_for_all_at_once_and_is_kept() -> None:
    result = import_results(BS / "bs059_baseline_details.jsonl", store=False)
    assert (result.levels["request_rate_req_s"] == float("inf")).all() and len(result.levels) == 3


def test_a_vllm_sweep_run_number_too_large_for_a_float_is_refused(tmp_path: Path) -> None:
    folder = shutil.copytree(FIX / "vllm" / "sweep" / "exp1", tmp_path / "exp1")
    run = folder / "SERVE--baseline-BENCH--max_concurrency=4" / "run=0.json"
    run.write_text(run.read_text().rstrip().rstrip("}") + f', "run_number": {BIG}}}\n')
    result = _import(folder, "--dry-run")
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        f"error: {run} SERVE--baseline-BENCH--max_concurrency=4/run=0.json: repeat = "
        "inf: no measured figure is infinite"
    ), result.output
