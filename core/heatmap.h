/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * heatmap: an attention map over the video patch grid drawn as a colour
 * heat map over a picture of any size (the avattnoverlay element).
 *
 * 1. Reduce one attention map (heads, Tq, Tk) to one value per patch:
 *    avf_heatmap_mean_over_queries() (audio_cross [T, N]: the patches the
 *    audio attends to; video_self [N, N]: the patches every patch attends
 *    to) or avf_heatmap_max_over_keys() (video_cross [N, T]).
 * 2. avf_heatmap_normalise(): divide by the largest value, so the map is in
 *    [0, 1] and the strongest patch is 1.
 * 3. Upsample to the picture, bilinear with the sample centres aligned:
 *    patch (c, r) is centred at ((c + 0.5) W / cols, (r + 0.5) H / rows),
 *    a pixel (x, y) is sampled at its centre (x + 0.5, y + 0.5), and the
 *    border rows and columns extend the outer patches.
 *    ref: torch.nn.functional.interpolate (grid[None, None], size=(H, W),
 *         mode="bilinear", align_corners=False)
 *    The map is made one picture row at a time (avf_heatmap_row()), so the
 *    memory is O(W + H + N) whatever the picture size.
 * 4. Colour and blend: a pixel of map value v moves towards the colour of v
 *    by opacity * v (avf_heatmap_blend()), so where the map is 0 the
 *    picture is untouched.  v is quantised to AVF_HEATMAP_LEVELS levels.
 *
 * Nothing here allocates after avf_heatmap_new() / avf_heatmap_set_grid().
 */
#ifndef AVF_HEATMAP_H
#define AVF_HEATMAP_H

#include <stddef.h>
#include <stdint.h>

#include "avf_error.h"

/* Largest picture side and patch grid that the heat map takes. */
#define AVF_HEATMAP_MAX_SIDE 65536
#define AVF_HEATMAP_MAX_PATCHES 65536

#define AVF_HEATMAP_LEVELS 256

typedef enum {
  AVF_COLORMAP_INFERNO = 0,     /* black - purple - orange - pale yellow */
  AVF_COLORMAP_JET,             /* dark blue - cyan - yellow - dark red */
  AVF_COLORMAP_GRAY             /* black - white */
} AvfColormap;

/* The colour of v (clamped to [0, 1]) as 8-bit R, G, B.
 * ref: matplotlib.cm.inferno (piecewise linear through ten of its
 *      colours), matplotlib.cm.jet, matplotlib.cm.gray. */
void avf_colormap_rgb (uint8_t rgb[3], AvfColormap cmap, float v);

/* The colour and blend weight of every quantised map level, in the
 * picture's own components (R, G, B or Y, U, V). */
typedef struct {
  uint8_t colour[AVF_HEATMAP_LEVELS][3];
  uint16_t alpha[AVF_HEATMAP_LEVELS];   /* 0..256: weight of the colour */
} AvfHeatmapLut;

/* Level i stands for v = i / (AVF_HEATMAP_LEVELS - 1) and gets the colour
 * of v and the weight round(256 * opacity * v); opacity is clamped to
 * [0, 1]. */
void avf_heatmap_lut_rgb (AvfHeatmapLut * lut, AvfColormap cmap,
    double opacity);

/* The same with the colours converted to 8-bit Y'CbCr:
 *   Y' = kr R' + (1 - kr - kb) G' + kb B',
 *   Cb = (B' - Y') / (2 (1 - kb)),  Cr = (R' - Y') / (2 (1 - kr)),
 * quantised as Y = 16 + 219 Y', C = 128 + 224 C (full_range 0) or
 * Y = 255 Y', C = 128 + 255 C (full_range 1), clamped to 0..255.
 * ref: ITU-R BT.601 / BT.709 section 3 (kr, kb: 0.299, 0.114 and
 *      0.2126, 0.0722). */
void avf_heatmap_lut_yuv (AvfHeatmapLut * lut, AvfColormap cmap,
    double opacity, double kr, double kb, int full_range);

/* Reductions of one attention map w (heads, tq, tk) row-major to one value
 * per patch.  head -1 averages the heads, 0 <= head < heads takes one.
 * Rows (resp. keys) whose mask byte is non-zero are left out; mask may be
 * NULL.  They return how many rows (resp. keys) were used: 0 means there
 * is nothing to draw and out is left zero. */

/* out (tk): mean over the heads and the unmasked query rows.
 * ref: w[head or all].mean(0)[~mask].mean(0) */
int avf_heatmap_mean_over_queries (float *out, const float *w,
    const uint8_t * query_mask, int heads, int head, int tq, int tk);

/* The patch (key) a map attends to most, the one definition used by the
 * attention metadata (gst_av_attention_meta_get_strongest_patch), the bus
 * message of avattention and the overlay's marker: the key of the largest
 * sum over the heads (or one head) and the unmasked query rows, the first
 * of equal sums (sums in double; a NaN sum never wins).  *weight gets that
 * sum divided by heads x rows used: the patch's mean weight.  Returns the
 * rows used; 0 (*key, *weight untouched) when every row is masked.
 * ref: w[head or all][:, ~mask].sum((0, 1)).argmax() */
int avf_heatmap_strongest (int *key, double *weight, const float *w,
    const uint8_t * query_mask, int heads, int head, int tq, int tk);

/* out (tq): for each query row, the largest of the unmasked keys of the
 * head mean (or of one head).  A softmax row sums to 1 over the keys, so
 * its mean is the same for every row; the largest weight says how sharply
 * the row picks one key.
 * ref: w[head or all].mean(0)[:, ~mask].amax(1) */
int avf_heatmap_max_over_keys (float *out, const float *w,
    const uint8_t * key_mask, int heads, int head, int tq, int tk);

typedef struct AvfHeatmap AvfHeatmap;

/* A heat map for width x height pictures; 1 <= sides <= MAX_SIDE. */
AvfStatus avf_heatmap_new (AvfHeatmap ** out, int width, int height,
    AvfError * err);
void avf_heatmap_free (AvfHeatmap * hm);

/* Sets the patch grid (cols x rows <= MAX_PATCHES).  Allocates only when
 * the grid changes; the grid values are zero afterwards. */
AvfStatus avf_heatmap_set_grid (AvfHeatmap * hm, int cols, int rows,
    AvfError * err);

/* (rows, cols) row-major: the patch values to fill before normalising. */
float *avf_heatmap_grid (AvfHeatmap * hm);

/* Divides the grid by its largest value (negative values become 0).
 * Returns 1 and the strongest patch (the first one of the largest value)
 * in *column, *row; 0 when the largest value is not positive or a value is
 * not finite: then there is nothing to draw and the grid is zero. */
int avf_heatmap_normalise (AvfHeatmap * hm, int *column, int *row);

/* (width): the upsampled map of picture row y (0 <= y < height), in
 * [0, 1].  Valid until the next call. */
const float *avf_heatmap_row (AvfHeatmap * hm, int y);

/* One plane of a picture in memory: (height, width) pixels of
 * pixel_stride bytes, rows stride bytes apart.  Plane pixel (x, y) covers
 * the picture pixels from (x << x_shift, y << y_shift) (subsampled
 * chroma).  Component k of a pixel is the byte at offset[k] and takes
 * channel[k] (0, 1 or 2: R, G, B or Y, U, V) of the colours. */
typedef struct {
  uint8_t *data;
  size_t stride;
  int width, height;
  int pixel_stride;
  int x_shift, y_shift;
  int n_components;             /* 1..3 */
  int offset[3];
  int channel[3];
} AvfHeatmapPlane;

/* Blends the normalised, upsampled map over a plane:
 *   p = (p (256 - a) + c a + 128) / 256,  c = lut->colour[level][channel],
 *   a = lut->alpha[level],  level = round(v * (LEVELS - 1))
 * where v is the map at the plane pixel's first picture pixel.  Pixels of
 * level 0 stay byte-identical. */
void avf_heatmap_blend (AvfHeatmap * hm, const AvfHeatmapPlane * plane,
    const AvfHeatmapLut * lut);

/* The marker of patch (column, row): a square outline centred on the
 * patch centre, its side half the smaller patch side (at least 4 pixels),
 * its line a quarter of that side wide (at least 1), clipped to the
 * picture.  Pixels (x0 <= x < x1, y0 <= y < y1) on the outline: those of
 * the outer square outside the inner one (inner_*).  */
typedef struct {
  int x0, y0, x1, y1;
  int inner_x0, inner_y0, inner_x1, inner_y1;
} AvfHeatmapMarker;

void avf_heatmap_marker (const AvfHeatmap * hm, AvfHeatmapMarker * m,
    int column, int row);

/* Paints the marker of patch (column, row) over a plane in the colour
 * colour[channel] (channel as in the plane).  A subsampled plane pixel is
 * painted when one of the picture pixels it covers is on the outline. */
void avf_heatmap_draw_marker (const AvfHeatmap * hm,
    const AvfHeatmapPlane * plane, const uint8_t colour[3], int column,
    int row);

#endif /* AVF_HEATMAP_H */
