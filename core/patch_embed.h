/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * patch_embed: image patches to tokens (spec §2).
 *
 * ref: (torch.nn.Conv2d(3, E, P, stride=P)(x).flatten(2).transpose(1, 2)
 *       + video_pos), x = ((rgb / 255) - mean) / std, with
 *       mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225).
 * Token n = gy * (W / P) + gx; a patch flattens in (c, ky, kx) order.
 */
#ifndef AVF_PATCH_EMBED_H
#define AVF_PATCH_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "weights.h"

/* Where R, G and B sit in one packed pixel of `bpp` bytes. */
typedef struct {
  int bpp;                      /* bytes per pixel: 3 or 4 */
  int r, g, b;                  /* byte offsets within a pixel */
} AvfPixelLayout;

/* RGB: {3, 0, 1, 2} */
AvfPixelLayout avf_pixel_layout_rgb (void);

typedef struct AvfPatchEmbed AvfPatchEmbed;

/* Checks that width and height are multiples of P and that the grid has
 * exactly N patches; makes the (N, 3 P P) workspace. */
AvfStatus avf_patch_embed_new (AvfPatchEmbed ** out, const AvfWeights * w,
    int width, int height, AvfError * err);
void avf_patch_embed_free (AvfPatchEmbed * pe);

void avf_patch_embed_grid (const AvfPatchEmbed * pe, int *cols, int *rows);

/* out: (N, E); pixels: height rows of `stride` bytes, each holding width
 * packed pixels in `layout`.  Does not allocate. */
void avf_patch_embed_forward (AvfPatchEmbed * pe, float *out,
    const uint8_t * pixels, size_t stride, AvfPixelLayout layout);

/* The same with the N output rows `ldo` floats apart (ldo >= E), e.g.
 * the first E columns of model/avfusion2.py's [N, E + D] embed_video rows
 * (e_n then r_n; avpatchembed emits e_n as its [N, E] tensor and r_n in a
 * GstAvRhythmMeta). */
void avf_patch_embed_forward_rows (AvfPatchEmbed * pe, float *out,
    size_t ldo, const uint8_t * pixels, size_t stride,
    AvfPixelLayout layout);

/* (N, 3 P P): the normalised pixels of each patch of the last forward, in
 * (c, ky, kx) order (what avfusion-v2's rhythm map pools, rhythm.h). */
const float *avf_patch_embed_patches (const AvfPatchEmbed * pe);

#endif /* AVF_PATCH_EMBED_H */
