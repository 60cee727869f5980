"""A sweep's prompt set: what ``prompt_set`` may name, resolved to prompts once, and their check.

:meth:`SweepPlan.build <workbench.bench._plan.SweepPlan.build>` resolves the user's ``prompt_set`` here (a
set name, a JSONL path, ``"sharegpt:<path>"`` or the prompts themselves) and records the name; the plan's
construction checks the prompts it holds (:func:`_prompts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Union

from workbench.bench._prompts import Prompt, load_prompts, load_sharegpt
from workbench.errors import ConfigError

__all__ = ["PromptSet"]

#: A prompt-set name (``data/prompts/<name>.jsonl``), a JSONL path, or the prompts themselves.
PromptSet = Union[str, Path, Sequence[Union[Prompt, str]]]


def _resolve_prompt_set(prompt_set: PromptSet) -> tuple[tuple[Prompt, ...], str | None]:
    """The prompts of ``prompt_set`` and the name to record (None when prompts were given directly);
    ``"sharegpt:<path>"`` reads a ShareGPT-style JSON/JSONL file (:func:`load_sharegpt`)."""
    if isinstance(prompt_set, str) and prompt_set.startswith("sharegpt:"):
        return tuple(load_sharegpt(prompt_set.removeprefix("sharegpt:"))), prompt_set
    if isinstance(prompt_set, (str, Path)):
        return tuple(load_prompts(prompt_set)), str(prompt_set)
    return tuple(
        p if isinstance(p, Prompt) else Prompt(id=f"p{i}", category="coding", text=str(p))
        for i, p in enumerate(prompt_set)
    ), None


def _prompts(value: Any) -> tuple[Prompt, ...]:
    prompts = tuple(value)
    if not prompts:
        raise ConfigError(
            "prompt_set holds no prompts; give a prompt-set name (data/prompts/<name>.jsonl), "
            "a JSONL path, or a non-empty list of prompts"
        )
    if not all(isinstance(p, Prompt) for p in prompts):
        raise ConfigError("prompts must be Prompt objects; build the plan with SweepPlan.build(prompt_set=...)")
    return prompts
