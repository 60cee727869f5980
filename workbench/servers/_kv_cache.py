"""Whether the KV cache a server started with has room for the requests it will be sent (pure functions, no I/O).

SGLang sizes its KV pool from what ``--mem-fraction-static`` leaves after the weights and logs it once,
before it serves (``srt/managers/scheduler.py``, the same line in 0.5.6 to 0.5.17)::

    max_total_num_tokens=5759, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=64,
    context_len=131072, available_gpu_mem=61.07 GB

and ``/server_info`` answers ``max_total_num_tokens`` and ``max_running_requests`` (and the context only
where ``--context-length`` was given). The longest prompt it accepts is
``min(context_len - 1, max_total_num_tokens - 1) - 5`` (``max_req_input_len``, ``srt/managers/tp_worker.py``).
A pool that is too small is no start failure: SGLang 0.5.17 on an NVIDIA
H100 80GB with ``--mem-fraction-static 0.201`` started and answered with a pool of 5,759 tokens for a model
of 131,072 tokens of context and 64 running requests (``tests/fixtures/sglang_real/0.5.17/failures.json``).
Such a server refuses every prompt longer than its pool and runs fewer requests at once than its
``max_running_requests``, so a benchmark of it measures memory, not the variant. :func:`kv_pool` reads the
pool; :meth:`KvPool.problems` says what is wrong with it and :meth:`KvPool.warning` says so in one line,
with what to change.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

__all__ = ["FAR_BELOW", "KV_POOL_MARK", "KvCacheWarning", "KvPool", "kv_pool", "mem_fraction_static"]

#: The text that starts SGLang's pool line (a cheap test before the pattern).
KV_POOL_MARK = "max_total_num_tokens="
_LINE = re.compile(
    r"max_total_num_tokens=(?P<tokens>\d+),.*?max_running_requests=(?P<running>\d+),"
    r"\s*context_len=(?P<context>\d+)"
)
#: What SGLang keeps back of a request's length below the pool or the context (``max_req_len - 5``, and
#: ``max_req_len`` is one below either): the longest prompt is the smaller of the two less this.
_PROMPT_MARGIN = 6
#: A pool is called far below its load when it holds fewer than this share of max_running_requests
#: requests of the workload (prompt + output each).
FAR_BELOW = 0.5


class KvCacheWarning(UserWarning):
    """A server became ready with a KV cache too small for one request at its context or for its load."""


@dataclasses.dataclass(frozen=True)
class KvPool:
    """The KV pool a server started with.

    Attributes:
        tokens: ``max_total_num_tokens``, the tokens the pool holds (all running requests together).
        max_running_requests: the server's cap on requests running at once (None when not read).
        context_len: the model's context length in tokens (from the log line, or ``--context-length`` in
            ``/server_info``; None when neither says).
        source: where it was read: ``"log"`` or ``"/server_info"``.
    """

    tokens: int
    max_running_requests: int | None
    context_len: int | None
    source: Literal["log", "/server_info"]

    @property
    def below_context(self) -> bool:
        """True when one request at the model's context does not fit (False when the context is not known)."""
        return self.context_len is not None and self.tokens < self.context_len

    @property
    def longest_prompt_tokens(self) -> int | None:
        """The longest prompt SGLang accepts (``max_req_input_len``), when the context is known."""
        return None if self.context_len is None else min(self.context_len, self.tokens) - _PROMPT_MARGIN

    def requests_held(self, request_tokens: int) -> int:
        """How many requests of ``request_tokens`` (prompt + output) the pool holds at once."""
        return self.tokens // max(int(request_tokens), 1)

    def problems(self, *, request_tokens: int | None = None, concurrency: int | None = None) -> tuple[str, ...]:
        """What is wrong with the pool, as clauses of one sentence (empty when nothing is).

        Args:
            request_tokens: prompt + output tokens of a typical request of the workload (None: unknown;
                only the context is checked).
            concurrency: the most requests the workload keeps in flight (None: unknown; the server's
                max_running_requests is what the pool must hold then). A sweep up to 64 at once is not hurt by
                a pool that cannot hold SGLang's default cap of thousands.
        """
        out = []
        if self.below_context:
            out.append(
                f"less than one request at the model's context of {self.context_len:,} tokens (prompts over "
                f"{self.longest_prompt_tokens:,} tokens are refused)"
            )
        running = self.max_running_requests
        if concurrency is not None:
            running = min(running, concurrency) if running else concurrency
        if request_tokens is not None and running and self.requests_held(request_tokens) < FAR_BELOW * running:
            held = self.requests_held(request_tokens)
            where = (
                f"the load keeps {running} in flight"
                if running == concurrency
                else f"max_running_requests is {running}"
            )
            out.append(
                f"room for {held:,} request{'' if held == 1 else 's'} of {int(request_tokens):,} tokens "
                f"(prompt + output) at once where {where}"
            )
        return tuple(out)

    def warning(
        self,
        server: str,
        *,
        request_tokens: int | None = None,
        concurrency: int | None = None,
        mem_fraction: float | None = None,
    ) -> str | None:
        """One line for a server that became ready with this pool: what is wrong and what to change; None
        when nothing is.

        Args:
            server: the server's name in the line (the variant).
            request_tokens, concurrency: see :meth:`problems`.
            mem_fraction: its ``--mem-fraction-static``, when known (said in the advice).
        """
        problems = self.problems(request_tokens=request_tokens, concurrency=concurrency)
        if not problems:
            return None
        now = f" (now {mem_fraction:g})" if mem_fraction is not None else ""
        per_request = (
            f"; {self.tokens // self.max_running_requests:,} tokens per running request"
            if self.max_running_requests
            else ""
        )
        return (
            f"{server}: ready with a KV cache too small: {self.tokens:,} tokens (max_total_num_tokens, from its "
            f"{self.source}), {' and '.join(problems)}{per_request}. Its figures would measure memory, not "
            f"the variant: raise --mem-fraction-static{now} until the pool holds the load, or lower "
            "--context-length to the longest request you send."
        )


def kv_pool(log_text: str = "", server_info: Mapping[str, Any] | None = None) -> KvPool | None:
    """The pool a server started with: from SGLang's log line (the last start in ``log_text``), else from
    ``server_info`` (a ``/server_info`` answer); None when neither says.
    """
    found = list(_LINE.finditer(log_text)) if KV_POOL_MARK in log_text else []
    if found:
        last = found[-1]
        return KvPool(
            tokens=int(last.group("tokens")),
            max_running_requests=int(last.group("running")),
            context_len=int(last.group("context")),
            source="log",
        )
    info = server_info or {}
    tokens, running, context = (info.get(k) for k in ("max_total_num_tokens", "max_running_requests", "context_length"))
    if not isinstance(tokens, int) or not _count(tokens):
        return None
    return KvPool(
        tokens=tokens,
        max_running_requests=running if _count(running) else None,
        context_len=context if _count(context) else None,
        source="/server_info",
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def mem_fraction_static(command: Sequence[str]) -> float | None:
    """The ``--mem-fraction-static`` of a launch command (``--flag value`` or ``--flag=value``), else None."""
    for i, token in enumerate(command):
        value = None
        if token == "--mem-fraction-static" and i + 1 < len(command):
            value = command[i + 1]
        elif token.startswith("--mem-fraction-static="):
            value = token.split("=", 1)[1]
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return None
    return None
