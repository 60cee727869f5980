#!/usr/bin/env python3
"""Find definitions of (and references to) Python names in a source tree, answer JSON.

Runs ON the host that holds the tree (a GPU host over SSH, or this machine), with
the host's ``python3`` (3.8 or newer) and nothing but the standard library. One JSON
request on stdin, one JSON answer on stdout: a batch of queries is one walk of the
tree and one round trip.

Request::

    {"root": "/path/to/sglang",            # directory to walk (required)
     "queries": [                          # a list; at least one query or one read
        {"name": "get_alloc_len_per_decode"},                  # bare name
        {"name": "EAGLEWorkerV2.forward_batch_generation"},    # qualified (Class.method)
        {"name": "get_alloc_len_per_decode", "type": "references",
         "path_glob": "srt/*"}],           # optional fnmatch filter on the relative path
     "reads": [                            # optional: line ranges of files, no walk needed
        {"path": "srt/managers/utils.py", "start": 180, "end": 210}],   # end null: to the end
     "include_source": true,               # default true; false omits "source"
     "max_matches": 500,                   # per query, default 500
     "index": true,                        # default true: use and update the on-host index
     "index_dir": "~/.cache/specbench-workbench/index"}   # default; where the index lives

A query ``a.b.c`` matches a definition whose dotted qualname ends with ``a.b.c``.
Qualnames join enclosing classes and functions with dots (Python's ``<locals>``
marker is left out, so ``outer.inner`` names a function nested in ``outer``).

Answer: ``{"ok": true, "results": [{"query": ..., "matches": [...], "truncated": bool}],
"files_scanned", "files_parsed", "files_from_index", "files_unparsable", "unparsable",
"index", "elapsed_s", "python_version", "root", "reads"}``. ``files_parsed`` counts the
files this run parsed, ``files_from_index`` the candidate files answered from the index
(``_find_definitions_index.py`` describes it); ``index`` has ``dir``, ``tree_file``,
``state`` (new, loaded, corrupt, or off), ``records_read``, ``records_written`` and
``errors`` (an index that cannot be written does not fail the search). A definition match has ``path`` (relative
to root, posix), ``qualname``, ``name``, ``kind`` (function / method / class, or
variable / attribute for a name bound by an assignment at module level or in a
class body), ``is_async``, ``start_line`` (first decorator line, 1-based),
``def_line``, ``end_line`` (inclusive), ``enclosing_class``, ``decorators``
(source text), ``signature`` (parameter list and return annotation as one line of
source text, comments dropped; for classes the base list; for assignments the
annotation or ''), ``docstring`` (first line or null), ``source`` (whole lines
start_line..end_line, newlines normalised to ``\\n``) and
``sha256`` (hex digest of ``source`` encoded as UTF-8). A reference match has
``path``, ``line``, ``col`` (0-based, in characters), ``kind`` (call / attribute /
name / import), ``enclosing`` (qualname of the innermost def or class, null at
module level) and ``text`` (the stripped source line). References are matched by
the last name segment only: ``x.forward(...)`` is a reference to any ``forward``.

A read's ``path`` is relative to root (or absolute). Its answer has ``path``,
``start``, ``end`` (clamped to the file), ``total_lines``, ``text`` (those whole
lines, each ending in ``\n``, numbered as the parser numbers them) and ``error``
(null, or why the file could not be read: one unreadable file does not fail the
batch). Without queries the tree is not walked.

Directories whose names start with a dot, ``__pycache__`` and ``node_modules``
are not entered, and symlinked directories are not followed. Only candidate files
are parsed, each at most once per content: for a definition query, files that spell
its last name segment where a definition could bind it; for a reference query,
files whose bytes hold it as a whole word (a name cannot be defined or referenced
without being spelled), so ``unparsable`` counts candidate files only. Files the
host's Python cannot parse (syntax newer than the interpreter, encoding errors)
are skipped and listed.

Errors are answered as ``{"ok": false, "error": "...", "kind": "..."}`` with exit
status 2 for a bad request or missing root, and 1 for an unexpected failure.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import io
import os
import re
import sys
import time
import tokenize

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402
import _find_definitions_index as _index  # noqa: E402
from _common import RequestError  # noqa: E402

PROTOCOL = 1
SKIP_DIRS = {"__pycache__", "node_modules"}
MAX_UNPARSABLE_LISTED = 100
_NEWLINES = re.compile(r"\r\n|\r|\n")
_OPENERS = "([{"
_CLOSERS = ")]}"


# -- request ------------------------------------------------------------------------


def parse_request(raw: bytes) -> dict:
    """Validate the JSON request and fill in defaults; raise RequestError when invalid."""
    request = _common.load_request(raw)
    root = request.get("root")
    if not isinstance(root, str) or not root:
        raise RequestError("request needs 'root': the directory to search")
    root = os.path.abspath(os.path.expanduser(root))
    if not os.path.isdir(root):
        raise RequestError("root %r does not exist or is not a directory" % root)
    queries = request.get("queries", [])
    reads = request.get("reads", [])
    if not isinstance(queries, list) or not isinstance(reads, list) or not (queries or reads):
        raise RequestError(
            "request needs 'queries' (a list of {'name': ...}) or 'reads' (a list of "
            "{'path': ..., 'start': ..., 'end': ...}), at least one of them non-empty"
        )
    checked = []
    for query in queries:
        if not isinstance(query, dict) or not isinstance(query.get("name"), str):
            raise RequestError("each query must be an object with a string 'name': %r" % (query,))
        parts = query["name"].split(".")
        if not all(part.isidentifier() for part in parts):
            raise RequestError("query name %r is not a dotted Python name" % query["name"])
        qtype = query.get("type", "definition")
        if qtype not in ("definition", "references"):
            raise RequestError("query type %r is not 'definition' or 'references'" % qtype)
        glob = query.get("path_glob")
        if glob is not None and not isinstance(glob, str):
            raise RequestError("query path_glob must be a string: %r" % (glob,))
        checked.append({"name": query["name"], "type": qtype, "path_glob": glob, "parts": parts})
    checked_reads = []
    for read in reads:
        if not isinstance(read, dict) or not isinstance(read.get("path"), str) or not read["path"]:
            raise RequestError("each read must be an object with a string 'path': %r" % (read,))
        start, end = read.get("start", 1), read.get("end")
        if not isinstance(start, int) or isinstance(start, bool) or start < 1:
            raise RequestError("read 'start' must be a line number >= 1: %r" % (read,))
        if end is not None and (not isinstance(end, int) or isinstance(end, bool) or end < start):
            raise RequestError("read 'end' must be null or a line number >= start: %r" % (read,))
        checked_reads.append({"path": read["path"], "start": start, "end": end})
    max_matches = request.get("max_matches", 500)
    if not isinstance(max_matches, int) or max_matches < 1:
        raise RequestError("max_matches must be a positive integer")
    index_dir = request.get("index_dir") or _index.DEFAULT_DIR
    if not isinstance(index_dir, str):
        raise RequestError("index_dir must be a directory path: %r" % (index_dir,))
    return {
        "root": root,
        "queries": checked,
        "reads": checked_reads,
        "include_source": bool(request.get("include_source", True)),
        "max_matches": max_matches,
        "index": bool(request.get("index", True)),
        "index_dir": index_dir,
    }


# -- walking and parsing ------------------------------------------------------------


def iter_python_files(root: str):
    """Yield (absolute path, posix path relative to root) of *.py files, sorted, no symlinked dirs."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        prefix = os.path.relpath(dirpath, root).replace(os.sep, "/") + "/"
        prefix = "" if prefix == "./" else prefix
        for filename in sorted(filenames):
            if filename.endswith(".py"):
                yield os.path.join(dirpath, filename), prefix + filename


def _read_or_note(full: str, rel: str, unparsable: list):
    """The bytes of ``full``, or None after noting ``rel`` as unreadable in ``unparsable``."""
    try:
        with open(full, "rb") as handle:
            return handle.read()
    except OSError as exc:
        unparsable.append({"path": rel, "error": "unreadable: %s" % exc.strerror})
        return None


def decode_source(data: bytes) -> str:
    """Decode Python source bytes using its coding cookie or BOM (default UTF-8)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def split_lines(text: str) -> list:
    """Lines as the parser numbers them: split on \\r\\n, \\r and \\n only (not form feeds)."""
    return _NEWLINES.split(text)


# -- definitions ----------------------------------------------------------------------


def walk_scopes(tree: ast.AST):
    """Yield (node, scope) for every node; scope is a tuple of enclosing def/class nodes.

    Decorators, defaults, annotations and bases belong to the outer scope; a
    definition's body to the inner one. Iterative, so deep nesting cannot overflow.
    """
    stack = [(tree, ())]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = scope + (node,)
            body = set(id(child) for child in node.body)
            children = [(c, inner if id(c) in body else scope) for c in ast.iter_child_nodes(node)]
        else:
            children = [(c, scope) for c in ast.iter_child_nodes(node)]
        stack.extend(reversed(children))


def qualname_of(scope: tuple, name: str) -> str:
    """Dotted qualname from the enclosing definitions and the name."""
    return ".".join([s.name for s in scope] + [name])


def header_signature(lines: list, node: ast.AST) -> str:
    """The parameter list (and ``-> annotation``) or class base list, as one line of source.

    Tokenizes the definition's header from its ``def``/``class`` line, keeps the
    bracketed list after the name (and a return annotation), drops comments and
    joins line breaks with single spaces (dropping the trailing comma of a
    multi-line list). Falls back to ``ast.unparse`` (3.9+) when
    the header cannot be tokenized.
    """
    header = iter([line + "\n" for line in lines[node.lineno - 1 : node.end_lineno]])
    pieces = []
    try:
        tokens = tokenize.generate_tokens(lambda: next(header, ""))
        state, depth, prev_end = "find_name", 0, None
        for tok in tokens:
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT):
                continue
            if state == "find_name":
                if tok.type == tokenize.NAME and tok.string == node.name:
                    state = "after_name"
                continue
            if state == "after_name" and tok.string not in ("(", "->", ":"):
                break
            if depth == 0 and tok.string == ":":
                break
            if pieces and tok.string in _CLOSERS and pieces[-1] == "," and tok.start[0] != prev_end[0]:
                pieces.pop()  # the trailing comma of a multi-line list
            elif prev_end is not None and tok.start != prev_end and pieces:
                if pieces[-1] not in _OPENERS and tok.string not in _CLOSERS + ",":
                    pieces.append(" ")
            pieces.append(tok.string)
            prev_end = tok.end
            if tok.string in _OPENERS:
                depth += 1
            elif tok.string in _CLOSERS:
                depth -= 1
            state = "in_header"
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return unparse_signature(node)
    signature = "".join(pieces)
    if isinstance(node, ast.ClassDef) or signature.startswith("("):
        return signature
    return unparse_signature(node)


def unparse_signature(node: ast.AST) -> str:
    """Signature via ``ast.unparse`` (Python 3.9+), or '' on older interpreters."""
    unparse = getattr(ast, "unparse", None)
    if unparse is None:
        return ""
    if isinstance(node, ast.ClassDef):
        items = [unparse(b) for b in node.bases] + [unparse(k) for k in node.keywords]
        return "(%s)" % ", ".join(items) if items else ""
    text = "(%s)" % unparse(node.args)
    if node.returns is not None:
        text += " -> " + unparse(node.returns)
    return text


# -- one file: every definition and reference (what the index keeps) ---------------------

#: Fields of a stored definition, in order (``name`` and ``path`` are added when answering).
DEF_FIELDS = (
    "qualname",
    "kind",
    "is_async",
    "start_line",
    "def_line",
    "end_line",
    "enclosing_class",
    "decorators",
    "signature",
    "docstring",
    "sha256",
)
_DEF_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_KEEPENDS = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


class FileText:
    """One file's text with its lines as the parser numbers them, and helpers over them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        self._keepends = None

    def block(self, start: int, end: int) -> str:
        """Whole lines ``start``..``end`` (1-based, inclusive), each ending in ``\\n``."""
        return "\n".join(self.lines[start - 1 : end]) + "\n"

    def segment(self, node: ast.AST):
        """The source text of ``node`` as ``ast.get_source_segment`` gives it, without re-splitting the file."""
        end_lineno, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None:
            return None
        if self._keepends is None:
            self._keepends = _KEEPENDS.findall(self.text)
        lines = self._keepends
        first, last = node.lineno - 1, end_lineno - 1
        if first == last:
            return lines[first].encode("utf-8")[node.col_offset : end_col].decode("utf-8")
        head = lines[first].encode("utf-8")[node.col_offset :].decode("utf-8")
        tail = lines[last].encode("utf-8")[:end_col].decode("utf-8")
        return "".join([head] + lines[first + 1 : last] + [tail])

    def column(self, line: int, col_bytes: int) -> int:
        """A 0-based column in UTF-8 bytes (as the AST counts) converted to characters."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return col_bytes
        return len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="replace"))


def definition_record(node: ast.AST, scope: tuple, source: FileText) -> list:
    """The stored record (:data:`DEF_FIELDS`) of one def or class node."""
    if isinstance(node, ast.ClassDef):
        kind = "class"
    elif scope and isinstance(scope[-1], ast.ClassDef):
        kind = "method"
    else:
        kind = "function"
    classes = [i for i, s in enumerate(scope) if isinstance(s, ast.ClassDef)]
    enclosing_class = qualname_of(scope[: classes[-1]], scope[classes[-1]].name) if classes else None
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    docstring = ast.get_docstring(node, clean=True)
    doc_first = docstring.strip().splitlines()[0] if docstring and docstring.strip() else None
    return [
        qualname_of(scope, node.name),
        kind,
        isinstance(node, ast.AsyncFunctionDef),
        start,
        node.lineno,
        node.end_lineno,
        enclosing_class,
        [source.segment(d) or "" for d in node.decorator_list],
        header_signature(source.lines, node),
        doc_first,
        _digest(source.block(start, node.end_lineno)),
    ]


def assignment_record(node: ast.AST, name: str, scope: tuple, source: FileText) -> list:
    """The stored record (:data:`DEF_FIELDS`) of a module-level variable or class attribute."""
    annotation = getattr(node, "annotation", None)
    return [
        qualname_of(scope, name),
        "attribute" if scope else "variable",
        False,
        node.lineno,
        node.lineno,
        node.end_lineno,
        qualname_of(scope[:-1], scope[-1].name) if scope else None,
        [],
        (source.segment(annotation) or "") if annotation is not None else "",
        None,
        _digest(source.block(node.lineno, node.end_lineno)),
    ]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def assigned_names(node: ast.AST) -> list:
    """Names an ``x = ...`` / ``x: T = ...`` statement binds (tuple targets unpacked), else []."""
    if isinstance(node, ast.AnnAssign):
        pending = [node.target]
    elif isinstance(node, ast.Assign):
        pending = list(node.targets)
    else:
        return []
    names = []
    while pending:
        target = pending.pop(0)
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pending.extend(target.elts)
        elif isinstance(target, ast.Starred):
            pending.append(target.value)
    return names


def referenced_names(node: ast.AST) -> list:
    """The names ``node`` references: a Name's id, an Attribute's attr, the last segments an import binds."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = []
        for alias in node.names:
            last = alias.name.split(".")[-1]
            if last not in names:
                names.append(last)
        return names
    return []


def reference_position(node: ast.AST, source: FileText) -> tuple:
    """(line, col) of the referenced name itself; col in characters, 0-based.

    For ``a.b.name`` that is where ``name`` is spelled (possibly on a later line
    than ``a``). The AST counts columns in UTF-8 bytes; they are converted here.
    """
    if isinstance(node, ast.Attribute):
        line, col_bytes = node.end_lineno, node.end_col_offset - len(node.attr.encode("utf-8"))
    else:
        line, col_bytes = node.lineno, node.col_offset
    return line, source.column(line, col_bytes)


def extract(tree: ast.AST, source: FileText) -> dict:
    """Every definition and reference in one parsed file: the index's record of it.

    Returns:
        ``{"defs": [[...DEF_FIELDS], ...], "refs": {name: [[line, col, kind, scope], ...]},
        "scopes": [qualname, ...]}``, both in the order :func:`walk_scopes` visits
        the nodes (so answers keep the order of a plain walk). A reference's
        ``scope`` indexes ``scopes`` (-1: module level); ``kind`` is call,
        attribute, name or import. An assignment that binds several names gives
        one definition per distinct name.
    """
    call_funcs = set(id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call))
    defs, refs, scopes, scope_ids = [], {}, [], {}
    for node, scope in walk_scopes(tree):
        if isinstance(node, _DEF_NODES):
            defs.append(definition_record(node, scope, source))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and (not scope or isinstance(scope[-1], ast.ClassDef)):
            bound = []
            for name in assigned_names(node):
                if name not in bound:
                    bound.append(name)
                    defs.append(assignment_record(node, name, scope, source))
        names = referenced_names(node)
        if not names:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            kind = "import"
        elif id(node) in call_funcs:
            kind = "call"
        else:
            kind = "attribute" if isinstance(node, ast.Attribute) else "name"
        if scope:
            enclosing = ".".join(s.name for s in scope)
            if enclosing not in scope_ids:
                scope_ids[enclosing] = len(scopes)
                scopes.append(enclosing)
            where = scope_ids[enclosing]
        else:
            where = -1
        line, col = reference_position(node, source)
        for name in names:
            refs.setdefault(name, []).append([line, col, kind, where])
    return {"defs": defs, "refs": refs, "scopes": scopes}


def name_matches(qualname: str, parts: list) -> bool:
    """True when the dotted ``qualname`` ends with ``parts``."""
    chain = qualname.split(".")
    return chain[-1] == parts[-1] and len(chain) >= len(parts) and chain[-len(parts) :] == parts


def definition_match(record: list, rel: str, source, include_source: bool) -> dict:
    """The answer for one stored definition (``source``: the file's :class:`FileText`, needed for the text)."""
    match = dict(zip(DEF_FIELDS, record))
    match["decorators"] = list(match["decorators"])
    match["path"] = rel
    match["name"] = match["qualname"].rsplit(".", 1)[-1]
    if include_source:
        match["source"] = source.block(match["start_line"], match["end_line"])
    return match


def reference_match(entry: list, scopes: list, rel: str, source: FileText) -> dict:
    """The answer for one stored reference."""
    line, col, kind, where = entry
    text = source.lines[line - 1] if 0 < line <= len(source.lines) else ""
    return {
        "path": rel,
        "line": line,
        "col": col,
        "kind": kind,
        "enclosing": scopes[where] if where >= 0 else None,
        "text": text.strip(),
    }


def read_range(root: str, read: dict) -> dict:
    """Answer one read: whole lines start..end of a file (decoded as Python source when it is one)."""
    full = read["path"] if os.path.isabs(read["path"]) else os.path.join(root, read["path"])
    reply = {
        "path": read["path"],
        "start": read["start"],
        "end": read["end"],
        "total_lines": None,
        "text": None,
        "error": None,
    }
    try:
        with open(full, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        reply["error"] = "%s: %s" % (exc.strerror or type(exc).__name__, full)
        return reply
    try:
        text = decode_source(data) if full.endswith(".py") else data.decode("utf-8")
    except (UnicodeDecodeError, LookupError, SyntaxError):
        text = data.decode("utf-8", errors="replace")
    lines = split_lines(text)
    if lines and lines[-1] == "":
        lines.pop()
    end = len(lines) if read["end"] is None else min(read["end"], len(lines))
    reply.update(total_lines=len(lines), end=end)
    reply["text"] = "".join(line + "\n" for line in lines[read["start"] - 1 : end])
    return reply


def answer(request: dict) -> dict:
    """Answer every query from the tree's index, parsing only candidate files it does not hold yet."""
    started = time.monotonic()
    queries = request["queries"]
    results = [
        {"query": {k: q[k] for k in ("name", "type", "path_glob")}, "matches": [], "truncated": False} for q in queries
    ]
    index = None
    if request["index"] and queries:
        index = _index.TreeIndex(request["index_dir"], request["root"])
        index.load()
    def_names = set(q["parts"][-1] for q in queries if q["type"] == "definition")
    ref_names = set(q["parts"][-1] for q in queries if q["type"] == "references")
    needles = set(name.encode("utf-8") for name in def_names | ref_names)
    padded_defs = [" %s " % name for name in def_names]  # as summaries list names
    for query in queries:
        query["padded"] = " %s " % query["parts"][-1]
    word_patterns = dict((name, _index.word_pattern(name)) for name in ref_names)
    scanned = parsed = from_index = 0
    unparsable = []
    present = set()
    for full, rel in iter_python_files(request["root"]) if queries else ():
        scanned += 1
        present.add(rel)
        try:
            stat = os.stat(full)
        except OSError as exc:
            unparsable.append({"path": rel, "error": "unreadable: %s" % exc.strerror})
            continue
        sha = index.known(rel, stat) if index is not None else None
        data = None
        if sha is None or ref_names:  # reference queries look at every file's bytes
            data = _read_or_note(full, rel, unparsable)
            if data is None:
                continue
        if sha is not None:
            sites = index.sites[sha]
        else:
            if index is None and not any(needle in data for needle in needles):
                continue
            sha = _index.sha256_hex(data)
            try:
                sites = _index.summarize(decode_source(data))
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError):
                sites = " * "  # undecodable: a candidate for every query, reported as unparsable
            if index is not None:
                index.update(rel, stat, sha, sites)
        words = (
            set(
                name for name, pattern in word_patterns.items() if name.encode("utf-8") in data and pattern.search(data)
            )
            if ref_names
            else ()
        )
        if sites != " * " and not words and not any(name in sites for name in padded_defs):
            continue
        active = [
            (i, q)
            for i, q in enumerate(queries)
            if (q["path_glob"] is None or fnmatch.fnmatchcase(rel, q["path_glob"]))
            and (sites == " * " or (q["padded"] in sites if q["type"] == "definition" else q["parts"][-1] in words))
        ]
        if not active:
            continue
        parts = tuple(sorted(set("defs" if q["type"] == "definition" else "refs" for _, q in active)))
        record = index.record(sha, parts) if index is not None else None
        if record is not None:
            from_index += 1
        else:
            if data is None:
                data = _read_or_note(full, rel, unparsable)
                if data is None:
                    continue
                sha = _index.sha256_hex(data)  # what is stored is what was parsed
            parsed += 1
            record = parse_record(data, rel)
            if index is not None:
                index.store_record(sha, record)
        if "error" in record:
            unparsable.append({"path": rel, "error": record["error"]})
            continue
        source = _LazyText(full, data)
        for i, query in active:
            if query["type"] == "definition":
                found = [
                    definition_match(r, rel, source, request["include_source"])
                    for r in record["defs"]
                    if name_matches(r[0], query["parts"])
                ]
            else:
                found = [
                    reference_match(e, record["scopes"], rel, source)
                    for e in record["refs"].get(query["parts"][-1], ())
                ]
            room = request["max_matches"] - len(results[i]["matches"])
            if len(found) > room:
                results[i]["truncated"] = True
            results[i]["matches"].extend(found[: max(room, 0)])
    if index is not None:
        index.forget_missing(present)
        index.save()
    return {
        "ok": True,
        "protocol": PROTOCOL,
        "root": request["root"],
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "results": results,
        "files_scanned": scanned,
        "files_parsed": parsed,
        "files_from_index": from_index,
        "files_unparsable": len(unparsable),
        "unparsable": unparsable[:MAX_UNPARSABLE_LISTED],
        "index": index.describe() if index is not None else {"state": "off"},
        "reads": [read_range(request["root"], read) for read in request["reads"]],
        "elapsed_s": round(time.monotonic() - started, 4),
    }


def parse_record(data: bytes, rel: str) -> dict:
    """The :func:`extract` record of a file's bytes, or ``{"error": ...}`` when they cannot be parsed."""
    try:
        text = decode_source(data)
        tree = ast.parse(text, filename=rel)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
    return extract(tree, FileText(text))


class _LazyText:
    """A file's :class:`FileText`, decoded only when an answer needs its lines."""

    def __init__(self, full: str, data) -> None:
        self._full, self._data, self._text = full, data, None

    def _get(self) -> FileText:
        if self._text is None:
            data = self._data
            if data is None:
                with open(self._full, "rb") as handle:
                    data = handle.read()
            self._text = FileText(decode_source(data))
        return self._text

    @property
    def lines(self) -> list:
        return self._get().lines

    def block(self, start: int, end: int) -> str:
        return self._get().block(start, end)


def main() -> int:
    """Read the request from stdin, write the answer to stdout; return the exit status."""
    return _common.serve(lambda raw: answer(parse_request(raw)))


if __name__ == "__main__":
    sys.exit(main())
