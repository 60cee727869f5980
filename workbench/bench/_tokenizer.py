"""The tokenizer the workbench ships (``data/tokenizer/``) and helpers around it.

A byte-level BPE (vocabulary 8000, built by :mod:`tools/build_tokenizer.py`);
no normalizer and no BOS/EOS added on encode, so ``count_tokens`` is exactly the
number of ids the text encodes to, and ``decode(encode(x)) == x`` for any string.

Decoding one id at a time and concatenating gives the same text as decoding the
whole list only when no token ends inside a multi-byte UTF-8 character (always
true for ASCII). :func:`decode_incremental` is the exact streaming form: it holds
back incomplete characters the way SGLang's incremental detokenizer does, so the
concatenated pieces always equal ``decode(ids)``.
"""

from __future__ import annotations

import codecs
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer

from workbench.errors import ConfigError

__all__ = ["TOKENIZER_DIR", "count_tokens", "decode_incremental", "load_tokenizer", "token_bytes"]

#: Directory of the shipped tokenizer (``<repo>/data/tokenizer``); ``/model_info`` names it.
TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "data" / "tokenizer"


def _load(path: Path) -> Tokenizer:
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(
            f"No tokenizer at {file}; the workbench ships one in {TOKENIZER_DIR} "
            "(rebuild it with `python tools/build_tokenizer.py`)"
        )
    try:
        return Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises a bare Exception for malformed files
        raise ConfigError(f"Cannot load tokenizer {file}: {type(exc).__name__}: {exc}") from exc


@functools.lru_cache(maxsize=1)
def _default() -> Tokenizer:
    return _load(TOKENIZER_DIR)


def load_tokenizer(path: str | Path | None = None) -> Tokenizer:
    """Load a ``tokenizers.Tokenizer``.

    Args:
        path: a directory holding ``tokenizer.json`` or the file itself; default the
            shipped one (loaded once and cached).

    Raises:
        ConfigError: the file is missing or malformed.
    """
    return _default() if path is None else _load(Path(path).expanduser())


def count_tokens(text: str, *, tokenizer: Tokenizer | None = None) -> int:
    """Number of token ids ``text`` encodes to (no special tokens added)."""
    tok = tokenizer or _default()
    return len(tok.encode(text, add_special_tokens=False).ids)


def _byte_decoder() -> dict[str, int]:
    """Inverse of the byte-level alphabet: printable Latin-1 bytes map to themselves,
    the other 68 bytes to code points 256 and up, in byte order (the GPT-2 scheme that
    ``tokenizers.pre_tokenizers.ByteLevel`` implements)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {chr(b): b for b in keep}
    extra = 0
    for b in range(256):
        if b not in keep:
            table[chr(256 + extra)] = b
            extra += 1
    return table


_BYTE_DECODER = _byte_decoder()


def token_bytes(token_id: int, *, tokenizer: Tokenizer | None = None) -> bytes:
    """Raw bytes of one token (a special token gives its literal text, UTF-8 encoded).

    Raises:
        ConfigError: ``token_id`` is not in the vocabulary.
    """
    tok = tokenizer or _default()
    piece = tok.id_to_token(token_id)
    if piece is None:
        raise ConfigError(f"token id {token_id} is outside the vocabulary (size {tok.get_vocab_size()})")
    if token_id in _special_ids(tok):
        return piece.encode("utf-8")
    return bytes(_BYTE_DECODER[ch] for ch in piece)


def _special_ids(tok: Tokenizer) -> frozenset[int]:
    return frozenset(i for i, added in tok.get_added_tokens_decoder().items() if added.special)


def decode_incremental(ids: Iterable[int], *, tokenizer: Tokenizer | None = None) -> Iterator[str]:
    """Yield one text piece per id; the pieces concatenate to ``decode(ids)`` exactly.

    A token that ends inside a multi-byte UTF-8 character yields ``""`` and its bytes
    are carried into the next piece (invalid byte sequences become U+FFFD, as in
    ``Tokenizer.decode``).
    """
    tok = tokenizer or _default()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for token_id in ids:
        yield decoder.decode(token_bytes(token_id, tokenizer=tok))
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail
