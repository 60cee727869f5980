"""A cost model whose iterations take fixed times, so engine tests can count time exactly."""

from __future__ import annotations


class FlatCost:
    """Every iteration 10 ms (plain decode), 30 ms (speculative), 5 ms (prefill)."""

    def prefill_ms(self, prompt_tokens, spec):
        return 5.0

    def decode_ms(self, batch, kv_tokens):
        return 10.0

    def spec_decode_ms(self, batch, kv_tokens, spec, accepted_tokens):
        return 30.0
