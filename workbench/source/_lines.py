"""Read a range of lines of a file in an SGLang release or in a tree on any host.

The read is answered by the same helper as the definition search
(``remote/find_definitions.py``), so on an SSH host it costs one round trip and the
line numbers are counted exactly as the search counts them: a definition's
``start_line``..``end_line`` read back here gives its ``source`` text.
"""

from __future__ import annotations

import dataclasses
import html

from workbench.errors import ConfigError, SourceError
from workbench.hosts import Host, LocalHost, get_host
from workbench.source._definitions import SEARCH_TIMEOUT_S, search_tree
from workbench.source._releases import DOWNLOAD_TIMEOUT_S, sglang_release
from workbench.source._render import highlight_lines


@dataclasses.dataclass(frozen=True)
class LineRange:
    """Whole lines ``start``..``end`` of one file; displays itself highlighted in notebooks.

    Attributes:
        path: the file as asked for (relative to ``root`` unless absolute).
        start: first line (1-based).
        end: last line (inclusive; clamped to the file's length).
        total_lines: lines in the whole file.
        text: the lines, each ending in ``\\n``.
        host: name of the host the file is on.
        root: the tree ``path`` is relative to (a release's ``sglang`` package directory).
        version: the release, or None for a tree.
    """

    path: str
    start: int
    end: int
    total_lines: int
    text: str
    host: str
    root: str
    version: str | None = None

    @property
    def lines(self) -> list[str]:
        """The lines without their line ends."""
        return self.text.splitlines()

    def numbered(self) -> str:
        """The lines prefixed with their line numbers (plain text, for terminals)."""
        width = len(str(self.end))
        return "".join(f"{self.start + i:>{width}}  {line}\n" for i, line in enumerate(self.lines))

    def _repr_html_(self) -> str:
        where = self.version or f"{self.host}:{self.root}"
        head = (
            '<div style="font-family: system-ui, sans-serif; font-size: 13px; padding: 4px 0;">'
            f"<b>{html.escape(where)}</b> &middot; <code>{html.escape(self.path)}</code> &middot; "
            f"lines {self.start}-{self.end} of {self.total_lines}</div>"
        )
        return head + highlight_lines(self.text or "\n", first_line=self.start)


def read_lines(
    path: str,
    start: int = 1,
    end: int | None = None,
    *,
    host: str | Host = "local",
    tree: str | None = None,
    version: str | None = None,
    timeout_s: float = SEARCH_TIMEOUT_S,
) -> LineRange:
    """Lines ``start``..``end`` of ``path`` in an SGLang release or in a tree on ``host``.

    Args:
        path: the file, relative to the release's ``sglang`` package
            (``srt/managers/utils.py``) or to ``tree``; absolute paths are read as is.
        start: first line, 1-based (default 1).
        end: last line, inclusive (default: the end of the file); clamped to the file.
        host: where ``tree`` is (``"local"``, an ssh config alias, or a Host).
        tree: a directory on ``host``; give exactly one of ``tree`` and ``version``.
        version: an SGLang release (its wheel is fetched and cached on this machine).
        timeout_s: limit for the read, in seconds.

    Returns:
        The :class:`LineRange`.

    Raises:
        ConfigError: both or neither of ``tree`` and ``version``, or a bad range.
        SourceError: the file cannot be read, or ``start`` is past its end.
        HostError: the host cannot be reached.
    """
    if (tree is None) == (version is None):
        raise ConfigError("read_lines needs exactly one of tree= (a directory on the host) and version= (a release).")
    if not isinstance(start, int) or start < 1 or (end is not None and (not isinstance(end, int) or end < start)):
        raise ConfigError(f"Line range {start}..{end} is not valid: lines are numbered from 1 and end >= start.")
    if version is not None:
        where: Host = LocalHost()
        root = str(sglang_release(version, timeout_s=DOWNLOAD_TIMEOUT_S).package_dir)
    else:
        where, root = get_host(host), str(tree)
    answer = search_tree(where, root, [], reads=[{"path": path, "start": start, "end": end}], timeout_s=timeout_s)
    [read] = answer["reads"]
    label = f"SGLang {version}" if version is not None else f"{root} on host {where.name!r}"
    if read["error"]:
        raise SourceError(f"Cannot read {path!r} in {label}: {read['error']}.")
    if start > read["total_lines"]:
        raise SourceError(f"{path!r} in {label} has {read['total_lines']} lines; line {start} is past its end.")
    return LineRange(
        path=path, start=start, end=read["end"], total_lines=read["total_lines"], text=read["text"],
        host=where.name, root=answer["root"], version=version,
    )  # fmt: skip
