"""PyTorch equivalents of the small kernels of one EAGLE speculative step, and the step itself.

The companion of ``gpu_spec_step.py`` (imported only when a run times something; needs PyTorch 2.1+).
Every kernel works on static shapes so it can be captured in a CUDA graph, as SGLang captures its
draft, verify and draft-extend steps. Where SGLang has its own kernel the PyTorch equivalent here
does the same work with the same input and output sizes, not the same code (see each docstring; the
SGLang names are from 0.5.9's ``srt/speculative/eagle_utils.py``, ``spec_utils.py``,
``eagle_worker.py`` and ``sgl_kernel``'s ``speculative.cu``):

- :func:`draft_topk`: the draft LM head's softmax and top-k (``fast_topk`` over the draft vocabulary);
- :func:`tree_select`: one draft step's candidate selection for ``topk > 1``
  (``select_top_k_tokens``: parent score x child probability, top-k over ``topk^2``);
- :func:`tree_build`: ``organize_draft_results`` (top ``num_draft_tokens - 1`` of all scores, sorted)
  and ``build_tree_kernel_efficient`` (parents, positions and the full tree attention mask over the
  prefix and the tree: ``[batch, N, context + N]`` booleans);
- :func:`verify_greedy`: argmax over the verify logits and the accepted path
  (``verify_tree_greedy``), vectorised over the tree's ancestor mask;
- :func:`verify_sampled`: temperature softmax over the verify logits, the acceptance coins and the
  residual sample at the first rejection (``tree_speculative_sampling_target_only``; EAGLE's draft is
  one-hot, so a token is kept with probability ``p_target(token)``);
- :func:`kv_accept`: the KV bookkeeping of the accepted tokens (the request-to-token table written
  for the accepted slots, the rejected slots' free mask), and :func:`kv_move` the copy of the accepted
  tokens' K and V in every layer to contiguous slots (``move_kv_cache`` of topk > 1 with a page size
  above 1, SGLang 0.5.13+; page size 1 moves nothing).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import _gpu_calibrate_torch as tm


# -- the small kernels ----------------------------------------------------------------------------
def draft_topk(logits, topk):
    """(probabilities [rows, topk], token ids [rows, topk]) of a draft LM head's logits [rows, vocab]."""
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.topk(probs, topk, dim=-1)


def tree_select(parent_scores, child_p, child_ids, topk):
    """One draft step of a tree (``topk > 1``): the ``topk`` best of the ``topk^2`` children.

    Args:
        parent_scores: [B, topk] cumulative scores of the current beam.
        child_p, child_ids: [B * topk, topk] each beam node's top-k probabilities and tokens.

    Returns:
        (scores [B, topk^2], new beam scores [B, topk], new beam tokens [B, topk], beam parents [B, topk]).
    """
    B = parent_scores.shape[0]
    scores = (parent_scores.unsqueeze(-1) * child_p.view(B, topk, topk)).view(B, topk * topk)
    best, idx = torch.topk(scores, topk, dim=-1)
    tokens = torch.gather(child_ids.view(B, topk * topk), 1, idx)
    return scores, best, tokens, idx // topk


def tree_build(all_scores, all_tokens, all_parents, num_draft_tokens, context):
    """``organize_draft_results`` and ``build_tree_kernel_efficient`` for one batch.

    Args:
        all_scores, all_tokens: [B, M] every candidate the draft steps left (``M = topk + (steps - 1) topk^2``).
        all_parents: [B, M] each candidate's parent as an index into the same list (-1: the root).
        num_draft_tokens: ``N``: the root plus the ``N - 1`` best candidates.
        context: cached tokens per request (the mask's prefix columns).

    Returns:
        (draft tokens [B, N], parent slot [B, N] (root's is 0), ancestor mask [B, N, N] (bool, self included),
        positions [B, N], full mask [B, N, context + N]).
    """
    B = all_scores.shape[0]
    top = torch.topk(all_scores, num_draft_tokens - 1, dim=-1).indices
    top = torch.sort(top, dim=-1).values  # SGLang keeps candidates in list order
    tokens = torch.gather(all_tokens, 1, top)
    par = torch.gather(all_parents, 1, top)  # index into the list, -1 = root
    # the parent's slot in the tree: 0 for the root, else 1 + its rank among the kept candidates
    match = top.unsqueeze(1) == par.unsqueeze(2)  # [B, N-1, N-1]
    slot = torch.where(par < 0, torch.zeros_like(par), 1 + match.int().argmax(-1))
    parent = torch.cat([torch.zeros((B, 1), dtype=slot.dtype, device=slot.device), slot], dim=1)
    N = num_draft_tokens
    anc = torch.eye(N, dtype=torch.bool, device=slot.device).expand(B, N, N).clone()
    cur = torch.arange(N, device=slot.device).expand(B, N).clone()
    depth = torch.zeros((B, N), dtype=torch.long, device=slot.device)
    for _ in range(N - 1):  # walk up: at most N - 1 edges
        cur = torch.gather(parent, 1, cur)
        anc.scatter_(2, cur.unsqueeze(-1), True)
        depth += (cur != 0).long()
    depth = depth + (torch.arange(N, device=slot.device) > 0).long()
    positions = depth + context
    full = torch.cat([torch.ones((B, N, context), dtype=torch.bool, device=slot.device), anc], dim=2)
    root = torch.zeros((B, 1), dtype=tokens.dtype, device=tokens.device)
    return torch.cat([root, tokens], dim=1), parent, anc, positions, full


def chain_tree(B, N, device):
    """(parent [B, N], ancestor mask [B, N, N]) of a chain of ``N`` tokens (topk 1)."""
    parent = torch.clamp(torch.arange(N, device=device) - 1, min=0).expand(B, N).contiguous()
    anc = torch.ones((N, N), dtype=torch.bool, device=device).tril().expand(B, N, N).contiguous()
    return parent, anc


def verify_greedy(logits, draft_tokens, parent, anc):
    """Greedy verification of a tree (or chain) over the verify logits.

    Args:
        logits: [B * N, vocab] the target's logits for every draft token.
        draft_tokens: [B, N] the tree's tokens (slot 0 the root).
        parent, anc: the tree (:func:`tree_build` or :func:`chain_tree`).

    Returns:
        (accept length [B] (bonus included), index of the deepest accepted node [B], next token [B]).
    """
    B, N = draft_tokens.shape
    pred = torch.argmax(logits, dim=-1).view(B, N)
    correct = torch.gather(pred, 1, parent) == draft_tokens  # a node is right if its parent predicts it
    correct[:, 0] = True
    ok = ~(anc & ~correct.unsqueeze(1)).any(-1)  # every ancestor right
    depth = anc.sum(-1)  # 1 for the root
    best = torch.argmax(torch.where(ok, depth, torch.zeros_like(depth)), dim=-1)
    length = torch.gather(depth, 1, best.unsqueeze(1)).squeeze(1)
    nxt = torch.gather(pred, 1, best.unsqueeze(1)).squeeze(1)
    return length, best, nxt


def verify_sampled(logits, draft_tokens, parent, anc, temperature=1.0):
    """Sampled verification (EAGLE's one-hot draft): keep a node with probability ``p_target(token)``
    given its parent's distribution; sample the next token from the deepest kept node's residual.

    Returns:
        (accept length [B], deepest kept node [B], next token [B]).
    """
    B, N = draft_tokens.shape
    probs = torch.softmax(logits.float() / temperature, dim=-1).view(B, N, -1)
    V = probs.shape[-1]
    flat = ((torch.arange(B, device=logits.device) * N).unsqueeze(1) + parent) * V + draft_tokens
    p_tok = probs.view(-1).gather(0, flat.view(-1)).view(B, N)  # p_target(token | parent)
    coins = torch.rand((B, N), device=logits.device)
    keep = coins < p_tok
    keep[:, 0] = True
    ok = ~(anc & ~keep.unsqueeze(1)).any(-1)
    depth = anc.sum(-1)
    best = torch.argmax(torch.where(ok, depth, torch.zeros_like(depth)), dim=-1)
    length = torch.gather(depth, 1, best.unsqueeze(1)).squeeze(1)
    row = torch.gather(probs, 1, best.view(B, 1, 1).expand(B, 1, probs.shape[-1])).squeeze(1)
    # residual: remove the rejected children's tokens (one-hot draft), renormalise, sample (exponential race)
    residual = row.clone()
    child = (parent == best.unsqueeze(1)) & (torch.arange(N, device=logits.device) > 0)
    residual.scatter_(1, draft_tokens, torch.where(child, torch.zeros_like(p_tok), torch.gather(row, 1, draft_tokens)))
    nxt = torch.argmax(residual / torch.empty_like(residual).exponential_(), dim=-1)
    return length, best, nxt


def kv_accept(req_to_token, out_cache_loc, best, anc, seq_lens):
    """The accepted tokens' KV bookkeeping: write their slots into the request-to-token table after
    each request's context; mark the rest free.

    Args:
        req_to_token: [B, max_len] int32 table.
        out_cache_loc: [B, N] the KV slots the verify wrote.
        best: [B] deepest accepted node; anc: [B, N, N] ancestor mask.
        seq_lens: [B] tokens before the verify.

    Returns:
        (accepted mask [B, N], free mask [B * N]).
    """
    B, N = out_cache_loc.shape
    accepted = torch.gather(anc, 1, best.view(B, 1, 1).expand(B, 1, N)).squeeze(1)  # the path to best
    order = torch.cumsum(accepted.int(), dim=1) - 1
    cols = (seq_lens.unsqueeze(1) + order).clamp(min=0).long()
    cols = torch.where(accepted, cols, torch.full_like(cols, req_to_token.shape[1] - 1))
    req_to_token.scatter_(1, cols, torch.where(accepted, out_cache_loc, req_to_token.gather(1, cols)))
    return accepted, (~accepted).view(-1)


def kv_move(k_pools, v_pools, src, dst):
    """Copy the accepted tokens' K and V (``src`` slots) to ``dst`` slots in every layer's pool."""
    for k, v in zip(k_pools, v_pools):
        k.index_copy_(0, dst, k.index_select(0, src))
        v.index_copy_(0, dst, v.index_select(0, src))


# -- inputs of one (batch, shape) point --------------------------------------------------------------
def candidate_list(B, steps, topk, device, vocab, seed=0):
    """A draft's candidate list as :func:`tree_build` takes it (random scores, valid parents, token ids
    below ``vocab``)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    M = topk + (steps - 1) * topk * topk
    scores = torch.rand((B, M), generator=g)
    parents = torch.full((B, M), -1, dtype=torch.long)
    for s in range(1, steps):  # step s's topk^2 children hang off step s-1's beam
        start = topk + (s - 1) * topk * topk
        prev = topk + (s - 2) * topk * topk if s > 1 else 0
        width = topk * topk if s > 1 else topk
        for j in range(topk * topk):
            parents[:, start + j] = prev + torch.randint(0, width, (B,), generator=g)
        scores[:, start : start + topk * topk] *= 0.5**s  # deeper candidates score lower, as products do
    tokens = torch.randint(0, vocab, (B, M), generator=g)
    return scores.to(device), tokens.to(device), parents.to(device)


class Point:
    """One speculative shape at one batch size: ``steps`` draft steps, ``topk``, ``N`` draft tokens."""

    def __init__(self, name, steps, topk, N):
        self.name, self.steps, self.topk, self.N = name, int(steps), int(topk), int(N)
        if self.topk == 1 and self.N != self.steps + 1:
            raise ValueError("a chain (topk 1) has num_draft_tokens = num_steps + 1")


def _ctx(seqs, q_len, context, shape, device, seed=0):
    p = {"seqs": seqs, "q_len": q_len, "context": context, "tokens": seqs * q_len}
    return tm.Context(p, shape, device=device, seed=seed)


class SpecStep:
    """The whole EAGLE step of one batch on random weights, as callables per part and as one.

    Parts (SGLang 0.5.9 spec v1 order, ``EAGLEWorker.forward_batch_generation``): the draft extend
    over the ``num_steps + 1`` tokens per request left by the last verify (EAGLE-3's fusion FC over the
    target's three hidden states, the draft layer, the LM head over one row per request, top-k), then
    ``num_steps - 1`` draft forwards over ``B x topk`` tokens (LM head and top-k each, tree selection for
    topk > 1: ``draft_forward`` skips the last forward), the tree (topk > 1), the target's verify forward
    over ``B x N`` tokens with logits for all, and greedy acceptance with its KV bookkeeping.
    """

    def __init__(self, target, draft, point, *, batch, context, device, seed=0):
        self.t, self.d, self.p, self.B, self.C = target, draft, point, batch, context
        self.device = device
        B, N, k, steps = batch, point.N, point.topk, point.steps
        self.ctx_extend = _ctx(B, steps + 1, context, draft.s, device, seed)
        self.ctx_draft = [_ctx(B, k, context + i, draft.s, device, seed) for i in range(1, steps)]
        self.ctx_verify = _ctx(B, N, context, target.s, device, seed)
        h = draft.s["hidden"]
        self.fc_in = torch.randn((B * (steps + 1), draft.s["fused_layers"] * h), dtype=draft.dt, device=device)
        if k > 1:
            self.cand = candidate_list(B, steps, k, device, target.s["vocab"], seed)
        else:
            self.chain_parent, self.chain_anc = chain_tree(B, N, device)
            self.chain_tokens = torch.randint(0, target.s["vocab"], (B, N), device=device)
        self.req_to_token = torch.zeros((B, context + N + 1), dtype=torch.int32, device=device)
        self.out_loc = torch.arange(B * N, dtype=torch.int32, device=device).view(B, N)
        self.seq_lens = torch.full((B,), context, dtype=torch.long, device=device)

    # each part returns its tensors so a graph keeps them alive
    def draft_extend(self):
        x = F.linear(self.fc_in, self.d.w_fc)
        for layer in self.d.layers:
            x = layer.forward(x, self.ctx_extend)
        last = x.view(self.B, self.p.steps + 1, -1)[:, -1]
        logits = F.linear(tm._rms_norm(last, self.d.norm), self.d.w_lm)
        return draft_topk(logits, self.p.topk)

    def draft_steps(self):
        B, k = self.B, self.p.topk
        beam = torch.ones((B, k), device=self.device)
        outs = []
        for ctx in self.ctx_draft:
            x = ctx.x
            for layer in self.d.layers:
                x = layer.forward(x, ctx)
            logits = F.linear(tm._rms_norm(x, self.d.norm), self.d.w_lm)
            p, ids = draft_topk(logits, k)
            if k > 1:
                _, beam, _, _ = tree_select(beam, p, ids, k)
            outs.append(ids)
        return outs

    def tree(self):
        if self.p.topk == 1:
            return self.chain_tokens, self.chain_parent, self.chain_anc
        s, t, par = self.cand
        tokens, parent, anc, _, _ = tree_build(s, t, par, self.p.N, self.C)
        return tokens, parent, anc

    def verify_forward(self):
        x = self.ctx_verify.x
        for layer in self.t.layers:
            x = layer.forward(x, self.ctx_verify)
        return F.linear(tm._rms_norm(x, self.t.norm), self.t.w_lm)

    def accept(self, logits, tree):
        tokens, parent, anc = tree
        length, best, nxt = verify_greedy(logits, tokens, parent, anc)
        kv_accept(self.req_to_token, self.out_loc, best, anc, self.seq_lens)
        return length, nxt

    def whole(self):
        first = self.draft_extend()
        drafts = self.draft_steps()
        tree = self.tree()
        logits = self.verify_forward()
        return first, drafts, self.accept(logits, tree)


def decode_step(target, *, batch, context, device, seed=0):
    """A plain decode step's callable: the target over one token per request, LM head, argmax."""
    ctx = _ctx(batch, 1, context, target.s, device, seed)

    def run():
        x = ctx.x
        for layer in target.layers:
            x = layer.forward(x, ctx)
        return torch.argmax(F.linear(tm._rms_norm(x, target.norm), target.w_lm), dim=-1)

    return run, ctx
