#pragma once
// Causal attention of one (sequence, head) on the CPU: the kernels behind CpuBackend's
// attention_forward and attention_backward, which run one call per (sequence, head).

namespace onegpu::trainer {

// base: the sequence's first qkv row (S rows of `row` floats: q, k and v, D each); head h's
// columns of those. P: head h's [S, S] probabilities (written, zero above the diagonal).
// out_rows: [S, D] rows; head h's dh columns are written.
void attention_head_forward(const float* base, long row, int D, int h, int S, int dh, float scale, float* P,
                            float* out_rows);

// dbase: the gradient at base, laid out like it; head h's q, k and v columns are written (not
// added to). dout_rows: the gradient at out_rows.
void attention_head_backward(const float* base, float* dbase, long row, int D, int h, int S, int dh, float scale,
                             const float* P, const float* dout_rows);

}  // namespace onegpu::trainer
