"""Pre-flight validation of a variant against one SGLang version (pure: no I/O).

Flags are checked by the version's own parser rules: :meth:`FlagTable.check
<workbench.source._flags.FlagTable.check>` reads the variant's argv as argparse
would (unknown and removed flags, ambiguous prefixes, abbreviations, aliases,
store_true flags given values, values outside choices, speculative algorithms the
version lacks). Speculative rules come from the version's source
(:class:`~workbench.variants._rules.SpecRules`): spec v2 with topk > 1, adaptive
speculation's constraints, topk or draft tokens without num_steps. Pairs are checked
for comparability: a baseline and a speculative variant should differ only in
speculative settings, and the version's implicit changes (max running requests
48, overlap scheduling off under spec v1, mixed chunked prefill off) are named.

Messages name the flag as the variant file writes it (``[flags]`` keys have no
dashes) and say what to change. A flag the target version does not know but the
release the variant is written for has is reported as such (the caller supplies
that release's flags, see :func:`check_flags`), not with look-alike spellings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.variants._variant import MANAGED_FLAGS, Variant
from workbench.source import FlagError, FlagTable
from workbench.variants._findings import Finding
from workbench.releases import ADAPTIVE_SINCE
from workbench.variants._rules import EAGLE_FAMILY, SpecRules

#: Flags that are speculative settings (compared pairs may differ in these).
SPEC_PREFIX = "speculative_"
#: Adaptive speculation refuses these (``adaptive_unsupported_reason``, 0.5.11+).
ADAPTIVE_BLOCKERS = ("enable_dp_attention", "enable_multi_layer_eagle", "enable_two_batch_overlap", "enable_pdmux")
_TRUE = ("1", "true", "yes", "on")


def _file(v: Variant) -> str:
    return f"the [flags] table of {v.path.name}" if v.path else f"the flags of variant {v.name!r}"


def check_flags(
    variant: Variant, table: FlagTable, *, later: Callable[[], FlagTable | None] | None = None
) -> tuple[list[Finding], dict[str, Any]]:
    """Check the variant's launch flags with the version's parser rules, one ``[flags]`` entry at a time.

    Args:
        variant: the variant.
        table: the flags of the SGLang it is checked against.
        later: returns the flags of a later release the variant is written for (its own
            ``sglang_version``), or None; called only for a flag ``table`` does not know,
            which is then reported as one that release has.

    Returns:
        ``(findings, resolved)``: ``resolved`` maps the ServerArgs field (``dest``,
        e.g. ``tp_size``) of each flag that resolved to the variant's value.
    """
    name, where, out = variant.name, table.version or table.label, []
    resolved: dict[str, Any] = {}
    written: dict[str, str] = {}
    entries = [("model_path", "--model-path", variant.model_path)]
    if variant.draft_model_path:
        entries.append(("draft_model_path", "--speculative-draft-model-path", variant.draft_model_path))
    entries += [(key, f"--{key}", value) for key, value in variant.flags.items()]
    for key, option, value in entries:
        argv = [option] if value is True else [] if value in (False, None) else [option, str(value)]
        for p in table.check(argv):
            out.append(_flag_finding(variant, table, key, value, p, later=later))
        try:
            match = table.match(option)
        except FlagError:
            continue
        flag = match.flag
        if not match.abbreviated and match.option != flag.name:
            out.append(Finding("info", name, flag.name, f"`{key}` is an alias of `{flag.name}` in SGLang {where}.",
                               "", "flag-alias"))  # fmt: skip
        if flag.dest in written:
            out.append(Finding("error", name, flag.name,
                               f"`{written[flag.dest]}` and `{key}` both set `{flag.name}` in SGLang {where} "
                               "(argparse keeps the last one).", f"keep one of them in {_file(variant)}",
                               "flag-duplicate"))  # fmt: skip
        if flag.dest in MANAGED_FLAGS:
            out.append(Finding("error", name, flag.name,
                               f"`{key}` sets `{flag.name}`, which the workbench sets on every launch "
                               f"({MANAGED_FLAGS[flag.dest]}); the command would carry it twice and argparse "
                               "keeps the workbench's.", f"remove `{key}` from {_file(variant)}",
                               "flag-managed"))  # fmt: skip
        written[flag.dest] = key
        resolved[flag.dest] = value
        if value is False:
            out.append(Finding("info", name, flag.name, f"`{key} = false` leaves `{flag.name}` out of the command "
                               "line (store_true flags are off unless given).", "", "flag-false"))  # fmt: skip
    return out, resolved


def unresolved_flags(variant: Variant) -> dict[str, Any]:
    """The variant's flags keyed by the field name they would store into, without a flag table."""
    out = {k.replace("-", "_"): v for k, v in variant.flags.items()}
    out["model_path"] = variant.model_path
    if variant.draft_model_path:
        out["speculative_draft_model_path"] = variant.draft_model_path
    return out


def _flag_finding(variant: Variant, table: FlagTable, key: str, value: Any, p: Any, *,
                  later: Callable[[], FlagTable | None] | None) -> Finding:  # fmt: skip
    where, f = table.version or table.label, _file(variant)
    flag = p.flag or f"--{key}"
    if key in ("model_path", "draft_model_path"):
        return Finding(p.severity, variant.name, flag, p.message, f"fix {key} in the variant file", f"flag-{p.kind}")
    newer = later() if later is not None and p.kind == "unknown" else None
    if newer is not None and newer.get(flag) is None:
        newer = None
    problem, fix = p.message, ""
    if newer is not None:
        problem = (f"`{flag}` is not a flag of SGLang {where}; it is one of SGLang {newer.version}, the release "
                   f"{variant.name} is written for (its sglang_version).")  # fmt: skip
        fix = f"check and run {variant.name} on SGLang {newer.version}, or remove `{key}` from {f}"
    elif p.kind == "unexpected_value":
        problem = (f"`{key} = {value!r}`: `--{key}` takes no value in SGLang {where} (store_true); the value "
                   f"becomes a stray argument and the server stops ('unrecognized arguments: {value}').")  # fmt: skip
        fix = f"write `{key} = true` (or false) in {f}"
    elif p.kind == "missing_value":
        fix = f"give `{key}` a value (not true) in {f}"
    elif p.fix and str(p.fix).startswith("--"):
        fix = f"write `{str(p.fix).lstrip('-')} = ...` instead of `{key}` in {f}"
    elif p.fix:
        fix = f"set `{key} = {p.fix!r}` in {f}"
    elif p.kind in ("unknown", "removed"):
        fix = f"remove `{key}` from {f}, or target an SGLang version that has it"
    else:
        fix = f"correct `{key}` in {f}"
    if p.kind in ("unknown", "removed") and key == "speculative-adaptive":
        problem += (f" Without it SGLang {where} has no adaptive speculative decoding (the flag and "
                    f"`adaptive_unsupported_reason` are in SGLang's source from {ADAPTIVE_SINCE}).")  # fmt: skip
        if newer is None:
            fix = f"run this variant on SGLang {ADAPTIVE_SINCE} or later (set sglang_version or base), or drop `{key}`"
    return Finding(p.severity, variant.name, flag, problem, fix, f"flag-{p.kind}")


def check_spec(variant: Variant, resolved: dict[str, Any], rules: SpecRules, *,
               has_adaptive_flag: bool) -> list[Finding]:  # fmt: skip
    """Speculative-decoding rules of the version (``rules``) applied to the resolved flags."""
    name, ver, out = variant.name, rules.version, []
    algo = resolved.get("speculative_algorithm")
    steps = resolved.get("speculative_num_steps")
    topk = resolved.get("speculative_eagle_topk")
    draft = resolved.get("speculative_num_draft_tokens")
    adaptive = bool(resolved.get("speculative_adaptive"))
    env_v2 = variant.env.get("SGLANG_ENABLE_SPEC_V2")
    v2_asked = env_v2 is not None and env_v2.strip().lower() in _TRUE
    f = _file(variant)
    if env_v2 is not None and rules.spec_v2_env_default is None:
        why = ("spec v2 is the only speculative worker there" if not rules.has_spec_v1
               else "that version has no such switch (0.5.4 used --enable-beta-spec)")  # fmt: skip
        out.append(Finding("warning", name, "env SGLANG_ENABLE_SPEC_V2",
                           f"SGLANG_ENABLE_SPEC_V2 has no effect in SGLang {ver}: {why}.",
                           f"remove it from the [env] table of {variant.path.name if variant.path else variant.name}",
                           "env-spec-v2-unused"))  # fmt: skip
    if not algo:
        spec_keys = [k for k in resolved if k.startswith(SPEC_PREFIX) and k != "speculative_draft_model_path"]
        if spec_keys or variant.draft_model_path:
            what = ", ".join(_opt(k) for k in spec_keys) or "draft_model_path"
            out.append(Finding("warning", name, _opt(spec_keys[0]) if spec_keys else "draft_model_path",
                               f"{what} set without --speculative-algorithm: the server ignores them and runs "
                               "without speculation.", f"add `speculative-algorithm = \"EAGLE3\"` to {f} or drop them",
                               "spec-without-algorithm"))  # fmt: skip
        return out
    family = str(algo).upper() in EAGLE_FAMILY
    if family and steps is None and (topk is not None or draft is not None) and not adaptive:
        given = "--speculative-eagle-topk" if topk is not None else "--speculative-num-draft-tokens"
        out.append(Finding("error", name, given,
                           f"{given} is given without --speculative-num-steps: SGLang {ver} asserts that topk and "
                           "draft tokens are unset when num_steps is (_handle_speculative_decoding) and the server "
                           "stops.", f"add `speculative-num-steps = N` to {f} (pass steps, topk and draft tokens "
                           "together)", "spec-steps-missing"))  # fmt: skip
    if family and steps is None and topk is None and draft is None and not adaptive:
        out.append(Finding("warning", name, "--speculative-num-steps",
                           f"no speculative steps/topk/draft tokens given: SGLang {ver} picks them from the model "
                           "architecture (Llama: 5/4/8), which differs between versions.",
                           f"set speculative-num-steps, speculative-eagle-topk and speculative-num-draft-tokens "
                           f"in {f}", "spec-auto-params"))  # fmt: skip
    if family and v2_asked and rules.has_spec_v1 and rules.spec_v2_env_default is not None:
        if str(algo).upper() not in rules.v2_algorithms():
            out.append(
                Finding(
                    "warning",
                    name,
                    "env SGLANG_ENABLE_SPEC_V2",
                    f"SGLANG_ENABLE_SPEC_V2=1 covers only {', '.join(rules.v2_algorithms())} in SGLang "
                    f"{ver}; {algo} stays on spec v1 with overlap scheduling off.",
                    "use EAGLE (or a newer SGLang) for spec v2, or drop the env var",
                    "spec-v2-algorithm",
                )
            )
        elif (_int(topk) or 0) > 1 and rules.v2_rejects_topk_gt1:
            out.append(Finding("error", name, "--speculative-eagle-topk",
                               f"spec v2 (SGLANG_ENABLE_SPEC_V2={env_v2}) with --speculative-eagle-topk {topk}: "
                               f"SGLang {ver} refuses it ('Spec v2 currently only supports topk = 1') and the "
                               "server stops.", f"set `speculative-eagle-topk = 1` (and speculative-num-draft-tokens "
                               f"= num_steps + 1) in {f}, or remove SGLANG_ENABLE_SPEC_V2 from [env] for spec v1",
                               "spec-v2-topk"))  # fmt: skip
        elif (_int(topk) or 0) > 1:
            out.append(Finding("warning", name, "--speculative-eagle-topk",
                               f"spec v2 with --speculative-eagle-topk {topk}: SGLang {ver} quietly falls back to "
                               "spec v1 with overlap scheduling off.", f"set `speculative-eagle-topk = 1` in {f} "
                               "for spec v2, or drop SGLANG_ENABLE_SPEC_V2", "spec-v2-fallback"))  # fmt: skip
        elif topk is None and rules.v2_rejects_topk_gt1:
            out.append(Finding("warning", name, "--speculative-eagle-topk",
                               f"spec v2 without an explicit topk: SGLang {ver} checks topk before choosing it, so "
                               "a Llama target silently gets topk 4 under spec v2.",
                               f"set `speculative-eagle-topk = 1` in {f}", "spec-v2-topk-implicit"))  # fmt: skip
    chain_steps, chain_draft = _int(steps), _int(draft)  # None where unset or not an integer (a flag finding)
    if family and _int(topk) == 1 and chain_steps is not None and chain_draft is not None \
            and chain_draft != chain_steps + 1:  # fmt: skip
        out.append(Finding("warning", name, "--speculative-num-draft-tokens",
                           f"with topk 1 SGLang {ver} forces num_draft_tokens = num_steps + 1 = {chain_steps + 1} "
                           f"(the variant asks {draft}).", f"set `speculative-num-draft-tokens = {chain_steps + 1}` "
                           f"in {f}", "spec-draft-forced"))  # fmt: skip
    tree = draft_tree_problem(topk, steps, draft, version=ver) if family and not adaptive else None
    if tree is not None:
        out.append(
            Finding("error", name, "--speculative-num-draft-tokens", tree[0], f"{tree[1]} in {f}", "spec-draft-budget")
        )
    if family and str(algo).upper() in ("EAGLE", "EAGLE3") and not variant.draft_model_path \
            and not resolved.get("speculative_draft_model_path"):  # fmt: skip
        out.append(
            Finding(
                "warning",
                name,
                "--speculative-draft-model-path",
                f"{algo} without a draft model: only DeepSeek/GLM-style MTP targets default the draft "
                "to the model itself.",
                "set draft_model_path in the variant file",
                "spec-no-draft",
            )
        )
    out += _spec_backends(variant, resolved, topk)
    if adaptive and has_adaptive_flag:
        out += _adaptive(variant, resolved, rules, str(algo), topk)
    return out


def draft_tree_problem(topk: Any, num_steps: Any, num_draft_tokens: Any, *, version: str) -> tuple[str, str] | None:
    """Why a tree of ``topk`` x ``num_steps`` cannot supply ``num_draft_tokens``, as ``(problem, fix)``; else None.

    SGLang (``srt/speculative/eagle_utils.py`` ``organize_draft_results``, the same statement
    in every release read from 0.5.4 to 0.5.23) picks the ``num_draft_tokens - 1`` best
    candidates with ``torch.topk`` from the scores the draft steps produced: ``topk`` after
    the first step and ``topk * topk`` after each later one (``select_top_k_tokens``), so
    ``num_draft_tokens - 1`` may not exceed ``topk + (num_steps - 1) * topk**2``. A larger
    value passes start-up and fails at the first verify (``selected index k out of range``).
    topk 1 is not judged here: SGLang sets ``num_draft_tokens = num_steps + 1`` itself.

    Args:
        topk, num_steps, num_draft_tokens: the settings (None or unparsable: not judged).
        version: the SGLang version named in the message.
    """
    k, s, d = _int(topk), _int(num_steps), _int(num_draft_tokens)
    if k is None or s is None or d is None or k <= 1:
        return None
    candidates = k + (s - 1) * k**2
    if d - 1 <= candidates:
        return None
    return (
        f"num_draft_tokens {d} with topk {k} and num_steps {s}: SGLang {version} picks num_draft_tokens - 1 = "
        f"{d - 1} of only {candidates} draft candidates (topk + (num_steps - 1) * topk^2; "
        "eagle_utils.organize_draft_results) and fails at the first verify, not at start-up.",
        f"set `speculative-num-draft-tokens` to at most {candidates + 1}, or raise topk or num_steps",
    )


def _adaptive(variant: Variant, resolved: dict[str, Any], rules: SpecRules, algo: str, topk: Any) -> list[Finding]:
    name, ver, f, out = variant.name, rules.version, _file(variant), []
    off = f"SGLang {ver} would log 'speculative_adaptive disabled' and silently run static settings"
    if algo.upper() not in ("EAGLE", "EAGLE3", "NEXTN"):
        out.append(
            Finding(
                "error",
                name,
                "--speculative-adaptive",
                f"--speculative-adaptive needs EAGLE or EAGLE3, not {algo}: {off}.",
                f'set `speculative-algorithm = "EAGLE3"` in {f}',
                "adaptive-algorithm",
            )
        )
    if topk is not None and _int(topk) != 1:
        out.append(
            Finding(
                "error",
                name,
                "--speculative-eagle-topk",
                f"--speculative-adaptive needs --speculative-eagle-topk 1, not {topk}: {off}.",
                f"set `speculative-eagle-topk = 1` in {f}",
                "adaptive-topk",
            )
        )
    v2 = rules.spec_v2_effective(algorithm=algo, topk=_int(topk), env=variant.env)
    if rules.adaptive_needs_v1 and v2 and not resolved.get("disable_overlap_schedule"):
        why = "SGLANG_ENABLE_SPEC_V2 asks for it" if "SGLANG_ENABLE_SPEC_V2" in variant.env else "the default there"
        env_table = f"the [env] table of {variant.path.name if variant.path else variant.name}"
        out.append(Finding("error", name, "env SGLANG_ENABLE_SPEC_V2",
                           f"--speculative-adaptive under spec v2 ({why}; overlap scheduling on): SGLang {ver} runs "
                           f"adaptive only on the v1 worker ('adaptive is only implemented for EAGLEWorker v1'): "
                           f"{off}.", f'set `SGLANG_ENABLE_SPEC_V2 = "0"` in {env_table} (spec v1), or use a later '
                           "release without this limit", "adaptive-spec-v2"))  # fmt: skip
    for blocker in ADAPTIVE_BLOCKERS:
        if resolved.get(blocker):
            flag = "--" + blocker.replace("_", "-")
            out.append(Finding("error", name, flag, f"--speculative-adaptive does not work with {flag}: {off}.",
                               f"remove `{flag[2:]}` from {f}", "adaptive-blocked"))  # fmt: skip
    return out


def implicit_notes(variant: Variant, resolved: dict[str, Any], rules: SpecRules) -> list[Finding]:
    """What the version changes by itself for this variant (info findings)."""
    algo = resolved.get("speculative_algorithm")
    if not algo or str(algo).upper() not in EAGLE_FAMILY:
        return []
    name, ver, out = variant.name, rules.version, []
    if rules.caps_max_running_48 and resolved.get("max_running_requests") is None:
        out.append(Finding("info", name, "--max-running-requests", f"SGLang {ver} sets max running requests to 48 "
                           "for speculative decoding when it is not given.", "", "implicit-max-running"))  # fmt: skip
    v2 = rules.spec_v2_effective(algorithm=str(algo), topk=_int(resolved.get("speculative_eagle_topk")),
                                 env=variant.env)  # fmt: skip
    out.append(Finding("info", name, "env SGLANG_ENABLE_SPEC_V2", f"expected to run spec {'v2' if v2 else 'v1'} on "
                       f"SGLang {ver}" + ("" if v2 else " (overlap scheduling off)") + ".", "",
                       "implicit-spec-version"))  # fmt: skip
    return out


#: Environment variables that act only on speculation besides those named ``*SPEC*``: SGLang's benchmark knobs
#: that force the accept length in the verify (``srt/speculative/spec_utils.py``), unset on a baseline by design.
SPECULATIVE_ONLY_ENV = ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE")


def _speculative_env(key: str) -> bool:
    return "SPEC" in key.upper() or key in SPECULATIVE_ONLY_ENV


def compare_pair(baseline: Variant, variant: Variant, b_flags: dict[str, Any], v_flags: dict[str, Any],
                 rules: SpecRules, *, same_sglang: bool = False) -> list[Finding]:  # fmt: skip
    """Warnings where ``variant`` differs from ``baseline`` in more than speculative settings.

    Args:
        baseline, variant: the pair.
        b_flags, v_flags: their resolved flags (:func:`check_flags`).
        rules: the version's rules (for the implicit differences).
        same_sglang: both bases resolve to the same release, so differently written
            bases are not reported.
    """
    pair, out = f"{variant.name} vs {baseline.name}", []
    fix_both = f"make {baseline.name} and {variant.name} agree"
    algo = v_flags.get("speculative_algorithm")
    eagle = bool(algo) and str(algo).upper() in EAGLE_FAMILY
    implied = {"max_running_requests": 48} if eagle and rules.caps_max_running_48 else {}
    for key in sorted(set(b_flags) | set(v_flags)):
        v_value = v_flags.get(key) if v_flags.get(key) is not None else implied.get(key)
        same = b_flags.get(key) == v_flags.get(key) or (key in implied and _int(b_flags.get(key)) == v_value)
        if key.startswith(SPEC_PREFIX) or key == "model_path" or same:
            continue  # the same, or the value SGLang sets itself for the speculative variant (its 48 cap)
        out.append(Finding("warning", pair, _opt(key), f"{_opt(key)} differs: {baseline.name} has "
                           f"{_shown(b_flags.get(key))}, {variant.name} has {_shown(v_flags.get(key))}; a non-"
                           "speculative difference makes the pair not comparable.", f"{fix_both} on {_opt(key)}",
                           "pair-flag"))  # fmt: skip
    for key in sorted(set(baseline.env) | set(variant.env)):
        if _speculative_env(key) or baseline.env.get(key) == variant.env.get(key):
            continue
        out.append(Finding("warning", pair, f"env {key}", f"environment variable {key} differs: {baseline.name} "
                           f"has {_shown(baseline.env.get(key))}, {variant.name} has {_shown(variant.env.get(key))}.",
                           f"{fix_both} on {key}", "pair-env"))  # fmt: skip
    if baseline.model_path != variant.model_path:
        out.append(Finding("warning", pair, "model_path", f"the target models differ ({baseline.model_path} vs "
                           f"{variant.model_path}).", "use the same model_path", "pair-model"))  # fmt: skip
    if baseline.parsed_base != variant.parsed_base and not same_sglang:
        out.append(Finding("warning", pair, "base", f"the SGLang bases differ ({baseline.parsed_base} vs "
                           f"{variant.parsed_base}): version differences mix with speculation's effect.",
                           f"give {baseline.name} the same base as {variant.name}", "pair-base"))  # fmt: skip
    if variant.patches:
        out.append(Finding("info", pair, "patches", f"{variant.name} is a patched build "
                           f"({', '.join(p.name for p in variant.patches)}): differences include the patch's effect.",
                           "", "pair-patched"))  # fmt: skip
    if not eagle:
        return out
    ver = rules.version
    base_mrr = b_flags.get("max_running_requests")
    if rules.caps_max_running_48 and v_flags.get("max_running_requests") is None and _int(base_mrr) != 48:
        out.append(Finding("warning", pair, "--max-running-requests",
                           f"SGLang {ver} caps max running requests at 48 for {variant.name} (speculative, "
                           f"--max-running-requests not set) while {baseline.name} runs "
                           f"{base_mrr if base_mrr is not None else 'its default (sized by memory)'}; above 48 "
                           "concurrent requests the speculative variant queues.",
                           f"set the same --max-running-requests (e.g. 48) on {baseline.name} and {variant.name}",
                           "implicit-max-running"))  # fmt: skip
    v2 = rules.spec_v2_effective(algorithm=str(algo), topk=_int(v_flags.get("speculative_eagle_topk")), env=variant.env)
    if not v2 and not b_flags.get("disable_overlap_schedule"):
        out.append(Finding("warning", pair, "--disable-overlap-schedule",
                           f"{variant.name} runs spec v1 on SGLang {ver}, which turns overlap scheduling off; "
                           f"{baseline.name} keeps it on, so the pair differs in scheduling too.",
                           f"add `disable-overlap-schedule = true` to {baseline.name} for a like-for-like "
                           "comparison, or run spec v2 (SGLANG_ENABLE_SPEC_V2=1 with topk 1)",
                           "implicit-overlap"))  # fmt: skip
    if rules.disables_mixed_chunk and b_flags.get("enable_mixed_chunk"):
        out.append(Finding("warning", pair, "--enable-mixed-chunk",
                           f"{baseline.name} enables mixed chunked prefill; SGLang {ver} turns it off for "
                           f"{variant.name} (speculative decoding).",
                           f"remove `enable-mixed-chunk` from {baseline.name}", "implicit-mixed-chunk"))  # fmt: skip
    return out


def _int(value: Any) -> int | None:
    """``value`` as an integer; None when unset or not one (a list, ``"abc"``, NaN, infinity: the flag checks
    report those)."""
    if isinstance(value, bool):
        return None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        return None


def _opt(dest: str) -> str:
    """``tp_size`` -> ``--tp-size`` (the flag spelled after its field)."""
    return "--" + dest.replace("_", "-")


def _shown(value: Any) -> str:
    return "it unset" if value is None else repr(value)


def _spec_backends(variant: Variant, resolved: dict[str, Any], topk: Any) -> list[Finding]:
    """Speculation with flags that are known to refuse it or break it (public SGLang issues cited)."""
    name, f, out = variant.name, _file(variant), []
    if resolved.get("enable_dp_attention"):
        out.append(Finding("warning", name, "--enable-dp-attention",
                           "DP attention with speculative decoding: SGLang's maintainers call them separate regimes "
                           "(sglang#4847: it crashed), and later releases run it with a lower accept length "
                           "(sglang#16274: 2.35 -> 1.48).", f"measure a variant without --enable-dp-attention too, "
                           f"or drop it from {f}", "spec-dp-attention"))  # fmt: skip
    backend = resolved.get("attention_backend")
    prefill = resolved.get("prefill_attention_backend")
    decode = resolved.get("decode_attention_backend")
    if prefill and prefill != (decode or backend):
        out.append(Finding("warning", name, "--prefill-attention-backend",
                           f"a prefill backend ({prefill}) other than the decode one ({decode or backend or 'default'}) "
                           "makes a hybrid attention backend, which refused speculative decoding before "
                           "sglang#9573 ('HybridAttentionBackend does not support speculative decoding', sglang#9330).",
                           "use one backend for both, or check the SGLang version has sglang#9573",
                           "spec-hybrid-backend"))  # fmt: skip
    mla = [b for b in (backend, decode) if b and "mla" in str(b).lower()]
    if mla and (_int(topk) or 0) > 1:
        out.append(Finding("warning", name, "--speculative-eagle-topk",
                           f"MLA attention backend {mla[0]} with --speculative-eagle-topk {topk}: MLA backends "
                           "support only topk 1 for speculative decoding (sglang#4425; trtllm_mla until "
                           "sglang#29706).", f"set `speculative-eagle-topk = 1` in {f}, or another attention backend",
                           "spec-mla-topk"))  # fmt: skip
    return out
