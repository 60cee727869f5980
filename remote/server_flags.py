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

The code is in three files that ``workbench.hosts._helpers`` uploads side by side
(with ``_common.py``): ``_server_flags_tree.py`` (parsed modules, evaluating
expressions), ``_server_flags_records.py`` (one flag from ``add_argument`` keywords
or an annotated field) and this one (walking ``add_cli_args``, the parser, the
speculative algorithms, the answer).
"""

from __future__ import annotations

import ast
import os
import sys
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402
from _common import RequestError  # noqa: E402
from _server_flags_records import field_flag, flag_record  # noqa: E402
from _server_flags_tree import MAX_DEPTH, Evaluator, Package  # noqa: E402

PROTOCOL = 1


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
                self.walk(
                    stmt.orelse, module, local, negated if condition is None else condition + " and " + negated, depth
                )
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
                self.notes.append(
                    "%s:%d: add_argument without literal option strings skipped" % (module.rel, node.lineno)
                )
                return
            kwargs = dict((kw.arg, kw.value) for kw in node.keywords if kw.arg)
            self.flags.append(
                flag_record(
                    self.package,
                    module,
                    options,
                    kwargs,
                    origin="add_argument",
                    line=node.lineno,
                    condition=condition,
                    evaluator_local=local,
                )
            )
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
                self.notes.append(
                    "%s:%d: %s(parser, ...) not found in the tree; flags it adds are missing"
                    % (module.rel, node.lineno, name)
                )

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


# -- the parser and the speculative algorithms -----------------------------------------


def parser_settings(module):
    """allow_abbrev / add_help / prog of the ArgumentParser built in ``prepare_server_args``."""
    found = {
        "file": module.rel,
        "line": None,
        "allow_abbrev": True,
        "add_help": True,
        "prog": None,
        "function": "prepare_server_args",
    }
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
    info = {"names": [], "aliases": [], "case_sensitive": True, "plugins": False, "source": None, "validated_in": []}
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
        raise RequestError(
            "%s is not an SGLang source tree: neither it nor its sglang/ or python/sglang/ holds "
            "srt/server_args.py" % root
        )
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
        flags.insert(
            0,
            {
                "option_strings": ["-h", "--help"],
                "dest": "help",
                "action": "help",
                "nargs": 0,
                "takes_value": False,
                "type": None,
                "choices": None,
                "choices_source": None,
                "choices_extensible": False,
                "default": None,
                "required": False,
                "deprecated": False,
                "replacement": None,
                "help": "show this help message and exit",
                "hidden": False,
                "condition": None,
                "origin": "argparse",
                "file": module.rel,
                "line": parser["line"],
            },
        )
    notes = list(walker.notes)
    utils = package.module("srt/arg_groups/arg_utils.py")
    if "dataclass-fields" in walker.layouts or "namespaces" in walker.layouts:
        body = (
            utils.segment(utils.functions["add_cli_args_from_dataclass"])
            if utils and "add_cli_args_from_dataclass" in utils.functions
            else ""
        )
        for marker in ("_unwrap_literal", "store_true", 'arg_meta.nargs or "+"', "arg_meta.aliases"):
            if marker not in body:
                notes.append(
                    "add_cli_args_from_dataclass in srt/arg_groups/arg_utils.py no longer contains %r; "
                    "its rules may have changed, so the derived fields may be off" % marker
                )
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
