"""The documentation keeps what it had, and its links lead somewhere (issue 32, item 5).

The README became a front door and its sections moved into docs/ (docs/HISTORY.md took the dated
measurements of README.md and of docs/PERFORMANCE.md). These tests check that every ``##`` and
``###`` section heading those two files had at commit 2df4348 still has a home: a heading of the
same words in README.md or docs/*.md, or the heading :data:`RENAMED` records for it. They also check
that every relative link in README.md and docs/*.md resolves (file, and heading anchor where one is
given), that every docs page can be reached from the README, and that the README still names its two
commands.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The commit whose README.md and docs/PERFORMANCE.md the headings below were read from.
BEFORE = "2df4348"

#: ``##``/``###`` headings of README.md at :data:`BEFORE` (``git show 2df4348:README.md``).
README_HEADINGS = (
    "The two commands",
    "What `make report` produces",
    "The simulated engine (the default)",
    "Parameters",
    "Predictions without running anything: `workbench sim predict` and `what_if.ipynb`",
    "Repeats, intervals and resuming a sweep",
    "Reading SGLang source",
    "Variants, validation and patches",
    "Variants as templates, and grids of speculative settings",
    "Stored runs: the catalogue, reports without measuring, CSV",
    "When to stop speculating: `dynamic_disable.ipynb`",
    "Using it from JupyterLab",
    "GPU hosts",
    "Every GPU you have: a fleet",
    "Calibrating the simulator on your GPU",
    "Other tools' results: `workbench import`",
    "Layout",
)

#: ``##``/``###`` headings of docs/PERFORMANCE.md at :data:`BEFORE`; its dated half moved to docs/HISTORY.md.
PERFORMANCE_HEADINGS = (
    "Simulator calibration, linear model (superseded)",
    "Roofline simulator: calibration and offline speed (`workbench sim calibrate`, `benchmarks/sim_offline_speed.py`)",
    "Offline predictions: speed, agreement with the HTTP front, the what-if notebook",
    "Real-time fidelity of the simulated server (`benchmarks/sim_fidelity.py`)",
    "The client, proven? Chunk timing and streamed tok/s beside bench_serving (`benchmarks/client_fidelity.py`)",
    "GPU calibration on an H200, 2026-12-01 (`workbench calibrate`, `data/calibration/h200-2026-12-01/`)",
    "`make report`",
    "Issue 22: the integrator's quiet fresh-clone runs at f996f6d (2026-12-02, 14:58-15:12 UTC)",
    "Issue 22: the integrator's three quiet fresh-clone runs after the second pass (2026-12-02, 6bde53b)",
    "Issue 22, second pass: margin under five minutes (2026-12-02, branch fast22)",
    "Issue 22: the main job in five minutes (2026-12-02)",
    "Before issue 22",
    "`dynamic_disable.ipynb` (the policy notebook) and its tests",
    "Source lookups: one helper run per release, an on-host index (`benchmarks/source_lookup_latency.py`)",
    "Command-line start-up (`benchmarks/cli_startup.py`)",
    "Importing other tools' results (`benchmarks/import_speed.py`)",
    "The test suite (`make test`, issue 24 item 10)",
    "Three workers, slowest modules first (2026-12-02, second session)",
    "The integrator's quiet run (2026-12-02, end of session)",
    "2026-12-06: after the real-SGLang work (stop 29)",
)

#: An old heading whose section lives on under other words: old heading -> (page, its heading there).
#: A section split in two names the page that took its first half; the other half is linked from it.
RENAMED: dict[str, tuple[str, str]] = {
    "What `make report` produces": ("docs/NOTEBOOKS.md", "What `make report` produces"),
    "Repeats, intervals and resuming a sweep": ("docs/METHOD.md", "Repeats, intervals and the significance rule"),
    "Reading SGLang source": ("docs/SOURCE.md", "From a terminal: `workbench inspect`"),
    "Stored runs: the catalogue, reports without measuring, CSV": ("docs/RUNS.md", "Reports without measuring"),
    "Layout": ("docs/DEVELOPMENT.md", "Layout"),
}

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_PAGE_MENTION = re.compile(r"\bdocs/([A-Za-z0-9_]+\.md)\b")


def _pages() -> list[Path]:
    """README.md and every docs/*.md, the pages these checks read."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose_lines(text: str) -> Iterator[str]:
    """The lines of a markdown text outside fenced code blocks (a ``# comment`` in a shell block is no heading)."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def _headings(text: str, levels: tuple[int, ...] = (1, 2, 3, 4, 5, 6)) -> list[str]:
    """The text of each heading of ``text`` at one of ``levels``, in order."""
    found = []
    for line in _prose_lines(text):
        match = _HEADING.match(line)
        if match and len(match.group(1)) in levels:
            found.append(match.group(2))
    return found


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    words = re.sub(r"[^\w\- ]", "", heading.lower())
    return words.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """Every heading anchor of a page, with GitHub's ``-1``, ``-2`` suffixes for repeated headings."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in _headings(text):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def _links(page: Path) -> list[str]:
    """The targets of the markdown links on a page, outside code blocks and inline code spans."""
    targets = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)
        targets.extend(match.group(1) for match in _LINK.finditer(line))
    return targets


def _is_relative(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is None


def _resolve(page: Path, target: str) -> tuple[Path, str]:
    """The file a relative link on ``page`` names (``page`` itself for ``#anchor``) and its anchor ("" if none)."""
    path, _, anchor = target.partition("#")
    return (page if not path else (page.parent / path).resolve()), anchor


def _all_headings() -> set[str]:
    return {heading for page in _pages() for heading in _headings(page.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("heading", README_HEADINGS + PERFORMANCE_HEADINGS)
def test_every_old_section_has_a_home(heading: str) -> None:
    if heading in RENAMED:
        page, new = RENAMED[heading]
        assert (ROOT / page).is_file(), f"RENAMED sends {heading!r} to {page}, which does not exist: fix RENAMED"
        assert new in _headings((ROOT / page).read_text(encoding="utf-8")), (
            f"the section {heading!r} should live on as the heading {new!r} in {page}, which has no such heading: "
            "restore it there, or record its new home in RENAMED"
        )
    else:
        assert heading in _all_headings(), (
            f"the section {heading!r} (README.md or docs/PERFORMANCE.md at {BEFORE}) has no heading of those words in "
            "README.md or docs/*.md: give it a home and record a new title in RENAMED"
        )


def test_the_recorded_headings_are_those_of_the_commit() -> None:
    """The two lists above are what ``git show 2df4348:FILE`` gives (skipped where the history is not there)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git history here (a source archive): the recorded headings stand as written")
    for path, recorded in (("README.md", README_HEADINGS), ("docs/PERFORMANCE.md", PERFORMANCE_HEADINGS)):
        shown = subprocess.run(["git", "show", f"{BEFORE}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode != 0:
            pytest.skip(f"commit {BEFORE} is not in this clone (shallow?): {shown.stderr.strip()}")
        assert tuple(_headings(shown.stdout, levels=(2, 3))) == recorded, f"the headings recorded for {path}"


def test_renamed_headings_were_old_headings() -> None:
    stale = set(RENAMED) - set(README_HEADINGS + PERFORMANCE_HEADINGS)
    assert not stale, f"RENAMED lists headings that were never there: {sorted(stale)}"


def test_every_relative_link_resolves() -> None:
    broken = []
    checked = 0
    for page in _pages():
        for target in _links(page):
            if not _is_relative(target):
                continue
            checked += 1
            file, anchor = _resolve(page, target)
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not file.exists():
                broken.append(f"{where}: no file {file}")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file.read_text(encoding="utf-8")):
                broken.append(f"{where}: {file.name} has no heading with the anchor #{anchor}")
    assert checked > 50, f"only {checked} relative links found: is the link pattern still right?"
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_every_docs_page_mentioned_exists() -> None:
    """A page named in prose (``docs/NAME.md``, not a link) exists too."""
    missing = sorted(
        {
            f"{page.relative_to(ROOT)}: docs/{name}"
            for page in _pages()
            for name in _PAGE_MENTION.findall(page.read_text(encoding="utf-8"))
            if not (ROOT / "docs" / name).is_file()
        }
    )
    assert not missing, "pages named that do not exist:\n" + "\n".join(missing)


def test_every_docs_page_is_reached_from_the_readme() -> None:
    readme = ROOT / "README.md"
    reached, todo = {readme}, [readme]
    while todo:
        page = todo.pop()
        for target in filter(_is_relative, _links(page)):
            file, _ = _resolve(page, target)
            if file.suffix == ".md" and file.is_file() and file not in reached:
                reached.add(file)
                todo.append(file)
    unreached = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in reached)
    assert not unreached, (
        f"docs pages no link leads to from README.md: {unreached}; "
        "add each to the README's table of pages (or link it from a page that is)"
    )


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = text.split("## The two commands", 1)
    assert len(commands) == 2, "the README lost its section 'The two commands'"
    block = commands[1].split("```", 2)[1]
    assert re.search(r"^make report\b", block, re.M) and re.search(r"^make test\b", block, re.M), (
        "'The two commands' must show `make report` and `make test` (CI's .ci/run calls `make test`)"
    )
    lines = text.count("\n")
    assert lines <= 250, f"README.md has {lines} lines: it is a front door (about 200); move the manual into docs/"
