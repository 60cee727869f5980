"""GPU calibration: time a model's kernels on a GPU host, fit the roofline's efficiency terms, write a profile."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "CalibrationFit": "_fit",
    "CalibrationRequest": "_runner",
    "CalibrationRun": "_runner",
    "cost_model": "_fit",
    "fit_table": "_fit",
    "GpuTable": "_table",
    "knees": "_fit",
    "load_table": "_table",
    "load_tables": "_table",
    "profile_text": "_profile",
    "run_calibration": "_runner",
    "step_points": "_table",
    "whatif_crossovers": "_whatif",
    "whatif_speedup": "_whatif",
    "write_profile": "_profile",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
