/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "patch_embed.h"

#include <stdlib.h>
#include <string.h>

#include <cblas.h>

/* ImageNet statistics, spec §2 (torchvision's Normalize defaults) */
static const float avf_rgb_mean[3] = { 0.485f, 0.456f, 0.406f };
static const float avf_rgb_std[3] = { 0.229f, 0.224f, 0.225f };

struct AvfPatchEmbed
{
  const AvfWeights *w;
  int width, height, cols, rows;
  float lut[3][256];            /* ((x / 255) - mean_c) / std_c, as torch does it */
  float *patches;               /* (N, 3 P P) */
};

AvfPixelLayout
avf_pixel_layout_rgb (void)
{
  AvfPixelLayout l = { 3, 0, 1, 2 };
  return l;
}

void
avf_patch_embed_free (AvfPatchEmbed * pe)
{
  if (pe == NULL)
    return;
  free (pe->patches);
  free (pe);
}

AvfStatus
avf_patch_embed_new (AvfPatchEmbed ** out, const AvfWeights * w, int width,
    int height, AvfError * err)
{
  const AvfConfig *c = &w->cfg;
  if (width <= 0 || height <= 0 || width % c->P != 0 || height % c->P != 0)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "a %dx%d picture cannot be cut into %dx%d patches: width and "
        "height must be multiples of %d", width, height, c->P, c->P, c->P);
  const int cols = width / c->P, rows = height / c->P;
  if ((int64_t) cols * rows != c->N)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "a %dx%d picture gives %d x %d = %lld patches, but the weights have "
        "positions for %d (video_pos)", width, height, cols, rows,
        (long long) cols * rows, c->N);

  AvfPatchEmbed *pe = calloc (1, sizeof *pe);
  if (pe == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  pe->w = w;
  pe->width = width;
  pe->height = height;
  pe->cols = cols;
  pe->rows = rows;
  pe->patches = malloc ((size_t) c->N * 3 * c->P * c->P * sizeof (float));
  if (pe->patches == NULL) {
    avf_patch_embed_free (pe);
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  }
  for (int ch = 0; ch < 3; ch++)
    for (int x = 0; x < 256; x++)
      pe->lut[ch][x] = ((float) x / 255.0f - avf_rgb_mean[ch])
          / avf_rgb_std[ch];
  *out = pe;
  return AVF_OK;
}

void
avf_patch_embed_grid (const AvfPatchEmbed * pe, int *cols, int *rows)
{
  *cols = pe->cols;
  *rows = pe->rows;
}

void
avf_patch_embed_forward (AvfPatchEmbed * pe, float *out,
    const uint8_t * pixels, size_t stride, AvfPixelLayout layout)
{
  avf_patch_embed_forward_rows (pe, out, (size_t) pe->w->cfg.E, pixels,
      stride, layout);
}

const float *
avf_patch_embed_patches (const AvfPatchEmbed * pe)
{
  return pe->patches;
}

void
avf_patch_embed_forward_rows (AvfPatchEmbed * pe, float *out, size_t ldo,
    const uint8_t * pixels, size_t stride, AvfPixelLayout layout)
{
  const AvfWeights *w = pe->w;
  const int P = w->cfg.P, E = w->cfg.E, N = w->cfg.N, K = 3 * P * P;
  const int off[3] = { layout.r, layout.g, layout.b };

  /* im2col: patch n, channel c, row ky, column kx */
  for (int gy = 0; gy < pe->rows; gy++) {
    for (int gx = 0; gx < pe->cols; gx++) {
      float *p = pe->patches + (size_t) (gy * pe->cols + gx) * K;
      for (int ky = 0; ky < P; ky++) {
        const uint8_t *src = pixels + (size_t) (gy * P + ky) * stride
            + (size_t) gx * P * layout.bpp;
        for (int ch = 0; ch < 3; ch++) {
          float *dst = p + ch * P * P + ky * P;
          const float *lut = pe->lut[ch];
          for (int kx = 0; kx < P; kx++)
            dst[kx] = lut[src[kx * layout.bpp + off[ch]]];
        }
      }
    }
  }
  /* out = patches @ W^T + bias + video_pos */
  for (int n = 0; n < N; n++) {
    float *o = out + (size_t) n * ldo;
    const float *pos = w->video_pos + (size_t) n * E;
    for (int e = 0; e < E; e++)
      o[e] = w->patch_embed_bias[e] + pos[e];
  }
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, N, E, K, 1.0f,
      pe->patches, K, w->patch_embed_weight, K, 1.0f, out, (int) ldo);
}
