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
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from workbench.errors import ConfigError

__all__ = ["Category", "Prompt", "PROMPTS_DIR", "load_prompts", "prompt_path"]

Category = Literal["coding", "agentic"]
CATEGORIES: tuple[str, ...] = ("coding", "agentic")
FIELDS = ("id", "category", "text")

#: Directory of the shipped prompt sets (``<repo>/data/prompts``).
PROMPTS_DIR = Path(__file__).resolve().parents[2] / "data" / "prompts"


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One benchmark prompt.

    Attributes:
        id: unique id within its set.
        category: ``"coding"`` or ``"agentic"``.
        text: the prompt text.
    """

    id: str
    category: Category
    text: str

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
        raise ConfigError(f"Prompt set {str(path_or_name)!r} not found (looked for {candidate}); "
                          f"shipped sets: {known}. Pass a set name or a path to a .jsonl file.")
    return candidate


def _parse_line(path: Path, lineno: int, line: str) -> Prompt:
    where = f"{path}:{lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                          "each line must be one JSON object") from exc
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
