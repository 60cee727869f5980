"""Patch files: parsing unified diffs and naming the file and hunk that failed to apply (pure).

Patches are git-style unified diffs with paths relative to an SGLang repository
root (``a/python/sglang/srt/...``), as ``git diff`` writes them in a checkout.
Text before the first ``diff --git`` (or ``---``) line is a free-form header that
``git apply`` ignores; it is the place to say what the patch does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

from workbench.errors import ConfigError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_FAILED_AT = re.compile(r"patch failed: (.+):(\d+)\s*$")
_MISSING = re.compile(r"error: (.+): (?:No such file or directory|does not exist in index)\s*$")
_CORRUPT = re.compile(r"corrupt patch at line (\d+)")


@dataclasses.dataclass(frozen=True)
class Hunk:
    """One ``@@`` hunk of a file's diff.

    Attributes:
        index: 1-based position within its file's diff.
        old_start, old_len: the lines it replaces in the original file (1-based).
        new_start, new_len: the lines it produces in the patched file.
        header: the ``@@ ... @@`` line as written.
        section: the text after the second ``@@`` (git puts the enclosing def/class there).
    """

    index: int
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    header: str
    section: str

    def describe(self) -> str:
        """``hunk #2 (@@ -94,6 +95,9 @@ class EAGLEWorker(TpModelWorker):)``."""
        return f"hunk #{self.index} ({self.header.strip()})"


@dataclasses.dataclass(frozen=True)
class FilePatch:
    """The part of a patch that changes one file.

    Attributes:
        old_path: path before (``None`` for a new file), relative to the repository root.
        new_path: path after (``None`` for a deleted file).
        hunks: its hunks, in order.
    """

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        """The file's path (the new one unless deleted)."""
        return self.new_path or self.old_path or ""

    def hunk_at(self, old_line: int) -> Hunk | None:
        """The hunk ``git apply`` names by ``old_line`` (its old start), or the last one starting before it."""
        best = None
        for hunk in self.hunks:
            if hunk.old_start <= old_line:
                best = hunk
        return best


@dataclasses.dataclass(frozen=True)
class Patch:
    """A patch file, its digest and what it touches.

    Attributes:
        path: the file on this machine.
        text: its full text (header included).
        sha256: hex SHA-256 of the file's bytes.
        files: the files it changes, in order.
    """

    path: Path
    text: str
    sha256: str
    files: tuple[FilePatch, ...]

    @property
    def name(self) -> str:
        """The file name, e.g. ``eagle-spec-off-above.patch``."""
        return self.path.name

    @property
    def header(self) -> str:
        """The free-form text before the first diff ("" when there is none)."""
        lines = []
        for line in self.text.splitlines():
            if line.startswith(("diff --git ", "--- ")):
                break
            lines.append(line)
        return "\n".join(lines).strip()

    def file(self, path: str) -> FilePatch | None:
        """The part changing ``path`` (repository-relative), or None."""
        return next((f for f in self.files if path in (f.new_path, f.old_path)), None)

    def provenance(self) -> dict[str, object]:
        """What a run manifest records: name, path, sha256, files and the full text."""
        return {"file": self.name, "path": str(self.path), "sha256": self.sha256,
                "files": [f.path for f in self.files], "text": self.text}  # fmt: skip


def load_patch(path: str | Path) -> Patch:
    """Read and parse a patch file.

    Raises:
        ConfigError: the file is missing, not UTF-8, or holds no file diff.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read patch {p}: {exc}") from exc
    files = parse_patch(text)
    if not files:
        raise ConfigError(f"Patch {p} holds no file diff (no '--- a/...' / '+++ b/...' lines); "
                          "make it with `git diff` in the checkout")  # fmt: skip
    return Patch(path=p, text=text, sha256=hashlib.sha256(data).hexdigest(), files=tuple(files))


def parse_patch(text: str) -> list[FilePatch]:
    """The file diffs of a unified diff, with their hunks (header text is skipped)."""
    files: list[FilePatch] = []
    old: str | None = None
    new: str | None = None
    hunks: list[Hunk] = []
    started = False

    def flush() -> None:
        if started:
            files.append(FilePatch(old, new, tuple(hunks)))

    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            flush()
            old, new, hunks, started = _strip(line[4:]), _strip(lines[i + 1][4:]), [], True
            continue
        match = _HUNK.match(line) if started else None
        if match:
            o, ol, n, nl, section = match.groups()
            hunks.append(Hunk(index=len(hunks) + 1, old_start=int(o), old_len=int(ol) if ol is not None else 1,
                              new_start=int(n), new_len=int(nl) if nl is not None else 1, header=line,
                              section=section.strip()))  # fmt: skip
    flush()
    return files


def _strip(name: str) -> str | None:
    """``a/python/x.py`` -> ``python/x.py``; ``/dev/null`` -> None (tab-separated timestamps dropped)."""
    name = name.split("\t")[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


@dataclasses.dataclass(frozen=True)
class PatchCheck:
    """Whether one patch applies to a tree, and if not, where it fails.

    Attributes:
        patch: the patch file's name.
        ok: True when ``git apply --check`` accepted it.
        file: the file that failed (repository-relative), or None.
        hunk: the failing hunk, or None (a missing file, a corrupt patch).
        message: what failed and what to do ("" when ok).
        output: ``git apply``'s own error output.
    """

    patch: str
    ok: bool
    file: str | None = None
    hunk: Hunk | None = None
    message: str = ""
    output: str = ""


def explain_failure(patch: Patch, output: str, *, target: str) -> PatchCheck:
    """Turn ``git apply --check`` error output into a :class:`PatchCheck` naming file and hunk.

    Args:
        patch: the patch that was checked.
        output: git's stderr.
        target: what it was applied to, for the message (e.g. ``"sglang==0.5.9"``).
    """
    for line in output.splitlines():
        failed = _FAILED_AT.search(line)
        if failed:
            path, at = failed.group(1), int(failed.group(2))
            part = patch.file(path)
            hunk = part.hunk_at(at) if part else None
            where = f"{hunk.describe()} of {path}" if hunk else f"{path} at line {at}"
            unchecked = bool(hunk and part and hunk.index < len(part.hunks))
            later = f"; hunks after #{hunk.index} were not checked" if unchecked and hunk else ""
            return PatchCheck(patch.name, False, path, hunk, (
                f"patch {patch.name}: {where} does not apply to {target}: the lines it expects are not "
                f"there{later}. Fix: rebase the patch on {target} (edit the hunk's context or regenerate "
                "it with `git diff` in a checkout of that version), or set the variant's base to the "
                "version the patch was made for."), output)  # fmt: skip
        missing = _MISSING.search(line)
        if missing:
            path = missing.group(1)
            return PatchCheck(
                patch.name,
                False,
                path,
                None,
                (
                    f"patch {patch.name}: {path} does not exist in {target}. Fix: check the path (patches are "
                    "relative to the repository root, e.g. python/sglang/srt/...) or the variant's base."
                ),
                output,
            )
        corrupt = _CORRUPT.search(line)
        if corrupt:
            return PatchCheck(
                patch.name,
                False,
                None,
                None,
                (
                    f"patch {patch.name} is corrupt at line {corrupt.group(1)} (as git counts the diff). Fix: "
                    "regenerate it with `git diff`; hand edits must keep the hunk line counts right."
                ),
                output,
            )
    tail = output.strip().splitlines()[-3:]
    return PatchCheck(patch.name, False, None, None,
                      f"patch {patch.name} does not apply to {target}: {' / '.join(tail) or 'git apply failed'}. "
                      "Fix: regenerate it against that version.", output)  # fmt: skip
