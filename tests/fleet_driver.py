"""The driver of a fleet test sweep, run inside the head's namespace (``python fleet_driver.py SPEC.json``).

SPEC: ``{"address", "variants", "runs_dir", "options": benchmark_variants keywords, "out": result file,
"one_unit_per_host": bool}``. Writes ``{"runs": [...], "failures": [...], "resumed": [...]}`` to ``out``.
"""

from __future__ import annotations

import json
import sys
import warnings


def main(spec_path: str) -> None:
    import workbench as wb
    from workbench.sweeps import Fleet

    spec = json.loads(open(spec_path, encoding="utf-8").read())
    failures, resumed = [], []
    fleet = Fleet(spec["address"], one_unit_per_host=spec.get("one_unit_per_host", False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = wb.benchmark_variants(spec["variants"], fleet=fleet, runs_dir=spec["runs_dir"], progress=False,
                                     on_failure=lambda f: failures.append({"variant": f.variant, "kind": f.kind,
                                                                           "message": f.message}),
                                     on_resume=lambda r: resumed.append({"variant": r.variant, "stored": r.stored,
                                                                         "total": r.total}),
                                     **spec["options"])
    with open(spec["out"], "w", encoding="utf-8") as fh:
        json.dump({"runs": [str(r) for r in runs], "failures": failures, "resumed": resumed}, fh)


if __name__ == "__main__":
    main(sys.argv[1])
