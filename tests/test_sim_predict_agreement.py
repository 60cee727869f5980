"""The HTTP front and the offline mode agree: the same seeded sweep through a real simulated server
(real time at 2x, the report's scale; the real load generator over streaming ``/generate``) and
through :func:`workbench.sim.predict` on the virtual clock give output throughputs within 2%.

The comparison is of the two fronts, not of two samples of acceptance: the server draws every
request's acceptance from one generator for its whole life, the offline mode from one per level, so
with the profile's per-request spread (Beta, concentration 50) two equally valid samples of 32
requests differ by 1-3% in accept length. The test's copy of the profile gives every request the
mean acceptance (``concentration = inf``); the per-verify draws still differ (about 0.5% on a level).
What remains is the front: wall-clock HTTP and client overheads (x the time scale), and a request
that arrives while an iteration runs waiting for the next one.

On a quiet machine the fronts agree within 2% (docs/PERFORMANCE.md). A loaded machine adds to the
front's overheads (it measured 3.7% beside other work, issue 24), and each level measures what it
added: the share of the client's E2E spent outside the server and the share of the level the engine
spent behind its schedule (the two measures of ``sim_schedule_problem``), and the share of the level
the client held fewer than its concurrency open (a late next request). The bound is 2% plus those
measured shares, so it holds under load without hiding a disagreement the level cannot explain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sim_distortion import explained_share
from workbench import benchmark_variant
from workbench.sim import load_profile, predict
from workbench.store import load_run

LEVELS = (4, 16)
REQUESTS = 32  # two waves at 16, eight at 4
TOKENS = 256  # the report's: shorter requests let the wall-clock HTTP overhead (x the time scale) show
SCALE = 2.0  # the report's time scale
#: The issue's bound on HTTP-vs-offline disagreement in output throughput (quiet machine).
TOLERANCE = 0.02


@pytest.fixture(scope="module")
def fixed_acceptance_profile(tmp_path_factory) -> Path:
    source = load_profile("seed-pcie-8gpu").path.read_text()
    assert "concentration = 50.0" in source
    path = tmp_path_factory.mktemp("profile") / "seed-pcie-8gpu.toml"
    path.write_text(source.replace("concentration = 50.0", "concentration = inf"))
    return path


@pytest.mark.parametrize("variant", ["baseline", "eagle3-topk1-v2"])
def test_http_and_offline_throughput_agree_within_2_percent(tmp_path, fixed_acceptance_profile, variant: str) -> None:
    run = load_run(
        benchmark_variant(
            variant,
            concurrency_levels=LEVELS,
            requests_per_level=REQUESTS,
            max_new_tokens=TOKENS,
            time_scale=SCALE,
            seed=0,
            sim_profile=str(fixed_acceptance_profile),
            runs_dir=tmp_path,
            progress=False,
        )
    )
    measured = run.levels.set_index("concurrency")
    offline = {
        r["concurrency"]: r
        for r in predict(
            load_profile(fixed_acceptance_profile),
            [variant],
            concurrency_levels=LEVELS,
            requests_per_level=REQUESTS,
            max_new_tokens=TOKENS,
            seed=0,
        )
    }
    ratios = {c: measured.loc[c, "output_throughput_tok_s"] / offline[c]["output_throughput_tok_s"] for c in LEVELS}
    print(
        f"\n{variant}: HTTP / offline output tok/s = "
        + ", ".join(
            f"c={c}: {r:.4f} (accept length {measured.loc[c, 'accept_length']:.3f} / {offline[c]['accept_length']:.3f}, "
            f"behind schedule {measured.loc[c, 'sim_behind_schedule_wall_s']:.3f} s, client E2E over the server's "
            f"{measured.loc[c, 'mean_e2e_over_server_ms']:.1f} ms, achieved concurrency "
            f"{measured.loc[c, 'achieved_concurrency']:.2f})"
            for c, r in ratios.items()
        )
    )
    bounds = {c: TOLERANCE + explained_share(measured.loc[c], SCALE) for c in LEVELS}
    assert all(abs(r - 1.0) <= bounds[c] for c, r in ratios.items()), (ratios, bounds)
