"""Studies: everything that reads runs and explains them.

:class:`Study` (runs → tables → analysis → charts, with the verdict's words in
``_study_words``), the policy study (:class:`PolicyStudy`: the envelope, the no-drafting
threshold, SGLang's adaptive tiers and vLLM's schedule, and its JupyterLab panel), the
simulator's offline what-if (:class:`WhatIf`, :func:`what_if`), a stored GPU calibration
(:class:`CalibrationStudy`, :func:`load_calibration`) and the server's series
(:func:`show_server_series`). A study never launches or writes a run: that is
:mod:`workbench.sweeps`. The map is docs/ARCHITECTURE.md.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it.
_NAMES = {
    "CalibrationStudy": "_calibration_study",
    "PolicyStudy": "_policy_study",
    "Study": "_study",
    "WhatIf": "_whatif",
    "dynamic_disable": "_policy_study",
    "load_calibration": "_calibration_study",
    "load_dynamic_disable": "_policy_study",
    "show_panel": "_policy_study",
    "show_server_series": "_server_view",
    "what_if": "_whatif",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
