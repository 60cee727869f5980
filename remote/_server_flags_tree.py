"""server_flags.py, part 1: the SGLang tree as parsed modules, and literal-ish expressions evaluated in them.

- :class:`Module`: one file's top-level assignments, imports, classes and functions,
  the names it mutates (``.extend``/``.append``/``+=``), and fast source segments;
- :class:`Package`: modules parsed on demand, names followed through ``from x import y``;
- :class:`Evaluator`: literals, lists, dicts, ``A + B``, ``[*A, "x"]``, ``list(A)`` and
  names bound to them, recording which names it read and whether one is extended at
  run time; anything else is :class:`Unresolved` with its source text.

Imported by ``server_flags.py`` from its own directory (``workbench.hosts._helpers``
uploads it beside the script). Python 3.8 or newer, standard library only.
"""

from __future__ import annotations

import ast
import io
import json
import os
import sys
import tokenize

from _common import RequestError

#: How far names are followed through imports and calls (the evaluator allows four times as many nested nodes).
MAX_DEPTH = 6


class Unresolved(object):
    """A value that is not a literal; carries its source text."""

    def __init__(self, text):
        self.text = text


# -- parsed modules --------------------------------------------------------------------


class Module(object):
    """One parsed file: top-level assignments, imports, classes, functions, mutated names."""

    def __init__(self, root, rel):
        self.rel = rel
        path = os.path.join(root, rel)
        with open(path, "rb") as handle:
            data = handle.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        self.text = data.decode(encoding)
        try:
            self.tree = ast.parse(self.text, filename=rel)
        except SyntaxError as exc:
            raise RequestError(
                "cannot parse %s with Python %d.%d: %s (a newer python3 on the host may parse it)"
                % (rel, sys.version_info[0], sys.version_info[1], exc)
            )
        self.lines = self.text.splitlines(True)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line.encode("utf-8")))
        self.data = self.text.encode("utf-8")
        self.assigns, self.imports, self.classes, self.functions = {}, {}, {}, {}
        for node in self.tree.body:
            self._index(node)
        self.mutated = set()
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.attr in ("extend", "append", "add", "update", "insert")
            ):
                self.mutated.add(node.func.value.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.mutated.add(node.target.id)

    def _index(self, node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.assigns[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            self.assigns[node.target.id] = node.value
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                self.imports[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.ClassDef):
            self.classes[node.name] = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[node.name] = node
        elif isinstance(node, (ast.If, ast.Try)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self._index(child)
            for handler in getattr(node, "handlers", []):
                for child in handler.body:
                    self._index(child)

    def segment(self, node):
        """Source text of ``node`` (fast: byte offsets from a precomputed line table)."""
        if getattr(node, "end_lineno", None) is None:
            return ""
        start = self.offsets[node.lineno - 1] + node.col_offset
        end = self.offsets[node.end_lineno - 1] + node.end_col_offset
        return self.data[start:end].decode("utf-8", errors="replace")


class Package(object):
    """The tree: modules parsed on demand, names followed through ``from x import y``."""

    def __init__(self, root):
        self.root = root
        self.modules = {}

    def module(self, rel):
        if rel not in self.modules:
            self.modules[rel] = Module(self.root, rel) if os.path.isfile(os.path.join(self.root, rel)) else None
        return self.modules[rel]

    def module_for(self, dotted):
        parts = dotted.split(".")
        if parts[0] != "sglang":
            return None
        base = "/".join(parts[1:])
        return self.module(base + ".py") or self.module(base + "/__init__.py")

    def lookup(self, module, name, kind="assigns", depth=0):
        """(module, node) binding ``name`` as seen from ``module`` (assignment or class), or (None, None)."""
        table = getattr(module, kind)
        if name in table:
            return module, table[name]
        if name in module.imports and depth < MAX_DEPTH:
            source, original = module.imports[name]
            other = self.module_for(source)
            if other is not None:
                return self.lookup(other, original, kind, depth + 1)
        return None, None


# -- evaluating expressions ----------------------------------------------------------


class Evaluator(object):
    """Evaluates literal-ish expressions in one module, with optional function-local bindings."""

    def __init__(self, package, module, local=None):
        self.package, self.module, self.local = package, module, dict(local or {})
        self.extensible = False
        self.names = []

    def value(self, node, depth=0):
        if depth > MAX_DEPTH * 4:
            return Unresolved(self.module.segment(node))
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out = []
            for elt in node.elts:
                inner = self.value(elt.value if isinstance(elt, ast.Starred) else elt, depth + 1)
                if isinstance(inner, Unresolved):
                    return Unresolved(self.module.segment(node))
                if isinstance(elt, ast.Starred):
                    out.extend(inner)
                else:
                    out.append(inner)
            return out
        if isinstance(node, ast.Dict):
            keys = [self.value(k, depth + 1) if k is not None else None for k in node.keys]
            values = [self.value(v, depth + 1) for v in node.values]
            if any(k is None or isinstance(k, Unresolved) for k in keys) or any(
                isinstance(v, Unresolved) for v in values
            ):
                return Unresolved(self.module.segment(node))
            return dict(zip(keys, values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand, depth + 1)
            return -inner if isinstance(inner, (int, float)) else Unresolved(self.module.segment(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            if isinstance(left, list) and isinstance(right, list) or isinstance(left, str) and isinstance(right, str):
                return left + right
            return Unresolved(self.module.segment(node))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and len(node.args) == 1
            and not node.keywords
            and node.func.id in ("list", "set", "sorted", "tuple", "frozenset")
        ):
            inner = self.value(node.args[0], depth + 1)
            if isinstance(inner, (list, dict)):
                items = list(inner)
                return sorted(items, key=str) if node.func.id == "sorted" else items
            return Unresolved(self.module.segment(node))
        if isinstance(node, ast.Name):
            if node.id in self.local:
                return self.value(self.local.pop(node.id), depth + 1)
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            where, bound = self.package.lookup(self.module, node.id)
            if bound is None:
                return Unresolved(node.id)
            self.names.append("%s (%s:%d)" % (node.id, where.rel, bound.lineno))
            if node.id in where.mutated or any(node.id in m.mutated for m in self.package.modules.values() if m):
                self.extensible = True
            return Evaluator(self.package, where).merge_into(self, bound, depth)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.module.classes
        ):  # ``ServerArgs.port``: the class-level default
            for stmt in self.module.classes[node.value.id].body:
                target = (
                    stmt.target
                    if isinstance(stmt, ast.AnnAssign)
                    else (stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
                )
                if isinstance(target, ast.Name) and target.id == node.attr and stmt.value is not None:
                    return self.value(stmt.value, depth + 1)
        return Unresolved(self.module.segment(node))

    def merge_into(self, outer, node, depth):
        result = self.value(node, depth + 1)
        outer.extensible = outer.extensible or self.extensible
        outer.names.extend(self.names)
        return result


def jsonable(value, module, node):
    """A JSON-safe rendering of an evaluated value (source text when it is not a literal)."""
    if isinstance(value, Unresolved):
        return value.text
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return module.segment(node) if node is not None else repr(value)
