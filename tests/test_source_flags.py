"""server_flags on real SGLang wheels (0.5.9, 0.5.16, 0.5.19/0.5.20, 0.5.23), checked against the source text
and against CPython's own argparse."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.errors import SourceError
from workbench.source import FlagError, FlagTable, server_flags, sglang_release


@pytest.fixture(scope="module")
def v9() -> FlagTable:
    return server_flags("0.5.9")


@pytest.fixture(scope="module")
def v16() -> FlagTable:
    return server_flags("0.5.16")


@pytest.fixture(scope="module")
def v20() -> FlagTable:
    return server_flags("0.5.20")


@pytest.fixture(scope="module")
def v23() -> FlagTable:
    return server_flags("0.5.23")


def test_0_5_9_tp_abbreviates_tp_size_and_cuda_graph_max_bs_exists(v9: FlagTable) -> None:
    assert v9.layout == "add_argument" and v9.allow_abbrev and v9.parser["function"] == "prepare_server_args"
    tp = v9.match("--tp")
    # argparse names the destination after the first long option; from_cli_args copies it to tp_size.
    assert (tp.option, tp.flag.name, tp.flag.dest, tp.abbreviated) == (
        "--tp-size", "--tensor-parallel-size", "tensor_parallel_size", True)  # fmt: skip
    assert v9.match("--tp=4").explicit_value == "4"
    assert "--tp" not in v9  # only as a prefix of --tp-size (argparse's allow_abbrev)
    graph = v9.resolve("--cuda-graph-max-bs")
    assert (graph.dest, graph.type, graph.takes_value, graph.deprecated) == ("cuda_graph_max_bs", "int", True, False)
    assert v9.check(["--model-path", "m", "--tp-size", "2", "--cuda-graph-max-bs", "8"], require=True) == []
    algos = v9.speculative
    assert algos.names == ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM") and algos.case_sensitive
    assert algos.source is not None and algos.source.startswith("argparse choices (srt/server_args.py:")


def test_every_flag_points_at_its_declaration(v9: FlagTable, v23: FlagTable) -> None:
    for table in (v9, v23):
        package = sglang_release(table.version).package_dir  # type: ignore[arg-type]
        for flag in table.flags:
            if flag.origin == "argparse":
                continue
            lines = (package / flag.file).read_text(encoding="utf-8").split("\n")
            window = "\n".join(lines[flag.line - 1 : flag.line + 4])
            spelled = f'"{flag.option_strings[0]}"' if flag.origin == "add_argument" else f"{flag.dest}:"
            assert spelled in window, (table.label, flag.name, flag.file, flag.line)


def test_0_5_16_keeps_cuda_graph_max_bs_as_a_deprecated_alias(v16: FlagTable) -> None:
    assert v16.layout == "dataclass-fields"
    alias = v16.resolve("--cuda-graph-max-bs")
    assert alias.deprecated and alias.replacement == "--cuda-graph-max-bs-decode"
    assert alias.dest == "cuda_graph_max_bs_decode" and alias.action == "DeprecatedAliasStoreAction"
    [problem] = v16.check(["--cuda-graph-max-bs", "16"])
    assert (problem.severity, problem.kind, problem.fix) == ("warning", "deprecated", "--cuda-graph-max-bs-decode")
    assert "`--cuda-graph-max-bs` is deprecated in SGLang 0.5.16; use `--cuda-graph-max-bs-decode`" in problem.message
    assert "DSPARK" in v16.speculative.names and "UNO" not in v16.speculative.names


def test_0_5_20_cuda_graph_max_bs_is_ambiguous_and_was_removed(v20: FlagTable) -> None:
    assert v20.layout == "namespaces" and v20.previous_adjacent
    with pytest.raises(FlagError) as info:
        v20.resolve("--cuda-graph-max-bs")
    error = info.value
    assert error.kind == "ambiguous" and error.fix == "--cuda-graph-max-bs-decode"
    assert error.candidates == ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill")
    message = str(error)
    assert "`--cuda-graph-max-bs` is ambiguous in SGLang 0.5.20" in message
    assert "was removed in SGLang 0.5.20 (in SGLang 0.5.19 it was a deprecated alias of" in message
    assert message.endswith("Use `--cuda-graph-max-bs-decode`.")
    assert v20.previous is not None and v20.previous.version == "0.5.19"
    ok = v20.resolve("--cuda-graph-max-bs-decode")
    assert (ok.file, ok.type, ok.deprecated) == ("srt/arg_groups/fields/exec_.py", "int", False)
    [problem] = v20.check(["--cuda-graph-max-bs=8"])
    assert (problem.severity, problem.kind, problem.fix) == ("error", "ambiguous", "--cuda-graph-max-bs-decode")


def test_free_string_algorithms_come_from_the_enum_and_are_checked_case_insensitively(v20: FlagTable) -> None:
    algos = v20.speculative
    assert algos.names == ("DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM")
    assert algos.aliases == ("NEXTN",) and not algos.case_sensitive and algos.plugins
    assert (algos.source or "").startswith("enum SpeculativeAlgorithm (srt/speculative/spec_info.py")
    assert any(place.startswith("srt/arg_groups/speculative_hook.py:") for place in algos.validated_in)
    assert v20.resolve("--speculative-algorithm").choices is None
    assert v20.check(["--speculative-algorithm", "eagle3", "--speculative-algorithm", "NextN"]) == []
    [problem] = v20.check(["--speculative-algorithm", "EAGEL3"])
    assert (problem.kind, problem.fix) == ("unknown_algorithm", "EAGLE3")
    assert "SpeculativeAlgorithm.register" in problem.message


def test_unknown_flags_suggest_close_spellings(v20: FlagTable, v9: FlagTable) -> None:
    with pytest.raises(FlagError) as info:
        v20.resolve("--specualtive-num-steps")
    assert info.value.kind == "unknown" and info.value.fix == "--speculative-num-steps"
    assert str(info.value).startswith(
        "`--specualtive-num-steps` is not a flag of SGLang 0.5.20. Did you mean `--speculative-num-steps`"
    )
    with pytest.raises(FlagError, match="is not a flag of SGLang 0.5.9. Did you mean `--cuda-graph-max-bs`"):
        v9.resolve("--cuda-graph-max-bs-decode")  # a flag from the future, not a removed one
    # flags that merely share the --speculative- prefix are not suggested (difflib 0.72 < SUGGEST_CUTOFF)
    with pytest.raises(FlagError) as info:
        v9.resolve("--speculative-adaptive")
    assert info.value.candidates == () and info.value.fix is None and "Did you mean" not in str(info.value)


def test_check_reads_values_as_argparse_does(v20: FlagTable) -> None:
    argv = ["--model-path", "m", "--enable-metrics", "true", "--disable-cuda-graph=1", "--load-format", "pt2",
            "--port", "abc", "--mem-fraction-static", "-0.5", "--speculative-num-steps"]  # fmt: skip
    found = [(p.severity, p.kind, p.option) for p in v20.check(argv, require=True)]
    assert found == [
        ("error", "unexpected_value", "true"),
        ("warning", "deprecated", "--disable-cuda-graph=1"),
        ("error", "unexpected_value", "--disable-cuda-graph=1"),
        ("error", "invalid_choice", "--load-format"),
        ("error", "invalid_choice", "--port"),
        ("error", "missing_value", "--speculative-num-steps"),
    ]
    [missing] = v20.check(["--tp-size", "2"], require=True)
    assert missing.kind == "missing_required" and missing.flag == "--model-path"


def test_0_5_23_aliases_and_deprecations(v23: FlagTable) -> None:
    assert v23.resolve("--model") is v23.resolve("--model-path")
    assert v23.get("--model").option_strings == ("--model-path", "--model")  # type: ignore[union-attr]
    cuda = v23.resolve("--disable-cuda-graph")
    assert cuda.deprecated and not cuda.takes_value
    assert len(v23) > 500 and v23.frame().shape[0] == len(v23)
    assert any("choices computed at run time" in note for note in v23.notes)


def _argparse_of(table: FlagTable) -> argparse.ArgumentParser:
    """A real argparse parser with the table's option strings (each flag a store_const of its index)."""
    parser = argparse.ArgumentParser(prog="x", allow_abbrev=table.allow_abbrev, add_help=False)
    for index, flag in enumerate(table.flags):
        parser.add_argument(*flag.option_strings, dest=f"f{index}", action="store_const", const=index)
    return parser


@pytest.mark.parametrize("version", ["0.5.9", "0.5.20"])
def test_prefix_matching_agrees_with_cpython_argparse(version: str) -> None:
    table = server_flags(version, previous=None)
    parser = _argparse_of(table)
    tokens = {option[:cut] for option in table.options if option.startswith("--")
              for cut in range(4, len(option) + 1, 3)} | {"--nope", "--model", "--tp"}  # fmt: skip
    for token in sorted(tokens):
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                namespace, extra = parser.parse_known_args([token])
        except SystemExit:
            assert "ambiguous option" in stderr.getvalue()
            with pytest.raises(FlagError) as info:
                table.resolve(token)
            assert info.value.kind == "ambiguous", token
            continue
        chosen = [v for v in vars(namespace).values() if v is not None]
        if extra:
            with pytest.raises(FlagError) as info:
                table.resolve(token)
            assert info.value.kind == "unknown", token
        else:
            assert [table.flags.index(table.resolve(token))] == chosen, token


def test_a_checkout_is_read_from_its_python_sglang_directory(tmp_path: Path) -> None:
    package = sglang_release("0.5.9").package_dir
    checkout = tmp_path / "my 'sglang' checkout" / "python" / "sglang" / "srt"
    checkout.mkdir(parents=True)
    shutil.copy(package / "srt" / "server_args.py", checkout / "server_args.py")
    table = server_flags(str(tmp_path / "my 'sglang' checkout"))
    assert table.version is None and table.label == f"local:{checkout.parent}" and table.previous is None
    assert [f.option_strings for f in table.flags] == [f.option_strings for f in server_flags("0.5.9").flags]
    with pytest.raises(FlagError, match=r"is not a flag of local:.*Did you mean"):
        table.resolve("--cuda-graph-max-bz")
    with pytest.raises(SourceError, match="not an SGLang source tree"):
        server_flags(str(tmp_path))


def test_table_repr_is_short(v20: FlagTable) -> None:
    assert repr(v20) == "<FlagTable 0.5.20: 495 flags, layout 'namespaces'>"


def _python38() -> str | None:
    """A working Python 3.8 (the oldest the helper supports), or None."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3")))
    candidates.append(shutil.which("python3.8"))
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 8))"],
                               capture_output=True, check=False)  # fmt: skip
        if probe.stdout.strip() == b"True":
            return candidate
    return None


PYTHON38 = _python38()
SCRIPT = Path(__file__).resolve().parent.parent / "remote" / "server_flags.py"


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter on this machine")
@pytest.mark.parametrize("version", ["0.5.9", "0.5.16", "0.5.23"])
def test_python38_extracts_the_same_flags(version: str) -> None:
    request = json.dumps({"root": str(sglang_release(version).package_dir)}).encode()
    answers = [json.loads(subprocess.run([python, str(SCRIPT)], input=request, capture_output=True, check=False,
                                         timeout=120).stdout) for python in (sys.executable, PYTHON38)]  # fmt: skip
    new, old = answers
    assert old["ok"] and old["python_version"].startswith("3.8"), old.get("error")
    assert old["flags"] == new["flags"] and old["speculative_algorithms"] == new["speculative_algorithms"]


def test_the_table_is_a_pure_value_the_caller_passes_the_previous_release(
    v20: FlagTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.source._releases as releases

    def no_io(*args: object, **kwargs: object) -> None:
        raise AssertionError("a FlagTable must not fetch anything")

    monkeypatch.setattr(releases, "sglang_release", no_io)
    alone = dataclasses.replace(v20, previous=None, previous_adjacent=False)
    with pytest.raises(FlagError) as info:
        alone.resolve("--cuda-graph-max-bs")
    assert info.value.fix is None and "removed" not in str(info.value)  # nothing to compare with: no history
    given = dataclasses.replace(v20, previous=v20.previous, previous_adjacent=False)
    with pytest.raises(FlagError, match=r"is gone in SGLang 0\.5\.20 \(in SGLang 0\.5\.19 it was a deprecated alias"):
        given.resolve("--cuda-graph-max-bs")
