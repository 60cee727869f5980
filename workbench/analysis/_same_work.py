"""Did both arms do the same work? Greedy outputs of a spec server and its baseline, prompt by prompt.

Under greedy sampling (temperature 0) speculative decoding is lossless: every token is the
target model's argmax whatever was drafted (Leviathan et al. 2023, "Fast Inference from
Transformers via Speculative Decoding"; Chen et al. 2023, "Accelerating Large Language Model
Decoding with Speculative Sampling"), so a spec server and its baseline must return the
same text for the same prompt. Where they do not, the two arms did different work (another
model or draft-verify bug, a different chat template, truncation, another tokenizer) and
their speeds are not comparable (the workbench's issue 23 cites a public A/B, antirez/ds4
#695, whose arms generated different text).

A real engine's greedy decoding is not bit-exact across batch shapes (batch-dependent kernels
and reductions), so a few prompts may differ even between two runs of one server; hence the
tolerance: a pair is flagged when more than :data:`SAME_WORK_TOLERANCE` of the compared prompts
differ. The value is this project's choice, stated, not a published figure.

Requests are paired by their level, repeat, ``request_index`` and ``prompt_id`` (every arm is
sent the same seeded prompt sequence), and compared by ``output_hash``
(:class:`workbench.bench.RequestRecord`). Only greedy requests (``temperature`` 0) are compared;
a prompt differs when any of its pairs differ.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from workbench.errors import ConfigError
from workbench.markup import code, literal

__all__ = ["SAME_WORK_TOLERANCE", "SameWork", "same_outputs"]

#: Share of compared prompts whose greedy outputs may differ before a pair is flagged (5%).
SAME_WORK_TOLERANCE = 0.05

_KEYS = ("repeat", "request_index", "prompt_id")


@dataclasses.dataclass(frozen=True)
class SameWork:
    """The same-work check of one spec/baseline pair.

    Attributes:
        spec, baseline: the variants.
        prompts: prompts compared (greedy, completed in both arms, each with an output hash).
        differing: of those, prompts whose outputs differed in at least one pair.
        pairs: request pairs compared; ``differing_pairs`` of them differed.
        tolerance: the share of differing prompts allowed (:data:`SAME_WORK_TOLERANCE`).
        examples: up to 5 differing prompt ids.
        forced_accept_length: the accept length the spec arm's server was forced to (SGLang's
            ``SGLANG_SIMULATE_ACC_LEN``), or None. Forcing writes placeholder tokens in the verify, so the
            text differs from the baseline's by construction: the pair is then judged on output token counts.
        same_length_pairs: of the compared pairs, those whose two requests generated as many tokens.
    """

    spec: str
    baseline: str
    prompts: int
    differing: int
    pairs: int
    differing_pairs: int
    tolerance: float
    examples: tuple[str, ...] = ()
    forced_accept_length: float | None = None
    same_length_pairs: int = 0

    @property
    def checked(self) -> bool:
        """True when any greedy pair could be compared."""
        return self.prompts > 0

    @property
    def share(self) -> float:
        """Differing prompts / compared prompts (NaN when none compared)."""
        return self.differing / self.prompts if self.prompts else float("nan")

    @property
    def flagged(self) -> bool:
        """True when the share of differing prompts is above the tolerance (under forced acceptance: when any
        pair generated different numbers of tokens, since the text cannot match)."""
        if self.forced_accept_length is not None:
            return self.checked and self.same_length_pairs < self.pairs
        return self.checked and self.share > self.tolerance

    def text(self) -> str:
        """One sentence of markdown (names escaped, :mod:`workbench.markup`): what was compared and what it found."""
        spec, baseline = literal(self.spec), literal(self.baseline)
        if not self.checked:
            return (
                f"{spec} vs {baseline}: outputs not compared (no greedy requests with output hashes "
                "in both arms: temperature above 0, an imported file, or runs older than the hash)"
            )
        if self.forced_accept_length is not None:
            why = (
                f"{spec}'s accept length was forced to {self.forced_accept_length:g} (SGLANG_SIMULATE_ACC_LEN), "
                "which writes placeholder tokens in the verify, so its text differs from the baseline's by "
                "construction"
            )
            counts = (
                f"{self.same_length_pairs} of {self.pairs} request pairs with {baseline} generated the same "
                "number of tokens"
            )
            if self.flagged:
                return f"{why}; judged on token counts instead: only {counts}, so the arms did not do the same work"
            return f"{why}; judged on token counts instead: {counts}, the same work"
        head = (
            f"{self.differing} of {self.prompts} prompts ({self.share:.0%}; {self.differing_pairs} of "
            f"{self.pairs} request pairs) returned different greedy output in {spec} and {baseline}"
        )
        if self.flagged:
            shown = ", ".join(code(p) for p in self.examples)
            return (
                f"{head}: above the {self.tolerance:.0%} tolerance, so the arms did not do the same work and "
                f"their speeds are not comparable (e.g. {shown}); check the model, draft, chat template and "
                "max_new_tokens of both"
            )
        return f"{head}: within the {self.tolerance:.0%} tolerance, the same work"


def same_outputs(
    requests: pd.DataFrame,
    *,
    baseline: str,
    spec: str,
    load: str = "concurrency",
    tolerance: float = SAME_WORK_TOLERANCE,
    forced_accept_length: float | None = None,
) -> SameWork:
    """Compare the greedy outputs of ``spec`` and ``baseline`` prompt by prompt.

    Args:
        requests: request rows with ``variant``, ``load``, ``repeat`` (optional),
            ``request_index``, ``prompt_id``, ``output_hash``, ``error`` and ``temperature``
            (rows without a temperature column are taken as not known to be greedy: not compared).
        baseline, spec: variant names.
        load: the level column (``"concurrency"`` or ``"request_rate_req_s"``).
        tolerance: share of prompts allowed to differ, in [0, 1).
        forced_accept_length: the spec arm's forced accept length (see :class:`SameWork`), or None.

    Returns:
        A :class:`SameWork`; ``prompts`` 0 when nothing could be compared.

    Raises:
        ConfigError: a tolerance outside [0, 1).
    """
    if not 0.0 <= tolerance < 1.0:
        raise ConfigError(f"tolerance must be in [0, 1) (a share of prompts), got {tolerance}")
    need = {"variant", load, "request_index", "prompt_id", "output_hash", "temperature"}
    empty = SameWork(spec, baseline, 0, 0, 0, 0, tolerance, forced_accept_length=forced_accept_length)
    if need - set(requests.columns) or not len(requests):
        return empty
    rows = requests.assign(repeat=requests["repeat"] if "repeat" in requests else 0)
    ok = rows["output_hash"].notna() & (pd.to_numeric(rows["temperature"], errors="coerce") == 0.0)
    if "error" in rows:
        ok &= rows["error"].isna()
    rows = rows[ok]
    keys = [load, *_KEYS]
    tokens = "output_tokens" if "output_tokens" in rows else None
    columns = ["output_hash", *([tokens] if tokens else [])]
    base = rows[rows["variant"] == baseline].drop_duplicates(keys).set_index(keys)[columns]
    other = rows[rows["variant"] == spec].drop_duplicates(keys).set_index(keys)[columns]
    both = base.add_suffix("_b").join(other.add_suffix("_s"), how="inner")
    if both.empty:
        return empty
    paired = pd.DataFrame({"b": both["output_hash_b"], "s": both["output_hash_s"]})
    same_length = int((both[f"{tokens}_b"] == both[f"{tokens}_s"]).sum()) if tokens else 0
    paired["differs"] = paired["b"] != paired["s"]
    by_prompt = paired.groupby(level="prompt_id")["differs"].any()
    examples = tuple(str(p) for p in by_prompt[by_prompt].index[:5])
    return SameWork(
        spec,
        baseline,
        prompts=int(len(by_prompt)),
        differing=int(by_prompt.sum()),
        pairs=int(len(paired)),
        differing_pairs=int(paired["differs"].sum()),
        tolerance=tolerance,
        examples=examples,
        forced_accept_length=forced_accept_length,
        same_length_pairs=same_length,
    )
