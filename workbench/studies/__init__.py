"""Studies: everything that reads runs and explains them.

:class:`Study` (:func:`load_study`: runs → tables → analysis → charts, with the verdict's words in
``_study_words``), the policy study (:class:`PolicyStudy`: the envelope, the no-drafting
threshold, SGLang's adaptive tiers and vLLM's schedule, and its JupyterLab panel), the
simulator's offline what-if (:class:`WhatIf`, :func:`what_if`), a stored GPU calibration
(:class:`CalibrationStudy`, :func:`load_calibration`) and the server's series
(:func:`show_server_series`), and the notebook's display helpers (:func:`setup_notebook`,
:func:`show_markdown`, :func:`show_ratio_charts`, :func:`save_study_charts`). A study never launches or writes a run: that is
:mod:`workbench.sweeps`. The map is docs/ARCHITECTURE.md.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it.
_NAMES = {
    "CalibrationStudy": "_calibration_study",
    "DEFAULT_ADAPTIVE_VERSION": "_policy_study",
    "INDEX_NAME": "_policy_index",
    "PolicyRun": "_policy_index",
    "PolicyStudy": "_policy_study",
    "Study": "_study",
    "WhatIf": "_whatif",
    "load_calibration": "_calibration_study",
    "load_dynamic_disable": "_policy_study",
    "load_policy_study": "_policy_study",
    "load_study": "_study",
    "save_study_charts": "_notebook",
    "setup_notebook": "_notebook",
    "show_markdown": "_notebook",
    "show_panel": "_policy_study",
    "show_ratio_charts": "_notebook",
    "show_server_series": "_server_view",
    "variant_settings": "_policy_index",
    "what_if": "_whatif",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
