"""Tests for the shipped tokenizer (data/tokenizer) and workbench.bench._tokenizer."""

from __future__ import annotations

import importlib.util
import json
import random

import pytest

from conftest import load_tool

from workbench.bench._prompts import load_prompts
from workbench.bench._tokenizer import TOKENIZER_DIR, count_tokens, decode_incremental, load_tokenizer, token_bytes
from workbench.errors import ConfigError

build_tokenizer = load_tool("build_tokenizer")

ASCII_TEXT = [
    "Hello, world!",
    "def add(a: int, b: int) -> int:\n    return a + b\n",
    '{"name": "read_file", "arguments": {"path": "src/app.py", "start_line": 10}}',
    "  leading and trailing spaces  \n\n\ttabs\tand\r\nCRLF\r\n",
    "Numbers 3.14159 1e-9 0xFF 1_000_000 and symbols ~!@#$%^&*()[]{}<>?/\\|`",
]
UTF8_TEXT = [
    "café — naïve résumé",
    "推测解码在低并发时提高了速度。",
    "Größe über Ångström, Øresund.",
    "emoji 🙂🚀✅ and arrows → ≤ ≥ ∞",
    "mixed: Сервер перезапущен; サーバー; 요청",
]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


def test_files_and_config():
    files = {p.name for p in TOKENIZER_DIR.iterdir()}
    assert {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"} <= files
    assert (TOKENIZER_DIR / "tokenizer.json").stat().st_size < 1_000_000
    config = json.loads((TOKENIZER_DIR / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert config["bos_token"] == build_tokenizer.BOS and config["eos_token"] == build_tokenizer.EOS
    special = json.loads((TOKENIZER_DIR / "special_tokens_map.json").read_text())
    assert special == {"bos_token": "<|bos|>", "eos_token": "<|eos|>", "pad_token": "<|pad|>"}


def test_vocabulary(tok):
    assert tok.get_vocab_size() == build_tokenizer.VOCAB_SIZE
    assert [tok.token_to_id(t) for t in build_tokenizer.SPECIAL_TOKENS] == [0, 1, 2]


@pytest.mark.parametrize("text", ASCII_TEXT + UTF8_TEXT)
def test_round_trip(tok, text):
    assert tok.decode(tok.encode(text).ids) == text


def test_round_trip_random_unicode(tok):
    rng = random.Random(11)
    alphabet = [chr(c) for c in [*range(32, 127), *range(0xA0, 0x250), *range(0x4E00, 0x4E40), 0x1F642, 0x1F680]]
    for _ in range(50):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
        assert tok.decode(tok.encode(text).ids) == text


def test_one_token_at_a_time_equals_whole_for_ordinary_text(tok):
    texts = ASCII_TEXT + [p.text for p in load_prompts()]
    for text in texts:
        ids = tok.encode(text).ids
        assert "".join(tok.decode([i]) for i in ids) == tok.decode(ids) == text


def test_decode_incremental_is_exact_for_utf8(tok):
    for text in UTF8_TEXT + ASCII_TEXT:
        ids = tok.encode(text).ids
        pieces = list(decode_incremental(ids))
        assert "".join(pieces) == text
        assert len(pieces) == len(ids)


def test_token_bytes_and_specials(tok):
    ids = tok.encode("a <|eos|>").ids
    assert ids[-1] == 1 and token_bytes(1) == b"<|eos|>"
    assert b"".join(token_bytes(i) for i in tok.encode("héllo").ids) == "héllo".encode()
    with pytest.raises(ConfigError):
        token_bytes(10**6)


def test_count_tokens(tok):
    assert count_tokens("") == 0
    assert count_tokens("def add(a, b):") == len(tok.encode("def add(a, b):").ids)
    assert count_tokens("x" * 10, tokenizer=tok) >= 1


def test_load_errors(tmp_path):
    with pytest.raises(ConfigError, match="No tokenizer"):
        load_tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{broken")
    with pytest.raises(ConfigError, match="Cannot load"):
        load_tokenizer(tmp_path)
    assert load_tokenizer(TOKENIZER_DIR / "tokenizer.json").get_vocab_size() == build_tokenizer.VOCAB_SIZE


def test_build_reproduces_shipped_files(tmp_path):
    build_tokenizer.write_directory(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (tmp_path / name).read_bytes() == (TOKENIZER_DIR / name).read_bytes(), name


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")
def test_transformers_autotokenizer_loads_directory():
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR))
    text = "def add(a, b):\n    return a + b  # café"
    assert hf.encode(text, add_special_tokens=False) == load_tokenizer().encode(text).ids
    assert hf.decode(hf.encode(text)) == text
    assert hf.eos_token == "<|eos|>" and hf.bos_token == "<|bos|>" and hf.eos_token_id == 1
