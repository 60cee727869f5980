"""Calibrate a physical simulator profile and print its sweeps (offline, seconds to a minute).

Usage::

    .venv/bin/python benchmarks/calibrate_profile.py [PROFILE] [--write] [--no-loo]

Runs ``workbench sim calibrate PROFILE`` (the fit of the profile's ``[fit]`` terms, residuals,
leave-one-out, validation points), then prints the offline sweep of every variant the
profile's points name, with the fitted terms, level by level (output tok/s and mean
per-request tok/s). With ``--write`` the fitted terms go into the profile's ``[efficiency]``.
"""

from __future__ import annotations

import argparse
import sys

from workbench.sim import _calibrate as cal
from workbench.sim._profiles import load_profile
from workbench.sim.cli import calibrate_command


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default="seed-pcie-8gpu")
    parser.add_argument("--write", action="store_true", help="write the fitted terms into the profile")
    parser.add_argument("--no-loo", action="store_true", help="skip the leave-one-out refits")
    args = parser.parse_args()
    calibrate_command(args.profile, points=None, write=args.write, loo=not args.no_loo)
    profile = load_profile(args.profile)  # re-read: --write may have changed it
    predictor = cal.Predictor(profile)
    points = cal.profile_points(profile) + cal.profile_points(profile, "validation")
    variants = sorted({p.variant for p in points} | {p.baseline for p in points if p.baseline})
    eff = profile.physics.efficiency
    print(f"\nsweeps with {', '.join(f'{t} = {getattr(eff, t):.4g}' for t in profile.physics.fit_terms)}")
    print(f"{'c':>4s} " + " ".join(f"{v[:22]:>22s}" for v in variants) + "   (output tok/s / per-request tok/s)")
    for c in predictor.plan.concurrency_levels:
        cells = [predictor.level(v, c, eff) for v in variants]
        print(f"{c:4d} " + " ".join(f"{o:11.1f} /{r:8.1f}  " for o, r in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
