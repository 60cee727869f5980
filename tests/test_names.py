"""One rule and one message for variant names and labels, at every entry (issue 24, item 2).

Entries: variant files (and names looked up in data/variants/), a ``Variant`` built in a notebook,
grids, ``benchmark_variants`` (notebooks' ``variants``, ``workbench bench``), a sweep's ``label``,
``workbench import`` (``--variant``, ``--label`` and a file's own tag), ``workbench runs label``.
Each refusal comes before anything is launched or stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.names import NAME_RULE, check_name
from workbench.variants import Variant, expand_grid, load_grid, load_variant
from workbench.variants._variant import VARIANTS_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOSTILE = "<img src=x onerror=alert(1)>"
RULE = (
    "is not allowed: a name is 1 to 60 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit "
    "(no spaces, no markup)."
)


@pytest.mark.parametrize("name", ["baseline", "eagle3-topk4", "qwen3-30b-a3b-eagle3-3x3-4", "a", "v1.2_x-y", "9" * 60])
def test_names_that_keep_to_the_rule_come_back_unchanged(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    ("name", "suggested"),
    [
        (HOSTILE, "img-src-x-onerror-alert-1"),
        ("<script>alert(1)</script>", "script-alert-1-script"),
        ("x](javascript:alert(1))", "x-javascript-alert-1"),
        ("eagle3 topk4", "eagle3-topk4"),
        ("eagle3-\u00e9t\u00e9", "eagle3-t"),  # non-ASCII: file names, run ids and chart files keep to ASCII
        ("-leading-dash", "leading-dash"),
        (".hidden", "hidden"),
        ("", "my-variant"),
        ("x" * 61, "x" * 60),
        ("a/b", "a-b"),
    ],
)
def test_every_other_name_gets_the_one_message(name: str, suggested: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_name(name)
    assert str(err.value) == f"variant name {name!r} {RULE} Rename it, e.g. {suggested!r}."
    assert NAME_RULE in str(err.value)


def test_a_name_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"variant name 3 \(a int\) is not allowed"):
        check_name(3)


def test_variant_files_names_looked_up_and_variants_built_in_a_notebook(tmp_path: Path) -> None:
    file = tmp_path / "hostile.toml"
    file.write_text(f'name = "{HOSTILE}"\nmodel_path = "m"\n')
    with pytest.raises(ConfigError) as err:
        load_variant(file)
    assert str(err.value) == (
        f"variant name {HOSTILE!r} {RULE} Change 'name' in {file}, e.g. 'img-src-x-onerror-alert-1'."
    )
    with pytest.raises(ConfigError, match="Give the name of a file in data/variants/, or a path ending in .toml"):
        load_variant("eagle3 topk4")
    with pytest.raises(ConfigError, match=f"variant name 'caf\u00e9' {RULE.replace('(', '[(]').replace(')', '[)]')}"):
        Variant(name="caf\u00e9", model_path="m")
    # every shipped variant keeps to the rule
    assert [load_variant(p).name for p in sorted(VARIANTS_DIR.glob("*.toml"))]


def test_grid_names_follow_the_same_rule(tmp_path: Path) -> None:
    grid = {"name": "eagle<b>", "template": "eagle3-topk4", "topk": [1], "num_steps": [1], "num_draft_tokens": [2]}
    with pytest.raises(ConfigError, match=r"grid name \(the prefix of its variants' names\) 'eagle<b>' is not allowed"):
        load_grid(grid)
    long = dict(grid, name="g" * 55)  # the prefix is valid, its points' names would be too long
    with pytest.raises(ConfigError, match="variant name 'g{55}-t1-s1-d2' is not allowed"):
        expand_grid(long)


def test_benchmark_variants_and_its_label_refuse_before_anything_runs(tmp_path: Path) -> None:
    file = tmp_path / "hostile.toml"
    file.write_text(f'name = "{HOSTILE}"\nmodel_path = "m"\n')
    with pytest.raises(ConfigError, match="Change 'name' in"):
        wb.benchmark_variants([str(file)], runs_dir=tmp_path / "runs", progress=False)
    with pytest.raises(ConfigError, match=f"label 'before driver update' {RULE[:40]}"):
        wb.benchmark_variants(["baseline"], label="before driver update", runs_dir=tmp_path / "runs", progress=False)
    assert not (tmp_path / "runs").exists()


def test_bench_command_refuses_a_variant_file_with_markup_in_its_name(tmp_path: Path) -> None:
    file = tmp_path / "hostile.toml"
    file.write_text(f'name = "{HOSTILE}"\nmodel_path = "m"\n')
    result = CliRunner().invoke(app, ["bench", str(file), "--levels", "1", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert f"variant name {HOSTILE!r} is not allowed" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def _hostile_jsonl(tmp_path: Path) -> Path:
    records = [
        json.loads(line)
        for line in (FIXTURES / "imports/bench_serving/bs059_eagle3.jsonl").read_text().splitlines()
        if line.strip()
    ]
    path = tmp_path / "tagged.jsonl"
    path.write_text("".join(json.dumps(dict(r, tag=HOSTILE)) + "\n" for r in records))
    return path


def test_import_refuses_a_tag_variant_or_label_that_breaks_the_rule_and_stores_nothing(tmp_path: Path) -> None:
    jsonl, runs = _hostile_jsonl(tmp_path), tmp_path / "runs"
    tag = CliRunner().invoke(app, ["import", str(jsonl), "--runs-dir", str(runs)])
    assert tag.exit_code == 2, tag.output
    assert (
        f"run name from tagged.jsonl (line 1: the tool's tag or label, else the file's name) {HOSTILE!r} "
        f"{RULE} Pass --variant NAME to name the runs of this import"
    ) in " ".join(tag.output.split())
    variant = CliRunner().invoke(app, ["import", str(jsonl), "--variant", "caf\u00e9", "--runs-dir", str(runs)])
    assert variant.exit_code == 2 and "variant name 'caf\u00e9' is not allowed" in variant.output
    label = CliRunner().invoke(
        app, ["import", str(jsonl), "--variant", "eagle3", "--label", "a b", "--runs-dir", str(runs)]
    )
    assert label.exit_code == 2 and "label 'a b' is not allowed" in label.output
    assert not runs.exists() or not list(runs.iterdir())
    ok = CliRunner().invoke(app, ["import", str(jsonl), "--variant", "eagle3", "--runs-dir", str(runs)])
    assert ok.exit_code == 0, ok.output


def test_runs_label_refuses_a_label_that_breaks_the_rule_but_removes_any(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert (
        CliRunner()
        .invoke(
            app,
            [
                "import",
                str(FIXTURES / "imports/bench_serving/bs046_baseline.jsonl"),
                "--variant",
                "imported",
                "--runs-dir",
                str(runs),
            ],
        )
        .exit_code
        == 0
    )
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    (run / "labels.json").write_text(json.dumps({"labels": ["driver 550"]}))  # stored before the rule
    bad = CliRunner().invoke(app, ["runs", "label", run.name, "keep", "<b>x</b>", "--runs-dir", str(runs)])
    assert bad.exit_code == 2, bad.output
    assert "label '<b>x</b>' is not allowed: a name is 1 to 60 ASCII" in bad.output
    assert json.loads((run / "labels.json").read_text()) == {"labels": ["driver 550"]}  # nothing added
    removed = CliRunner().invoke(app, ["runs", "label", run.name, "driver 550", "--remove", "--runs-dir", str(runs)])
    assert removed.exit_code == 0 and "labels: (none)" in removed.output
