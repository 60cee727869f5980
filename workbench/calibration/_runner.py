"""Run ``remote/gpu_calibrate.py`` on a host: upload, run with progress, fetch the tables.

The program and its two companion modules are uploaded once per content
(:func:`workbench.hosts.helper_path`; on this machine they run from the checkout). The run is a
detached process on the host (:mod:`workbench.hosts.processes`) writing its progress to a log that
is read while it runs, so a dropped SSH connection does not stop it and a long run shows its
progress. It writes its tables into a folder on the host keyed by the request
(``~/.cache/specbench-workbench/calibration/<key>/``); running the same request again resumes
there (the program keeps every point already timed), and a table already fetched into the local
folder is uploaded first when the host lacks it, so a run resumes on a fresh host too. The
tables (``NAME.json``, ``NAME.csv``) and the log (``run.log``) are fetched into ``out_dir``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.errors import CommandError, CommandTimeout, ConfigError

#: Where runs keep their tables on a host (``~`` is the login user's home there).
REMOTE_RUNS_DIR = "~/.cache/specbench-workbench/calibration"
#: The program's exit status for a refused request (no torch, no GPU, does not fit).
REFUSED_STATUS = 2


@dataclasses.dataclass(frozen=True)
class CalibrationRequest:
    """What to time, validated once (see ``workbench calibrate --help``).

    Attributes:
        presets: shape presets of the program (``llama3-8b``, ``qwen3-30b-a3b``, ``tiny``, ...).
        model: a target model instead: a ``data/models`` stem or a ``.toml``/``.json`` path.
        draft: the draft model likewise (``"none"``: no draft).
        tp: tensor-parallel ranks (one rank's shapes are timed).
        gpus: GPU indices; two or more also time the all-reduce.
        quick: the short grid.
        device: ``auto`` (a GPU), or ``cpu`` (the tiny test shapes only: a test, never a calibration).
    """

    presets: tuple[str, ...] = ()
    model: str | None = None
    draft: str | None = None
    tp: int = 1
    gpus: tuple[int, ...] = ()
    quick: bool = False
    device: str = "auto"

    def __post_init__(self) -> None:
        if bool(self.presets) == bool(self.model):
            raise ConfigError("give --preset NAME or --model CONFIG (one of them)")
        if self.tp < 1:
            raise ConfigError(f"--tp must be >= 1, got {self.tp}")
        if self.device not in ("auto", "cuda", "cpu"):
            raise ConfigError(f"device must be auto, cuda or cpu, got {self.device!r}")

    def key(self) -> str:
        """A short hash naming this request's folder on the host (the same request resumes there)."""
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:12]


@dataclasses.dataclass(frozen=True)
class CalibrationRun:
    """What a run left.

    Attributes:
        host: the host's name.
        command: the command line run there.
        exit_status: the program's exit status (0 done, 1 a shape failed).
        tables: the fetched tables (``NAME.json``) in ``out_dir``.
        log_path: the fetched log.
        duration_s: wall time of the run.
        plans: the dry run's plan summaries (``dry_run`` only).
    """

    host: str
    command: str
    exit_status: int
    tables: tuple[Path, ...]
    log_path: Path | None
    duration_s: float
    plans: tuple[dict[str, Any], ...] = ()


def _model_json(name: str) -> str | None:
    """A ``data/models`` stem or ``.toml`` file as JSON text (the host's Python may lack tomllib);
    None for a name the program knows itself (or a JSON path)."""
    from workbench.paths import project_root

    path = Path(name) if name.endswith(".toml") else project_root() / "data" / "models" / f"{name}.toml"
    if not path.is_file():
        return None
    return json.dumps(tomllib.loads(path.read_text()), indent=1)


def program_args(request: CalibrationRequest, *, models: dict[str, str] | None = None) -> list[str]:
    """The program's arguments for ``request`` (``models``: model names -> their path on the host)."""
    models = models or {}
    args: list[str] = []
    if request.presets:
        args += ["--preset", ",".join(request.presets)]
    if request.model:
        args += ["--model", models.get(request.model, request.model)]
    if request.draft:
        args += ["--draft", models.get(request.draft, request.draft)]
    args += ["--tp", str(request.tp)]
    if request.gpus:
        args += ["--gpus", ",".join(str(g) for g in request.gpus)]
    args += ["--quick"] if request.quick else ["--full"]
    if request.device != "auto":
        args += ["--device", request.device]
    return args


def run_calibration(
    host,
    request: CalibrationRequest,
    *,
    out_dir: str | Path,
    python: str | None = None,
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda line: None,
    poll_s: float = 2.0,
    timeout_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> CalibrationRun:
    """Run the GPU timing program on ``host`` and fetch its tables into ``out_dir``.

    Args:
        host: a :class:`workbench.hosts.Host` (``get_host("local")`` or an ssh alias's).
        request: what to time.
        out_dir: local folder for the tables and ``run.log`` (created).
        python: the host's interpreter that has PyTorch (default: this one on ``local``, else
            ``$WORKBENCH_REMOTE_PYTHON`` or ``python3``).
        dry_run: only plan (no torch needed): the plan summaries come back and ``NAME.plan.json`` is fetched.
        progress: called with each new line of the program's output.
        poll_s: seconds between two reads of the log.
        timeout_s: stop the run after this many seconds (None: no limit).
        clock, sleep: injectable for tests.

    Raises:
        CommandError: the program refused (no torch, no GPU, the shape does not fit: its message
            quoted, exit status 2) or failed; CommandTimeout past ``timeout_s``.
        HostError: the host cannot be reached or written.
    """
    from workbench.hosts import helper_path, host_python, processes, shell_path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    python = host_python(host, python)
    script = helper_path(host, "gpu_calibrate")
    remote = f"{REMOTE_RUNS_DIR}/{request.key()}"
    home = host.run("echo $HOME", timeout_s=60).stdout.strip()
    remote_abs = remote.replace("~", home, 1)
    models = {}
    for name in filter(None, (request.model, request.draft)):
        text = _model_json(name)
        if text is not None:
            models[name] = f"{remote_abs}/models/{Path(name).stem}.json"
            host.write_text(models[name], text)
    argv = [python, script, *program_args(request, models=models), "--out", remote_abs]
    started = clock()
    if dry_run:
        res = host.run([*argv, "--dry-run"], timeout_s=300, check=False)
        if res.exit_status != 0:
            raise CommandError(f"gpu_calibrate --dry-run refused on host {host.name!r}: {res.tail().strip()}", res)
        plans = tuple(json.loads(res.stdout)["plans"])
        fetched = []
        for plan in plans:
            dst = out / f"{plan['name']}.plan.json"
            host.get(f"{remote_abs}/{plan['name']}.plan.json", dst)
            fetched.append(dst)
        return CalibrationRun(
            host.name, shlex.join(argv + ["--dry-run"]), 0, tuple(fetched), None, clock() - started, plans
        )
    for local in out.glob("*.json"):  # resume on a fresh host from the tables fetched before
        if local.name.endswith(".plan.json"):
            continue
        there = f"{remote_abs}/{local.name}"
        if not host.run(["test", "-f", there], check=False, timeout_s=60).ok:
            host.put(local, there)
    log = f"{remote_abs}/run.log"
    rc_file = f"{remote_abs}/exit_status"
    host.run(["rm", "-f", rc_file, log], check=False, timeout_s=60)
    line = f"{shlex.join(argv)}; echo $? > {shell_path(rc_file)}"
    proc = processes.spawn(host, ["sh", "-c", line], log_path=log, env={"PYTHONUNBUFFERED": "1"})
    seen = 0
    while True:
        alive = processes.is_alive(host, proc)
        text = host.run(["cat", log], check=False, timeout_s=60).stdout
        for new in text.splitlines()[seen:]:
            progress(new)
        seen = len(text.splitlines())
        if not alive:
            break
        if timeout_s is not None and clock() - started > timeout_s:
            processes.stop(host, proc)
            raise CommandTimeout(
                f"gpu_calibrate on host {host.name!r} ran past {timeout_s} s; run the same command "
                f"again to resume (log {log})",
                None,
            )
        sleep(poll_s)
    rc_text = host.run(["cat", rc_file], check=False, timeout_s=60).stdout.strip()
    status = int(rc_text) if rc_text.lstrip("-").isdigit() else 1
    (out / "run.log").write_text(text)
    tables = []
    for name in host.run(["ls", remote_abs], check=False, timeout_s=60).stdout.split():
        if name.endswith((".json", ".csv")) and not name.endswith(".plan.json"):
            host.get(f"{remote_abs}/{name}", out / name)
            if name.endswith(".json"):
                tables.append(out / name)
    tail = "\n".join(text.splitlines()[-15:])
    if status == REFUSED_STATUS and not tables:
        raise CommandError(f"gpu_calibrate refused on host {host.name!r} (exit status 2):\n{tail}", None)
    if status not in (0, REFUSED_STATUS):
        raise CommandError(
            f"gpu_calibrate failed on host {host.name!r} (exit status {status}); the tables keep the "
            f"points timed so far ({len(tables)} fetched into {out}); run the same command again to "
            f"resume:\n{tail}",
            None,
        )
    return CalibrationRun(host.name, line, status, tuple(sorted(tables)), out / "run.log", clock() - started)
