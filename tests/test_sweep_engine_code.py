"""A simulated sweep's identity holds a hash of the model that computes its figures: reformatting the simulator or
editing a profile's comments is the same model (stored runs resume); a changed value is another model."""

from __future__ import annotations

from workbench.engines import get_engine
from workbench.paths import PACKAGE_ROOT
from workbench.sweeps._sweep_prep import _engine_code, _model_text


def test_layout_and_comments_are_not_the_model(tmp_path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f(x):\n    return x * 2  # doubled\n")
    before = _model_text(source)
    source.write_text("def f(x):\n    # the same, laid out otherwise\n    return (\n        x * 2\n    )\n")
    assert _model_text(source) == before
    source.write_text("def f(x):\n    return x * 3\n")
    assert _model_text(source) != before


def test_a_profiles_comments_are_not_its_figures(tmp_path) -> None:
    shipped = (PACKAGE_ROOT / "data" / "profiles" / "seed-pcie-8gpu.toml").read_text()
    profile = tmp_path / "p.toml"
    profile.write_text(shipped)
    sim = get_engine("sim")
    base = _engine_code(sim, str(profile))
    profile.write_text("# a note on where a figure came from\n" + shipped)
    assert _engine_code(sim, str(profile)) == base
    lines = shipped.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("concentration"))
    lines[at] = "concentration = 51.0"
    profile.write_text("\n".join(lines) + "\n")
    assert _engine_code(sim, str(profile)) != base
    assert _engine_code(get_engine("sglang"), str(profile)) is None
