"""server_flags.py, part 2: one flag record from ``add_argument`` keywords or from an annotated field.

- :func:`flag_record`: the JSON record of one flag from ``add_argument``-style
  keywords (AST nodes or ready values): action, nargs, choices (resolved, or marked
  extensible or unresolved), default, deprecation and its replacement, help;
- :func:`field_flag`: the flag ``add_cli_args_from_dataclass`` makes of one
  ``A[T, "help"]`` / ``A[T, Arg(...)]`` field, by the rules of
  ``srt/arg_groups/arg_utils.py`` (``Optional`` unwrapped, ``Literal`` gives choices,
  ``list[X]`` gives ``nargs="+"``, ``bool`` is ``store_true``, no default means required).

Imported by ``server_flags.py`` from its own directory (``workbench.hosts._helpers``
uploads it beside the script). Python 3.8 or newer, standard library only.
"""

from __future__ import annotations

import ast
import re

from _server_flags_tree import Evaluator, Unresolved, jsonable

HELP_CHARS = 600
ZERO_NARGS_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
_REPLACEMENT = re.compile(r"(?:[Uu]se|[Aa]lias (?:of|for)|renamed to|[Rr]eplaced by)\s+`?(--[A-Za-z0-9][A-Za-z0-9_-]*)")
#: Help text that says the flag itself is deprecated: it starts so ("(Deprecated) ...", "[Deprecated] ...",
#: "Note: deprecated ...") or says "<the flag> is deprecated"; "replaces the deprecated X" does not count.
_DEPRECATED = re.compile(r"^\W*(note:\s*)?deprecated\b", re.I)


# -- add_argument keywords -------------------------------------------------------------


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
            defaults = (
                [None] * (len(node.args.args) - len(node.args.defaults))
                + list(node.args.defaults)
                + list(node.args.kw_defaults)
            )
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
    help_text = (
        help_value if isinstance(help_value, str) else (help_value.text if isinstance(help_value, Unresolved) else None)
    )
    if help_text is not None:
        help_text = " ".join(help_text.split())[:HELP_CHARS]
    default, _ = evaluate("default")
    required, _ = evaluate("required")
    says_so = bool(help_text) and (
        bool(_DEPRECATED.search(help_text))
        or any(re.search(re.escape(o) + r"`?\s+is\s+deprecated", help_text) for o in option_strings)
    )
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
        "default": jsonable(
            default, module, kwargs.get("default") if isinstance(kwargs.get("default"), ast.AST) else None
        ),
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


# -- annotated fields (arg_groups/arg_utils.py rules) ----------------------------------


def _subscript_parts(node):
    """(head name, [argument nodes]) of ``X[a, b]`` (3.8's ``Index`` wrapper removed)."""
    if not isinstance(node, ast.Subscript):
        return None, []
    head = (
        node.value.id
        if isinstance(node.value, ast.Name)
        else (node.value.attr if isinstance(node.value, ast.Attribute) else None)
    )
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
        kwargs["type"] = (
            module.segment(arg["type_parser"])
            if "type_parser" in arg
            else (type(values[0]).__name__ if values and not isinstance(values[0], Unresolved) else "str")
        )
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
