"""One variant's sweep options, as :func:`workbench.sweeps.benchmark_variant` was called: a typed record.

Built once per call (``benchmark_variant`` names each parameter; ``benchmark_variants`` binds its keywords
to ``benchmark_variant``'s signature, so the defaults are stated there only) and read by the step that
validates the sweep (``_investigation._prepare``). Each field is the parameter of the same name; its
meaning, unit and default are in ``benchmark_variant``'s docstring. ``tests/test_investigation.py``
checks that the fields are exactly that signature's parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from workbench.engines import Engine
    from workbench.variants import Variant


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """``benchmark_variant``'s arguments for one variant (defaults filled in), each under its parameter's name."""

    variant: str | Path | Variant
    host: str
    engine: str | Engine | None
    client: Literal["host", "local"] | None
    concurrency_levels: Sequence[int] | None
    requests_per_level: int | None
    max_new_tokens: int
    prompt_set: str | Path
    seed: int
    request_rates: Sequence[float] | None
    max_concurrency: int | None
    sim_profile: str
    time_scale: float | None
    warmup_requests: int
    unique_prompts: bool | None
    repeats: int | None
    label: str | None
    fresh: bool
    runs_dir: str | Path | None
    progress: bool | None
    model_path: str | None
    draft_model_path: str | None
    tp_size: int | None
    gpus: str | Sequence[int] | None
    load: Mapping[str, Any] | None

    def template_parameters(self, names: Sequence[str]) -> dict[str, Any]:
        """The template parameters among ``names`` (``model_path``, ``tp_size``, ...) with their values here."""
        return {name: getattr(self, name) for name in names}
