"""Variant files of any shape end in one line and exit status 2, through the real command: every flag
and top-level key given values of every TOML type (lists, tables, strings, booleans, integers beyond
64 bits, fractions, nan, infinities, dates), checked by ``workbench variants check`` and ``workbench
bench`` (typer's CliRunner), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import ConfigError
from workbench.variants import load_variant

runner = CliRunner()

#: A speculative variant that passes every check (its flags are replaced one at a time below).
FLAGS = {
    "tp-size": "1",
    "speculative-algorithm": '"EAGLE3"',
    "speculative-num-steps": "3",
    "speculative-eagle-topk": "4",
    "speculative-num-draft-tokens": "8",
    "attention-backend": '"flashmla"',
    "speculative-adaptive": "true",
}
#: Values no flag can hold (a TOML type SGLang's parser cannot read from one word): refused when the file is read.
UNREADABLE = [
    "[4]",
    "[]",
    '["EAGLE3"]',
    "[[1], [2]]",
    "{a = 1}",
    "{}",
    "99999999999999999999999",
    "-99999999999999999999999",
    "nan",
    "inf",
    "-inf",
    "1979-05-27",
    "07:32:00",
    "1979-05-27T07:32:00Z",
]
#: Values of a type a flag may hold, wrong for these flags: each a finding, never an exception.
WRONG_BUT_READABLE = [
    '"abc"',
    '""',
    '"4"',
    "true",
    "false",
    "9223372036854775807",
    "-9223372036854775808",
    "0",
    "-1",
    "1.5",
    "0.0",
    "1e308",
]
#: Top-level keys and the values of a type each does not take.
TOP_LEVEL = {
    "name": ["[1]", "{a = 1}", "7", "true", "nan", "1979-05-27"],
    "description": ["[1]", "{a = 1}", "99999999999999999999999", "false"],
    "base": ["[1]", '["sglang==0.5.9"]', "{a = 1}", "0.5", "true"],
    "sglang_version": ["0.5", "[0, 5, 9]", "{a = 1}", "nan", "true"],
    "model_path": ["[1]", '["m/M"]', "{a = 1}", "1", "inf"],
    "draft_model_path": ["[1]", "{a = 1}", "1", "false"],
    "patches": ['"x.patch"', "1", "{a = 1}", "[1]", "[[1]]", "true"],
    "flags": ["3", '"tp-size = 1"', "[1]", "[]", "true", "nan", "1979-05-27"],
    "env": ["3", '"A=1"', "[1]", "true", "{A = [1]}", "{A = {b = 1}}", "{A = true}"],
    "sim_policy": ["3", '"x"', "[1]", "true", "{spec_off_above = [8]}", "{spec_off_above = nan}"],
}


def _variant(path: Path, *, top: dict[str, str] | None = None, flags: dict[str, str] | None = None) -> Path:
    """A variant file of ``top``-level keys (TOML text per key; ``flags`` a table unless ``top`` sets it)."""
    keys = {
        "name": '"odd"',
        "sglang_version": '"0.5.9"',
        "model_path": '"m/M"',
        "draft_model_path": '"d/D"',
        **(top or {}),
    }
    text = "".join(f"{k} = {v}\n" for k, v in keys.items())
    if "flags" not in keys:
        text += "[flags]\n" + "".join(f"{k} = {v}\n" for k, v in (flags or FLAGS).items())
    path.write_text(text)
    return path


def _one_line_refusal(result, path: Path) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if str(path.name) in line]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("flag", list(FLAGS))
def test_a_flag_of_an_unreadable_type_is_one_line_naming_the_file_and_flag(tmp_path: Path, flag: str) -> None:
    path = tmp_path / "odd.toml"
    for value in UNREADABLE:
        _variant(path, flags={**FLAGS, flag: value})
        line = _one_line_refusal(runner.invoke(app, ["variants", "check", str(path)]), path)
        assert f"[flags] {flag} " in line and "a flag holds one string, integer, finite number or true/false" in line
        bench = runner.invoke(app, ["bench", str(path), "--levels", "1", "--runs-dir", str(tmp_path / "runs")])
        assert _one_line_refusal(bench, path).startswith(f"error: Variant file {path}: [flags] {flag} ")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # nothing measured or opened


@pytest.mark.parametrize("flag", list(FLAGS))
def test_a_flag_of_a_readable_type_but_a_wrong_value_is_a_finding_not_an_exception(tmp_path: Path, flag: str) -> None:
    path = tmp_path / "odd.toml"
    for value in WRONG_BUT_READABLE:
        _variant(path, flags={**FLAGS, flag: value})
        result = runner.invoke(app, ["variants", "check", str(path)])
        assert result.exception is None or isinstance(result.exception, SystemExit), (value, repr(result.exception))
        assert "Traceback" not in result.output and result.exit_code in (0, 1), (value, result.output)
        assert result.output.splitlines()[-1].endswith("(--show info lists the notes)")


@pytest.mark.parametrize("key", list(TOP_LEVEL))
def test_a_top_level_key_of_the_wrong_type_is_one_line_naming_the_key_and_its_type(tmp_path: Path, key: str) -> None:
    path = tmp_path / "odd.toml"
    for value in TOP_LEVEL[key]:
        _variant(path, top={key: value})
        line = _one_line_refusal(runner.invoke(app, ["variants", "check", str(path)]), path)
        where = f"[{key}] " if key == "env" and value.startswith("{") else f"{key} "
        assert f"odd.toml: {where}" in line and (" holds " in line or " must be " in line), (value, line)
        bench = runner.invoke(app, ["bench", str(path), "--levels", "1", "--runs-dir", str(tmp_path / "runs")])
        assert _one_line_refusal(bench, path).startswith(f"error: Variant file {path}: "), value


def test_the_messages_say_what_type_was_found_and_what_to_write(tmp_path: Path) -> None:
    cases = {
        ("flags", "{speculative-eagle-topk = [4]}"): "[flags] speculative-eagle-topk holds a list ([4]); a flag holds "
        "one string, integer, finite number or true/false: write `speculative-eagle-topk = 4`",
        ("flags", '{speculative-algorithm = ["EAGLE3"]}'): 'write `speculative-algorithm = "EAGLE3"`',
        ("flags", "{tp-size = 99999999999999999999999}"): "[flags] tp-size is beyond TOML's 64-bit integers (an "
        "integer of 23 digits)",
        ("flags", "{mem-fraction-static = nan}"): "[flags] mem-fraction-static is nan, not a finite number (nan)",
        ("flags", "3"): "flags holds an integer (3); it takes a table: a [flags] section of `flag-name = value` lines",
        ("model_path", '["m/M"]'): "model_path holds a list (['m/M']); it takes a string (a path or hub id)",
        ("env", "{SGLANG_ENABLE_SPEC_V2 = true}"): "[env] SGLANG_ENABLE_SPEC_V2 holds true/false (True); an "
        'environment variable is text: write `SGLANG_ENABLE_SPEC_V2 = "1"` (quoted)',
        ("patches", '"x.patch"'): "patches holds a string ('x.patch'); it takes a list of file paths",
    }
    for (key, value), message in cases.items():
        path = _variant(tmp_path / "odd.toml", top={key: value})
        with pytest.raises(ConfigError) as err:
            load_variant(path)
        assert str(err.value).startswith(f"Variant file {path}: ") and message in str(err.value), str(err.value)


def test_a_number_of_thousands_of_digits_is_refused_as_unreadable(tmp_path: Path) -> None:
    path = _variant(tmp_path / "odd.toml", flags={**FLAGS, "tp-size": "1" * 5000})
    line = _one_line_refusal(runner.invoke(app, ["variants", "check", str(path)]), path)
    assert "holds a number TOML cannot read" in line and "at most 19 digits" in line
