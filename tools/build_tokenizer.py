"""Build the small byte-level BPE tokenizer shipped in ``data/tokenizer/``.

The simulated server names this directory as its ``tokenizer_path`` in ``/model_info``,
so ``sglang.bench_serving --tokenizer <dir>`` and
``transformers.AutoTokenizer.from_pretrained(<dir>)`` work with no download.

Training data: the shipped prompt set plus a corpus generated here from word lists
and templates written for this file (prose about software, Python code, JSON tool
calls, shell and log lines, and multilingual UTF-8 sentences). Generation uses
``random.Random(SEED)`` and training is deterministic, so re-running reproduces
``tokenizer.json`` byte for byte (tests/test_tokenizer.py checks this).

Run::

    python tools/build_tokenizer.py            # rewrite data/tokenizer/
    python tools/build_tokenizer.py --out DIR  # write elsewhere
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from workbench.bench import load_prompts

__all__ = ["BOS", "EOS", "PAD", "SEED", "SPECIAL_TOKENS", "VOCAB_SIZE", "build", "corpus", "write_directory"]

SEED = 20250529
VOCAB_SIZE = 8000
BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
SPECIAL_TOKENS = [BOS, EOS, PAD]
MODEL_MAX_LENGTH = 32768
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "data" / "tokenizer"

_NOUNS = """request response server client worker queue cache batch token prompt model draft target kernel
thread process socket buffer stream chunk packet header payload schema table index column row query
function method class module package library test fixture parser lexer compiler runtime scheduler
allocator memory page block tensor matrix vector gradient layer weight config option flag variable
value result error exception timeout retry backoff lease lock mutex semaphore counter metric histogram
latency throughput concurrency level sweep benchmark report chart notebook variant profile host
cluster node replica shard partition commit branch diff patch review release version file path
directory log line message event handler callback future promise task job pipeline stage step
user account order invoice payment customer product price discount record field key map list set""".split()
_VERBS = """reads writes sends receives parses validates computes returns raises stores loads caches
schedules allocates frees locks releases retries measures reports streams decodes encodes sorts merges
splits joins filters maps reduces updates deletes creates renders checks compares logs flushes""".split()
_ADJS = """small large fast slow stale fresh empty full partial final first last next previous
concurrent parallel sequential async blocking idle busy healthy broken flaky stable deterministic
random seeded cumulative incremental speculative greedy optimal default custom explicit implicit""".split()
_ADVS = "quickly slowly safely rarely always never often eventually immediately carefully".split()
_NAME_PARTS = """get set load save read write parse build make run start stop open close send recv
fetch push pop add remove update find check is has to from with for user order item request response
config cache queue batch token prompt model draft stream chunk event state level rate count total
max min avg sum len size time delay timeout retry error status result value key path name id""".split()
_TYPES = [
    "int",
    "float",
    "str",
    "bool",
    "bytes",
    "list[int]",
    "dict[str, Any]",
    "Path",
    "None",
    "list[str]",
    "tuple[int, int]",
    "Sequence[float]",
    "Mapping[str, str]",
    "Iterator[bytes]",
]
_MULTILINGUAL = [
    "Le café est prêt ; la requête a échoué après trois tentatives, réessayez plus tard.",
    "Die Größe des Puffers überschreitet das Maximum, daher wird die Anfrage abgelehnt.",
    "La latencia aumentó durante la migración; el equipo revisará los índices mañana.",
    "O serviço de pagamentos respondeu com erro às 14h07, após a atualização do esquema.",
    "Η ουρά εργασιών είναι άδεια και ο διακομιστής περιμένει νέα αιτήματα.",
    "Сервер перезапущен, кэш очищен, очередь запросов пуста.",
    "推测解码在低并发时提高了每个请求的速度，但在高并发时降低了总吞吐量。",
    "サーバーは正常に起動しました。ベンチマークを開始します。",
    "요청이 시간 초과되었습니다. 잠시 후 다시 시도하십시오.",
    "Typography: “quotes”, ‘single quotes’, an em dash — an en dash – an ellipsis… and a bullet •.",
    "Arrows and math: → ← ↑ ↓ ≤ ≥ ≠ ≈ × ÷ ± ∞ µs °C €5 £3 ¥100 © ®.",
    "Emoji in chat logs: ✅ done, ❌ failed, ⚠️ warning, 🚀 deployed, 🙂 thanks, 🔥 hot path.",
    "naïve résumé façade coöperate jalapeño piñata crème brûlée Ångström Øresund smörgåsbord.",
]


def _ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(_NAME_PARTS) for _ in range(parts))


def _sentence(rng: random.Random) -> str:
    subj = f"the {rng.choice(_ADJS)} {rng.choice(_NOUNS)}"
    obj = f"{rng.choice(['a', 'the', 'each', 'every', 'one'])} {rng.choice(_ADJS)} {rng.choice(_NOUNS)}"
    tail = rng.choice(
        [
            "",
            f" {rng.choice(_ADVS)}",
            f" after {rng.randint(2, 900)} ms",
            f" for {rng.randint(1, 64)} requests",
            f" when the {rng.choice(_NOUNS)} is {rng.choice(_ADJS)}",
        ]
    )
    text = f"{subj} {rng.choice(_VERBS)} {obj}{tail}."
    return text[0].upper() + text[1:]


def _prose(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(3, 8)))


def _camel(rng: random.Random, parts: int = 2) -> str:
    words = _NAME_PARTS + _NOUNS
    return "".join(rng.choice(words).capitalize() for _ in range(parts))


def _python(rng: random.Random) -> str:
    name, arg, other = _ident(rng), _ident(rng, 1), _ident(rng, 1)
    t1, t2 = rng.choice(_TYPES), rng.choice(_TYPES)
    n = rng.randint(1, 100)
    body = rng.choice(
        [
            (
                f"    total = 0\n    for i, {other} in enumerate({arg}):\n"
                f"        if i % {n} == 0:\n            total += len({other})\n    return total\n"
            ),
            (
                f'    if {arg} is None:\n        raise ValueError(f"{arg} must not be None, got {{{arg}!r}}")\n'
                f"    return {{k: v for k, v in {arg}.items() if v}}\n"
            ),
            (
                f"    result = []\n    while {arg}:\n        {other} = {arg}.pop()\n"
                f"        result.append({other} * {n})\n    return sorted(result, reverse=True)\n"
            ),
            (
                f"    async with self._lock:\n        self.{other}_count += 1\n"
                f"        await asyncio.sleep({n / 1000})\n        return self.{other}_count\n"
            ),
            (
                f'    try:\n        with open({arg}, encoding="utf-8") as fh:\n            return json.load(fh)\n'
                f"    except (OSError, json.JSONDecodeError) as exc:\n"
                f'        raise ConfigError(f"cannot read {{{arg}}}: {{exc}}") from exc\n'
            ),
        ]
    )
    doc = f'    """{_sentence(rng)}\n\n    Args:\n        {arg}: {_sentence(rng).lower()}\n    """\n'
    test = (
        f"\n\ndef test_{name}():\n    assert {name}({rng.choice(['[]', '{}', '0', 'None', repr(_ident(rng, 1))])})"
        f" == {rng.choice(['0', '[]', '{}', 'True', 'False'])}\n"
    )
    func = f"def {name}({arg}: {t1}, *, {other}: {t2} = None) -> {rng.choice(_TYPES)}:\n{doc}{body}"
    if rng.random() < 0.5:
        cls = _camel(rng, rng.randint(2, 3))
        func = (
            f"class {cls}({_camel(rng, 1)}Error if {n} else {_camel(rng, 2)}):\n    {_camel(rng, 2)}: int = {n}\n\n"
        ) + func
    return func + (test if rng.random() < 0.4 else "")


def _json_call(rng: random.Random) -> str:
    args = {
        _ident(rng, 1): rng.choice(
            [rng.randint(0, 5000), _ident(rng), rng.random() < 0.5, None, [rng.randint(0, 9) for _ in range(3)]]
        )
        for _ in range(rng.randint(1, 4))
    }
    call = {"name": _ident(rng), "arguments": args}
    if rng.random() < 0.5:
        return "Assistant (tool call): " + json.dumps(call)
    return "Tool result:\n" + json.dumps({"status": rng.choice([200, 201, 404, 409, 500]), "data": args}, indent=2)


def _shell_or_log(rng: random.Random) -> str:
    ts = (
        f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )
    return rng.choice(
        [
            (
                f"$ {rng.choice(['git', 'pytest', 'python -m', 'ls -la', 'grep -rn', 'docker', 'kubectl get'])} "
                f"{_ident(rng)} --{rng.choice(_NAME_PARTS)}={rng.randint(1, 64)}"
            ),
            f"{ts} {rng.choice(['INFO', 'WARN', 'ERROR', 'DEBUG'])}  {_sentence(rng)} (request_id={rng.getrandbits(32):08x})",
            f"Decode batch, #running-req: {rng.randint(1, 64)}, #token: {rng.randint(100, 90000)}, "
            f"token usage: {rng.random():.2f}, accept len: {rng.uniform(1, 4):.2f}, "
            f"gen throughput (token/s): {rng.uniform(10, 900):.2f}",
        ]
    )


def corpus(*, seed: int = SEED, generated_docs: int = 30000) -> Iterator[str]:
    """Training texts: the shipped prompts, then ``generated_docs`` generated documents.

    Deterministic for a given ``seed`` and prompt set.
    """
    for prompt in load_prompts("default"):
        yield prompt.text
    rng = random.Random(seed)
    makers = [_prose, _python, _python, _json_call, _shell_or_log]
    for i in range(generated_docs):
        yield rng.choice(makers)(rng)
        if i % 40 == 0:
            yield " ".join(rng.sample(_MULTILINGUAL, 4))


def build(*, seed: int = SEED, vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """Train the tokenizer (byte-level BPE, no normalizer, specials first: ids 0, 1, 2)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(seed=seed), trainer=trainer)
    return tokenizer


def _tokenizer_json(tokenizer: Tokenizer) -> str:
    """Compact tokenizer.json with merges in the ``"a b"`` form every tokenizers release reads.

    Byte-level tokens never contain a space (it is mapped to ``Ġ``), so the form is unambiguous.
    """
    data = json.loads(tokenizer.to_str())
    data["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_directory(out: Path = DEFAULT_OUT, *, seed: int = SEED, vocab_size: int = VOCAB_SIZE) -> Path:
    """Train and write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``.

    Returns:
        The directory written.
    """
    tokenizer = build(seed=seed, vocab_size=vocab_size)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(_tokenizer_json(tokenizer), encoding="utf-8")
    added = {
        str(tokenizer.token_to_id(t)): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for t in SPECIAL_TOKENS
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MODEL_MAX_LENGTH,
        "added_tokens_decoder": added,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    special = {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (``python tools/build_tokenizer.py``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: data/tokenizer)")
    args = parser.parse_args(argv)
    write_directory(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
