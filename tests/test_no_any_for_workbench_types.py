"""No ``Any`` stands for a workbench type in workbench/ (issue 32; ../shared/STYLE.md, items 18 and 20).

A module that types a study, a run, a variant or a host as ``Any`` lets mypy check none of the reads it makes of
it, and usually hides an import circle (``Study = Any`` "to dodge the cycle"). Found in the syntax tree:

- an alias ``X = Any`` (or ``X: TypeAlias = Any``), anywhere;
- a parameter or an annotated name (a dataclass field, an attribute) typed ``Any`` (or ``Any | None``) whose name is
  a workbench type's: the snake_case name of a class a package's face exports (``policy_study``, ``sweep_plan``,
  ``server_handle``) or one of :data:`ROLES`, the words the code calls its own types by.

``Any`` stays right for what has no type here: JSON values, third-party objects without stubs (``dict[str, Any]``,
an ipywidgets box), keyword arguments passed through. :data:`ALLOWED` lists the few that remain, each with why; an
entry that no longer matches fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import workbench

TREE = Path(workbench.__file__).resolve().parent.parent

#: The words the code calls its own types by, beside the faces' class names (a study's tables, a run being written,
#: the writer or recorder behind it, a what-if ``wi``, a calibration ``fit``...).
ROLES = frozenset(
    {
        "study",
        "tables",
        "run",
        "sink",
        "writer",
        "recorder",
        "plan",
        "host",
        "engine",
        "server",
        "handle",
        "unit",
        "variant",
        "profile",
        "wi",
        "fit",
        "placement",
    }
)

#: ``"path:function(name)"`` or ``"path:name"`` -> why it may stay ``Any`` (see the module docstring).
ALLOWED: dict[str, str] = {
    "workbench/sweeps/_fleet_job.py:_remote_files(host)": "sweeps/ is being cut along its jobs (issue 32 item 1), "
    "which types these as Host, FleetUnit, Placement and PolicyStudy; remove each line as it lands",
    "workbench/sweeps/_fleet_up.py:_absolute(host)": "as above (issue 32 item 1)",
    "workbench/sweeps/_fleet_up.py:_node_ip(host)": "as above (issue 32 item 1)",
    "workbench/sweeps/_fleet_up.py:_wait_started(host)": "as above (issue 32 item 1)",
    "workbench/sweeps/_fleet_multinode.py:group_options(unit)": "as above (issue 32 item 1)",
    "workbench/sweeps/_fleet_multinode.py:row_tags(placement)": "as above (issue 32 item 1)",
    "workbench/sweeps/_fleet_multinode.py:rank_group(placement)": "as above (issue 32 item 1)",
    "workbench/sweeps/_policy_files.py:write_index(study)": "as above (issue 32 item 1)",
}


def _snake(name: str) -> str:
    """``"PolicyStudy"`` -> ``"policy_study"``, ``"SSHHost"`` -> ``"ssh_host"``."""
    return "_".join(p.lower() for p in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+", name))


def type_names() -> frozenset[str]:
    """:data:`ROLES` and the snake_case name of every class the package faces export."""
    import importlib
    import pkgutil

    names = set(ROLES)
    for module in pkgutil.iter_modules(workbench.__path__):
        if module.ispkg:
            face = importlib.import_module(f"workbench.{module.name}")
            names |= {_snake(n) for n in getattr(face, "__all__", ()) if n[:1].isupper() and not n.isupper()}
    return frozenset(names)


def _is_any(node: ast.expr | None) -> bool:
    """``Any``, ``typing.Any``, ``"Any"``, ``Any | None`` or ``Optional[Any]``."""
    if isinstance(node, ast.Name):
        return node.id == "Any"
    if isinstance(node, ast.Attribute):
        return node.attr == "Any"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _is_any(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = (node.left, node.right)
        return any(_is_any(s) for s in sides) and all(
            _is_any(s) or (isinstance(s, ast.Constant) and s.value is None) for s in sides
        )
    if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)):
        head = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
        return head == "Optional" and _is_any(node.slice)
    return False


def any_for_types(sources: dict[str, str], names: frozenset[str]) -> dict[str, str]:
    """``{place: what}`` for each ``Any`` standing for a workbench type in ``sources`` (path -> text)."""
    found: dict[str, str] = {}
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                    if arg.arg.lstrip("_") in names and _is_any(arg.annotation):
                        found[f"{path}:{node.name}({arg.arg})"] = f"line {arg.lineno}: {arg.arg}: Any"
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, (ast.Name, ast.Attribute)):
                name = node.target.id if isinstance(node.target, ast.Name) else node.target.attr
                if _is_any(node.value) and isinstance(node.value, (ast.Name, ast.Attribute)):
                    found[f"{path}:{name}"] = f"line {node.lineno}: {name} = Any (an alias)"
                elif name.lstrip("_") in names and _is_any(node.annotation):
                    found[f"{path}:{name}"] = f"line {node.lineno}: {name}: Any"
            elif (
                isinstance(node, ast.Assign)
                and isinstance(node.value, (ast.Name, ast.Attribute))
                and _is_any(node.value)
            ):
                name = ast.unparse(node.targets[0])
                found[f"{path}:{name}"] = f"line {node.lineno}: {name} = Any (an alias)"
    return found


def _tree_sources() -> dict[str, str]:
    return {str(p.relative_to(TREE)): p.read_text(encoding="utf-8") for p in sorted((TREE / "workbench").rglob("*.py"))}


def test_no_any_stands_for_a_workbench_type() -> None:
    found = any_for_types(_tree_sources(), type_names())
    unexpected = {place: what for place, what in found.items() if place not in ALLOWED}
    assert not unexpected, (
        "type these with the workbench type they stand for (import it for real; a cycle it "
        f"would close means the value belongs in a module of its own): {unexpected}"
    )
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"no longer Any: remove from ALLOWED in {Path(__file__).name}: {stale}"


def test_the_studies_package_has_no_any_for_its_own_types() -> None:
    """The study core above all: the word modules import the tables, the openings the four study classes."""
    found = any_for_types(
        {p: t for p, t in _tree_sources().items() if p.startswith("workbench/studies/")}, type_names()
    )
    assert found == {}


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("from typing import Any\nStudy = Any\n", ["m.py:Study"]),
        ("import typing\nfrom typing import TypeAlias\nRun: TypeAlias = typing.Any\n", ["m.py:Run"]),
        ("from typing import Any\ndef words(study: Any, n: int) -> str: ...\n", ["m.py:words(study)"]),
        ("def words(*, policy_study: 'Any | None' = None) -> str: ...\n", ["m.py:words(policy_study)"]),
        (
            "from typing import Any, Optional\nclass Pass:\n    sink: Optional[Any]\n    _host: Any\n",
            ["m.py:_host", "m.py:sink"],
        ),
        ("from typing import Any\ndef f(row: Any, options: dict[str, Any], **kw: Any) -> Any: ...\n", []),
        ("from typing import Any\ndef f(study: 'PolicyStudy', run: list[Any]) -> None: ...\n", []),
    ],
)
def test_the_scan_finds_a_planted_any(source: str, caught: list[str]) -> None:
    assert sorted(any_for_types({"m.py": source}, type_names())) == caught
