/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Heat map of an attention map over a picture: reductions, normalisation,
 * bilinear upsampling with aligned centres, colour maps and blending.
 */
#include "avf_test.h"
#include "heatmap.h"

#include <stdint.h>

/* torch.nn.functional.interpolate(mode="bilinear", align_corners=False)
 * of a delta at cell c of n cells, sampled by pixel i of n_out: the tent
 * around the source coordinate clamped to [0, n - 1]. */
static double
tent (int i, int n_out, int n, int c)
{
  double s = (i + 0.5) * n / n_out - 0.5;
  if (s < 0.0)
    s = 0.0;
  if (s > n - 1)
    s = n - 1;
  double d = fabs (s - c);
  return d < 1.0 ? 1.0 - d : 0.0;
}

static AvfHeatmap *
delta_map (int w, int h, int cols, int rows, int c, int r)
{
  AvfHeatmap *hm = NULL;
  AvfError err;
  AVF_CHECK (avf_heatmap_new (&hm, w, h, &err) == AVF_OK, "new: %s",
      err.message);
  if (hm == NULL)
    return NULL;
  AVF_CHECK (avf_heatmap_set_grid (hm, cols, rows, &err) == AVF_OK,
      "set_grid: %s", err.message);
  avf_heatmap_grid (hm)[r * cols + c] = 0.25f;
  int cc = -1, rr = -1;
  AVF_CHECK (avf_heatmap_normalise (hm, &cc, &rr) == 1, "normalise");
  AVF_CHECK (cc == c && rr == r, "strongest patch (%d, %d), expected "
      "(%d, %d)", cc, rr, c, r);
  return hm;
}

static void
test_delta_peaks_at_patch_centre (void)
{
  /* 64x48 picture, 4x3 grid: 16x16 patches, patch (2, 1) centred at
   * (40, 24), between pixels 39 and 40 and rows 23 and 24 */
  enum { W = 64, H = 48 };
  AvfHeatmap *hm = delta_map (W, H, 4, 3, 2, 1);
  if (hm == NULL)
    return;
  double err = 0.0, best = -1.0;
  int bx0 = W, bx1 = -1, by0 = H, by1 = -1;
  for (int y = 0; y < H; y++) {
    const float *row = avf_heatmap_row (hm, y);
    for (int x = 0; x < W; x++) {
      double ref = tent (x, W, 4, 2) * tent (y, H, 3, 1);
      err = fmax (err, fabs (row[x] - ref));
      if (row[x] > best + 1e-6) {
        best = row[x];
        bx0 = bx1 = x;
        by0 = by1 = y;
      } else if (fabs (row[x] - best) <= 1e-6) {
        bx0 = x < bx0 ? x : bx0;
        bx1 = x > bx1 ? x : bx1;
        by0 = y < by0 ? y : by0;
        by1 = y > by1 ? y : by1;
      }
    }
  }
  AVF_CHECK (err < 1e-6, "upsampling differs from the bilinear reference "
      "by %g", err);
  AVF_CHECK (bx0 == 39 && bx1 == 40 && by0 == 23 && by1 == 24,
      "peak over x %d..%d, y %d..%d; expected 39..40, 23..24", bx0, bx1,
      by0, by1);
  /* (1 - 1/32)^2 at the four pixels around the centre */
  AVF_CHECK (fabs (best - (31.0 / 32) * (31.0 / 32)) < 1e-6, "peak %g",
      best);
  /* a pixel in patch (0, 0) gets nothing; nor does the pixel left of the
   * neighbour patch's centre (24, 24): the tent is two patches wide */
  AVF_CHECK (avf_heatmap_row (hm, 2)[2] == 0.0f, "far pixel %g",
      avf_heatmap_row (hm, 2)[2]);
  AVF_CHECK (avf_heatmap_row (hm, 24)[23] == 0.0f, "neighbour centre %g",
      avf_heatmap_row (hm, 24)[23]);
  AVF_CHECK (avf_heatmap_row (hm, 24)[24] > 0.0f, "right of the "
      "neighbour centre %g", avf_heatmap_row (hm, 24)[24]);
  avf_heatmap_free (hm);
}

static void
test_large_picture_small_grid (void)
{
  /* 1280x720 from 14x14, a delta at (9, 4): the peak lies in the patch
   * [9 * 1280 / 14, 10 * 1280 / 14) x [4 * 720 / 14, 5 * 720 / 14) */
  enum { W = 1280, H = 720, C = 14, R = 14 };
  AvfHeatmap *hm = delta_map (W, H, C, R, 9, 4);
  if (hm == NULL)
    return;
  double best = -1.0, sx = 0.0, sy = 0.0;
  int n = 0;
  for (int y = 0; y < H; y++) {
    const float *row = avf_heatmap_row (hm, y);
    for (int x = 0; x < W; x++) {
      if (row[x] > best + 1e-6) {
        best = row[x];
        sx = sy = 0.0;
        n = 0;
      }
      if (fabs (row[x] - best) <= 1e-6) {
        sx += x + 0.5;
        sy += y + 0.5;
        n++;
      }
    }
  }
  sx /= n;
  sy /= n;
  AVF_CHECK (fabs (sx - 9.5 * W / C) < 0.5 && fabs (sy - 4.5 * H / R) < 0.5,
      "peak centred at (%.2f, %.2f), expected (%.2f, %.2f)", sx, sy,
      9.5 * W / C, 4.5 * H / R);
  AVF_CHECK (best > 0.98, "peak %g", best);
  avf_heatmap_free (hm);
}

static void
test_constant_grid_is_flat (void)
{
  AvfHeatmap *hm = NULL;
  AvfError err;
  AVF_CHECK (avf_heatmap_new (&hm, 37, 23, &err) == AVF_OK, "new");
  if (hm == NULL)
    return;
  AVF_CHECK (avf_heatmap_set_grid (hm, 5, 4, &err) == AVF_OK, "grid");
  for (int i = 0; i < 20; i++)
    avf_heatmap_grid (hm)[i] = 3.0f;
  AVF_CHECK (avf_heatmap_normalise (hm, NULL, NULL) == 1, "normalise");
  double e = 0.0;
  for (int y = 0; y < 23; y++)
    for (int x = 0; x < 37; x++)
      e = fmax (e, fabs (avf_heatmap_row (hm, y)[x] - 1.0));
  AVF_CHECK (e < 1e-6, "a constant grid gives a map %g away from 1", e);
  /* 1x1 picture, 1x1 grid */
  AvfHeatmap *one = NULL;
  AVF_CHECK (avf_heatmap_new (&one, 1, 1, &err) == AVF_OK, "1x1");
  if (one) {
    AVF_CHECK (avf_heatmap_set_grid (one, 1, 1, &err) == AVF_OK, "1x1 grid");
    avf_heatmap_grid (one)[0] = 0.5f;
    AVF_CHECK (avf_heatmap_normalise (one, NULL, NULL) == 1, "1x1 norm");
    AVF_CHECK (avf_heatmap_row (one, 0)[0] == 1.0f, "1x1 value %g",
        avf_heatmap_row (one, 0)[0]);
  }
  avf_heatmap_free (one);
  avf_heatmap_free (hm);
}

static void
test_normalise (void)
{
  AvfHeatmap *hm = NULL;
  AvfError err;
  AVF_CHECK (avf_heatmap_new (&hm, 8, 8, &err) == AVF_OK, "new");
  if (hm == NULL)
    return;
  AVF_CHECK (avf_heatmap_set_grid (hm, 2, 2, &err) == AVF_OK, "grid");
  float *g = avf_heatmap_grid (hm);
  g[0] = 0.1f;
  g[1] = -0.1f;
  g[2] = 0.2f;
  g[3] = 0.4f;
  int c = -1, r = -1;
  AVF_CHECK (avf_heatmap_normalise (hm, &c, &r) == 1, "normalise");
  const float want[4] = { 0.25f, 0.0f, 0.5f, 1.0f };
  AVF_CHECK_CLOSE (g, want, 4, 1e-7, "normalised grid");
  AVF_CHECK (c == 1 && r == 1, "strongest (%d, %d)", c, r);
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 8; x++) {
      float v = avf_heatmap_row (hm, y)[x];
      AVF_CHECK (v >= 0.0f && v <= 1.0f, "map value %g at (%d, %d)", v, x,
          y);
    }

  /* nothing to draw: all zero, negative, NaN or infinite */
  const float bad[4][4] = {
    {0, 0, 0, 0}, {-1, -2, 0, 0}, {1, NAN, 0, 0}, {1, 0, INFINITY, 0},
  };
  for (int k = 0; k < 4; k++) {
    AVF_CHECK (avf_heatmap_set_grid (hm, 2, 2, &err) == AVF_OK, "grid");
    memcpy (avf_heatmap_grid (hm), bad[k], sizeof bad[k]);
    AVF_CHECK (avf_heatmap_normalise (hm, &c, &r) == 0,
        "grid %d should give nothing to draw", k);
    AVF_CHECK (avf_heatmap_row (hm, 4)[4] == 0.0f, "grid %d map %g", k,
        avf_heatmap_row (hm, 4)[4]);
  }
  /* a new grid size reallocates; a new grid starts at zero */
  AVF_CHECK (avf_heatmap_set_grid (hm, 3, 1, &err) == AVF_OK, "regrid");
  for (int i = 0; i < 3; i++)
    AVF_CHECK (avf_heatmap_grid (hm)[i] == 0.0f, "fresh grid not zero");
  avf_heatmap_free (hm);
}

static void
test_reductions (void)
{
  /* w: 2 heads, 3 queries, 2 keys */
  const float w[2 * 3 * 2] = {
    0.9f, 0.1f, 0.5f, 0.5f, 0.2f, 0.8f,
    0.7f, 0.3f, 0.1f, 0.9f, 0.6f, 0.4f,
  };
  const uint8_t mask[3] = { 0, 1, 0 };
  float out[3];

  /* head mean over rows 0 and 2: key 0 = (0.9 + 0.2 + 0.7 + 0.6) / 4 */
  AVF_CHECK (avf_heatmap_mean_over_queries (out, w, mask, 2, -1, 3, 2) == 2,
      "rows used");
  const float mq[2] = { 0.6f, 0.4f };
  AVF_CHECK_CLOSE (out, mq, 2, 1e-6, "mean over unmasked queries");
  /* head 1 only, no mask: key 0 = (0.7 + 0.1 + 0.6) / 3 */
  AVF_CHECK (avf_heatmap_mean_over_queries (out, w, NULL, 2, 1, 3, 2) == 3,
      "rows used, no mask");
  const float mq1[2] = { 1.4f / 3, 1.6f / 3 };
  AVF_CHECK_CLOSE (out, mq1, 2, 1e-6, "one head");
  const uint8_t all[3] = { 1, 1, 1 };
  AVF_CHECK (avf_heatmap_mean_over_queries (out, w, all, 2, -1, 3, 2) == 0,
      "all rows masked");
  AVF_CHECK (out[0] == 0.0f && out[1] == 0.0f, "masked output not zero");
  AVF_CHECK (avf_heatmap_mean_over_queries (out, w, NULL, 2, 2, 3, 2) == 0,
      "head out of range");

  /* max over keys of the head mean: rows (0.8, 0.2), (0.3, 0.7), (0.4,
   * 0.6); key 1 masked leaves key 0 */
  AVF_CHECK (avf_heatmap_max_over_keys (out, w, NULL, 2, -1, 3, 2) == 2,
      "keys used");
  const float mk[3] = { 0.8f, 0.7f, 0.6f };
  AVF_CHECK_CLOSE (out, mk, 3, 1e-6, "max over keys");
  const uint8_t kmask[2] = { 0, 1 };
  AVF_CHECK (avf_heatmap_max_over_keys (out, w, kmask, 2, -1, 3, 2) == 1,
      "keys used, masked");
  const float mk0[3] = { 0.8f, 0.3f, 0.4f };
  AVF_CHECK_CLOSE (out, mk0, 3, 1e-6, "max over unmasked keys");
  const uint8_t kall[2] = { 1, 1 };
  AVF_CHECK (avf_heatmap_max_over_keys (out, w, kall, 2, -1, 3, 2) == 0,
      "all keys masked");
}

static void
test_colormap_endpoints (void)
{
  uint8_t c[3];
#define RGB_IS(cm, v, r, g, b) do {                                     \
    avf_colormap_rgb (c, cm, v);                                        \
    AVF_CHECK (c[0] == r && c[1] == g && c[2] == b,                     \
        #cm " at %g is (%d, %d, %d), expected (%d, %d, %d)", (double) v, \
        c[0], c[1], c[2], r, g, b);                                     \
  } while (0)
  /* matplotlib: inferno(0) = #000004, inferno(1) = #fcffa4 */
  RGB_IS (AVF_COLORMAP_INFERNO, 0.0f, 0, 0, 4);
  RGB_IS (AVF_COLORMAP_INFERNO, 1.0f, 252, 255, 164);
  RGB_IS (AVF_COLORMAP_INFERNO, 5.0f / 9, 0xcf, 0x44, 0x46);
  /* jet(0) = (0, 0, 0.5), jet(1) = (0.5, 0, 0), jet(0.5) = (.48, 1, .48) */
  RGB_IS (AVF_COLORMAP_JET, 0.0f, 0, 0, 128);
  RGB_IS (AVF_COLORMAP_JET, 1.0f, 128, 0, 0);
  RGB_IS (AVF_COLORMAP_JET, 0.5f, 123, 255, 123);
  RGB_IS (AVF_COLORMAP_GRAY, 0.0f, 0, 0, 0);
  RGB_IS (AVF_COLORMAP_GRAY, 1.0f, 255, 255, 255);
  RGB_IS (AVF_COLORMAP_GRAY, 0.5f, 128, 128, 128);
  /* out of range and NaN clamp */
  RGB_IS (AVF_COLORMAP_INFERNO, -3.0f, 0, 0, 4);
  RGB_IS (AVF_COLORMAP_INFERNO, 7.0f, 252, 255, 164);
  RGB_IS (AVF_COLORMAP_GRAY, NAN, 0, 0, 0);
#undef RGB_IS

  /* inferno gets lighter all the way (it is perceptually ordered) */
  int prev = -1, monotonic = 1;
  for (int i = 0; i <= 100; i++) {
    avf_colormap_rgb (c, AVF_COLORMAP_INFERNO, i / 100.0f);
    int l = 299 * c[0] + 587 * c[1] + 114 * c[2];
    monotonic &= l >= prev;
    prev = l;
  }
  AVF_CHECK (monotonic, "inferno luma is not monotonic");
}

static void
test_luts (void)
{
  AvfHeatmapLut lut;

  avf_heatmap_lut_rgb (&lut, AVF_COLORMAP_INFERNO, 0.5);
  AVF_CHECK (lut.alpha[0] == 0, "alpha of level 0 is %d", lut.alpha[0]);
  AVF_CHECK (lut.alpha[255] == 128, "alpha of the top level is %d",
      lut.alpha[255]);
  AVF_CHECK (lut.colour[255][0] == 252 && lut.colour[255][2] == 164,
      "top colour");
  avf_heatmap_lut_rgb (&lut, AVF_COLORMAP_GRAY, 7.0);
  AVF_CHECK (lut.alpha[255] == 256, "opacity clamps to 1: %d",
      lut.alpha[255]);
  avf_heatmap_lut_rgb (&lut, AVF_COLORMAP_GRAY, 0.0);
  int any = 0;
  for (int i = 0; i < AVF_HEATMAP_LEVELS; i++)
    any |= lut.alpha[i];
  AVF_CHECK (any == 0, "opacity 0 must give no weight");

  /* BT.601 limited range: black 16/128/128, white 235/128/128 */
  avf_heatmap_lut_yuv (&lut, AVF_COLORMAP_GRAY, 1.0, 0.299, 0.114, 0);
  AVF_CHECK (lut.colour[0][0] == 16 && lut.colour[0][1] == 128
      && lut.colour[0][2] == 128, "black is %d/%d/%d", lut.colour[0][0],
      lut.colour[0][1], lut.colour[0][2]);
  AVF_CHECK (lut.colour[255][0] == 235 && lut.colour[255][1] == 128
      && lut.colour[255][2] == 128, "white is %d/%d/%d", lut.colour[255][0],
      lut.colour[255][1], lut.colour[255][2]);
  avf_heatmap_lut_yuv (&lut, AVF_COLORMAP_GRAY, 1.0, 0.2126, 0.0722, 1);
  AVF_CHECK (lut.colour[255][0] == 255 && lut.colour[0][0] == 0,
      "full range white %d black %d", lut.colour[255][0], lut.colour[0][0]);
  /* jet's top, dark red (128, 0, 0), BT.601 limited:
   * Y = 16 + 219 * .299 * 128/255, Cr = 128 + 224 * (R - Y) / 1.402 */
  avf_heatmap_lut_yuv (&lut, AVF_COLORMAP_JET, 1.0, 0.299, 0.114, 0);
  const double r = 128.0 / 255, y = 0.299 * r;
  const int ey = (int) (16 + 219 * y + 0.5);
  const int eu = (int) (128 + 224 * (-y) / 1.772 + 0.5);
  const int ev = (int) (128 + 224 * (r - y) / 1.402 + 0.5);
  AVF_CHECK (lut.colour[255][0] == ey && lut.colour[255][1] == eu
      && lut.colour[255][2] == ev, "dark red is %d/%d/%d, expected "
      "%d/%d/%d", lut.colour[255][0], lut.colour[255][1],
      lut.colour[255][2], ey, eu, ev);
}

static void
test_blend_packed_rgb (void)
{
  /* 64x48 BGRx-like picture (offsets R 2, G 1, B 0, pad 3), grey 128,
   * with a 4 byte pad at the end of each row */
  enum { W = 64, H = 48, STRIDE = W * 4 + 4 };
  static uint8_t pic[H * STRIDE], orig[H * STRIDE];
  for (size_t i = 0; i < sizeof pic; i++)
    pic[i] = (uint8_t) (i % 4 == 3 ? 7 : 128);
  for (int y = 0; y < H; y++)
    memset (pic + (size_t) y * STRIDE + W * 4, 0xEE, 4);
  memcpy (orig, pic, sizeof pic);

  AvfHeatmap *hm = delta_map (W, H, 4, 3, 2, 1);
  if (hm == NULL)
    return;
  AvfHeatmapLut lut;
  AvfHeatmapPlane p = { pic, STRIDE, W, H, 4, 0, 0, 3, {2, 1, 0}, {0, 1, 2} };

  avf_heatmap_lut_rgb (&lut, AVF_COLORMAP_INFERNO, 0.0);
  avf_heatmap_blend (hm, &p, &lut);
  AVF_CHECK (memcmp (pic, orig, sizeof pic) == 0, "opacity 0 changed the "
      "picture");

  avf_heatmap_lut_rgb (&lut, AVF_COLORMAP_INFERNO, 0.5);
  avf_heatmap_blend (hm, &p, &lut);
  /* the centre of patch (2, 1) moves towards inferno's light yellow */
  const uint8_t *c = pic + 24 * STRIDE + 40 * 4;
  AVF_CHECK (c[2] > 170 && c[1] > 160, "centre pixel RGB (%d, %d, %d)",
      c[2], c[1], c[0]);
  /* the exact blend of level round(v * 255) */
  const float v = avf_heatmap_row (hm, 24)[40];
  const int level = (int) (v * 255 + 0.5f);
  const unsigned a = lut.alpha[level];
  const int er = (int) ((128 * (256 - a) + lut.colour[level][0] * a
          + 128) >> 8);
  AVF_CHECK (c[2] == er, "centre R %d, expected %d", c[2], er);
  AVF_CHECK (c[3] == 7, "the padding byte changed to %d", c[3]);
  /* a pixel far away and the row padding are untouched */
  AVF_CHECK (memcmp (pic + 2 * STRIDE, orig + 2 * STRIDE, 4 * 16) == 0,
      "pixels of patch (0, 0) changed");
  for (int y = 0; y < H; y++)
    AVF_CHECK (memcmp (pic + (size_t) y * STRIDE + W * 4,
            orig + (size_t) y * STRIDE + W * 4, 4) == 0,
        "row padding of row %d changed", y);
  avf_heatmap_free (hm);
}

static void
test_blend_subsampled_plane (void)
{
  /* I420-like: a 32x32 picture, a 16x16 chroma plane; gray map, opacity
   * 1: the U plane takes channel 1 of a YUV LUT (128 for grey), the Y
   * plane at the peak gets near 235 */
  enum { W = 32, H = 32 };
  static uint8_t yp[W * H], up[(W / 2) * (H / 2)];
  memset (yp, 16, sizeof yp);
  memset (up, 90, sizeof up);
  AvfHeatmap *hm = delta_map (W, H, 2, 2, 1, 0);
  if (hm == NULL)
    return;
  AvfHeatmapLut lut;
  avf_heatmap_lut_yuv (&lut, AVF_COLORMAP_GRAY, 1.0, 0.299, 0.114, 0);
  AvfHeatmapPlane py = { yp, W, W, H, 1, 0, 0, 1, {0}, {0} };
  AvfHeatmapPlane pu = { up, W / 2, W / 2, H / 2, 1, 1, 1, 1, {0}, {1} };
  avf_heatmap_blend (hm, &py, &lut);
  avf_heatmap_blend (hm, &pu, &lut);
  /* the patch (1, 0) centre is (24, 8); chroma pixel (12, 4) covers it */
  AVF_CHECK (yp[8 * W + 24] > 200, "Y at the peak %d", yp[8 * W + 24]);
  AVF_CHECK (yp[24 * W + 4] == 16, "Y far away %d", yp[24 * W + 4]);
  AVF_CHECK (up[4 * (W / 2) + 12] > 120, "U at the peak %d",
      up[4 * (W / 2) + 12]);
  AVF_CHECK (up[12 * (W / 2) + 2] == 90, "U far away %d",
      up[12 * (W / 2) + 2]);
  avf_heatmap_free (hm);
}

static void
test_marker (void)
{
  enum { W = 64, H = 48 };
  static uint8_t pic[W * H];
  AvfHeatmap *hm = delta_map (W, H, 4, 3, 2, 1);
  if (hm == NULL)
    return;
  AvfHeatmapMarker m;
  avf_heatmap_marker (hm, &m, 2, 1);
  /* 16x16 patches: an 8 pixel square around (40, 24), 2 pixel lines */
  AVF_CHECK (m.x0 == 36 && m.x1 == 44 && m.y0 == 20 && m.y1 == 28,
      "marker [%d, %d) x [%d, %d)", m.x0, m.x1, m.y0, m.y1);
  AVF_CHECK (m.inner_x0 == 38 && m.inner_x1 == 42, "inner [%d, %d)",
      m.inner_x0, m.inner_x1);

  AvfHeatmapPlane p = { pic, W, W, H, 1, 0, 0, 1, {0}, {0} };
  const uint8_t white[3] = { 255, 255, 255 };
  avf_heatmap_draw_marker (hm, &p, white, 2, 1);
  int painted = 0, outside = 0;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      if (pic[y * W + x]) {
        painted++;
        outside += x < 32 || x >= 48 || y < 16 || y >= 32;
      }
  AVF_CHECK (painted == 8 * 8 - 4 * 4, "painted %d pixels", painted);
  AVF_CHECK (outside == 0, "%d marker pixels outside the patch", outside);
  AVF_CHECK (pic[24 * W + 40] == 0, "the marker is not hollow");

  /* a corner patch is clipped, never written outside the picture */
  AvfHeatmap *small = NULL;
  AvfError err;
  static uint8_t tiny[3 * 3];
  AVF_CHECK (avf_heatmap_new (&small, 3, 3, &err) == AVF_OK, "3x3");
  if (small) {
    AVF_CHECK (avf_heatmap_set_grid (small, 1, 1, &err) == AVF_OK, "grid");
    AvfHeatmapPlane t = { tiny, 3, 3, 3, 1, 0, 0, 1, {0}, {0} };
    avf_heatmap_draw_marker (small, &t, white, 0, 0);
    avf_heatmap_marker (small, &m, 0, 0);
    AVF_CHECK (m.x0 >= 0 && m.y0 >= 0 && m.x1 <= 3 && m.y1 <= 3,
        "clipped marker [%d, %d) x [%d, %d)", m.x0, m.x1, m.y0, m.y1);
  }
  avf_heatmap_free (small);
  avf_heatmap_free (hm);
}

static void
test_bad_sizes (void)
{
  AvfHeatmap *hm = (AvfHeatmap *) 1;
  AvfError err;
  AVF_CHECK (avf_heatmap_new (&hm, 0, 10, &err) == AVF_ERR_INVALID
      && hm == NULL, "zero width accepted");
  AVF_CHECK (avf_heatmap_new (&hm, 10, AVF_HEATMAP_MAX_SIDE + 1, &err)
      == AVF_ERR_INVALID, "huge height accepted");
  AVF_CHECK_CONTAINS (err.message, "10x65537");
  AVF_CHECK (avf_heatmap_new (&hm, 16, 16, &err) == AVF_OK, "16x16");
  if (hm == NULL)
    return;
  AVF_CHECK (avf_heatmap_set_grid (hm, 0, 3, &err) == AVF_ERR_INVALID,
      "empty grid accepted");
  AVF_CHECK (avf_heatmap_set_grid (hm, 65536, 65536, &err)
      == AVF_ERR_INVALID, "2^32 patches accepted");
  AVF_CHECK (avf_heatmap_normalise (hm, NULL, NULL) == 0, "no grid yet");
  AVF_CHECK (avf_heatmap_row (hm, 3)[5] == 0.0f, "row without a grid");
  avf_heatmap_free (hm);
  avf_heatmap_free (NULL);
}

/* The strongest patch as gst_av_attention_meta_get_strongest_patch
 * computed it before avf_heatmap_strongest (the definition that wins). */
static int
meta_strongest_before (int *key, double *weight, const float *w,
    const uint8_t * mask, int heads, int tq, int tk)
{
  int best = 0, used = 0;
  double best_w = -1.0;

  for (int n = 0; n < tk; n++) {
    double s = 0.0;
    for (int h = 0; h < heads; h++)
      for (int q = 0; q < tq; q++)
        if (!mask[q])
          s += w[((size_t) h * tq + q) * tk + n];
    if (s > best_w) {
      best_w = s;
      best = n;
    }
  }
  for (int q = 0; q < tq; q++)
    used += !mask[q];
  if (used == 0)
    return 0;
  *key = best;
  *weight = best_w / ((double) heads * used);
  return used;
}

/* avf_heatmap_strongest gives the meta's strongest patch bit for bit
 * (random softmax-like maps, random masks, ties, one head); the overlay's
 * marker took the largest float of the mean map, which differs only where
 * two patches' means round to the same float. */
static void
test_strongest_patch (void)
{
  enum { H = 3, T = 37, N = 12 };
  static float w[H * T * N];
  uint8_t mask[T];
  unsigned seed = 12345;
  int ties = 0;

  for (int round = 0; round < 200; round++) {
    int key = -1, want_key = -2, used, want_used;
    double weight = -2.0, want_weight = -3.0;

    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
      seed = seed * 1103515245u + 12345u;
      w[i] = (float) ((seed >> 8) & 0xffff) / 65536.0f / N;
    }
    for (int q = 0; q < T; q++) {
      seed = seed * 1103515245u + 12345u;
      mask[q] = round % 7 == 6 ? 1 : ((seed >> 16) & 3) == 0;
    }
    if (round % 5 == 1) {
      /* two patches with equal sums: the first wins */
      for (int h = 0; h < H; h++)
        for (int q = 0; q < T; q++)
          w[((size_t) h * T + q) * N + 9] = w[((size_t) h * T + q) * N + 4]
              = 0.5f;
      ties++;
    }
    used = avf_heatmap_strongest (&key, &weight, w, mask, H, -1, T, N);
    want_used = meta_strongest_before (&want_key, &want_weight, w, mask, H,
        T, N);
    AVF_CHECK (used == want_used, "round %d: %d rows, the meta used %d",
        round, used, want_used);
    if (used == 0) {
      AVF_CHECK (key == -1 && weight == -2.0, "round %d: outputs written",
          round);
      continue;
    }
    AVF_CHECK (key == want_key && weight == want_weight, "round %d: patch %d "
        "(%.17g), the meta's %d (%.17g)", round, key, weight, want_key,
        want_weight);
    if (round % 5 == 1)
      AVF_CHECK (key == 4, "round %d: tie went to %d", round, key);
  }
  AVF_CHECK (ties > 0, "no tie tested");

  /* one head: that head's sums only */
  {
    float one[2 * 1 * 3] = { 0.1f, 0.7f, 0.2f, 0.6f, 0.1f, 0.3f };
    uint8_t none = 0;
    int key = -1;
    double weight = 0.0;

    AVF_CHECK (avf_heatmap_strongest (&key, &weight, one, &none, 2, 1, 1,
            3) == 1 && key == 0 && fabs (weight - 0.6f) < 1e-7,
        "head 1: %d %g", key, weight);
    AVF_CHECK (avf_heatmap_strongest (&key, &weight, one, &none, 2, -1, 1,
            3) == 1 && key == 1 && fabs (weight - 0.4) < 1e-7,
        "mean: %d %g", key, weight);
  }
}

AVF_TEST_MAIN (AVF_TEST (test_delta_peaks_at_patch_centre),
    AVF_TEST (test_large_picture_small_grid),
    AVF_TEST (test_constant_grid_is_flat),
    AVF_TEST (test_normalise),
    AVF_TEST (test_reductions),
    AVF_TEST (test_strongest_patch),
    AVF_TEST (test_colormap_endpoints),
    AVF_TEST (test_luts),
    AVF_TEST (test_blend_packed_rgb),
    AVF_TEST (test_blend_subsampled_plane),
    AVF_TEST (test_marker), AVF_TEST (test_bad_sizes))
