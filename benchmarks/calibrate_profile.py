"""Fit a simulator profile's cost model to its calibration targets (offline, ~10 s).

Usage::

    .venv/bin/python benchmarks/calibrate_profile.py [PROFILE] [--write]

Prints the four figures before and after the fit next to the measured targets,
and the full offline sweep. With ``--write`` the fitted values replace the
``[cost]`` section of ``data/profiles/<PROFILE>.toml``.
"""

from __future__ import annotations

import argparse
import re
import sys

from workbench.bench._prompts import load_prompts
from workbench.sim._calibrate import FIGURES, figures, fit_cost
from workbench.sim._profiles import load_profile
from workbench.sim._text import TextModel


def prompt_lengths(prompt_set: str) -> list[int]:
    """Token length of each prompt of the set, with the shipped tokenizer."""
    text = TextModel()
    return [text.count_tokens(p.text) for p in load_prompts(prompt_set)]


def write_cost(path, cost) -> None:
    """Replace the [cost] section's values in the profile file, keeping the rest."""
    source = path.read_text()
    body = "".join(f"{name} = {value:.6g}\n" for name, value in vars(cost).items())
    new = re.sub(r"(?ms)^\[cost\]\n.*?(?=^\[|\Z)", "[cost]\n" + body + "\n", source)
    path.write_text(new)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default="seed-pcie-8gpu")
    parser.add_argument("--write", action="store_true", help="write the fitted [cost] into the profile")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    lengths = prompt_lengths(profile.workload.get("prompt_set", "default"))
    max_new = int(profile.workload.get("max_new_tokens", 256))
    print(f"profile {profile.name}: {len(lengths)} prompts, {min(lengths)}..{max(lengths)} tokens "
          f"(mean {sum(lengths) / len(lengths):.0f}), max_new_tokens {max_new}")
    before = figures(profile, prompt_lengths=lengths, max_new_tokens=max_new)
    fit = fit_cost(profile, prompt_lengths=lengths, max_new_tokens=max_new)
    print(f"\n{'figure':40s} {'target':>8s} {'before':>8s} {'fitted':>8s}")
    for k in FIGURES:
        print(f"{k:40s} {fit.targets[k]:8.1f} {before[k]:8.1f} {fit.figures[k]:8.1f}")
    print(f"max relative error {fit.max_rel_error:.4f} after {fit.iterations} iterations")
    print("\nfitted cost model:", fit.cost)
    after = figures(profile, cost=fit.cost, prompt_lengths=lengths, max_new_tokens=max_new)
    print(f"\n{'c':>4s} {'base out tok/s':>15s} {'base per-req':>13s} {'eagle out tok/s':>16s} {'eagle per-req':>14s}")
    for c in after["baseline"]:
        b, e = after["baseline"][c], after["eagle3"][c]
        print(f"{c:4d} {b[0]:15.1f} {b[1]:13.1f} {e[0]:16.1f} {e[1]:14.1f}")
    if args.write:
        write_cost(profile.path, fit.cost)
        print(f"\nwrote [cost] to {profile.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
