"""Engines: resolution by host (one definition of local), the registry, each engine's launch command and defaults."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from workbench import benchmark_variant
from workbench.cli import app
from workbench.engines import (
    DEFAULT_SIM_TIME_SCALE,
    ENGINES,
    Engine,
    SGLangEngine,
    SimEngine,
    engine_names,
    get_engine,
    resolve_engine,
)
from workbench.errors import ConfigError
from workbench.hosts import LocalHost, SSHHost
from workbench.servers import ServerHandle
from workbench.servers._watch import ready_timeout
from workbench.store import new_run
from workbench.variants import Variant, load_variant, resolve_target
from workbench.variants._resources import HostFacts, judge_resources

SIM, SGLANG = get_engine("sim"), get_engine("sglang")
PATCHED = "eagle3-topk4-off-above-8"


def test_registry_names_and_protocol() -> None:
    assert engine_names() == ["sim", "sglang"] and list(ENGINES) == engine_names()
    for name, engine in ENGINES.items():
        assert isinstance(engine, Engine) and engine.name == name and get_engine(engine) is engine
    assert isinstance(SIM, SimEngine) and isinstance(SGLANG, SGLangEngine)


def test_unknown_engine_is_a_config_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="Unknown engine 'vllm'; known engines: 'sim', 'sglang'"):
        get_engine("vllm")
    with pytest.raises(ConfigError, match="known engines"):
        resolve_engine("local", "SIM")
    with pytest.raises(ConfigError, match="engine name"):
        get_engine(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="known engines: 'sim', 'sglang'"):
        new_run("baseline", engine="vllm")
    result = CliRunner().invoke(app, ["variants", "check", "baseline", "--engine", "vllm"])
    assert result.exit_code == 2 and "known engines: 'sim', 'sglang'" in result.output


@pytest.mark.parametrize("host", [None, "local", "localhost", "", LocalHost()])
def test_this_machine_defaults_to_the_simulator(host) -> None:
    assert resolve_engine(host) is SIM
    assert resolve_engine(host, "sglang") is SGLANG and resolve_engine(host, SGLANG) is SGLANG


@pytest.mark.parametrize("host", ["gpu1", "my-gpu-box", SSHHost("gpu1")])
def test_any_other_host_defaults_to_sglang(host) -> None:
    assert resolve_engine(host) is SGLANG
    assert resolve_engine(host, "sim") is SIM


def test_localhost_is_local_for_variant_checks() -> None:
    # On this machine the simulator runs, so the installed SGLang is not the target: the variant's own version is.
    for host in ("local", "localhost"):
        assert resolve_target(load_variant("adaptive"), host=host).version == "0.5.12"


def test_sim_launch_command_and_defaults() -> None:
    v = load_variant(PATCHED)
    argv = SIM.launch_argv(v, python="py", port=31000, options={"time-scale": 4, "seed": None})
    assert argv[:3] == ["py", "-m", "workbench.sim"]
    assert argv[3 : 3 + len(v.server_flags())] == v.server_flags()
    assert v.sglang_version is None  # its base names the release; no target version to pass on
    assert argv[-8:] == [
        "--host",
        "127.0.0.1",
        "--port",
        "31000",
        "--sim-spec-off-above",
        "8",
        "--sim-time-scale",
        "4",
    ]  # the variant's sim_policy, then the options; None left out
    assert SIM.launch_argv(load_variant("eagle3-topk4"), python="py", port=1)[-2:] == ["--sim-sglang-version", "0.5.9"]
    assert SIM.launch_argv(v, python="py", port=1, options={"spec-off-above": 2})[-2:] == ["--sim-spec-off-above", "2"]
    assert SIM.time_scale(None) == DEFAULT_SIM_TIME_SCALE == 8.0 and SIM.time_scale(4) == 4.0
    assert SIM.time_scale(0.5) == 0.5  # its range is the sweep plan's one check (test_bench_plan.py)
    assert SIM.launch_options(profile="p", time_scale=2.0, seed=3) == {"profile": "p", "time-scale": 2.0, "seed": 3}
    assert SIM.stand_in(v) == v.sim_stand_in() and SIM.stand_in(v)
    assert SIM.labels() == {"engine": "sim", "simulated": True}
    assert not SIM.unique_prompts and SIM.uploads_workbench and not SIM.runs_variant_tree
    assert not SIM.wants_gpus and not SIM.reads_weights and SIM.called == "the simulated engine"


def test_sglang_launch_command_and_defaults() -> None:
    v = load_variant(PATCHED)
    argv = SGLANG.launch_argv(v, python="/env/bin/python", port=30000, listen_host="0.0.0.0")
    assert argv == [
        "/env/bin/python",
        "-m",
        "sglang.launch_server",
        *v.server_flags(),
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
    ]
    with pytest.raises(ConfigError, match="sim_options apply only to the simulated engine"):
        SGLANG.launch_argv(v, python="py", port=1, options={"time-scale": 2})
    assert SGLANG.time_scale(None) == 1.0 and SGLANG.time_scale(1) == 1.0
    with pytest.raises(ConfigError, match="a real server runs in real time"):
        SGLANG.time_scale(2.0)
    assert SGLANG.launch_options(profile="p", time_scale=1.0, seed=0) is None
    assert SGLANG.stand_in(v) is None and SGLANG.labels() == {"engine": "sglang", "simulated": False}
    assert SGLANG.unique_prompts and not SGLANG.uploads_workbench and SGLANG.runs_variant_tree
    assert SGLANG.wants_gpus and SGLANG.reads_weights and SGLANG.called == "SGLang"


def test_ready_timeout_per_engine(monkeypatch) -> None:
    monkeypatch.delenv("WORKBENCH_READY_TIMEOUT_S", raising=False)
    assert ready_timeout(SIM, None) == 60.0 and ready_timeout(SGLANG, None) == 1800.0
    assert ready_timeout(SGLANG, 5) == 5.0
    monkeypatch.setenv("WORKBENCH_READY_TIMEOUT_S", "42")
    assert ready_timeout(SIM, None) == 42.0
    monkeypatch.setenv("WORKBENCH_READY_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="WORKBENCH_READY_TIMEOUT_S"):
        ready_timeout(SIM, None)


def test_missing_paths_are_warnings_on_the_sim_and_errors_on_sglang() -> None:
    v = Variant("v", "/models/llama")
    facts = HostFacts("gpu1", {"/models/llama": {"exists": False, "kib": None}}, None, None)
    sim = judge_resources(v, facts, engine="sim")
    assert [(f.check, f.severity) for f in sim] == [("path-missing", "warning"), ("gpu-skipped", "info")]
    assert "the simulated engine does not read it" in sim[0].problem
    real = judge_resources(v, facts, engine=SGLANG)
    assert [(f.check, f.severity) for f in real] == [("path-missing", "error"), ("gpu-skipped", "info")]
    hub = judge_resources(Variant("v", "org/model"), facts, engine=SIM)
    assert "loads no weights" in hub[0].problem


def test_store_labels_come_from_the_engine(tmp_path) -> None:
    for engine, simulated in (("sim", True), (SGLANG, False)):
        run = new_run("baseline", engine=engine, root=tmp_path)
        assert run.manifest["engine"] == get_engine(engine).name and run.manifest["simulated"] is simulated


def test_localhost_starts_the_simulator(tmp_path) -> None:
    # benchmark_variant(host="localhost") once picked sglang while ServerHandle.start picked the simulator.
    run_dir = benchmark_variant(
        "baseline",
        host="localhost",
        concurrency_levels=[1],
        requests_per_level=2,
        max_new_tokens=8,
        time_scale=20.0,
        progress=False,
        runs_dir=tmp_path,
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["engine"] == "sim" and manifest["simulated"] is True
    assert manifest["client_location"] == "local" and "workbench.sim" in manifest["launch_command"]
    assert manifest["plan"]["unique_prompts"] is False and manifest["time_scale"] == 20.0
    with ServerHandle.start(
        load_variant("baseline"), host="localhost", python=sys.executable, sim_options={"time-scale": 20}
    ) as server:
        assert server.engine is SIM and server.command[1:3] == ["-m", "workbench.sim"]
        assert "sim" in repr(server)


def test_server_info_says_which_engine_served() -> None:
    from workbench.engines import server_info_engine

    assert server_info_engine({"version": "0.5.9", "simulation": {"engine": "sim", "time_scale": 2.0}}) is SIM
    assert server_info_engine({"version": "0.5.9", "internal_states": [{}]}) is SGLANG
    assert server_info_engine(None) is None


def test_a_variant_for_a_later_release_runs_on_the_simulator_under_its_rules() -> None:
    from workbench.sim._server_args import parse_server_args, rules_version_for

    v = load_variant("adaptive")  # written for 0.5.12: --speculative-adaptive is not a 0.5.9 flag
    argv = SIM.launch_argv(v, python="py", port=1)
    config = parse_server_args(argv[3 : argv.index("--host")] + argv[argv.index("--sim-sglang-version") :])
    assert config.sglang_version == "0.5.12" and config.args["speculative_adaptive"]
    assert rules_version_for("0.5.14") == "0.5.12" and rules_version_for("0.5.23") == "0.5.23"
    with pytest.raises(ConfigError, match="older than every version the simulator emulates"):
        rules_version_for("0.4.6")
    with pytest.raises(ConfigError, match="is not an SGLang version"):
        rules_version_for("latest")


class _ReplayEngine(Engine):
    """A second engine, as a test writes one: it states what it does and answers the methods, nothing about
    SGLang's code (``runs_variant_tree`` keeps the protocol's default) and no sentence but its name."""

    name, called, description, simulated = "replay", "the replay engine", "replays a recorded server", True
    launch_module, uploads_workbench, ready_timeout_s = "replay.serve", False, 5.0
    default_repeats, unique_prompts, reads_weights, wants_gpus = 1, False, False, False

    def engine_argv(self, variant, options):
        return variant.server_flags(), [f"--{k}={v}" for k, v in options.items()]

    def time_scale(self, requested):
        return 1.0 if requested is None else float(requested)

    def launch_options(self, *, profile, time_scale, seed):
        return {"seed": seed}

    def stand_in(self, variant):
        return "a recording stands in"

    def answered(self, server_info):
        return "replay" in server_info


def test_a_second_engine_needs_no_answer_about_sglang_and_gets_its_own_sentences() -> None:
    from workbench.variants._preflight import PreparedLaunch

    replay = _ReplayEngine()
    v = load_variant(PATCHED)
    assert not replay.runs_variant_tree and replay == _ReplayEngine() and replay != SIM
    assert replay.launch_argv(v, python="py", port=7, options={"seed": 1}) == [
        "py",
        "-m",
        "replay.serve",
        *v.server_flags(),
        "--host",
        "127.0.0.1",
        "--port",
        "7",
        "--seed=1",
    ]
    facts = HostFacts("h", {"/models/llama": {"exists": False, "kib": None}}, None, None)
    found = judge_resources(Variant("v", "/models/llama"), facts, engine=replay)
    assert [(f.check, f.severity, f.problem) for f in found] == [
        (
            "path-missing",
            "warning",
            "/models/llama does not exist on host 'h' (the replay engine does not read it, "
            "so the run itself will work).",
        ),
        ("gpu-skipped", "info", "GPU memory not checked: the replay engine needs no GPU."),
    ]
    prov = PreparedLaunch(v, v, replay, "h", []).provenance(server_info={"version": "0.5.9"}, launch_command=None)
    assert prov["engine_runs_sglang_code"] is False and prov["sim_stand_in"] == "a recording stands in"
    assert prov["sglang_version_meaning"] == "the SGLang version whose HTTP API the replay engine emulates"
    assert [p["note"] for p in prov["patches"]] == ["not applied: the replay engine runs no SGLang code"]


def test_the_findings_say_what_they_said_when_the_engine_held_the_sentences() -> None:
    """The sentences moved from the engine record to the modules that make the findings, word for word."""
    from workbench.variants._preflight import PreparedLaunch

    facts = HostFacts("gpu1", {}, None, None)
    hub = judge_resources(Variant("v", "org/model"), facts, engine=SGLANG)
    assert hub[0].problem == (
        "'org/model' looks like a hub id, not a path, so it is not checked on 'gpu1' "
        "(the server downloads it into the Hugging Face cache)."
    )
    assert judge_resources(Variant("v", "org/model"), facts, engine=SIM)[1].problem == (
        "GPU memory not checked: the simulated engine needs no GPU."
    )
    v = load_variant(PATCHED)
    prov = PreparedLaunch(v, v, SIM, "local", []).provenance(server_info={"version": "0.5.9"}, launch_command=None)
    assert prov["patches"][0]["note"] == "not applied: the simulated engine runs no SGLang code"
    assert prov["sglang_version_meaning"] == "the SGLang version whose HTTP API the simulated engine emulates"


def test_an_engine_is_an_immutable_value() -> None:
    import pickle

    with pytest.raises(AttributeError, match="an engine is immutable"):
        SIM.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="an engine is immutable"):
        del SGLANG.wants_gpus
    assert pickle.loads(pickle.dumps(SGLANG)) == SGLANG and hash(SIM) == hash(SimEngine())
    assert len({SIM, SGLANG, SimEngine()}) == 2 and repr(SIM) == "SimEngine(name='sim')"
