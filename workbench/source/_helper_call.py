"""The source package's door to the remote helpers: a refused request is a :class:`SourceError`.

:func:`workbench.hosts.call_helper` raises :class:`~workbench.errors.HelperError` when a
helper refuses its request. For the helpers that read source trees (``find_definitions``,
``server_flags``) such a refusal is a source problem (the root does not exist, it is not
an SGLang tree), so it is translated here, at the package's boundary, and nowhere else.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import HelperError, SourceError
from workbench.hosts import Host, call_helper

__all__ = ["call_source_helper"]


def call_source_helper(host: Host, name: str, request: dict[str, Any], **options: Any) -> dict[str, Any]:
    """:func:`workbench.hosts.call_helper` for a helper that reads source.

    Args:
        host, name, request, options: as for :func:`workbench.hosts.call_helper`
            (``timeout_s``, ``python``).

    Returns:
        The helper's answer.

    Raises:
        SourceError: the helper refused the request (its message quoted; the
            :class:`~workbench.errors.HelperError` chained as the cause).
        ConfigError, HostError, CommandError: as for :func:`workbench.hosts.call_helper`.
    """
    try:
        return call_helper(host, name, request, **options)
    except HelperError as exc:
        raise SourceError(str(exc)) from exc
