"""remote/gpu_calibrate.py: the plan (pure, no torch), the command line without torch, and, where
PyTorch is installed (it is not a test dependency), the layers' maths and a CPU test run of the
tiny shapes (labelled, never a calibration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from blocked_imports import blocking_dir
from torch_programs import needs_torch, run_program

ROOT = Path(__file__).resolve().parents[1]
REMOTE = ROOT / "remote"
SCRIPT = REMOTE / "gpu_calibrate.py"
sys.path.insert(0, str(REMOTE))
import _gpu_calibrate_plan as plan_mod  # noqa: E402


def _run(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_program(SCRIPT, *args, env=env, timeout=timeout)


# -- the plan ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["llama-3.1-8b-instruct", "eagle3-llama3.1-8b", "qwen3-30b-a3b"])
def test_built_in_shapes_match_the_model_files(name: str) -> None:
    toml = tomllib.loads((ROOT / "data" / "models" / f"{name}.toml").read_text())
    for key, value in plan_mod.MODELS[name].items():
        assert toml[key] == value, key


def test_quick_plan_covers_the_issue_grid() -> None:
    plan = plan_mod.make_plan("llama3-8b", mode="quick")
    decode = [p for p in plan["points"] if p["family"] == "decode"]
    assert len({p["tokens"] for p in decode if p["context"] == 0}) >= 12
    assert min(p["tokens"] for p in decode) == 1 and max(p["tokens"] for p in decode) == 4096
    assert {p["context"] for p in decode} == {0, 2048, 8192, 32768}
    knee = [t for t in plan_mod.TOKENS["quick"] if 64 <= t <= 512]
    assert len(knee) >= 8  # denser near the expected knee
    draft = [p for p in plan["points"] if p["family"] == "draft"]
    assert draft and {p["q_len"] for p in draft} == {1, 4} and "lm_head" in draft[0]["groups"]
    assert all(p["kv_tokens"] <= plan_mod.KV_BUDGET_TOKENS["quick"] for p in plan["points"])
    assert any("KV budget" in x["reason"] for x in plan["left_out"])
    assert plan["layers_timed"] == 32 and plan["memory"]["total"] < 0.9 * 139e9
    assert not any(p["family"] == "allreduce" for p in plan["points"])


def test_moe_plan_times_a_few_layers_and_the_experts() -> None:
    plan = plan_mod.make_plan("qwen3-30b-a3b", mode="quick")
    assert plan["layers_timed"] == 8 and plan["target"]["layers"] == 48
    assert plan["draft"] is None
    assert all("experts" in p["groups"] for p in plan["points"] if p["family"] == "decode")
    assert plan["memory"]["total"] < 0.9 * 139e9


def test_tp_shards_one_rank_and_adds_the_allreduce() -> None:
    plan = plan_mod.make_plan("llama3-8b", mode="quick", tp=2, gpus=2)
    t = plan["target"]
    assert (t["heads"], t["kv_heads"], t["intermediate"], t["vocab"]) == (16, 4, 7168, 64128)
    assert [p["tokens"] for p in plan["points"] if p["family"] == "allreduce"] == plan_mod.TOKENS["quick"]
    assert plan_mod.rank_shape(plan_mod.MODELS["qwen3-30b-a3b"], 8)["kv_heads"] == 1  # replicated, never 0


def test_plan_key_changes_with_what_makes_tables_comparable() -> None:
    a = plan_mod.make_plan("tiny", mode="quick")
    assert plan_mod.make_plan("tiny", mode="quick")["key"] == a["key"]
    assert plan_mod.make_plan("tiny", mode="quick", reps=3)["key"] != a["key"]
    assert plan_mod.make_plan("tiny", mode="full")["key"] != a["key"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"preset": "nope"}, "unknown preset"),
        ({"preset": None}, "give --preset"),
        ({"preset": "tiny", "tp": 3}, "divide"),
        ({"preset": "tiny", "layers": 9}, "layers must be"),
        ({"preset": None, "model": "no-such-model"}, "unknown model"),
    ],
)
def test_bad_requests_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(plan_mod.PlanError, match=message):
        plan_mod.make_plan(**kwargs)


def test_models_dir_toml_and_json_shapes(tmp_path: Path) -> None:
    plan = plan_mod.make_plan(
        None, model="llama-3.3-70b-instruct", draft="none", mode="quick", models_dir=str(ROOT / "data" / "models")
    )
    assert plan["target"]["hidden"] == 8192 and plan["draft"] is None
    shape = tmp_path / "m.json"
    shape.write_text(json.dumps(plan_mod.MODELS["tiny-dense"]))
    assert plan_mod.make_plan(None, model=str(shape), mode="quick")["name"] == "m"


# -- the command line, without torch -----------------------------------------------------------------
def test_dry_run_needs_no_torch_and_writes_the_plans(tmp_path: Path) -> None:
    blocked = blocking_dir(tmp_path, ("torch",))
    out = tmp_path / "out"
    r = _run(
        "--preset",
        "llama3-8b,qwen3-30b-a3b",
        "--quick",
        "--dry-run",
        "--out",
        str(out),
        env={"PYTHONPATH": str(blocked)},
    )
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert [p["name"] for p in answer["plans"]] == ["llama3-8b", "qwen3-30b-a3b"]
    assert answer["plans"][0]["estimated_gpu_s"] < 240
    assert sorted(os.listdir(out)) == ["llama3-8b.plan.json", "qwen3-30b-a3b.plan.json"]


def test_without_torch_it_refuses_and_says_why(tmp_path: Path) -> None:
    r = _run(
        "--preset",
        "tiny",
        "--quick",
        "--out",
        str(tmp_path),
        env={"PYTHONPATH": str(blocking_dir(tmp_path, ("torch",)))},
    )
    assert r.returncode == 2
    assert "PyTorch is not installed" in r.stderr and "--python" in r.stderr


# -- the torch path, on a CPU -----------------------------------------------------------------------
@needs_torch
def test_without_a_gpu_it_refuses_clearly(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present here")
    r = _run("--preset", "llama3-8b", "--quick", "--out", str(tmp_path))
    assert r.returncode == 2 and "no CUDA GPU" in r.stderr and "--device cpu --preset tiny" in r.stderr
    r = _run("--preset", "llama3-8b", "--quick", "--device", "cpu", "--out", str(tmp_path))
    assert r.returncode == 2 and "never a calibration" in r.stderr


@needs_torch
@pytest.mark.parametrize("q_len, context", [(1, 0), (1, 7), (3, 5), (6, 0)])
def test_attention_core_matches_grouped_attention(q_len: int, context: int) -> None:
    import torch
    import torch.nn.functional as F

    import _gpu_calibrate_torch as tm

    torch.manual_seed(0)
    s = plan_mod.rank_shape(plan_mod.MODELS["tiny-dense"])
    device = torch.device("cpu")
    seqs = 1 if context == 0 and q_len > 1 else 2
    point = {"seqs": seqs, "q_len": q_len, "context": context, "tokens": seqs * q_len}
    layer = tm.Layer(s, device=device, pool_tokens=64)
    ctx = tm.Context(point, s, device=device)
    y = torch.randn(point["tokens"], layer.q_size + 2 * layer.kv_size)
    got = layer.attention_core(y, ctx)
    nh, nkv, hd = s["heads"], s["kv_heads"], s["head_dim"]
    kc = layer.k_pool[: seqs * (context + q_len)].view(seqs, context + q_len, nkv, hd).transpose(1, 2)
    vc = layer.v_pool[: seqs * (context + q_len)].view(seqs, context + q_len, nkv, hd).transpose(1, 2)
    assert torch.equal(kc[:, :, context:].transpose(1, 2).reshape(seqs * q_len, -1), y[:, nh * hd : (nh + nkv) * hd])
    q = y[:, : nh * hd].view(seqs, q_len, nh, hd).transpose(1, 2)
    k, v = kc.repeat_interleave(nh // nkv, 1), vc.repeat_interleave(nh // nkv, 1)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=context == 0 and q_len > 1)
    want = want.transpose(1, 2).reshape(seqs * q_len, nh * hd)
    assert torch.allclose(got, want, atol=1e-5)


@needs_torch
def test_moe_routing_is_uniform_static_and_recorded() -> None:
    import torch

    import _gpu_calibrate_torch as tm

    r = tm.Routing(16, 128, 8, device=torch.device("cpu"), dtype=torch.float32)
    assert sum(r.counts) == 16 * 8 and r.touched == len(r.counts) and int(r.offsets[-1]) == 128
    assert 60 < r.touched < 105  # uniform routing touches 128 (1 - (1 - 8/128)^16) = 82 on average
    s = plan_mod.rank_shape(plan_mod.MODELS["tiny-moe"])
    layer = tm.Layer(s, device=torch.device("cpu"), pool_tokens=8)
    ctx = tm.Context({"seqs": 4, "q_len": 1, "context": 0, "tokens": 4}, s, device=torch.device("cpu"))
    x2 = torch.randn(4, s["hidden"])
    out = layer.experts(x2, ctx)
    ref = torch.zeros_like(x2)
    ie = s["expert_intermediate"]
    start = 0
    for e, count in enumerate(ctx.routing.counts):
        idx = ctx.routing.token_index[start : start + count]
        gu = x2[idx] @ layer.w13[e].T
        ref.index_add_(
            0,
            idx,
            (torch.nn.functional.silu(gu[:, :ie]) * gu[:, ie:])
            @ layer.w2[e].T
            * ctx.routing.gate[start : start + count],
        )
        start += count
    assert torch.allclose(out, ref, atol=1e-5)


@needs_torch
def test_cpu_test_run_writes_labelled_tables_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = (
        "--preset",
        "tiny,tiny-moe",
        "--quick",
        "--device",
        "cpu",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--out",
        str(out),
    )
    r = _run(*args)
    assert r.returncode == 0, r.stderr
    assert "complete: " in r.stdout
    doc = json.loads((out / "tiny.json").read_text())
    assert doc["format"] == "workbench-gpu-calibration/1" and doc["status"] == "complete"
    assert doc["calibration"] is False and "NEVER a calibration" in doc["environment"]["calibration_note"]
    assert {"torch", "python", "hostname"} <= set(doc["environment"])
    groups = {(r["family"], r["group"]) for r in doc["rows"]}
    assert {
        ("decode", "layers"),
        ("decode", "attention"),
        ("decode", "dense"),
        ("lm_head", "lm_head"),
        ("draft", "step"),
        ("draft", "lm_head"),
    } <= groups
    assert all("NOT a calibration" in r["timer"] for r in doc["rows"])
    moe = json.loads((out / "tiny-moe.json").read_text())
    assert all(r["touched_experts"] for r in moe["rows"] if r["group"] == "experts")
    csv_lines = (out / "tiny.csv").read_text().splitlines()
    assert len(csv_lines) == len(doc["rows"]) + 1 and csv_lines[0].startswith("shape,model,role,family,group")

    # resume: a table cut short is completed, the rows kept are not timed again
    doc["rows"] = doc["rows"][:10]
    doc["status"] = "running"
    (out / "tiny.json").write_text(json.dumps(doc))
    r = _run("--preset", "tiny", *args[2:])
    assert r.returncode == 0, r.stderr
    assert "points to time" in r.stdout and "(%d done)" % len({x["point"] for x in doc["rows"]}) in r.stdout
    again = json.loads((out / "tiny.json").read_text())
    assert again["rows"][:10] == doc["rows"] and again["status"] == "complete"
    assert "complete already" in _run("--preset", "tiny", *args[2:]).stdout

    # another plan over the same table: refused unless --restart
    r = _run("--preset", "tiny", "--full", "--device", "cpu", "--reps", "1", "--out", str(out), "--dry-run")
    assert r.returncode == 0
    r = _run("--preset", "tiny", "--quick", "--device", "cpu", "--reps", "2", "--out", str(out))
    assert r.returncode == 2 and "--restart" in r.stderr


@needs_torch
def test_allreduce_path_over_two_cpu_ranks(tmp_path: Path) -> None:
    """The all-reduce family's processes and table rows, over gloo on a CPU (NCCL on GPUs)."""
    import torch

    import _gpu_calibrate_torch as tm  # noqa: F401
    import gpu_calibrate

    plan = plan_mod.make_plan("tiny", mode="quick", gpus=2, reps=2, warmup=1)
    points = [p for p in plan["points"] if p["family"] == "allreduce"][:3]
    rows = gpu_calibrate.time_allreduce(
        plan, points, gpu_ids=None, device=torch.device("cpu"), torch=torch, env={"gpu_name": None}
    )
    assert [r["message_bytes"] for r in rows] == [p["tokens"] * 64 * 4 for p in points]
    assert all(r["gpus"] == 2 and r["median_ms"] > 0 for r in rows)
