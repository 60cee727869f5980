"""Tokens and text for the simulated server.

Prompt lengths are counted with the tokenizer the workbench ships
(``data/tokenizer``, the one ``/model_info`` names). Output tokens are not
sampled from a model: each request replays a stretch of a fixed corpus (the
tokenized prompt set), starting at an offset derived from its request id, so
streamed text is real, readable and reproducible. Text is built by appending the
decoded piece of each token, which equals decoding the whole id list for this
byte-level tokenizer on the shipped corpus (checked in tests/test_tokenizer.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tokenizers import Tokenizer

#: The tokenizer directory the workbench ships.
TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "data" / "tokenizer"


class TextModel:
    """Counts prompt tokens and produces output token ids and their text.

    Args:
        tokenizer_dir: directory holding ``tokenizer.json`` (default: the shipped one).
        corpus: text replayed as output (default: every shipped prompt).

    Raises:
        ConfigError: the tokenizer file is missing.
    """

    def __init__(self, tokenizer_dir: Path = TOKENIZER_DIR, corpus: str | None = None) -> None:
        from workbench.errors import ConfigError

        path = Path(tokenizer_dir) / "tokenizer.json"
        if not path.is_file():
            raise ConfigError(f"No tokenizer at {path}; the workbench ships one in data/tokenizer/")
        self.tokenizer_dir = Path(tokenizer_dir)
        self.tokenizer = Tokenizer.from_file(str(path))
        if corpus is None:
            corpus = "\n\n".join(_default_corpus())
        self._stream = self.tokenizer.encode(corpus).ids or [0]
        vocab = self.tokenizer.get_vocab_size()
        self._pieces: dict[int, str] = {}
        self._vocab = vocab

    def count_tokens(self, text: str) -> int:
        """Prompt length in tokens."""
        return len(self.tokenizer.encode(text).ids)

    def output_ids(self, rid: str, start: int, count: int) -> list[int]:
        """Token ids ``start .. start+count-1`` of request ``rid``'s output."""
        offset = int.from_bytes(hashlib.blake2b(rid.encode(), digest_size=4).digest(), "big")
        n = len(self._stream)
        return [self._stream[(offset + i) % n] for i in range(start, start + count)]

    def piece(self, token_id: int) -> str:
        """Decoded text of one token (cached)."""
        text = self._pieces.get(token_id)
        if text is None:
            text = self.tokenizer.decode([token_id], skip_special_tokens=False)
            self._pieces[token_id] = text
        return text


def _default_corpus() -> list[str]:
    from workbench.bench import load_prompts

    return [p.text for p in load_prompts()]
