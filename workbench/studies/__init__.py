"""Studies: everything that reads runs and explains them.

:class:`Study` (:func:`load_study`: runs → tables → analysis → charts, with the verdict's words in
``_study_verdict``), the policy study (:class:`PolicyStudy`: the envelope, the no-drafting
threshold, SGLang's adaptive tiers and vLLM's schedule, and its JupyterLab panel), the
simulator's offline what-if (:class:`WhatIf`, :func:`what_if`), a stored GPU calibration
(:class:`CalibrationStudy`, :func:`load_calibration`) and the server's series
(:func:`show_server_series`), runs compared workload by workload (:func:`load_workloads`,
a ``WorkloadStudy``: offline result files, several workloads, arms on different workloads under a
caveat), and the notebook's display helpers (:func:`setup_notebook`,
:func:`show_markdown`, :func:`show_ratio_charts`, :func:`save_study_charts`). A study never launches or writes a run: that is
:mod:`workbench.sweeps`. The map is docs/ARCHITECTURE.md.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it.
_NAMES = {
    "CalibrationStudy": "_calibration_study",
    "DEFAULT_ADAPTIVE_VERSION": "_policy_study",
    "INDEX_NAME": "_policy_index",
    "PolicyRun": "_policy_index",
    "PolicyStudy": "_policy_study",
    "Study": "_study",
    "calibration_opening": "_openings",
    "load_calibration": "_calibration_study",
    "load_dynamic_disable": "_policy_study",
    "load_policy_study": "_policy_study",
    "load_study": "_study",
    "policy_opening": "_openings",
    "save_study_charts": "_notebook",
    "setup_notebook": "_notebook",
    "show_markdown": "_notebook",
    "show_panel": "_policy_panel",
    "show_ratio_charts": "_notebook",
    "show_server_series": "_server_view",
    "show_text": "_notebook",
    "variant_settings": "_policy_index",
    "what_if": "_whatif",
    "what_if_opening": "_openings",
    "load_workloads": "_workloads",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.studies._calibration_study import CalibrationStudy as CalibrationStudy
    from workbench.studies._policy_study import DEFAULT_ADAPTIVE_VERSION as DEFAULT_ADAPTIVE_VERSION
    from workbench.studies._policy_index import INDEX_NAME as INDEX_NAME
    from workbench.studies._policy_index import PolicyRun as PolicyRun
    from workbench.studies._policy_study import PolicyStudy as PolicyStudy
    from workbench.studies._study import Study as Study
    from workbench.studies._openings import calibration_opening as calibration_opening
    from workbench.studies._calibration_study import load_calibration as load_calibration
    from workbench.studies._policy_study import load_dynamic_disable as load_dynamic_disable
    from workbench.studies._policy_study import load_policy_study as load_policy_study
    from workbench.studies._study import load_study as load_study
    from workbench.studies._openings import policy_opening as policy_opening
    from workbench.studies._notebook import save_study_charts as save_study_charts
    from workbench.studies._notebook import setup_notebook as setup_notebook
    from workbench.studies._notebook import show_markdown as show_markdown
    from workbench.studies._policy_panel import show_panel as show_panel
    from workbench.studies._notebook import show_ratio_charts as show_ratio_charts
    from workbench.studies._server_view import show_server_series as show_server_series
    from workbench.studies._notebook import show_text as show_text
    from workbench.studies._policy_index import variant_settings as variant_settings
    from workbench.studies._whatif import what_if as what_if
    from workbench.studies._openings import what_if_opening as what_if_opening
    from workbench.studies._workloads import load_workloads as load_workloads
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
