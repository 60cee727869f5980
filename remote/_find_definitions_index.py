"""The on-host index of ``find_definitions.py``: what each file of a tree defines and references, kept between calls.

Imported by ``find_definitions.py`` from its own directory (uploaded beside it).
Python 3.8 or newer, standard library only.

Layout under the index directory (default ``~/.cache/specbench-workbench/index``)::

    trees/<key>.json        one tree (root path and Python version):
                            {"format", "root", "python", "written_ns",
                             "files": {rel: [size, mtime_ns, sha256]},
                             "sites": {sha256: " name name ... "}}
    files/<ab>/<sha256>.<tag>.defs.json, files/<ab>/<sha256>.<tag>.refs.json
                            one file content's definitions, and its references
                            (the ``extract`` output of find_definitions.py, split
                            in two so a definition query reads only the first), or
                            {"error": "..."} when it cannot be parsed; shared by
                            every tree holding that content (releases share most
                            files); <tag> names the Python version and FORMAT

A file is known by its content's sha256; ``(size, mtime_ns)`` says whether it can
have changed since it was hashed (a file modified within :data:`RACY_NS` before the
index was written is hashed again, as git does). ``sites`` lists the names that
appear where a definition could bind them (after ``def``/``class``, or before
``=``, ``:``, ``,``, a closing bracket or a line end, after an opening bracket,
comma, ``=``, ``*``, ``;`` or a line start), a superset of what the file defines;
Only files whose sites hold a definition query's last name segment, and files
whose bytes spell a reference query's last segment as a whole word (read each
time: a name list of every file would cost more to load than the bytes to scan),
are looked at, and each is parsed at most once per content and Python version.

Every file is written to a temporary name in its directory and moved into place
(``os.replace``), so concurrent helpers never see half a file (the last writer
wins). A file that cannot be read or decoded, or has the wrong shape, is ignored
and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time

#: Bump when the stored shapes change: older files are then ignored.
FORMAT = 1
#: Where the index lives when the request names no directory.
DEFAULT_DIR = "~/.cache/specbench-workbench/index"
#: A file modified less than this before the index was written is hashed again (ns).
RACY_NS = 2 * 10**9

_ID = r"[^\W\d]\w*"
_SITES = (
    re.compile(r"def[ \t\\\r\n]+(?=(" + _ID + "))"),  # the name not consumed: "dataclass\nclass X"
    re.compile(r"class[ \t\\\r\n]+(?=(" + _ID + "))"),
    re.compile(r"[(\[,=*;\n][ \t]*(" + _ID + r")[ \t]*(?=[=:,)\]\\\r\n])"),
    re.compile(r":[ \t]*(" + _ID + r")(?=[ \t]*=(?!=))"),
)


def summarize(text: str) -> str:
    """The sites of a file's text: a space-separated string of names with a space at both ends."""
    sites = set()
    padded = "\n" + text
    for pattern in _SITES:
        sites.update(pattern.findall(padded))
    return " %s " % " ".join(sorted(sites))


def word_pattern(name: str):
    """A bytes pattern of ``name`` (UTF-8) as a whole word; non-ASCII neighbours count as boundaries (a superset)."""
    return re.compile(b"(?<![A-Za-z0-9_])" + re.escape(name.encode("utf-8")) + b"(?![A-Za-z0-9_])")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and ``os.replace``."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read_json(path: str):
    """The JSON value in ``path``, or None when it is missing, unreadable or not JSON."""
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


class TreeIndex:
    """The stored index of one tree, loaded at start and written back when it changed.

    Args:
        directory: the index directory (``~`` expanded).
        root: the tree's absolute root.
    """

    def __init__(self, directory: str, root: str) -> None:
        self.directory = os.path.abspath(os.path.expanduser(directory))
        self.root = root
        self.python = "%d.%d" % sys.version_info[:2]
        self.tag = "py%d%d-f%d" % (sys.version_info[0], sys.version_info[1], FORMAT)
        key = hashlib.sha256(("%s\0%s" % (root, self.tag)).encode("utf-8", "surrogateescape")).hexdigest()[:32]
        self.path = os.path.join(self.directory, "trees", key + ".json")
        self.files = {}
        self.sites = {}
        self.trust_before_ns = 0
        self.state = "new"
        self.changed = False
        self.records_read = 0
        self.records_written = 0
        self.errors = []

    # -- the tree file -------------------------------------------------------------------
    def load(self) -> None:
        """Read the tree's file; a missing one leaves the index empty ("new"), a bad one too ("corrupt")."""
        if not os.path.exists(self.path):
            return
        data = _read_json(self.path)
        if not self._valid(data):
            self.state = "corrupt"
            self.changed = True
            return
        self.files = data["files"]
        self.sites = data["sites"]
        self.trust_before_ns = data["written_ns"] - RACY_NS
        self.state = "loaded"

    def _valid(self, data) -> bool:
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != self.root:
            return False
        files, sites = data.get("files"), data.get("sites")
        if not isinstance(files, dict) or not isinstance(sites, dict) or not isinstance(data.get("written_ns"), int):
            return False
        for entry in files.values():
            if not (
                isinstance(entry, list)
                and len(entry) == 3
                and isinstance(entry[2], str)
                and isinstance(sites.get(entry[2]), str)
            ):
                return False
        return True

    def known(self, rel: str, stat: os.stat_result):
        """The stored sha256 of ``rel`` when its size and mtime say it is unchanged, else None."""
        entry = self.files.get(rel)
        if entry is None or entry[0] != stat.st_size or entry[1] != stat.st_mtime_ns:
            return None
        if stat.st_mtime_ns >= self.trust_before_ns:
            return None  # modified too close to the last write to trust the stamp
        return entry[2]

    def update(self, rel: str, stat: os.stat_result, sha: str, sites: str) -> None:
        """Record a file's content hash and sites."""
        self.files[rel] = [stat.st_size, stat.st_mtime_ns, sha]
        self.sites[sha] = sites
        self.changed = True

    def forget_missing(self, present: set) -> None:
        """Drop files that are no longer in the tree."""
        gone = [rel for rel in self.files if rel not in present]
        for rel in gone:
            del self.files[rel]
        if gone:
            self.changed = True

    def save(self) -> None:
        """Write the tree file when it changed; failures are noted, not raised."""
        if not self.changed:
            return
        live = set(entry[2] for entry in self.files.values())
        written_ns = time.time_ns()
        try:
            write_atomic(
                self.path,
                json.dumps(
                    {
                        "format": FORMAT,
                        "root": self.root,
                        "python": self.python,
                        "written_ns": written_ns,
                        "files": self.files,
                        "sites": {k: v for k, v in self.sites.items() if k in live},
                    }
                ),
            )
        except OSError as exc:
            self.errors.append("cannot write %s: %s" % (self.path, exc.strerror or exc))

    # -- per-content records ------------------------------------------------------------
    def _record_path(self, sha: str, part: str) -> str:
        return os.path.join(self.directory, "files", sha[:2], "%s.%s.%s.json" % (sha, self.tag, part))

    def record(self, sha: str, parts: tuple):
        """The stored record of a content (its ``parts``: "defs" and/or "refs"), or None when not all are there."""
        record = {}
        for part in parts:
            data = _read_json(self._record_path(sha, part))
            if not isinstance(data, dict):
                return None
            if isinstance(data.get("error"), str):
                record = {"error": data["error"]}
                break
            if part == "defs" and isinstance(data.get("defs"), list):
                record["defs"] = data["defs"]
            elif part == "refs" and isinstance(data.get("refs"), dict) and isinstance(data.get("scopes"), list):
                record.update(refs=data["refs"], scopes=data["scopes"])
            else:
                return None
        self.records_read += 1
        return record

    def store_record(self, sha: str, record: dict) -> None:
        """Keep a content's record, its definitions and references in two files; failures are noted, not raised."""
        if "error" in record:
            split = {"defs": record, "refs": record}
        else:
            split = {"defs": {"defs": record["defs"]}, "refs": {"refs": record["refs"], "scopes": record["scopes"]}}
        try:
            for part, data in split.items():
                write_atomic(self._record_path(sha, part), json.dumps(data))
            self.records_written += 1
        except OSError as exc:
            self.errors.append("cannot write a record under %s: %s" % (self.directory, exc.strerror or exc))

    def describe(self) -> dict:
        """The index part of the answer."""
        return {
            "dir": self.directory,
            "tree_file": self.path,
            "state": self.state,
            "records_read": self.records_read,
            "records_written": self.records_written,
            "errors": self.errors[:5],
        }
