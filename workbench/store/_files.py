"""Atomic file writes and JSON encoding for run directories.

Failures raise :class:`~workbench.errors.HostError` (the file on this machine could not
be used), as :class:`~workbench.hosts.LocalHost` does for local files.

Every file is written to a temporary name in the same directory, flushed to disk
(``fsync``) and moved over the target with :func:`os.replace`, so a reader (or a
crash) sees either the old complete file or the new complete file, never a torn one.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import DiskFullError, HostError

__all__ = ["NO_SPACE", "atomic_write", "read_json", "read_parquet", "to_jsonable", "write_json", "write_parquet"]

#: errno values that mean "no room": a full disk, an exhausted quota, a file-size limit (RLIMIT_FSIZE).
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _write_error(path: Path, exc: OSError) -> HostError:
    """The error for a failed write of ``path``: :class:`DiskFullError` when there was no room.

    pyarrow raises plain ``OSError`` whose text carries the errno (``[Errno 28] ...``);
    it is read from there when the attribute is unset.
    """
    code = exc.errno
    if code is None:
        found = re.search(r"\[Errno (\d+)\]", str(exc))
        code = int(found.group(1)) if found else None
    if code in NO_SPACE:
        return DiskFullError(
            f"Cannot write {path}: {exc.strerror or exc} (errno {errno.errorcode.get(code, code)}). "
            f"The disk holding {path.parent} is full (or a quota or file-size limit was reached); {path.name} "
            "keeps its previous content and the files written before are intact. Free some space (or give "
            "another runs_dir / $WORKBENCH_RUNS_DIR) and run the same sweep again: it resumes after the last "
            "stored level.",
            path=str(path),
        )
    return HostError(f"Cannot write {path}: {exc.strerror or exc}")


def atomic_write(path: Path, writer: Callable[[Path], object]) -> None:
    """Create or replace ``path`` atomically; ``writer(tmp_path)`` writes the content.

    Raises:
        DiskFullError: no room (disk full, quota, file-size limit); the target is left unchanged.
        HostError: the file could not be written otherwise (the target is left unchanged).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    tmp = Path(tmp_name)
    try:
        writer(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    finally:
        if tmp.exists():
            tmp.unlink()


def to_jsonable(value: Any) -> Any:
    """``value`` with numpy/pandas scalars, paths and tuples turned into JSON types.

    Non-finite floats are kept (``NaN``/``Infinity`` tokens, as Python's json writes
    them and sglang bench_serving's records contain).
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def write_json(path: Path, obj: Mapping[str, Any]) -> None:
    """Atomically write ``obj`` as indented UTF-8 JSON (keys in insertion order)."""
    text = json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_json(path: Path) -> dict[str, Any]:
    """Read a JSON object file.

    Raises:
        HostError: missing, unreadable, not JSON, or not an object.
    """
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HostError(f"Cannot read {path}: {exc}") from exc
    if not isinstance(obj, dict):
        raise HostError(f"{path}: expected a JSON object, found {type(obj).__name__}")
    return obj


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    """Atomically write ``frame`` as Parquet (pyarrow; index dropped; list columns kept)."""
    atomic_write(path, lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False))


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet table, with list cells (``itl_ms``...) as Python lists.

    Raises:
        HostError: missing or unreadable.
    """
    try:
        frame = pd.read_parquet(path, engine="pyarrow")
    except (OSError, ValueError) as exc:
        raise HostError(f"Cannot read {path}: {exc}") from exc
    for col in frame.columns:
        if frame[col].dtype == object and len(frame) and isinstance(frame[col].iloc[0], np.ndarray):
            frame[col] = [v.tolist() if isinstance(v, np.ndarray) else v for v in frame[col]]
    return frame


def parquet_problem(path: Path) -> str | None:
    """Why the Parquet file at ``path`` cannot be read (its footer and schema, not its rows), or None.

    Cheap (the footer only): for listing runs, where reading every table would be slow.
    """
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        return f"{path.name} cannot be read ({exc})"
    return None
