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

#: Distinct prompt texts whose token count :meth:`TextModel.count_tokens` keeps.
COUNT_CACHE_SIZE = 4096


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
        prompts = _default_corpus() if corpus is None else []
        if corpus is None:
            corpus = "\n\n".join(prompts)
        self._stream = self.tokenizer.encode(corpus).ids or [0]
        vocab = self.tokenizer.get_vocab_size()
        self._pieces: dict[int, str] = {}
        self._vocab = vocab
        # The shipped prompts' counts, made at start-up in one batch: a request that sends one of them
        # then waits for no tokenizer (about 5 ms a prompt on this machine, which a time scale of 16
        # would turn into 80 simulated ms of TTFT).
        self._counts: dict[str, int] = {
            text: len(enc.ids) for text, enc in zip(prompts, self.tokenizer.encode_batch(prompts))
        }

    def count_tokens(self, text: str) -> int:
        """Prompt length in tokens.

        Counts are kept for the last :data:`COUNT_CACHE_SIZE` distinct prompts: a benchmark sends
        the same few prompts again and again, and tokenizing a 3,000-token prompt on the server's
        one event loop held up its engine clock (a fifth of its CPU at concurrency 64).
        """
        count = self._counts.get(text)
        if count is None:
            count = len(self.tokenizer.encode(text).ids)
            if len(self._counts) >= COUNT_CACHE_SIZE:
                self._counts.pop(next(iter(self._counts)))  # the oldest entry
            self._counts[text] = count
        return count

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
