#!/usr/bin/env python3
"""Derive the command-line flags of SGLang's ``launch_server`` from its source tree, answer JSON.

Runs ON the host that holds the tree, with the host's ``python3`` (3.8 or newer)
and nothing but the standard library; nothing in the tree is imported or run. One
JSON request on stdin, one JSON answer on stdout.

Request: ``{"root": "/path/to/sglang"}``: the ``sglang`` package directory (the one
holding ``srt/``), or a checkout whose ``python/sglang`` (or ``sglang``) is that
directory; the answer's ``root`` is the package directory used.

How the flags are found (the three layouts seen in the 0.5.x wheels):

- ``srt/server_args.py``: ``ServerArgs.add_cli_args(parser)`` is walked statement by
  statement. Each ``<x>.add_argument(...)`` call is one flag (up to 0.5.13.post1 all
  of them; later only deprecated aliases, dynamic choices and ``--config``). Calls
  to functions that are handed ``parser`` are followed.
- ``add_cli_args_from_dataclass(parser, ServerArgs)`` (0.5.14 and later) turns the
  ``A[T, "help"]`` / ``A[T, Arg(...)]`` annotated fields into flags. The fields are
  in the ``ServerArgs`` class body (0.5.14 to 0.5.19) or in the classes listed in
  ``_INPUT_NAMESPACES`` and defined in ``srt/arg_groups/fields/*.py`` (0.5.20 on).
  They are turned into flags by the rules of ``srt/arg_groups/arg_utils.py``: the
  flag is ``--`` plus the field name with ``-`` for ``_`` (or ``cli_name``), plus
  ``aliases``; an explicit ``action`` wins; ``Optional`` is unwrapped; ``Literal``
  gives choices; ``list[X]`` gives ``nargs="+"``; ``bool`` is ``store_true``;
  anything else stores one value, required when the field has no default.
- The parser itself is the ``argparse.ArgumentParser(...)`` in
  ``prepare_server_args``: its ``allow_abbrev`` and ``add_help`` are read there.

Choices written as literals, or as names bound to literals in that module or one
it imports from (``LOAD_FORMAT_CHOICES``, ``[*A, "x"]``, ``A + [B]``,
``list(A)``) are resolved; a list that the tree extends at run time (by
``.extend``/``.append``/``.add``, e.g. the ``add_*_choices`` plugin hooks) is
marked ``choices_extensible``; anything else (``list(Enum.keys())``,
comprehensions) is left unresolved with its source text.

The ``--speculative-algorithm`` values: the flag's choices when it has them (up
to 0.5.9); otherwise the members of ``SpeculativeAlgorithm`` in
``srt/speculative/spec_info.py`` (less ``NONE``) plus the aliases the tree names
(``_RESERVED_ALIASES``, ``_RESERVED_NAMES``, and strings compared with
``speculative_algorithm`` in ``srt/server_args.py`` and
``srt/arg_groups/speculative_hook.py``), with where ``from_string`` checks them.

Answer: ``{"ok": true, "root", "layout", "parser": {...}, "flags": [...],
"speculative_algorithms": {...}, "notes": [...], "files_read": [...],
"python_version", "elapsed_s"}``. Each flag: ``option_strings``, ``dest``,
``action``, ``nargs`` (null: one value), ``takes_value``, ``type``, ``choices``
(null when free or unresolved), ``choices_source``, ``choices_extensible``,
``default`` (a JSON value, or the source text when not a literal), ``required``,
``deprecated``, ``replacement`` (the flag to use instead, when the source names
one), ``help`` (first 600 characters), ``hidden`` (help is ``argparse.SUPPRESS``),
``condition`` (source of an enclosing ``if``, when the flag is added only then),
``origin`` (add_argument / field), ``file`` and ``line``.

Errors are answered as ``{"ok": false, "error": "...", "kind": "request"}`` with exit
status 2 (bad request, not an SGLang tree, unparsable file), and ``"internal"``
with exit status 1 for an unexpected failure.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import sys
import time
import tokenize

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402
from _common import RequestError  # noqa: E402

PROTOCOL = 1
HELP_CHARS = 600
MAX_DEPTH = 6
ZERO_NARGS_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
_REPLACEMENT = re.compile(r"(?:[Uu]se|[Aa]lias (?:of|for)|renamed to|[Rr]eplaced by)\s+`?(--[A-Za-z0-9][A-Za-z0-9_-]*)")
#: Help text that says the flag itself is deprecated: it starts so ("(Deprecated) ...", "[Deprecated] ...",
#: "Note: deprecated ...") or says "<the flag> is deprecated"; "replaces the deprecated X" does not count.
_DEPRECATED = re.compile(r"^\W*(note:\s*)?deprecated\b", re.I)


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
            raise RequestError("cannot parse %s with Python %d.%d: %s (a newer python3 on the host may parse it)"
                               % (rel, sys.version_info[0], sys.version_info[1], exc))
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
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(
                    node.func.value, ast.Name) and node.func.attr in ("extend", "append", "add", "update", "insert"):
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
            if any(k is None or isinstance(k, Unresolved) for k in keys) or any(isinstance(v, Unresolved)
                                                                                for v in values):
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
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1 and \
                not node.keywords and node.func.id in ("list", "set", "sorted", "tuple", "frozenset"):
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
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in \
                self.module.classes:  # ``ServerArgs.port``: the class-level default
            for stmt in self.module.classes[node.value.id].body:
                target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
                    stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
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


# -- actions ------------------------------------------------------------------------


def action_nargs(package, module, action_text):
    """0 when the action takes no value, else None (one value, or what ``nargs`` says)."""
    if action_text is None:
        return None
    bare = action_text.strip("'\"")
    if bare in ZERO_NARGS_ACTIONS or action_text.split(".")[-1] == "BooleanOptionalAction":
        return 0
    name = action_text.split(".")[-1]
    where, cls = package.lookup(module, name, kind="classes")
    if cls is None:
        return None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults) + list(
                node.args.kw_defaults)
            for arg, default in zip(args, defaults):
                if arg.arg == "nargs" and isinstance(default, ast.Constant) and default.value == 0:
                    return 0
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
                    for kw in call.keywords:
                        if kw.arg == "nargs" and isinstance(kw.value, ast.Constant) and kw.value.value == 0:
                            return 0
    return None


def flag_record(package, module, option_strings, kwargs, *, origin, line, condition, evaluator_local=None):
    """One flag from ``add_argument``-style arguments: ``kwargs`` maps keyword to AST node (or a ready value)."""
    def evaluate(key):
        node = kwargs.get(key)
        if node is None:
            return None, None
        if not isinstance(node, ast.AST):
            return node, None
        ev = Evaluator(package, module, evaluator_local)
        return ev.value(node), ev

    def text(key):
        node = kwargs.get(key)
        if node is None or not isinstance(node, ast.AST):
            return node
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return module.segment(node)

    action = text("action")
    nargs, _ = evaluate("nargs")
    if isinstance(nargs, Unresolved):
        nargs = nargs.text
    if nargs is None:
        nargs = action_nargs(package, module, action)
    options = list(option_strings)
    if action and action.split(".")[-1] == "BooleanOptionalAction":
        options += ["--no-" + o[2:] for o in option_strings if o.startswith("--")]
    choices, ev = evaluate("choices")
    choices_source = None
    extensible = False
    if kwargs.get("choices") is not None:
        if isinstance(choices, Unresolved) or not isinstance(choices, (list, dict)):
            choices_source = "unresolved: " + (choices.text if isinstance(choices, Unresolved) else repr(choices))
            choices = None
        else:
            choices = [c for c in choices]
            choices_source = ", ".join(ev.names) if ev and ev.names else "literal"
            extensible = bool(ev and ev.extensible)
    help_value, _ = evaluate("help")
    hidden = text("help") in ("argparse.SUPPRESS", "SUPPRESS")
    help_text = help_value if isinstance(help_value, str) else (
        help_value.text if isinstance(help_value, Unresolved) else None)
    if help_text is not None:
        help_text = " ".join(help_text.split())[:HELP_CHARS]
    default, _ = evaluate("default")
    required, _ = evaluate("required")
    says_so = bool(help_text) and (bool(_DEPRECATED.search(help_text)) or any(
        re.search(re.escape(o) + r"`?\s+is\s+deprecated", help_text) for o in option_strings))
    deprecated = bool(action and "Deprecated" in action) or says_so
    deprecated_kw, _ = evaluate("deprecated")
    deprecated = deprecated or deprecated_kw is True
    replacement, _ = evaluate("new_flag")
    if not isinstance(replacement, str):
        found = _REPLACEMENT.search(help_text or "") if deprecated else None
        replacement = found.group(1) if found else None
    dest, _ = evaluate("dest")
    if not isinstance(dest, str):
        longs = [o for o in option_strings if o.startswith("--")]
        dest = (longs or option_strings)[0].lstrip("-").replace("-", "_")
    return {
        "option_strings": options,
        "dest": dest,
        "action": action or "store",
        "nargs": nargs,
        "takes_value": nargs != 0,
        "type": text("type"),
        "choices": choices,
        "choices_source": choices_source,
        "choices_extensible": extensible,
        "default": jsonable(default, module, kwargs.get("default") if isinstance(kwargs.get("default"),
                                                                                   ast.AST) else None),
        "required": required is True,
        "deprecated": deprecated,
        "replacement": replacement if isinstance(replacement, str) else None,
        "help": help_text,
        "hidden": hidden,
        "condition": condition,
        "origin": origin,
        "file": module.rel,
        "line": line,
    }


# -- add_cli_args ----------------------------------------------------------------------


class Walker(object):
    """Walks ``ServerArgs.add_cli_args`` and what it calls, collecting flags in order."""

    def __init__(self, package, module, server_args):
        self.package, self.module, self.server_args = package, module, server_args
        self.flags, self.notes, self.layouts = [], [], []

    def walk(self, body, module, local, condition, depth=0):
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                local[stmt.targets[0].id] = stmt.value
            if isinstance(stmt, ast.If):
                test = module.segment(stmt.test)
                self.walk(stmt.body, module, local, test if condition is None else condition + " and " + test, depth)
                negated = "not (%s)" % test
                self.walk(stmt.orelse, module, local, negated if condition is None else condition + " and " + negated,
                          depth)
                continue
            if isinstance(stmt, (ast.For, ast.With, ast.Try)):
                self.walk(stmt.body, module, local, condition, depth)
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    self.call(node, module, local, condition, depth)

    def call(self, node, module, local, condition, depth):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "add_argument":
            options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if not options or not all(o.startswith("-") for o in options):
                self.notes.append("%s:%d: add_argument without literal option strings skipped"
                                  % (module.rel, node.lineno))
                return
            kwargs = dict((kw.arg, kw.value) for kw in node.keywords if kw.arg)
            self.flags.append(flag_record(self.package, module, options, kwargs, origin="add_argument",
                                          line=node.lineno, condition=condition, evaluator_local=local))
            return
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name == "add_cli_args_from_dataclass":
            self.dataclass_fields(node, module, condition)
            return
        passes_parser = any(isinstance(a, ast.Name) and a.id == "parser" for a in node.args)
        if passes_parser and name and depth < MAX_DEPTH:
            target = module.functions.get(name)
            where = module
            if target is None:
                for item in self.server_args.body:
                    if isinstance(item, ast.FunctionDef) and item.name == name:
                        target = item
            if target is None:
                where, target = self.package.lookup(module, name, kind="functions")
            if target is not None:
                self.walk(target.body, where, {}, condition, depth + 1)
            else:
                self.notes.append("%s:%d: %s(parser, ...) not found in the tree; flags it adds are missing"
                                  % (module.rel, node.lineno, name))

    def dataclass_fields(self, node, module, condition):
        sources = [(module, self.server_args)]
        namespaces = module.assigns.get("_INPUT_NAMESPACES")
        if isinstance(namespaces, (ast.List, ast.Tuple)):
            self.layouts.append("namespaces")
            for elt in namespaces.elts:
                if isinstance(elt, ast.Name):
                    where, cls = self.package.lookup(module, elt.id, kind="classes")
                    if cls is None:
                        self.notes.append("namespace class %s not found; its flags are missing" % elt.id)
                    else:
                        sources.append((where, cls))
        else:
            self.layouts.append("dataclass-fields")
        only = None
        for kw in node.keywords:
            if kw.arg == "fields":
                only = Evaluator(self.package, module).value(kw.value)
        for where, cls in sources:
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    if isinstance(only, list) and stmt.target.id not in only:
                        continue
                    flag = field_flag(self.package, where, stmt, condition)
                    if flag is not None:
                        self.flags.append(flag)


# -- annotated fields (arg_groups/arg_utils.py rules) ----------------------------------


def _subscript_parts(node):
    """(head name, [argument nodes]) of ``X[a, b]`` (3.8's ``Index`` wrapper removed)."""
    if not isinstance(node, ast.Subscript):
        return None, []
    head = node.value.id if isinstance(node.value, ast.Name) else (
        node.value.attr if isinstance(node.value, ast.Attribute) else None)
    inner = node.slice
    index = getattr(ast, "Index", None)
    if index is not None and isinstance(inner, index):
        inner = inner.value
    return head, list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _is_none(node):
    return isinstance(node, ast.Constant) and node.value is None or isinstance(node, ast.Name) and node.id == "None"


def _unwrap_optional(node):
    head, args = _subscript_parts(node)
    if head == "Optional" and len(args) == 1:
        return args[0]
    if head == "Union":
        rest = [a for a in args if not _is_none(a)]
        if len(rest) == 1:
            return rest[0]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        if _is_none(node.right):
            return node.left
        if _is_none(node.left):
            return node.right
    return node


def field_flag(package, module, stmt, condition):
    """The flag ``add_cli_args_from_dataclass`` makes of one annotated field, or None (no CLI surface)."""
    head, parts = _subscript_parts(stmt.annotation)
    if head not in ("A", "Annotated") or not parts:
        return None
    raw_type, arg = parts[0], None
    for meta in parts[1:]:
        if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
            arg = {"help": meta}
            break
        if isinstance(meta, ast.Call) and isinstance(meta.func, ast.Name) and meta.func.id == "Arg":
            arg = dict((kw.arg, kw.value) for kw in meta.keywords if kw.arg)
            break
        if isinstance(meta, ast.JoinedStr):
            arg = {"help": meta}
            break
    if arg is None:
        return None
    ev = Evaluator(package, module)
    if "no_cli" in arg and ev.value(arg["no_cli"]) is True:
        return None
    name = stmt.target.id
    cli_name = ev.value(arg["cli_name"]) if "cli_name" in arg else None
    cli_name = cli_name if isinstance(cli_name, str) else "--" + name.replace("_", "-")
    aliases = ev.value(arg["aliases"]) if "aliases" in arg else []
    options = [cli_name] + [a for a in (aliases if isinstance(aliases, list) else []) if isinstance(a, str)]
    kwargs = {"help": arg.get("help"), "dest": name}
    has_default = stmt.value is not None
    if has_default:
        kwargs["default"] = stmt.value
    if "action" in arg:
        kwargs["action"] = arg["action"]
        action_kwargs = ev.value(arg["action_kwargs"]) if "action_kwargs" in arg else None
        if isinstance(arg.get("action_kwargs"), ast.Dict):
            for key, value in zip(arg["action_kwargs"].keys, arg["action_kwargs"].values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    kwargs[key.value] = value
        elif isinstance(action_kwargs, dict):
            kwargs.update(action_kwargs)
        return flag_record(package, module, options, kwargs, origin="field", line=stmt.lineno, condition=condition)
    inner = _unwrap_optional(raw_type)
    head, args = _subscript_parts(inner)
    for key in ("const", "nargs"):
        if key in arg:
            kwargs[key] = arg[key]
    if head == "Literal":
        values = [ev.value(a) for a in args]
        kwargs["choices"] = arg.get("choices") or ast.List(elts=args, ctx=ast.Load())
        kwargs["type"] = module.segment(arg["type_parser"]) if "type_parser" in arg else (
            type(values[0]).__name__ if values and not isinstance(values[0], Unresolved) else "str")
        kwargs.pop("nargs", None)
    elif head in ("list", "List") and "type_parser" not in arg:
        kwargs["type"] = _type_name(args[0] if args else None)
        kwargs["nargs"] = arg.get("nargs") or "+"
        if "choices" in arg:
            kwargs["choices"] = arg["choices"]
    elif isinstance(inner, ast.Name) and inner.id == "bool":
        kwargs["action"] = "store_true"
        kwargs.pop("nargs", None)
        kwargs.pop("const", None)
    else:
        kwargs["type"] = module.segment(arg["type_parser"]) if "type_parser" in arg else _type_name(inner)
        if "choices" in arg:
            kwargs["choices"] = arg["choices"]
        required = ev.value(arg["required"]) if "required" in arg else None
        if required is True or (required is None and not has_default):
            kwargs["required"] = True
    return flag_record(package, module, options, kwargs, origin="field", line=stmt.lineno, condition=condition)


def _type_name(node):
    """The ``type=`` argparse gets for an annotation: int, float, else str (``_infer_type_func``)."""
    if isinstance(node, ast.Name) and node.id in ("int", "float", "str"):
        return node.id
    return "str"


# -- the parser and the speculative algorithms -----------------------------------------


def parser_settings(module):
    """allow_abbrev / add_help / prog of the ArgumentParser built in ``prepare_server_args``."""
    found = {"file": module.rel, "line": None, "allow_abbrev": True, "add_help": True, "prog": None,
             "function": "prepare_server_args"}
    function = module.functions.get("prepare_server_args")
    if function is None:
        found["function"] = None
        return found
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and module.segment(node.func) in ("argparse.ArgumentParser", "ArgumentParser"):
            found["line"] = node.lineno
            for kw in node.keywords:
                if kw.arg in ("allow_abbrev", "add_help", "prog") and isinstance(kw.value, ast.Constant):
                    found[kw.arg] = kw.value.value
            break
    return found


def speculative_algorithms(package, flags):
    """The values ``--speculative-algorithm`` accepts, and where that is decided."""
    flag = next((f for f in flags if "--speculative-algorithm" in f["option_strings"]), None)
    info = {"names": [], "aliases": [], "case_sensitive": True, "plugins": False, "source": None,
            "validated_in": []}
    if flag is None:
        info["source"] = "no --speculative-algorithm flag"
        return info
    if flag["choices"] is not None:
        info.update(names=list(flag["choices"]), source="argparse choices (%s:%d)" % (flag["file"], flag["line"]))
        return info
    spec_info = package.module("srt/speculative/spec_info.py")
    cls = spec_info.classes.get("SpeculativeAlgorithm") if spec_info else None
    if cls is None:
        info["source"] = "free string; srt/speculative/spec_info.py has no SpeculativeAlgorithm"
        return info
    members = []
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            members.append(stmt.targets[0].id)
    members = [m for m in members if m.isupper() and m != "NONE"]
    info["names"] = members
    info["source"] = "enum SpeculativeAlgorithm (%s:%d)" % (spec_info.rel, cls.lineno)
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "from_string":
            info["case_sensitive"] = ".upper()" not in spec_info.segment(stmt)
            info["validated_in"].append("%s:%d" % (spec_info.rel, stmt.lineno))
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "register":
            info["plugins"] = True
    aliases = set()
    for rel in ("srt/speculative/spec_info.py", "srt/speculative/spec_registry.py"):
        mod = package.module(rel)
        for key in ("_RESERVED_ALIASES", "_RESERVED_NAMES"):
            if mod is not None and key in mod.assigns:
                value = Evaluator(package, mod).value(mod.assigns[key])
                if isinstance(value, list):
                    aliases.update(v for v in value if isinstance(v, str))
    for rel in ("srt/server_args.py", "srt/arg_groups/speculative_hook.py"):
        mod = package.module(rel)
        if mod is None:
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Compare) and mod.segment(node.left).endswith("speculative_algorithm"):
                for comp in node.comparators:
                    if isinstance(comp, ast.Constant) and isinstance(comp.value, str) and comp.value.isupper():
                        aliases.add(comp.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_string":
                if any("speculative_algorithm" in mod.segment(a) for a in node.args):
                    info["validated_in"].append("%s:%d" % (rel, node.lineno))
    info["aliases"] = sorted(a for a in aliases if a not in members and a != "NONE")
    return info


# -- the answer ------------------------------------------------------------------------


def answer(request):
    started = time.monotonic()
    root = request["root"]
    for candidate in (root, os.path.join(root, "sglang"), os.path.join(root, "python", "sglang")):
        if os.path.isfile(os.path.join(candidate, "srt", "server_args.py")):
            root = candidate
            break
    else:
        raise RequestError("%s is not an SGLang source tree: neither it nor its sglang/ or python/sglang/ holds "
                           "srt/server_args.py" % root)
    package = Package(root)
    module = package.module("srt/server_args.py")
    server_args = module.classes.get("ServerArgs")
    add_cli_args = None
    for stmt in server_args.body if server_args is not None else []:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "add_cli_args":
            add_cli_args = stmt
    if add_cli_args is None:
        raise RequestError("srt/server_args.py has no ServerArgs.add_cli_args; this layout is not known")
    walker = Walker(package, module, server_args)
    walker.walk(add_cli_args.body, module, {}, None)
    parser = parser_settings(module)
    flags = walker.flags
    if parser["add_help"]:
        flags.insert(0, {"option_strings": ["-h", "--help"], "dest": "help", "action": "help", "nargs": 0,
                         "takes_value": False, "type": None, "choices": None, "choices_source": None,
                         "choices_extensible": False, "default": None, "required": False, "deprecated": False,
                         "replacement": None, "help": "show this help message and exit", "hidden": False,
                         "condition": None, "origin": "argparse", "file": module.rel, "line": parser["line"]})
    notes = list(walker.notes)
    utils = package.module("srt/arg_groups/arg_utils.py")
    if "dataclass-fields" in walker.layouts or "namespaces" in walker.layouts:
        body = utils.segment(utils.functions["add_cli_args_from_dataclass"]) if utils and \
            "add_cli_args_from_dataclass" in utils.functions else ""
        for marker in ("_unwrap_literal", "store_true", "arg_meta.nargs or \"+\"", "arg_meta.aliases"):
            if marker not in body:
                notes.append("add_cli_args_from_dataclass in srt/arg_groups/arg_utils.py no longer contains %r; "
                             "its rules may have changed, so the derived fields may be off" % marker)
    unresolved = [f["option_strings"][0] for f in flags if (f["choices_source"] or "").startswith("unresolved")]
    if unresolved:
        notes.append("choices computed at run time, not checked: " + ", ".join(unresolved))
    return {
        "ok": True,
        "protocol": PROTOCOL,
        "root": root,
        "layout": (walker.layouts or ["add_argument"])[0],
        "parser": parser,
        "flags": flags,
        "speculative_algorithms": speculative_algorithms(package, flags),
        "notes": notes,
        "files_read": sorted(rel for rel, mod in package.modules.items() if mod is not None),
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "elapsed_s": round(time.monotonic() - started, 4),
    }


def parse_request(raw):
    request = _common.load_request(raw)
    if not isinstance(request.get("root"), str) or not request["root"]:
        raise RequestError("request needs 'root': the sglang package directory (the one holding srt/)")
    root = os.path.abspath(os.path.expanduser(request["root"]))
    if not os.path.isdir(root):
        raise RequestError("root %r does not exist or is not a directory" % root)
    return {"root": root}


def main():
    """Read the request from stdin, write the answer to stdout; return the exit status."""
    return _common.serve(lambda raw: answer(parse_request(raw)))


if __name__ == "__main__":
    sys.exit(main())
