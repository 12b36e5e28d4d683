#!/usr/bin/env python3
"""The same tiny MoE transformer as onegpu's `story` and `scale` presets, in PyTorch eager
(CPU, fp32), trained on random tokens like bench_train. Prints one line per run:
    torch model=story threads=1 tokens_per_s=...
Usage: torch_moe.py [steps] [story|scale] [threads] (default: every model on 1 and 2 threads).
Needs Debian's python3-torch (run with /usr/bin/python3). run.sh calls it one model and thread
count at a time, alternating with bench_train."""
import math
import sys
import time

import torch
import torch.nn.functional as F

WINDOWS = 5

PRESETS = {
    # vocab, d_model, heads, layers, experts, top_k, expert_hidden, seq_len
    "story": dict(V=1024, D=64, H=4, L=4, E=16, k=2, X=128, S=64),
    "scale": dict(V=1024, D=64, H=4, L=32, E=64, k=2, X=64, S=64),
}


class RMSNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.g = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.g


def rope_tables(S, dh):  # cos and sin [S, dh/2], computed once per model
    half = dh // 2
    inv = 10000.0 ** (-2.0 * torch.arange(half) / dh)
    ang = torch.arange(S)[:, None] * inv[None, :]
    return ang.cos(), ang.sin()


def rope(x, c, s):  # x: [B, H, S, dh]
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


class Block(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        D, E, X = p["D"], p["E"], p["X"]
        self.p = p
        self.n1, self.n2 = RMSNorm(D), RMSNorm(D)
        self.qkv = torch.nn.Linear(D, 3 * D, bias=False)
        self.wo = torch.nn.Linear(D, D, bias=False)
        self.router = torch.nn.Linear(D, E, bias=False)
        # One parameter per expert, as an MoE is usually written in PyTorch: indexing one stacked
        # [E, D, X] tensor per expert would make autograd build and add a full-size zero
        # gradient for every expert (select_backward), which made this baseline unfairly slow.
        self.w1 = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(D, X) / math.sqrt(D)) for _ in range(E)])
        self.w2 = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(X, D) / math.sqrt(X)) for _ in range(E)])

    def forward(self, x, cos, sin, mask):
        B, S, D = x.shape
        H = self.p["H"]
        dh = D // H
        q, k, v = self.qkv(self.n1(x)).view(B, S, 3, H, dh).permute(2, 0, 3, 1, 4)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.wo((att @ v).transpose(1, 2).reshape(B, S, D))
        h = self.n2(x).reshape(B * S, D)
        logits = self.router(h)
        probs = logits.softmax(-1)
        top_p, top_e = probs.topk(self.p["k"], dim=-1)
        gates = top_p / top_p.sum(-1, keepdim=True)
        out = torch.zeros_like(h)
        E = self.p["E"]
        counts = torch.zeros(E)
        for e in range(E):
            tok, slot = (top_e == e).nonzero(as_tuple=True)
            counts[e] = tok.numel()
            if tok.numel() == 0:
                continue
            y = F.silu(h[tok] @ self.w1[e]) @ self.w2[e]
            out.index_add_(0, tok, y * gates[tok, slot].unsqueeze(-1))
        f = counts / counts.sum()
        aux = 0.01 * E * (f * probs.mean(0)).sum() + 0.001 * torch.logsumexp(logits, -1).pow(2).mean()
        return x + out.view(B, S, D), aux


class Model(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.emb = torch.nn.Embedding(p["V"], p["D"])
        self.blocks = torch.nn.ModuleList([Block(p) for _ in range(p["L"])])
        self.nf = RMSNorm(p["D"])
        self.head = torch.nn.Linear(p["D"], p["V"], bias=False)
        # Constants shared by every block, made once (not per call): rotary tables, causal mask.
        self.cos, self.sin = rope_tables(p["S"], p["D"] // p["H"])
        self.mask = torch.triu(torch.ones(p["S"], p["S"], dtype=torch.bool), 1)

    def forward(self, x, y):
        h, aux = self.emb(x), 0.0
        S = x.shape[1]
        cos, sin, mask = self.cos[:S], self.sin[:S], self.mask[:S, :S]
        for b in self.blocks:
            h, a = b(h, cos, sin, mask)
            aux = aux + a
        logits = self.head(self.nf(h))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1)) + aux


def run(name, threads, steps):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    p = PRESETS[name]
    m = Model(p)
    params = list(m.parameters())
    # foreach: one multi-tensor kernel per moment instead of a Python loop over the 4,000+
    # tensors of `scale` (the experts are separate parameters).
    opt = torch.optim.AdamW(params, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1, foreach=True)
    B, S = 4, p["S"]
    x = torch.randint(0, p["V"], (B, S))
    y = torch.randint(0, p["V"], (B, S))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = m(x, y)
        loss.backward()
        # clip_grad_norm_(params, 1.0) with multi-tensor ops (1.13's own loops over tensors).
        grads = [q.grad for q in params if q.grad is not None]
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        torch._foreach_mul_(grads, torch.clamp(1.0 / (norm + 1e-6), max=1.0).item())
        opt.step()
        return loss

    step()
    best = float("inf")
    for _ in range(WINDOWS):  # best of WINDOWS timed windows, as bench_train does
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, time.perf_counter() - t0)
    s = best
    print(f"torch model={name} threads={threads} tokens_per_s={steps * B * S / s:.0f}", flush=True)


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    only = sys.argv[2] if len(sys.argv) > 2 else None
    for name in ("story", "scale"):
        for threads in (1, 2):
            if only and only != name or len(sys.argv) > 3 and threads != int(sys.argv[3]):
                continue
            run(name, threads, steps if name == "story" else max(3, steps // 4))
