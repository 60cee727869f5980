"""Prompt sets: JSONL files under ``data/prompts/`` and their loader.

A prompt file has one JSON object per line with exactly these fields:

- ``id`` (str, unique within the file),
- ``category`` (``"coding"`` or ``"agentic"``),
- ``text`` (str, non-empty): the prompt as sent in ``/generate``'s ``text``.

Blank lines are allowed. The shipped set is ``data/prompts/default.jsonl`` (name
``"default"``): coding prompts (implement, explain, refactor, review, with code) and
agentic prompts (a tool schema system prompt, a multi-turn tool-use history, a task,
repository excerpts), written for this workbench.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ConfigError

__all__ = [
    "Category",
    "Prompt",
    "PROMPTS_DIR",
    "DEFAULT_RANDOM_VOCAB_SIZE",
    "load_prompts",
    "load_sharegpt",
    "prompt_path",
    "random_token_prompts",
]

#: Token ids of random prompts are drawn from ``[RANDOM_LOW_ID, vocab_size)``: the low ids of
#: most vocabularies are special and control tokens.
RANDOM_LOW_ID = 1000
#: Vocabulary size random prompts draw from unless told (below every Llama/Qwen/DeepSeek vocabulary).
DEFAULT_RANDOM_VOCAB_SIZE = 32000

Category = Literal["coding", "agentic", "sharegpt", "random"]
CATEGORIES: tuple[str, ...] = ("coding", "agentic")
FIELDS = ("id", "category", "text")

#: Directory of the shipped prompt sets (``<repo>/data/prompts``).
PROMPTS_DIR = Path(__file__).resolve().parents[2] / "data" / "prompts"


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One benchmark prompt.

    Attributes:
        id: unique id within its set.
        category: ``"coding"`` or ``"agentic"`` (shipped sets), ``"sharegpt"``
            (:func:`load_sharegpt`) or ``"random"`` (:func:`random_token_prompts`).
        text: the prompt text (empty for random-token prompts).
        input_ids: token ids sent instead of ``text`` (random-token prompts); None: send ``text``.
    """

    id: str
    category: Category
    text: str
    input_ids: tuple[int, ...] | None = None

    @property
    def words(self) -> int:
        """Whitespace-separated word count of ``text``."""
        return len(self.text.split())


def prompt_path(path_or_name: str | Path = "default") -> Path:
    """Resolve a set name (``"default"`` -> ``data/prompts/default.jsonl``) or a file path.

    Raises:
        ConfigError: no such file.
    """
    candidate = Path(path_or_name).expanduser()
    if isinstance(path_or_name, str) and "/" not in path_or_name and not path_or_name.endswith(".jsonl"):
        candidate = PROMPTS_DIR / f"{path_or_name}.jsonl"
    if not candidate.is_file():
        known = sorted(p.stem for p in PROMPTS_DIR.glob("*.jsonl"))
        raise ConfigError(
            f"Prompt set {str(path_or_name)!r} not found (looked for {candidate}); "
            f"shipped sets: {known}. Pass a set name or a path to a .jsonl file."
        )
    return candidate


def _parse_line(path: Path, lineno: int, line: str) -> Prompt:
    where = f"{path}:{lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); each line must be one JSON object"
        ) from exc
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [f for f in FIELDS if f not in obj]
    extra = sorted(set(obj) - set(FIELDS))
    if missing or extra:
        raise ConfigError(f"{where}: fields must be exactly {list(FIELDS)}; missing {missing}, unknown {extra}")
    for field in FIELDS:
        if not isinstance(obj[field], str) or not obj[field].strip():
            raise ConfigError(f"{where}: field {field!r} must be a non-empty string, got {obj[field]!r:.60}")
    if obj["category"] not in CATEGORIES:
        raise ConfigError(f"{where}: category {obj['category']!r} is not one of {list(CATEGORIES)}")
    return Prompt(id=obj["id"], category=obj["category"], text=obj["text"])


def load_prompts(
    path_or_name: str | Path = "default",
    *,
    categories: Iterable[str] | None = None,
) -> list[Prompt]:
    """Load and validate a prompt set.

    Args:
        path_or_name: a shipped set's name (default ``"default"``) or a path to a JSONL file.
        categories: keep only these categories (default: all). Each must be a known category.

    Returns:
        The prompts in file order (filtered by category).

    Raises:
        ConfigError: the file is missing, a line is invalid (the message names file and
            line), an id repeats, the file holds no prompts, an unknown category is
            asked for, or the filter leaves nothing.
    """
    path = prompt_path(path_or_name)
    wanted = None
    if categories is not None:
        wanted = [categories] if isinstance(categories, str) else list(categories)
        unknown = [c for c in wanted if c not in CATEGORIES]
        if unknown:
            raise ConfigError(f"Unknown prompt categories {unknown}; known: {list(CATEGORIES)}")
    prompts: list[Prompt] = []
    first_line: dict[str, int] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read prompt file {path}: {exc}") from exc
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        prompt = _parse_line(path, lineno, line)
        if prompt.id in first_line:
            raise ConfigError(f"{path}:{lineno}: duplicate id {prompt.id!r} (first on line {first_line[prompt.id]})")
        first_line[prompt.id] = lineno
        prompts.append(prompt)
    if not prompts:
        raise ConfigError(f"{path}: no prompts in file")
    if wanted is not None:
        prompts = [p for p in prompts if p.category in wanted]
        if not prompts:
            raise ConfigError(f"{path}: no prompts in categories {wanted}")
    return prompts


#: Roles of a ShareGPT turn that the user wrote (``from``; some exports say ``role``).
_USER_ROLES = ("human", "user")


def _sharegpt_records(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` of a ShareGPT JSON array or JSONL file."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                "a ShareGPT file is a JSON array of conversations or one conversation per line"
            ) from exc
        for i, record in enumerate(records):
            yield f"{path}[{i}]", record
        return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"{path}:{lineno}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno}); "
                "each line of a ShareGPT JSONL file must be one conversation object"
            ) from exc


def load_sharegpt(path: str | Path, *, limit: int | None = None) -> list[Prompt]:
    """Prompts from a ShareGPT-style file: the first user turn of each conversation.

    The format is that of ``ShareGPT_V3_unfiltered_cleaned_split.json`` (what sglang
    ``bench_serving --dataset-name sharegpt`` reads): a JSON array, or JSONL, of objects
    ``{"id": ..., "conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}]}``
    (``role``/``content`` keys are accepted too). Conversations without a non-empty user
    turn are skipped, as bench_serving skips those with fewer than two turns.

    Args:
        path: a ``.json`` or ``.jsonl`` file.
        limit: keep the first ``limit`` prompts (None: all).

    Returns:
        Prompts with ``category="sharegpt"`` and the conversation's ``id`` (``sharegpt-<n>``
        when it has none; a repeated id gets ``#<n>`` appended), in file order.

    Raises:
        ConfigError: the file is missing or unreadable, is not JSON/JSONL, a record is
            not a conversation object, or no conversation has a user turn.
    """
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read ShareGPT file {path}: {exc}") from exc
    prompts: list[Prompt] = []
    seen: set[str] = set()
    for where, record in _sharegpt_records(path, text):
        if not isinstance(record, dict) or not isinstance(record.get("conversations"), list):
            raise ConfigError(
                f"{where}: expected an object with a 'conversations' list (ShareGPT format), got {str(record)[:80]!r}"
            )
        first = next(
            (
                turn
                for turn in record["conversations"]
                if isinstance(turn, dict) and turn.get("from", turn.get("role")) in _USER_ROLES
            ),
            None,
        )
        value = None if first is None else first.get("value", first.get("content"))
        if not isinstance(value, str) or not value.strip():
            continue
        pid = str(record.get("id") or f"sharegpt-{len(prompts)}")
        if pid in seen:
            pid = f"{pid}#{len(prompts)}"
        seen.add(pid)
        prompts.append(Prompt(id=pid, category="sharegpt", text=value))
        if limit is not None and len(prompts) >= limit:
            break
    if not prompts:
        raise ConfigError(f"{path}: no conversation with a user turn ('from': 'human' and a non-empty 'value')")
    return prompts


def random_token_prompts(
    num: int, input_len: int, *, seed: int, vocab_size: int = DEFAULT_RANDOM_VOCAB_SIZE
) -> list[Prompt]:
    """``num`` prompts of ``input_len`` random token ids each, the same for the same arguments.

    As sglang ``bench_serving --dataset-name random`` (uniform ids; it then decodes
    them to text, where re-tokenizing changes the length), but the ids are sent as
    ids (``/generate``'s ``input_ids``, a token list as ``/v1/completions``'s
    ``prompt``), so the server sees exactly ``input_len`` prompt tokens.

    Args:
        num: how many prompts (>= 1).
        input_len: prompt tokens each (>= 1).
        seed: with ``input_len``, seeds the draw (``random.Random("<seed>/<input_len>")``).
        vocab_size: ids are drawn from ``[1000, vocab_size)``; must not exceed the
            served model's vocabulary.

    Returns:
        Prompts ``random-<input_len>-<i>`` with ``category="random"``, empty ``text``.

    Raises:
        ConfigError: a count, length or vocabulary size out of range.
    """
    for name, value, minimum in (
        ("num", num, 1),
        ("input_len", input_len, 1),
        ("vocab_size", vocab_size, RANDOM_LOW_ID + 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"random prompts: {name} must be a whole number >= {minimum}, got {value!r}")
    rng = random.Random(f"{seed}/{input_len}")
    return [
        Prompt(
            id=f"random-{input_len}-{i}",
            category="random",
            text="",
            input_ids=tuple(rng.randrange(RANDOM_LOW_ID, vocab_size) for _ in range(input_len)),
        )
        for i in range(num)
    ]
