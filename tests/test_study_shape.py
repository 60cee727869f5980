"""The four studies share one shape (workbench/studies/_shape.py): ``verdict()``, ``charts()`` and
``save_charts(out_dir)``, with the same parameters, answering with the same types; ``wb.save_study_charts``
saves any of them. Real studies: a spec-versus-baseline study of rows at hand, the stored dynamic-disable sweep
(tests/fixtures/dynamic_disable), a small what-if and the stored H200 calibration table with its what-if."""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench.studies import CalibrationStudy, PolicyStudy, Study
from workbench.studies._shape import StudyShape
from workbench.studies._whatif import WhatIf

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dynamic_disable" / "policies"
CLASSES = (Study, PolicyStudy, WhatIf, CalibrationStudy)


def _spec_vs_baseline() -> Study:
    levels = pd.DataFrame(
        [
            {"variant": v, "concurrency": c, "output_throughput_tok_s": t * c, "simulated": True, "engine": "sim"}
            for v, t in (("baseline", 90.0), ("eagle3", 99.0))
            for c in (1, 4)
        ]
    )
    return Study.from_frames(levels, pd.DataFrame(), [], "baseline")


@pytest.fixture(scope="module")
def studies() -> dict[str, StudyShape]:
    calibration = wb.load_calibration(
        "data/calibration/h200-2026-12-01/llama3-8b.json", gpu="h200", profile="h200-llama3-8b"
    )
    return {
        "spec_vs_baseline": _spec_vs_baseline(),
        "dynamic_disable": wb.load_dynamic_disable(FIXTURE, progress=False),
        "what_if": wb.what_if(
            "seed-pcie-8gpu",
            topk=(1,),
            num_steps=(1, 2),
            num_draft_tokens=(2, 3),
            spec_v2=(True,),
            concurrency_levels=(1, 16),
            requests_per_level=16,
            max_new_tokens=16,
        ),
        "calibration": calibration.with_whatif(baseline="llama3-8b-baseline", spec_variants=["llama3-8b-eagle3"]),
    }


@pytest.mark.parametrize("member", ["verdict", "charts", "save_charts"])
def test_one_signature_for_each_call(member: str) -> None:
    shapes = {cls.__name__: inspect.signature(getattr(cls, member)) for cls in CLASSES}
    wanted = inspect.signature(getattr(StudyShape, member))
    for name, signature in shapes.items():
        assert list(signature.parameters) == list(wanted.parameters), (name, signature)
        assert str(signature.return_annotation) == str(wanted.return_annotation), (name, signature)


def test_every_study_answers_alike_and_saves_its_charts_as_one_table(
    studies: dict[str, StudyShape], tmp_path: Path
) -> None:
    for name, study in studies.items():
        assert isinstance(study, StudyShape), name
        assert study.verdict().startswith("**Verdict"), name
        drawn = study.charts()
        assert drawn and all(hasattr(chart, "to_dict") for chart in drawn.values()), name
        saved = wb.save_study_charts(study, tmp_path / name)
        assert isinstance(saved, pd.DataFrame) and list(saved.columns) == ["chart", "png", "svg", "folder"], name
        assert list(saved["chart"]) == list(drawn), name
        for png, svg in zip(saved["png"], saved["svg"]):
            assert (tmp_path / name / png).stat().st_size > 0 and (tmp_path / name / svg).stat().st_size > 0
    assert "whatif" in studies["calibration"].charts()  # the what-if is part of the calibration study itself
