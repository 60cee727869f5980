"""GPUs and model shapes the roofline cost model reads: data sheets and Hugging Face configs.

A GPU is a TOML file in ``data/gpus/<name>.toml`` (memory, HBM bandwidth, dense bf16/fp8
FLOP/s, SM count, and one ``[interconnect.<kind>]`` table per way its GPUs can talk:
per-direction bandwidth and whether SGLang's custom all-reduce can run over it). A model is a
TOML file in ``data/models/<name>.toml`` holding the fields of its Hugging Face
``config.json`` (layers, hidden size, intermediate size, heads, KV heads, head dim, vocab,
dtype; for mixture-of-experts models the experts, experts per token, expert and
shared-expert sizes; for EAGLE-3 drafts the draft vocabulary). Each number in those files
names its source in a comment.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

_DATA = Path(__file__).resolve().parents[2] / "data"
#: Where GPU data sheets live.
GPUS_DIR = _DATA / "gpus"
#: Where model configs live.
MODELS_DIR = _DATA / "models"

#: Bytes per element of a config's ``torch_dtype``.
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1, "fp8": 1}


@dataclasses.dataclass(frozen=True)
class Interconnect:
    """How the GPUs of one host talk.

    Attributes:
        kind: ``"nvlink"`` or ``"pcie"``.
        bandwidth_gb_s: data-sheet bandwidth per GPU, one direction (GB/s).
        custom_all_reduce: whether SGLang's custom all-reduce can run over it.
    """

    kind: str
    bandwidth_gb_s: float
    custom_all_reduce: bool


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    """One GPU's data sheet (see module docstring).

    Attributes:
        name: file stem.
        memory_gb: HBM capacity (GB).
        hbm_bandwidth_gb_s: HBM bandwidth (GB/s).
        dense_bf16_tflops: dense bf16 tensor-core throughput (TFLOP/s).
        dense_fp8_tflops: dense fp8 tensor-core throughput (TFLOP/s).
        sm_count: streaming multiprocessors.
        interconnects: kind -> :class:`Interconnect`.
    """

    name: str
    memory_gb: float
    hbm_bandwidth_gb_s: float
    dense_bf16_tflops: float
    dense_fp8_tflops: float
    sm_count: int
    interconnects: dict[str, Interconnect]

    def interconnect(self, kind: str) -> Interconnect:
        """The named interconnect, or ConfigError listing the ones the data sheet has."""
        try:
            return self.interconnects[kind]
        except KeyError:
            raise ConfigError(
                f"GPU {self.name} has no interconnect {kind!r}; its data sheet lists {sorted(self.interconnects)}"
            ) from None


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The shape of a model, in Hugging Face ``config.json`` terms.

    Attributes:
        name: the model's repository name.
        num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
        num_key_value_heads, head_dim, vocab_size: as in ``config.json``.
        dtype_bytes: bytes per weight (from ``torch_dtype``).
        num_experts: routed experts per MoE layer (0 for a dense model).
        num_experts_per_tok: experts each token is routed to.
        moe_intermediate_size: one expert's intermediate size.
        shared_expert_intermediate_size: the always-on shared expert(s)' total intermediate size.
        draft_vocab_size: an EAGLE-3 draft's LM-head vocabulary (None: ``vocab_size``).
        eagle_fused_layers: target layers whose features an EAGLE-3 draft fuses (0: none).
    """

    name: str
    num_hidden_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    dtype_bytes: int = 2
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    draft_vocab_size: int | None = None
    eagle_fused_layers: int = 0

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.num_experts > 0

    @property
    def lm_head_vocab(self) -> int:
        """Rows of the LM head: the draft vocabulary of an EAGLE-3 draft, else the vocabulary."""
        return self.draft_vocab_size or self.vocab_size

    def weight_params(self) -> int:
        """Parameters read by a forward over every expert (embedding excluded), for memory sizing."""
        h, hd = self.hidden_size, self.head_dim
        attn = h * (self.num_attention_heads + 2 * self.num_key_value_heads) * hd + self.num_attention_heads * hd * h
        if self.is_moe:
            mlp = 3 * h * (self.num_experts * self.moe_intermediate_size + self.shared_expert_intermediate_size)
            mlp += h * self.num_experts
        else:
            mlp = 3 * h * self.intermediate_size
        fc = self.eagle_fused_layers * h * h
        return self.num_hidden_layers * (attn + mlp) + fc + self.lm_head_vocab * h


def check_non_negative(config: object, names: Iterable[str], *, what: str = "") -> None:
    """Raise ``ValueError`` naming the first of ``names`` whose value on ``config`` is below zero.

    ``what`` opens the message (``"cost model "``) where the field's name alone would not say whose it is.
    """
    for name in names:
        value = getattr(config, name)
        if value < 0:
            raise ValueError(f"{what}{name} must be >= 0, got {value}")


def _read(path: Path, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.toml"))) or "none"
        raise ConfigError(f"Unknown {what} {path.stem!r} (no file {path}); known: {known}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what.capitalize()} file {path} is not valid TOML: {exc}") from exc


def load_gpu(name: str, *, directory: Path = GPUS_DIR) -> GpuSpec:
    """Load ``data/gpus/<name>.toml``.

    Raises:
        ConfigError: unknown GPU, bad TOML or a missing field (the message names the file).
    """
    path = directory / f"{name}.toml"
    data = _read(path, "GPU")
    try:
        links = {
            kind: Interconnect(kind, float(v["bandwidth_gb_s"]), bool(v["custom_all_reduce"]))
            for kind, v in data.get("interconnect", {}).items()
        }
        return GpuSpec(
            name=name,
            memory_gb=float(data["memory_gb"]),
            hbm_bandwidth_gb_s=float(data["hbm_bandwidth_gb_s"]),
            dense_bf16_tflops=float(data["dense_bf16_tflops"]),
            dense_fp8_tflops=float(data["dense_fp8_tflops"]),
            sm_count=int(data["sm_count"]),
            interconnects=links,
        )
    except KeyError as exc:
        raise ConfigError(f"GPU file {path} lacks {exc.args[0]!r}") from None


def load_model_config(name: str, *, directory: Path = MODELS_DIR) -> ModelConfig:
    """Load ``data/models/<name>.toml`` (Hugging Face ``config.json`` field names).

    Raises:
        ConfigError: unknown model, bad TOML, a missing field or an unknown dtype.
    """
    path = directory / f"{name}.toml"
    data = _read(path, "model")
    dtype = str(data.get("torch_dtype", "bfloat16"))
    if dtype not in DTYPE_BYTES:
        raise ConfigError(f"Model file {path}: unknown torch_dtype {dtype!r}; known: {sorted(DTYPE_BYTES)}")
    try:
        heads = int(data["num_attention_heads"])
        hidden = int(data["hidden_size"])
        return ModelConfig(
            name=str(data.get("name", name)),
            num_hidden_layers=int(data["num_hidden_layers"]),
            hidden_size=hidden,
            intermediate_size=int(data["intermediate_size"]),
            num_attention_heads=heads,
            num_key_value_heads=int(data.get("num_key_value_heads", heads)),
            head_dim=int(data.get("head_dim", hidden // heads)),
            vocab_size=int(data["vocab_size"]),
            dtype_bytes=DTYPE_BYTES[dtype],
            num_experts=int(data.get("num_experts", data.get("num_local_experts", 0))),
            num_experts_per_tok=int(data.get("num_experts_per_tok", 0)),
            moe_intermediate_size=int(data.get("moe_intermediate_size", 0)),
            shared_expert_intermediate_size=int(data.get("shared_expert_intermediate_size", 0) or 0),
            draft_vocab_size=int(data["draft_vocab_size"]) if "draft_vocab_size" in data else None,
            eagle_fused_layers=int(data.get("eagle_fused_layers", 0)),
        )
    except KeyError as exc:
        raise ConfigError(f"Model file {path} lacks {exc.args[0]!r}") from None
