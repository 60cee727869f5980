"""Variant files: the extended schema (base, sglang_version, patches, sim_policy), errors, launch commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.engines import get_engine
from workbench.errors import ConfigError
from workbench.paths import PACKAGE_ROOT
from workbench.variants._variant import Base, list_variants, load_variant, parse_base
from workbench.variants import variants_table

SHIPPED = {"baseline", "eagle3-topk4", "eagle3-topk1-v2", "adaptive", "eagle3-topk4-off-above-8"}


def test_shipped_variants_load() -> None:
    assert SHIPPED <= set(list_variants())
    for name in SHIPPED:
        v = load_variant(name)
        assert v.name == name and v.target_version in ("0.5.9", "0.5.12")
    patched = load_variant("eagle3-topk4-off-above-8")
    assert patched.parsed_base == Base("release", version="0.5.9")
    assert patched.patches == (PACKAGE_ROOT / "data" / "patches" / "eagle-spec-off-above.patch",)
    assert patched.sim_options() == {"spec-off-above": 8}
    assert "SIMULATOR STAND-IN" in patched.sim_stand_in() and "eagle-spec-off-above.patch" in patched.sim_stand_in()
    assert load_variant("eagle3-topk4").sim_stand_in() is None
    table = variants_table()
    assert SHIPPED <= set(table["variant"]) and "sim_stand_in" in table


def test_sim_policy_reaches_the_sim_command_line() -> None:
    variant = load_variant("eagle3-topk4-off-above-8")
    argv = get_engine("sim").launch_argv(variant, python="python", port=1, options={"time-scale": 4})
    assert argv[-4:] == ["--sim-spec-off-above", "8", "--sim-time-scale", "4"]
    real = get_engine("sglang").launch_argv(variant, python="python", port=1)
    assert not any(a.startswith("--sim-") for a in real)


@pytest.mark.parametrize(("text", "expected"), [
    ("sglang==0.5.9", Base("release", version="0.5.9")),
    ("host:/root/sglang", Base("checkout", host="host", path="/root/sglang")),
    ("gpu-1:~/src/sglang/", Base("checkout", host="gpu-1", path="~/src/sglang")),
    (None, Base("installed")),
])  # fmt: skip
def test_parse_base(text, expected) -> None:
    assert parse_base(text) == expected
    assert expected.host_for("gpu9") == ("gpu9" if expected.host in (None, "host") else expected.host)


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "v.toml"
    path.write_text('name = "v"\nmodel_path = "m"\n' + body)
    return path


@pytest.mark.parametrize(("body", "message"), [
    ('base = "0.5.9"\n', "neither a release"),
    ('base = "sglang==0.5.9"\nsglang_version = "0.5.12"\n', "contradicts base"),
    ('patches = ["missing.patch"]\n', "relative to the variant file"),
    ('[sim_policy]\nspec_on_below = 8\n', "unknown sim_policy"),
    ('[sim_policy]\nspec_off_above = 0\n', "positive integer"),
    ('colour = "red"\n', "unknown keys"),
])  # fmt: skip
def test_bad_variant_files(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_variant(write(tmp_path, body))


def test_public_names() -> None:
    import workbench.variants as pkg

    assert sorted(pkg.__all__) == sorted(set(pkg.__all__))
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name


def test_a_variant_is_serialised_one_way_and_rebuilt_one_way() -> None:
    """One to_dict/from_dict pair: every shipped variant round-trips; a manifest's definition (no name) and a
    server record written before the pair (six keys) rebuild the same settings."""
    from workbench.paths import PACKAGE_ROOT
    from workbench.variants import Variant, load_variant

    for file in sorted((PACKAGE_ROOT / "data" / "variants").glob("*.toml")):
        v = load_variant(file)
        assert Variant.from_dict(v.to_dict()) == v, file.name
    v = load_variant("eagle3-topk4-off-above-8")
    definition = {k: x for k, x in v.to_dict().items() if k not in ("name", "description")}
    assert Variant.from_dict(definition, name=v.name).flags == v.flags
    old_record = {k: v.to_dict()[k] for k in ("name", "description", "model_path", "draft_model_path", "flags", "env")}
    rebuilt = Variant.from_dict(old_record)
    assert (rebuilt.name, rebuilt.flags, rebuilt.patches, rebuilt.sim_policy) == (v.name, v.flags, (), {})
