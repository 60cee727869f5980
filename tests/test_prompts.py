"""Tests for workbench.bench._prompts and the shipped prompt set."""

from __future__ import annotations

import json

import pytest

from workbench.bench._prompts import PROMPTS_DIR, Prompt, load_prompts, prompt_path
from workbench.errors import ConfigError


def test_shipped_set_shape():
    prompts = load_prompts()
    assert len(prompts) >= 24
    coding = [p for p in prompts if p.category == "coding"]
    agentic = [p for p in prompts if p.category == "agentic"]
    assert abs(len(coding) - len(agentic)) <= 2
    words = sorted(p.words for p in prompts)
    assert words[0] >= 120 and words[-1] <= 1600
    assert sum(w > 1000 for w in words) >= 3 and sum(w < 300 for w in words) >= 3
    assert len({p.id for p in prompts}) == len(prompts)
    assert all(isinstance(p, Prompt) for p in prompts)


def test_agentic_prompts_carry_tool_schemas_and_history():
    for p in load_prompts(categories=["agentic"]):
        assert '"type": "function"' in p.text and "Tool result:" in p.text, p.id
        assert p.text.count("User:") >= 2 or "Repository context" in p.text or "context" in p.text, p.id


def test_category_filter():
    assert {p.category for p in load_prompts("default", categories=["coding"])} == {"coding"}
    assert {p.category for p in load_prompts(categories="agentic")} == {"agentic"}
    with pytest.raises(ConfigError, match="Unknown prompt categories"):
        load_prompts(categories=["chat"])


def test_name_and_path_resolution(tmp_path):
    assert prompt_path("default") == PROMPTS_DIR / "default.jsonl"
    assert load_prompts(PROMPTS_DIR / "default.jsonl") == load_prompts()
    with pytest.raises(ConfigError, match="not found"):
        load_prompts("no-such-set")
    with pytest.raises(ConfigError, match="not found"):
        load_prompts(tmp_path / "missing.jsonl")


def write(tmp_path, lines):
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = json.dumps({"id": "a", "category": "coding", "text": "Write a function."})


@pytest.mark.parametrize(
    "bad, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"id": "b", "category": "coding"}), "missing ['text']"),
        (json.dumps({"id": "b", "category": "coding", "text": "x", "extra": 1}), "unknown ['extra']"),
        (json.dumps({"id": "b", "category": "chat", "text": "x"}), "category 'chat'"),
        (json.dumps({"id": "b", "category": "coding", "text": "  "}), "non-empty string"),
        (json.dumps({"id": 3, "category": "coding", "text": "x"}), "'id' must be a non-empty string"),
        (GOOD, "duplicate id 'a' (first on line 1)"),
    ],
)
def test_validation_errors_name_file_and_line(tmp_path, bad, message):
    path = write(tmp_path, [GOOD, "", bad])
    with pytest.raises(ConfigError) as info:
        load_prompts(path)
    assert f"{path}:3:" in str(info.value)
    assert message in str(info.value)


def test_empty_file_and_empty_filter(tmp_path):
    with pytest.raises(ConfigError, match="no prompts"):
        load_prompts(write(tmp_path, [""]))
    with pytest.raises(ConfigError, match="no prompts in categories"):
        load_prompts(write(tmp_path, [GOOD]), categories=["agentic"])
