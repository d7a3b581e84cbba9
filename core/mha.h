/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * mha: multi-head attention with torch.nn.MultiheadAttention semantics.
 *
 * ref: torch.nn.MultiheadAttention(E, H, batch_first=True)(q, k, v,
 *        key_padding_mask=mask, need_weights=True,
 *        average_attn_weights=(mode == AVF_ATTN_MEAN))
 *
 * Softmax subtracts the row maximum.  A row whose keys are all masked gives
 * zero weights and a zero context (PyTorch gives NaN there); the fusion
 * layer never relies on such rows (spec §3 skips the module instead).
 */
#ifndef AVF_MHA_H
#define AVF_MHA_H

#include <stdint.h>

#include "weights.h"

typedef enum {
  AVF_ATTN_NONE = 0,            /* no weights out */
  AVF_ATTN_MEAN,                /* (Tq, Tk), mean over heads */
  AVF_ATTN_PER_HEAD             /* (H, Tq, Tk) */
} AvfAttnMode;

typedef struct AvfMha AvfMha;

/* Workspace for queries up to Tq_max and keys up to Tk_max. */
AvfStatus avf_mha_new (AvfMha ** out, int E, int H, int Tq_max, int Tk_max,
    AvfError * err);
void avf_mha_free (AvfMha * mha);

/* out: (Tq, E); attn: see AvfAttnMode, or NULL with AVF_ATTN_NONE;
 * xq: (Tq, E); xkv: (Tk, E); key_mask: (Tk), nonzero = ignore that key,
 * or NULL.  Tq <= Tq_max, Tk <= Tk_max.  Does not allocate. */
void avf_mha_forward (AvfMha * mha, float *out, float *attn,
    AvfAttnMode mode, const float *xq, int Tq, const float *xkv, int Tk,
    const uint8_t * key_mask, const AvfMhaWeights * w);

/* Row-wise softmax over n columns of each of `rows` rows, in place, with
 * optional key mask (nonzero = masked, weight 0).  ref: torch.softmax */
void avf_softmax_rows (float *x, int rows, int n, const uint8_t * mask);

#endif /* AVF_MHA_H */
