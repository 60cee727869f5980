"""The driver of a fleet test sweep, run inside the head's namespace (``python fleet_driver.py SPEC.json``).

SPEC: ``{"address", "variants", "runs_dir", "options": benchmark_variants keywords, "out": result file,
"one_unit_per_host": bool}``. Writes ``{"runs": [...], "failures": [...], "resumed": [...]}`` to ``out``,
also when the sweep is interrupted (``"runs": None``; the failures reported before it).

With ``"inject": FOLDER`` it runs two units through ``workbench.sweeps.run_units`` instead: one whose
task raises, one whose worker crashes (``os._exit``) on its first attempt; each attempt appends a line
to ``FOLDER/<unit>.attempts``. Writes ``{"outcomes": [{"label", "ok", "error", "lost", "result"}]}``.
The task functions live in this ``__main__`` module, so Ray ships them by value.
"""

from __future__ import annotations

import json
import sys
import warnings


def _attempt(folder: str, label: str) -> int:
    import os

    path = os.path.join(folder, f"{label}.attempts")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("attempt\n")
    with open(path, encoding="utf-8") as fh:
        return len(fh.readlines())


def _injected(payload, placement):
    import os

    folder, label = payload
    attempt = _attempt(folder, label)
    if label == "raises":
        raise ValueError("injected unit exception")
    if label == "crashes" and attempt == 1:
        os._exit(1)  # the worker process dies: a Ray system error, retried
    return f"{label} ran on {placement.host} at attempt {attempt}"


def inject(spec: dict) -> None:
    from workbench.sweeps import Fleet, FleetUnit, run_units

    units = [
        FleetUnit(key=(0, 0), label=label, gpus=1, payload=(spec["inject"], label)) for label in ("raises", "crashes")
    ]
    outcomes = run_units(units, _injected, fleet=Fleet(spec["address"], max_retries=2))
    with open(spec["out"], "w", encoding="utf-8") as fh:
        json.dump(
            {
                "outcomes": [
                    {"label": o.unit.label, "ok": o.ok, "error": o.error, "lost": o.lost, "result": o.result}
                    for o in outcomes
                ]
            },
            fh,
        )


def main(spec_path: str) -> None:
    import workbench as wb
    from workbench.sweeps import Fleet

    spec = json.loads(open(spec_path, encoding="utf-8").read())
    if spec.get("inject"):
        return inject(spec)
    failures, resumed = [], []
    fleet = Fleet(spec["address"], one_unit_per_host=spec.get("one_unit_per_host", False))
    runs = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs = wb.benchmark_variants(
                spec["variants"],
                fleet=fleet,
                runs_dir=spec["runs_dir"],
                progress=False,
                on_failure=lambda f: failures.append({"variant": f.variant, "kind": f.kind, "message": f.message}),
                on_resume=lambda r: resumed.append({"variant": r.variant, "stored": r.stored, "total": r.total}),
                **spec["options"],
            )
    finally:  # also after Ctrl-C (KeyboardInterrupt, re-raised): the failures reported before it, "runs" None
        with open(spec["out"], "w", encoding="utf-8") as fh:
            json.dump(
                {"runs": None if runs is None else [str(r) for r in runs], "failures": failures, "resumed": resumed}, fh
            )


if __name__ == "__main__":
    main(sys.argv[1])
