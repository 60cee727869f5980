"""The package structure: each package's face is exactly what it exports, other packages use
only that face, and no module-level import cycle exists (docs/ARCHITECTURE.md).

Every check is a function of a source tree (the folder holding ``workbench/``, ``benchmarks/``
and ``tools/``), so each is also run on a scratch copy with one rule break planted in it, and
must find that break (``test_a_planted_break_is_caught``).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import re
import shutil
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import workbench

PACKAGE_DIR = Path(workbench.__file__).resolve().parent
TREE = PACKAGE_DIR.parent
#: Public modules a package may have besides its face: its command-line verbs and ``python -m`` entry.
PUBLIC_MODULES = {"__init__", "__main__", "cli"}
#: Shared leaf modules at the root, importable by every package.
ROOT_LEAVES = {"errors", "paths", "gitinfo", "cli", "_faces", "_version"}
#: Exactly the modules at the package root: the face, the command, the shared leaves, the face helper.
ROOT_MODULES = {"__init__", "__main__", "cli", "errors", "paths", "gitinfo", "_faces", "_version"}
#: Folders of scripts outside the package: they use the faces only (rule 2).
SCRIPT_FOLDERS = ("benchmarks", "tools")
#: A benchmark that measures one package's internals (white box) may reach into that package only.
WHITE_BOX = {
    "benchmarks/calibrate_profile.py": "workbench.sim",  # the fit's internals, on the stored table
    "benchmarks/client_fidelity.py": "workbench.bench",  # the client's loop and timebase, without a server
    "benchmarks/sim_engine_identity.py": "workbench.sim",  # every engine iteration, dumped byte for byte
    "benchmarks/sim_fidelity.py": "workbench.sim",  # the text model and calibration figures
    "benchmarks/sim_offline_speed.py": "workbench.sim",  # the offline engine's inner loop, timed
    "benchmarks/sim_term_candidates.py": "workbench.sim",  # candidate terms fitted through the calibration's internals
    "benchmarks/spec_step_accuracy.py": "workbench.calibration",  # the whole-step fit's errors, part by part
}


def _packages(tree: Path) -> list[str]:
    return sorted(p.name for p in (tree / "workbench").iterdir() if (p / "__init__.py").is_file())


PACKAGES = _packages(TREE)


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
    public = {
        n
        for n in dir(module)
        if not n.startswith("_")
        and not (isinstance(getattr(module, n), types.ModuleType) and n in PUBLIC_MODULES | ROOT_LEAVES | set(PACKAGES))
    }
    assert sorted(module.__all__) == sorted(public)
    assert list(module.__all__) == sorted(module.__all__)


@pytest.mark.parametrize("package", ["workbench", *(f"workbench.{p}" for p in PACKAGES)])
def test_static_tools_see_the_same_face(package: str) -> None:
    """A face's ``if TYPE_CHECKING:`` block imports exactly its tables' names from their modules, so mypy and
    editors see the real names and types of what ``__getattr__`` loads on first use."""
    module = importlib.import_module(package)
    tables = _face_tables(package)
    seen: dict[str, str] = {}
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and _is_type_checking(n.test)]
    assert len(blocks) == 1, "one TYPE_CHECKING block"
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name or (node.module == package and alias.asname), ast.unparse(node)
            seen[alias.asname or alias.name] = f"{node.module}.{alias.name}" if node.module == package else node.module
    if package == "workbench":  # the root names packages' faces
        tables = {n: m for n, m in tables.items()}
    assert seen == tables, "run tools/sync_faces.py to rewrite the block from the tables"


def test_sync_faces_rewrites_a_stale_block(tmp_path: Path) -> None:
    """tools/sync_faces.py: the tree's blocks match; a name added to a table is added to its block."""
    import subprocess
    import sys

    tool = [sys.executable, str(TREE / "tools" / "sync_faces.py")]
    assert subprocess.run([*tool, "--check"], capture_output=True, text=True).returncode == 0
    shutil.copytree(TREE / "workbench", tmp_path / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    face = tmp_path / "workbench" / "servers" / "__init__.py"
    face.write_text(face.read_text().replace("_NAMES = {", '_NAMES = {\n    "planted": "_handle",', 1))
    stale = subprocess.run([*tool, "--check", "--root", str(tmp_path)], capture_output=True, text=True)
    assert stale.returncode == 1 and "workbench/servers/__init__.py" in stale.stdout
    subprocess.run([*tool, "--root", str(tmp_path)], check=True, capture_output=True)
    assert "    from workbench.servers._handle import planted as planted\n" in face.read_text()


# -- reading a tree ---------------------------------------------------------------------------------
def _modules(tree: Path) -> dict[str, Path]:
    """``{dotted module name: file}`` of every module of the package in ``tree``."""
    out = {}
    for path in sorted((tree / "workbench").rglob("*.py")):
        parts = list(path.relative_to(tree).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _scripts(tree: Path) -> dict[str, Path]:
    """``{"benchmarks/x.py": file}`` of the scripts outside the package."""
    return {str(p.relative_to(tree)): p for folder in SCRIPT_FOLDERS for p in sorted((tree / folder).glob("*.py"))}


@dataclasses.dataclass(frozen=True)
class Import:
    """One workbench import of a file: ``from module import names`` (``names`` empty for ``import module``)."""

    line: int
    module: str
    names: tuple[str, ...]
    module_level: bool  # runs when the file is imported (not inside a function)
    type_only: bool  # under ``if TYPE_CHECKING:``: seen by type checkers, never run


@functools.lru_cache(maxsize=None)
def _parse(text: str) -> ast.Module:
    """A source's tree, parsed once per text (the planted-break cases re-read the same files)."""
    return ast.parse(text)


def _is_type_checking(test: ast.expr) -> bool:
    return any(
        isinstance(n, (ast.Name, ast.Attribute))
        and (getattr(n, "id", None) == "TYPE_CHECKING" or getattr(n, "attr", None) == "TYPE_CHECKING")
        for n in ast.walk(test)
    )


def _imports(path: Path, name: str, modules: dict[str, Path]) -> list[Import]:
    """Every workbench import of a file: ``import``/``from`` (relative ones resolved), ``importlib.import_module``
    and ``__import__`` of a literal name, and ``workbench.X.Y`` reached as attributes after ``import workbench``;
    ``from workbench import charts`` counts as importing the package workbench.charts."""
    tree = _parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: list[Import] = []

    def add(node: ast.AST, module: str, names: tuple[str, ...], level: bool, typed: bool) -> None:
        if module == "workbench" and names:  # a subpackage named in ``from workbench import ...``
            subs = tuple(n for n in names if f"workbench.{n}" in modules and n not in ROOT_LEAVES)
            found.extend(Import(node.lineno, f"workbench.{n}", (), level, typed) for n in subs)
            names = tuple(n for n in names if n not in subs)
            if not names and subs:
                return
        found.append(Import(node.lineno, module, names, level, typed))

    def attribute_chain(node: ast.Attribute) -> list[str] | None:
        parts: list[str] = []
        cur: ast.expr = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id == "workbench":
            return ["workbench", *reversed(parts)]
        return None

    bound_root = any(
        isinstance(n, ast.Import) and any(a.name.split(".")[0] == "workbench" and a.asname is None for a in n.names)
        for n in ast.walk(tree)
    )

    def visit(node: ast.AST, level: bool, typed: bool) -> None:
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                module = ".".join([*base, *([module] if module else [])])
            add(node, module, tuple(a.name for a in node.names), level, typed)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, alias.name, (), level, typed)
            return
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in {"import_module", "__import__"}:
                add(node, node.args[0].value, (), level, typed)
        if isinstance(node, ast.Attribute) and bound_root:
            chain = attribute_chain(node)
            if chain is not None:
                cut = max(i for i in range(1, len(chain) + 1) if ".".join(chain[:i]) in modules)
                add(node, ".".join(chain[:cut]), tuple(chain[cut : cut + 1]), level, typed)
                return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, level, True)
            for child in node.orelse:
                visit(child, level, typed)
            return
        inner = level and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner, typed)

    visit(tree, True, False)
    return [i for i in found if i.module == "workbench" or i.module.startswith("workbench.")]


def _owner(module: str, packages: list[str] = PACKAGES) -> str:
    """The package a module belongs to (``workbench.bench._sse`` -> ``workbench.bench``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and parts[1] in packages else "workbench"


#: The root's private leaves, open to every package: how a face exports, and the version.
_PRIVATE_LEAVES = {"workbench._faces", "workbench._version"}


def _is_private(imp: Import) -> bool:
    """The import names a private module or a private name (``_x``; dunders such as ``__version__`` are not)."""

    def private(part: str) -> bool:
        return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))

    return (
        any(private(p) for p in imp.module.split(".")[1:])
        and imp.module not in _PRIVATE_LEAVES
        or any(private(n) for n in imp.names)
    )


def _rel(path: Path, tree: Path) -> str:
    return str(path.relative_to(tree))


# -- the checks (each returns what breaks its rule; [] is a pass) ------------------------------------
def face_reaches(tree: Path) -> list[str]:
    """Rule 2: other packages, benchmarks and tools import only a package's face (type-only imports too)."""
    packages, modules = _packages(tree), _modules(tree)
    reaches = []
    for name, path in modules.items():
        for imp in _imports(path, name, modules):
            if _is_private(imp) and _owner(imp.module, packages) != _owner(name, packages):
                reaches.append(f"{_rel(path, tree)}:{imp.line} imports {imp.module} {list(imp.names)}")
    for script, path in _scripts(tree).items():
        for imp in _imports(path, "__script__", modules):
            if _is_private(imp) and WHITE_BOX.get(script) != _owner(imp.module, packages):
                reaches.append(f"{script}:{imp.line} imports {imp.module} {list(imp.names)}")
    return reaches


def public_modules_behind_faces(tree: Path) -> list[str]:
    """Rule 1: every module behind a face is private, in nested folders too (only a package's top has verbs)."""
    found = []
    for package in _packages(tree):
        for path in sorted((tree / "workbench" / package).rglob("*.py")):
            parts = path.relative_to(tree / "workbench" / package).with_suffix("").parts
            folders, stem = parts[:-1], parts[-1]
            if any(not f.startswith("_") for f in folders) or (
                not folders and stem not in PUBLIC_MODULES and not stem.startswith("_")
            ):
                found.append(_rel(path, tree))
    return found


#: The engines' names: only workbench.engines compares a value with them.
ENGINE_NAMES = {"sim", "sglang"}


def _names_an_engine(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ENGINE_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_an_engine(e) for e in node.elts)
    return False


def engine_name_comparisons(tree: Path) -> list[str]:
    """Rule 5: no comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) with an engine's name outside engines/."""
    files = [
        p
        for p in sorted((tree / "workbench").rglob("*.py"))
        if "engines" not in p.relative_to(tree / "workbench").parts
    ]
    files += list(_scripts(tree).values())
    found = []
    for path in files:
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(_names_an_engine(e) for e in [node.left, *node.comparators]):
                found.append(f"{_rel(path, tree)}:{node.lineno}: {ast.unparse(node)}")
    return found


#: Which packages each package may import (docs/ARCHITECTURE.md, rule 4). The shared leaves
#: (errors, paths, gitinfo, _faces, _version) are open to all; only the root's ``cli`` (one line
#: per verb) may import every package. Each names only packages of lower LAYERS (a test).
ALLOWED: dict[str, set[str]] = {
    "markup": set(),
    "names": set(),
    "releases": set(),
    "analysis": {"markup", "releases"},
    "report": {"store"},  # a from-runs report's runs are checked readable before a kernel starts
    "hosts": set(),
    "engines": {"hosts"},
    "source": {"hosts", "markup"},
    "bench": {"hosts", "engines"},
    "sim": {"bench", "releases", "variants"},
    "variants": {"hosts", "engines", "markup", "names", "releases", "source"},
    "servers": {"hosts", "engines", "variants"},
    "store": {"bench", "engines", "names"},
    "charts": {"analysis"},
    "calibration": {"analysis", "hosts", "sim"},
    "imports": {"bench", "engines", "names", "store"},
    "studies": {
        "analysis",
        "calibration",
        "charts",
        "engines",
        "markup",
        "releases",
        "report",
        "sim",
        "store",
        "variants",
    },
    "sweeps": {
        "analysis",
        "bench",
        "charts",
        "engines",
        "hosts",
        "names",
        "report",
        "servers",
        "store",
        "studies",
        "variants",
    },
}
_LEAVES = {"workbench.errors", "workbench.paths", "workbench.gitinfo", "workbench._faces", "workbench._version"}
#: What a package may take from the root face itself: the leaf modules, by name (``from workbench import paths``).
_ROOT_NAMES = {"paths", "gitinfo", "errors"}


def disallowed_imports(tree: Path) -> list[str]:
    """Rule 4: each package imports only the packages ALLOWED names, never the root's glue; the root's own
    modules (its face and the leaves) import only each other; the command (``cli``) imports any package."""
    packages, modules = _packages(tree), _modules(tree)
    found = []
    for name, path in modules.items():
        home = _owner(name, packages)
        if name in ("workbench.cli", "workbench.__main__"):  # the command, and `python -m workbench` running it
            continue
        for imp in _imports(path, name, modules):
            if (
                name == "workbench"
                and imp.type_only
                and _owner(imp.module, packages) != "workbench"
                and imp.module.count(".") == 1
            ):
                continue  # the root face names each package's face for type checkers
            where = f"{_rel(path, tree)}:{imp.line} imports {imp.module} {list(imp.names)}"
            if imp.module in _LEAVES or (imp.module == "workbench" and set(imp.names) <= _ROOT_NAMES):
                continue
            target = _owner(imp.module, packages)
            if home == "workbench":
                found.append(where)
            elif target == "workbench":
                found.append(where + " (root glue)")
            elif target != home and target.split(".")[1] not in ALLOWED.get(home.split(".")[1], set()):
                found.append(where)
    return found


#: The packages in layers, lowest first, as docs/ARCHITECTURE.md draws them (rule 4's picture, compared by
#: ``test_the_documented_layers_are_these``): a package imports only packages of lower layers, at module
#: level, inside functions and for type checkers alike; the root's face (the notebook API) sits above them all.
LAYERS: list[set[str]] = [
    {"markup", "names", "releases", "hosts"},
    {"analysis", "engines", "source"},
    {"charts", "bench", "variants"},
    {"store", "sim", "servers"},
    {"report", "imports", "calibration"},
    {"studies"},
    {"sweeps"},
]


def _layer(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def upward_imports(tree: Path) -> list[str]:
    """Rule 4's picture: every import of a package's module (any kind: module level, in a function, under
    ``TYPE_CHECKING``) points to a package of a lower layer or to a shared leaf, never across or up a layer,
    and never to the root's face (``import workbench`` for ``workbench.__version__`` runs up to the top)."""
    packages, modules = _packages(tree), _modules(tree)
    found = []
    for name, path in modules.items():
        home = _owner(name, packages)
        if home == "workbench":  # the root's own modules: disallowed_imports keeps them to the leaves
            continue
        for imp in _imports(path, name, modules):
            target = _owner(imp.module, packages)
            where = f"{_rel(path, tree)}:{imp.line} imports {imp.module} {list(imp.names)}"
            if target == "workbench":
                leaf = imp.module in _LEAVES or (
                    imp.module == "workbench" and imp.names and set(imp.names) <= ROOT_LEAVES - {"cli"}
                )
                if not leaf:
                    found.append(where + " (the root's face, above every layer)")
            elif target != home and _layer(target.split(".")[1]) >= _layer(home.split(".")[1]):
                found.append(where + f" (layer {_layer(target.split('.')[1])} from layer {_layer(home.split('.')[1])})")
    return found


#: What launches a server or a sweep, or writes a run: a study never imports these (nor sweeps, servers, bench).
_LAUNCHING = {
    "workbench.store": {
        "new_run",
        "open_run",
        "finish_run",
        "save_level",
        "RunWriter",
        "save_imported_run",
        "delete_run",
        "label_run",
        "sweep_in_flight",
    },
    "workbench.variants": {"prepare_launch"},
}
_LAUNCHERS = {"workbench.sweeps", "workbench.servers", "workbench.bench", "workbench.hosts"}


def study_launches(tree: Path) -> list[str]:
    """A study never launches or writes a run."""
    packages, modules = _packages(tree), _modules(tree)
    return [
        f"{_rel(path, tree)}:{imp.line} imports {imp.module} {list(imp.names)}"
        for name, path in modules.items()
        if _owner(name, packages) == "workbench.studies"
        for imp in _imports(path, name, modules)
        if _owner(imp.module, packages) in _LAUNCHERS or set(imp.names) & _LAUNCHING.get(imp.module, set())
    ]


def stray_root_modules(tree: Path) -> list[str]:
    """The package root holds exactly ROOT_MODULES (the face, the command, the shared leaves, the face helper):
    a module beside them is reported, and so is one of them gone (moved away, or into a folder)."""
    present = {p.stem for p in (tree / "workbench").glob("*.py")}
    return sorted(
        [f"{m}.py (not a root module)" for m in present - ROOT_MODULES]
        + [f"{m}.py (missing from the root)" for m in ROOT_MODULES - present]
    )


CHECKS: dict[str, Callable[[Path], list[str]]] = {
    "face_reaches": face_reaches,
    "public_modules_behind_faces": public_modules_behind_faces,
    "engine_name_comparisons": engine_name_comparisons,
    "disallowed_imports": disallowed_imports,
    "study_launches": study_launches,
    "stray_root_modules": stray_root_modules,
    "upward_imports": upward_imports,
}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_tree_keeps_the_rule(check: str) -> None:
    assert CHECKS[check](TREE) == []


def test_every_package_has_a_dependency_rule() -> None:
    assert sorted(ALLOWED) == PACKAGES


def test_every_package_has_one_layer_and_its_rule_points_down() -> None:
    assert sorted(p for layer in LAYERS for p in layer) == PACKAGES
    assert {(p, q) for p, allowed in ALLOWED.items() for q in allowed if _layer(q) >= _layer(p)} == set()


def test_the_documented_layers_are_these() -> None:
    """docs/ARCHITECTURE.md draws LAYERS (rule 4's picture: one line per layer, highest first) between the
    ``layers:`` line and the end of its code block."""
    text = (TREE / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"```\n *layers:[^\n]*\n(.*?) *```", text, re.S)
    assert block, "docs/ARCHITECTURE.md has no layers: block"
    drawn = [line.split() for line in block.group(1).splitlines() if line.strip()]
    assert [(int(row[0]), set(row[1:])) for row in drawn] == [
        (i, layer) for i, layer in reversed(list(enumerate(LAYERS)))
    ]


def test_every_white_box_benchmark_exists() -> None:
    assert [s for s in WHITE_BOX if not (TREE / s).is_file()] == []


# -- planted breaks: each must be caught ------------------------------------------------------------
#: (check, file, text appended to it) -- each a rule break the check must find.
PLANTED = {
    "relative import of a private module": (
        "face_reaches",
        "workbench/engines/_base.py",
        "from ..hosts._resolve import get_host\n",
    ),
    "relative import of a disallowed package": (
        "disallowed_imports",
        "workbench/hosts/_base.py",
        "from ..servers import ServerHandle\n",
    ),
    "importlib of a private module": (
        "face_reaches",
        "workbench/analysis/_policy.py",
        "def _late():\n    import importlib\n    return importlib.import_module('workbench.hosts._resolve')\n",
    ),
    "importlib of a disallowed package": (
        "disallowed_imports",
        "workbench/analysis/_policy.py",
        "from importlib import import_module\n_s = import_module('workbench.servers')\n",
    ),
    "TYPE_CHECKING import of a disallowed package": (
        "disallowed_imports",
        "workbench/analysis/_policy.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from workbench.servers import ServerHandle\n",
    ),
    "TYPE_CHECKING import running up a layer": (
        "upward_imports",
        "workbench/engines/_base.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from workbench.variants import Variant\n",
    ),
    "the version read from the root's face": (
        "upward_imports",
        "workbench/store/_runs.py",
        "def _late():\n    from workbench import __version__\n    return __version__\n",
    ),
    "import workbench for an attribute of the face": (
        "upward_imports",
        "workbench/servers/_registry.py",
        "import workbench\n_V = workbench.__version__\n",
    ),
    "an import across a layer": (
        "upward_imports",
        "workbench/sim/_spec.py",
        "def _late():\n    from workbench.servers import ServerHandle\n",
    ),
    "TYPE_CHECKING import of a private module": (
        "face_reaches",
        "workbench/charts/_tradeoff.py",
        "import typing\nif typing.TYPE_CHECKING:\n    from workbench.analysis._policy import Tier\n",
    ),
    "import workbench, then workbench.servers": (
        "disallowed_imports",
        "workbench/analysis/_policy.py",
        "import workbench\n\ndef _late():\n    return workbench.servers.ServerHandle\n",
    ),
    "import workbench, then a private module": (
        "face_reaches",
        "workbench/charts/_tradeoff.py",
        "import workbench.analysis\n_t = workbench.analysis._policy.Tier\n",
    ),
    "import workbench, then the root's glue": (
        "disallowed_imports",
        "workbench/charts/_tradeoff.py",
        "import workbench\n_f = workbench.benchmark_variants\n",
    ),
    "engine name compared with !=": (
        "engine_name_comparisons",
        "workbench/bench/_plan.py",
        "def _odd(engine):\n    return engine != 'sim'\n",
    ),
    "engine name compared with in": (
        "engine_name_comparisons",
        "workbench/store/_runs.py",
        "def _odd(name):\n    return name in {'sim', 'sglang'}\n",
    ),
    "engine name compared in a benchmark": (
        "engine_name_comparisons",
        "benchmarks/cli_startup.py",
        "_SIM = 'sglang' == __name__\n",
    ),
    "public module in a nested package": ("public_modules_behind_faces", "workbench/sim/kernels/fast.py", "X = 1\n"),
    "public module behind a face": ("public_modules_behind_faces", "workbench/sim/fast.py", "X = 1\n"),
    "benchmark reaching a private module": (
        "face_reaches",
        "benchmarks/cli_startup.py",
        "from workbench.hosts._resolve import get_host\n",
    ),
    "white-box benchmark reaching another package": (
        "face_reaches",
        "benchmarks/sim_engine_identity.py",
        "from workbench.bench._sse import parse_sse\n",
    ),
    "tool reaching a private module": (
        "face_reaches",
        "tools/build_tokenizer.py",
        "from workbench.bench._prompts import load_prompts\n",
    ),
    "study importing a launcher": (
        "study_launches",
        "workbench/studies/_study.py",
        "def _late():\n    from workbench.sweeps import benchmark_variants\n",
    ),
    "study writing a run": (
        "study_launches",
        "workbench/studies/_server_view.py",
        "from workbench.store import new_run\n",
    ),
    "module left at the root": ("stray_root_modules", "workbench/_glue.py", "X = 1\n"),
    "a leaf put back at the root": ("stray_root_modules", "workbench/markup.py", "def literal(v):\n    return v\n"),
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the package, the benchmarks and the tools (sources only), restored after each planted break."""
    root = tmp_path_factory.mktemp("tree")
    for folder in ("workbench", *SCRIPT_FOLDERS):
        shutil.copytree(TREE / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    yield root


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_planted_break_is_caught(case: str, scratch: Path) -> None:
    check, file, text = PLANTED[case]
    target = scratch / file
    before = target.read_text(encoding="utf-8") if target.exists() else None
    clean = CHECKS[check](scratch)
    created = [] if target.parent.exists() else [target.parent]
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.write_text((before or "") + "\n" + text, encoding="utf-8")
        caught = CHECKS[check](scratch)
    finally:
        if before is None:
            target.unlink()
            for folder in created:
                shutil.rmtree(folder)
        else:
            target.write_text(before, encoding="utf-8")
    assert clean == [] and len(caught) > len(clean), (case, caught)
    assert any(file in c for c in caught) or check == "stray_root_modules", caught


def test_a_root_module_gone_is_caught(scratch: Path) -> None:
    """The root list is exact: a root module moved away (here ``gitinfo.py`` into a folder) is reported too."""
    source = scratch / "workbench" / "gitinfo.py"
    moved = scratch / "workbench" / "_moved_gitinfo.py"
    assert stray_root_modules(scratch) == []
    source.rename(moved)
    try:
        caught = stray_root_modules(scratch)
    finally:
        moved.rename(source)
    assert caught == ["_moved_gitinfo.py (not a root module)", "gitinfo.py (missing from the root)"]


# -- import cycles (on the real tree: faces resolve names through their tables) ----------------------
@pytest.mark.parametrize("module_level_only", [True, False], ids=["module-level", "any-level"])
def test_no_import_cycle(module_level_only: bool) -> None:
    modules = _modules(TREE)
    faces = {p: _face_tables(p) for p in ["workbench", *(f"workbench.{p}" for p in PACKAGES)]}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for imp in _imports(path, name, modules):
            if imp.type_only or (module_level_only and not imp.module_level):
                continue
            if imp.module in faces and imp.names:  # a face import: an edge to each name's defining module
                targets = {faces[imp.module].get(n, f"{imp.module}.{n}") for n in imp.names}
            else:
                targets = {imp.module}
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


#: Where Ray (the optional ``fleet`` extra) may be imported: the fleet modules of ``sweeps/`` only.
_RAY_HOMES = re.compile(r"^workbench/sweeps/_fleet[a-z_]*\.py$")


def test_only_the_fleet_modules_import_ray() -> None:
    """The core and the GPU-host helpers (remote/) never import Ray: it is the ``fleet`` extra
    (docs/FLEET.md), and a host runs the helpers with nothing but the standard library."""
    found = []
    for path in [*sorted(PACKAGE_DIR.rglob("*.py")), *sorted((PACKAGE_DIR.parent / "remote").rglob("*.py"))]:
        where = path.relative_to(PACKAGE_DIR.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "ray" or n.startswith("ray.") for n in names) and not _RAY_HOMES.match(where):
                found.append(f"{where}:{node.lineno}")
    assert found == []
    assert any(_RAY_HOMES.match(p.relative_to(PACKAGE_DIR.parent).as_posix()) for p in PACKAGE_DIR.rglob("*.py"))
