#!/usr/bin/env python3
"""The PyTorch eager baseline for bench_train_gpu: torch_moe.py's model (the same one as onegpu's
presets) on the GPU, fp32 and TF32 matmuls, random tokens, best of 3 windows of `steps` steps,
each ended by torch.cuda.synchronize(). Prints one line per run:
    torch_gpu model=wide batch=8 math=tf32 tokens_per_s=...
Usage: torch_moe_gpu.py [steps] [story|wide]. Needs PyTorch >= 2.0 with CUDA (exit 2 without)."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_moe  # noqa: E402

torch_moe.PRESETS["wide"] = dict(V=1024, D=1024, H=16, L=4, E=8, k=2, X=2048, S=1024)
BATCH = {"story": 64, "wide": 8}


def run(name, steps, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.manual_seed(1)
    p = torch_moe.PRESETS[name]
    m = torch_moe.Model(p)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    B, S = BATCH[name], p["S"]
    x = torch.randint(0, p["V"], (B, S))
    y = torch.randint(0, p["V"], (B, S))

    def step():
        opt.zero_grad()
        loss = m(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()

    step()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    print(f"torch_gpu model={name} batch={B} math={'tf32' if tf32 else 'fp32'} "
          f"tokens_per_s={steps * B * S / best:.0f}", flush=True)


if __name__ == "__main__":
    if not torch.cuda.is_available() or not hasattr(torch, "set_default_device"):
        print("torch_moe_gpu: needs PyTorch >= 2.0 with a CUDA device", file=sys.stderr)
        sys.exit(2)
    torch.set_default_device("cuda")  # every tensor torch_moe creates (masks, angles) lands there
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    for name in ("story", "wide"):
        if only and only != name:
            continue
        for tf32 in (False, True):
            run(name, steps, tf32)
