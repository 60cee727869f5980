"""pyproject.toml and environment.yml declare the same packages with the same minimum versions."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

#: conda/pip entries that are tooling, not project dependencies
_NOT_DEPENDENCIES = {"python", "pip"}

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:(>=|==|=|~=)\s*([^\s,;]+))?")


def _normalise(name: str) -> str:
    """PEP 503 form: lower case, runs of ``-_.`` as one ``-`` (PyYAML -> pyyaml)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(spec: str) -> tuple[str, str | None]:
    match = _REQ.match(spec)
    assert match, f"cannot parse requirement {spec!r}"
    return _normalise(match.group(1)), match.group(3)


def _pyproject() -> dict[str, str | None]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs.extend(extra)
    return dict(_parse(s) for s in specs)


def _environment() -> dict[str, str | None]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    specs: list[str] = []
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            specs.extend(s for s in entry.get("pip", []) if not s.strip().startswith("-e"))
        else:
            specs.append(entry)
    parsed = dict(_parse(s) for s in specs)
    return {name: version for name, version in parsed.items() if name not in _NOT_DEPENDENCIES}


def test_same_packages_and_minimum_versions() -> None:
    pyproject, environment = _pyproject(), _environment()
    only_pyproject = sorted(set(pyproject) - set(environment))
    only_environment = sorted(set(environment) - set(pyproject))
    assert not only_pyproject and not only_environment, (
        f"add to environment.yml: {only_pyproject}; add to pyproject.toml: {only_environment}"
    )
    differ = {n: (pyproject[n], environment[n]) for n in pyproject if pyproject[n] != environment[n]}
    assert not differ, f"minimum versions differ (pyproject, environment.yml): {differ}"


def test_every_dependency_has_a_minimum_version() -> None:
    assert all(_pyproject().values()), _pyproject()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.strip().split("."))


def test_conda_python_satisfies_requires_python() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pin = next(d for d in env["dependencies"] if isinstance(d, str) and _parse(d)[0] == "python")
    python = _version(_parse(pin)[1] or "0")
    checks = {">=": lambda v: python >= v, "<": lambda v: python < v, "==": lambda v: python[: len(v)] == v}
    for clause in project["requires-python"].split(","):
        op, version = re.match(r"\s*(>=|<|==)\s*([\d.]+)", clause).groups()
        assert checks[op](_version(version)), f"environment.yml pins {pin}, pyproject wants {clause}"


def test_normalise_names() -> None:
    assert _normalise("PyYAML") == "pyyaml"
    assert _normalise("vl_convert.python") == "vl-convert-python"
    assert _parse("pytest-timeout>=2.3") == ("pytest-timeout", "2.3")
    assert _parse("uvicorn[standard] >= 0.30") == ("uvicorn", "0.30")
