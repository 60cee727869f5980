"""GPU calibration: time a model's kernels on a GPU host, fit the roofline's efficiency terms, write a profile."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "CalibrationFit": "_fit",
    "CalibrationRequest": "_runner",
    "cost_model": "_fit",
    "fit_table": "_fit",
    "knees": "_fit",
    "least_squares": "_fit",
    "load_table": "_table",
    "load_tables": "_table",
    "profile_text": "_profile",
    "run_calibration": "_runner",
    "step_points": "_table",
    "whatif_crossovers": "_whatif",
    "whatif_speedup": "_whatif",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.calibration._fit import CalibrationFit as CalibrationFit
    from workbench.calibration._runner import CalibrationRequest as CalibrationRequest
    from workbench.calibration._fit import cost_model as cost_model
    from workbench.calibration._fit import fit_table as fit_table
    from workbench.calibration._fit import knees as knees
    from workbench.calibration._fit import least_squares as least_squares
    from workbench.calibration._table import load_table as load_table
    from workbench.calibration._table import load_tables as load_tables
    from workbench.calibration._profile import profile_text as profile_text
    from workbench.calibration._runner import run_calibration as run_calibration
    from workbench.calibration._table import step_points as step_points
    from workbench.calibration._whatif import whatif_crossovers as whatif_crossovers
    from workbench.calibration._whatif import whatif_speedup as whatif_speedup
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
