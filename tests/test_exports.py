"""The package structure: each package's face is exactly what it exports, other packages use
only that face, and no module-level import cycle exists (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path

import pytest

import workbench

PACKAGE_DIR = Path(workbench.__file__).resolve().parent
#: Public modules a package may have besides its face: its command-line verbs and ``python -m`` entry.
PUBLIC_MODULES = {"__init__", "__main__", "cli"}
#: Shared leaf modules at the root, importable by every package.
ROOT_LEAVES = {"errors", "paths", "gitinfo", "cli", "_faces"}
PACKAGES = sorted(p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").is_file())


def _face_tables(package: str) -> dict[str, str]:
    """``{public name: defining module (dotted)}`` from a face's ``_NAMES`` / ``_MODULES`` tables."""
    module = importlib.import_module(package)
    names = {n: f"{package}.{m}" for n, m in getattr(module, "_NAMES", {}).items()}
    names.update({n: f"{package}.{m}" for n, m in getattr(module, "_MODULES", {}).items()})
    return names


@pytest.mark.parametrize("package", ["workbench", *(f"workbench.{p}" for p in PACKAGES)])
def test_face_exports_exactly_its_all(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:  # every exported name resolves (imports its private module)
        assert getattr(module, name) is not None, name
    public = {n for n in dir(module) if not n.startswith("_")
              and not (isinstance(getattr(module, n), types.ModuleType) and n in PUBLIC_MODULES | ROOT_LEAVES
                       | set(PACKAGES))}
    assert sorted(module.__all__) == sorted(public)
    assert list(module.__all__) == sorted(module.__all__)


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_behind_a_face_are_private(package: str) -> None:
    files = sorted(p.stem for p in (PACKAGE_DIR / package).glob("*.py"))
    assert [f for f in files if f not in PUBLIC_MODULES and not f.startswith("_")] == []


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(path: Path, *, module_level_only: bool) -> list[tuple[int, str, list[str]]]:
    """``(line, imported module, names)`` of the workbench imports in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str, list[str]]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((node.lineno, node.module, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found.extend((node.lineno, a.name, []) for a in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if not module_level_only or isinstance(node, (ast.If, ast.Try)):
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])
                if isinstance(node, ast.Try):
                    for handler in node.handlers:
                        visit(handler.body)

    visit(tree.body)
    # ``from workbench import charts, paths`` imports the package workbench.charts (and the leaf paths)
    for i, (line, mod, names) in enumerate(list(found)):
        if mod == "workbench" and set(names) & set(PACKAGES):
            found[i] = (line, mod, [n for n in names if n not in PACKAGES])
            found.extend((line, f"workbench.{n}", []) for n in names if n in PACKAGES)
    return [(line, mod, names) for line, mod, names in found if mod == "workbench" or mod.startswith("workbench.")]


def _owner(module: str) -> str:
    """The package a module belongs to (``workbench.bench._sse`` -> ``workbench.bench``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and parts[1] in PACKAGES else "workbench"


def test_other_packages_import_only_through_the_face() -> None:
    reaches = []
    for name, path in _modules().items():
        for line, module, names in _imports(path, module_level_only=False):
            target = module.split(".")
            private = (any(part.startswith("_") for part in target[1:]) and module != "workbench._faces"
                       or any(n.startswith("_") for n in names))
            if private and _owner(module) != _owner(name):
                reaches.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line} imports {module}")
    assert reaches == []


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module-level", "any-level"])
def test_no_import_cycle(module_level_only: bool) -> None:
    modules = _modules()
    faces = {p: _face_tables(p) for p in ["workbench", *(f"workbench.{p}" for p in PACKAGES)]}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for _, module, names in _imports(path, module_level_only=module_level_only):
            if module in faces and names:  # a face import: an edge to each name's defining module
                targets = {faces[module].get(n, f"{module}.{n}") for n in names}
            else:
                targets = {module}
            graph[name].update(t for t in targets if t in modules and t != name)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    assert cycles == []


#: An engine's name compared with a string (``engine == "sim"``, ``"sglang" in ...``, ``engine not in (...)``).
_ENGINE_COMPARISON = re.compile(r"""== ?['"](sim|sglang)['"]|['"](sim|sglang)['"] ?(==|!=|in)|engine not in|in \(['"]sim""")


def test_no_engine_name_comparisons_outside_engines() -> None:
    """What differs between engines is asked of the engine (workbench.engines), never switched on its name."""
    found = [f"{path.relative_to(PACKAGE_DIR.parent)}:{n}: {line.strip()}"
             for path in sorted(PACKAGE_DIR.rglob("*.py")) if "engines" not in path.relative_to(PACKAGE_DIR).parts
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _ENGINE_COMPARISON.search(line)]
    assert found == []


#: Which packages each package may import (docs/ARCHITECTURE.md, rule 4). The shared leaves
#: (errors, paths, gitinfo, _faces and the root's ``__version__``) are open to all; only the
#: root's ``cli`` (one line per verb) may import every package.
ALLOWED: dict[str, set[str]] = {
    "analysis": set(),
    "report": set(),
    "hosts": set(),
    "engines": {"hosts"},
    "source": {"hosts"},
    "bench": {"hosts", "engines"},
    "sim": {"bench", "variants"},
    "variants": {"hosts", "engines", "source"},
    "servers": {"hosts", "engines", "variants"},
    "store": {"bench", "engines"},
    "charts": {"analysis"},
    "calibration": {"analysis", "hosts", "sim"},
    "imports": {"bench", "engines", "store"},
    "studies": {"analysis", "calibration", "charts", "engines", "report", "sim", "store", "variants"},
    "sweeps": {"analysis", "bench", "charts", "engines", "hosts", "report", "servers", "store", "studies",
               "variants"},
}
#: The only modules at the package root: the face, the command, the shared leaves.
ROOT_MODULES = {"__init__", "cli", "errors", "paths", "gitinfo", "_faces"}
_LEAVES = {"workbench.errors", "workbench.paths", "workbench.gitinfo", "workbench._faces"}


def test_every_package_has_a_dependency_rule() -> None:
    assert sorted(ALLOWED) == PACKAGES


#: What launches a server or a sweep, or writes a run: a study never imports these (nor sweeps, servers, bench).
_LAUNCHING = {"workbench.store": {"new_run", "open_run", "finish_run", "save_level", "RunWriter", "save_imported_run",
                                  "delete_run", "label_run", "sweep_in_flight"},
              "workbench.variants": {"prepare_launch"}, "workbench.hosts": set()}


def test_a_study_never_launches_or_writes_a_run() -> None:
    found = []
    for name, path in _modules().items():
        if _owner(name) != "workbench.studies":
            continue
        for line, module, names in _imports(path, module_level_only=False):
            if _owner(module) in {"workbench.sweeps", "workbench.servers", "workbench.bench", "workbench.hosts"} \
                    or set(names) & _LAUNCHING.get(module, set()):
                found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line} imports {module} {names}")
    assert found == []


def test_the_root_holds_only_the_face_the_command_and_the_leaves() -> None:
    assert sorted(p.stem for p in PACKAGE_DIR.glob("*.py")) == sorted(ROOT_MODULES)


def test_packages_import_only_what_the_architecture_allows() -> None:
    found = []
    for name, path in _modules().items():
        home = _owner(name)
        if name == "workbench.cli":  # the command: one line per verb, so it may import every package
            continue
        if home == "workbench":  # the face and the leaves import only each other
            found.extend(f"{path.relative_to(PACKAGE_DIR.parent)}:{line} imports {module}"
                         for line, module, _ in _imports(path, module_level_only=False)
                         if module not in _LEAVES | {"workbench"})
            continue
        for line, module, names in _imports(path, module_level_only=False):
            if module in _LEAVES or (module == "workbench" and set(names) <= {"paths", "gitinfo", "errors"}):
                continue
            target = _owner(module)
            if target not in (home, "workbench") and target.split(".")[1] not in ALLOWED[home.split(".")[1]]:
                found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line} imports {module}")
            elif target == "workbench" and module != "workbench" or (module == "workbench" and names):
                found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line} imports {module} (root glue)")
    assert found == []
