"""SGLang 0.5.23's strict ``/generate`` contract (pure; no I/O).

0.5.23 checks each ``/generate`` body against the generated schema before serving it
(``srt/entrypoints/api_contract.py`` calling ``sglang/api/v1/api_types.py``
``GenerateRequest.from_json_value``) and answers a violation with HTTP 400 and
``{"error": "<text>"}`` (a string, not an object). The texts below are serde's, as
``api_types.py`` writes them:

- an unknown ``sampling_params`` key: ``unknown field `x`, expected one of `max_new_tokens`, ...``;
- a wrong type: ``invalid type: floating point `16.0`, expected i64``.

Unknown top-level keys are ignored. This module checks every ``sampling_params`` field
and the top-level fields the simulator reads (``text``, ``input_ids``, ``rid``,
``stream``, ``sampling_params``); the other top-level fields' types are not checked.
"""

from __future__ import annotations

from typing import Any

#: ``_FIELDS_SamplingParams`` of 0.5.23 ``sglang/api/v1/api_types.py``, in its order.
SAMPLING_FIELDS_0523 = (
    "max_new_tokens",
    "stop",
    "stop_token_ids",
    "stop_regex",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "min_new_tokens",
    "n",
    "json_schema",
    "regex",
    "ebnf",
    "structural_tag",
    "ignore_eos",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "no_stop_trim",
    "stream_interval",
    "logit_bias",
    "sampling_seed",
    "custom_params",
    "beam_width",
    "watermark",
    "choice",
)

#: The sampling_params keys 0.5.17 takes (``srt/sampling/sampling_params.py``): 0.5.23's without the three it added.
SAMPLING_FIELDS_0517 = tuple(f for f in SAMPLING_FIELDS_0523 if f not in ("beam_width", "watermark", "choice"))

_INTS = {"max_new_tokens", "top_k", "min_new_tokens", "n", "stream_interval", "sampling_seed", "beam_width"}
_FLOATS = {"temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty"}
_STRS = {"json_schema", "regex", "ebnf", "structural_tag"}
_BOOLS = {"ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "no_stop_trim"}
_STR_OR_LIST = {"stop", "stop_regex"}


class ContractError(ValueError):
    """A body that breaks the contract; ``str()`` is SGLang's error text."""


def _unexpected(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{'true' if v else 'false'}`"
    if isinstance(v, int):
        return f"integer `{v}`"
    if isinstance(v, float):
        return f"floating point `{v}`"
    if isinstance(v, str):
        return f'string "{v}"'
    if isinstance(v, list):
        return "sequence"
    if isinstance(v, dict):
        return "map"
    return type(v).__name__


def _invalid(v: Any, expected: str) -> ContractError:
    return ContractError(f"invalid type: {_unexpected(v)}, expected {expected}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_str_or_list(v: Any, what: str) -> None:
    if isinstance(v, list):
        for e in v:
            if not isinstance(e, str):
                raise _invalid(e, "a string")
    elif not isinstance(v, str):
        raise _invalid(v, f"a value or an array of values for {what}")


def check_sampling_params(params: Any) -> None:
    """Raise :class:`ContractError` when one sampling_params object breaks the contract."""
    if not isinstance(params, dict):
        raise _invalid(params, "struct SamplingParams")
    for key, v in params.items():
        if key not in SAMPLING_FIELDS_0523:
            listed = ", ".join(f"`{f}`" for f in SAMPLING_FIELDS_0523)
            raise ContractError(f"unknown field `{key}`, expected one of {listed}")
        if v is None or key in ("custom_params", "watermark"):
            continue
        if key in _INTS and not _is_int(v):
            raise _invalid(v, "i64")
        if key in _FLOATS and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
            raise _invalid(v, "f64")
        if key in _STRS and not isinstance(v, str):
            raise _invalid(v, "a string")
        if key in _BOOLS and not isinstance(v, bool):
            raise _invalid(v, "a boolean")
        if key in _STR_OR_LIST:
            _check_str_or_list(v, "StringOrList")
        if key == "stop_token_ids":
            if not isinstance(v, list):
                raise _invalid(v, "a sequence")
            for e in v:
                if not _is_int(e):
                    raise _invalid(e, "i64")
        if key == "logit_bias" and not isinstance(v, dict):
            raise _invalid(v, "a map")
        if key == "choice" and not isinstance(v, list):
            raise _invalid(v, "a sequence")


def contract_error(body: Any) -> str | None:
    """SGLang 0.5.23's contract violation in a parsed ``/generate`` body, or None."""
    try:
        if not isinstance(body, dict):
            raise _invalid(body, "struct GenerateRequest")
        for key in ("text", "rid"):
            if body.get(key) is not None:
                _check_str_or_list(body[key], "StringOrList")
        ids = body.get("input_ids")
        if ids is not None and not isinstance(ids, list):
            raise _invalid(ids, "a value or an array of values for TokenIdsOrList")
        if body.get("stream") is not None and not isinstance(body["stream"], bool):
            raise _invalid(body["stream"], "a boolean")
        params = body.get("sampling_params")
        if isinstance(params, list):
            for p in params:
                check_sampling_params(p)
        elif params is not None:
            if not isinstance(params, dict):
                raise _invalid(params, "a value or an array of values for SamplingParamsOrList")
            check_sampling_params(params)
    except ContractError as exc:
        return str(exc)
    return None
