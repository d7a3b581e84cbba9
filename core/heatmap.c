/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "heatmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- colour maps ----------------------------------------------------- */

/* matplotlib's inferno at v = 0, 1/9, ..., 1 (its 256-entry table,
 * _cm_listed.py _inferno_data, rounded to 8 bits). */
static const uint8_t inferno_stops[10][3] = {
  {0x00, 0x00, 0x04}, {0x1b, 0x0c, 0x41}, {0x4a, 0x0c, 0x6b},
  {0x78, 0x1c, 0x6d}, {0xa5, 0x2c, 0x60}, {0xcf, 0x44, 0x46},
  {0xed, 0x69, 0x25}, {0xfb, 0x9b, 0x06}, {0xf7, 0xd1, 0x3d},
  {0xfc, 0xff, 0xa4},
};

/* matplotlib's jet (_cm.py _jet_data): per channel, (x, y) knots of a
 * piecewise linear function; each list ends with x = 1. */
typedef struct {
  float x, y;
} Knot;

static const Knot jet_red[] = {
  {0.0f, 0.0f}, {0.35f, 0.0f}, {0.66f, 1.0f}, {0.89f, 1.0f}, {1.0f, 0.5f}
};
static const Knot jet_green[] = {
  {0.0f, 0.0f}, {0.125f, 0.0f}, {0.375f, 1.0f}, {0.64f, 1.0f},
  {0.91f, 0.0f}, {1.0f, 0.0f}
};
static const Knot jet_blue[] = {
  {0.0f, 0.5f}, {0.11f, 1.0f}, {0.34f, 1.0f}, {0.65f, 0.0f}, {1.0f, 0.0f}
};

static float
knots_eval (const Knot * k, size_t n, float v)
{
  for (size_t i = 1; i < n; i++) {
    if (v <= k[i].x) {
      const float t = (v - k[i - 1].x) / (k[i].x - k[i - 1].x);
      return k[i - 1].y + t * (k[i].y - k[i - 1].y);
    }
  }
  return k[n - 1].y;
}

static uint8_t
to_u8 (double x)
{
  if (!(x > 0.0))
    return 0;
  if (x >= 255.0)
    return 255;
  return (uint8_t) (x + 0.5);
}

void
avf_colormap_rgb (uint8_t rgb[3], AvfColormap cmap, float v)
{
  if (!(v > 0.0f))
    v = 0.0f;
  if (v > 1.0f)
    v = 1.0f;
  switch (cmap) {
    case AVF_COLORMAP_JET:
      rgb[0] = to_u8 (255.0 * knots_eval (jet_red, 5, v));
      rgb[1] = to_u8 (255.0 * knots_eval (jet_green, 6, v));
      rgb[2] = to_u8 (255.0 * knots_eval (jet_blue, 5, v));
      break;
    case AVF_COLORMAP_GRAY:
      rgb[0] = rgb[1] = rgb[2] = to_u8 (255.0 * v);
      break;
    case AVF_COLORMAP_INFERNO:
    default:{
      const float s = v * 9.0f;
      int i = (int) s;
      if (i > 8)
        i = 8;
      const float t = s - (float) i;
      for (int c = 0; c < 3; c++)
        rgb[c] = to_u8 (inferno_stops[i][c]
            + t * (inferno_stops[i + 1][c] - inferno_stops[i][c]));
      break;
    }
  }
}

static double
clamp01 (double x)
{
  return x > 0.0 ? (x < 1.0 ? x : 1.0) : 0.0;
}

static void
lut_alpha (AvfHeatmapLut * lut, double opacity)
{
  opacity = clamp01 (opacity);
  for (int i = 0; i < AVF_HEATMAP_LEVELS; i++)
    lut->alpha[i] = (uint16_t) (256.0 * opacity * i
        / (AVF_HEATMAP_LEVELS - 1) + 0.5);
}

void
avf_heatmap_lut_rgb (AvfHeatmapLut * lut, AvfColormap cmap, double opacity)
{
  for (int i = 0; i < AVF_HEATMAP_LEVELS; i++)
    avf_colormap_rgb (lut->colour[i], cmap,
        (float) i / (AVF_HEATMAP_LEVELS - 1));
  lut_alpha (lut, opacity);
}

void
avf_heatmap_lut_yuv (AvfHeatmapLut * lut, AvfColormap cmap, double opacity,
    double kr, double kb, int full_range)
{
  const double y_off = full_range ? 0.0 : 16.0;
  const double y_scale = full_range ? 255.0 : 219.0;
  const double c_scale = full_range ? 255.0 : 224.0;
  const double kg = 1.0 - kr - kb;

  for (int i = 0; i < AVF_HEATMAP_LEVELS; i++) {
    uint8_t rgb[3];
    avf_colormap_rgb (rgb, cmap, (float) i / (AVF_HEATMAP_LEVELS - 1));
    const double r = rgb[0] / 255.0, g = rgb[1] / 255.0, b = rgb[2] / 255.0;
    const double y = kr * r + kg * g + kb * b;
    const double cb = (b - y) / (2.0 * (1.0 - kb));
    const double cr = (r - y) / (2.0 * (1.0 - kr));
    lut->colour[i][0] = to_u8 (y_off + y_scale * y);
    lut->colour[i][1] = to_u8 (128.0 + c_scale * cb);
    lut->colour[i][2] = to_u8 (128.0 + c_scale * cr);
  }
  lut_alpha (lut, opacity);
}

/* ---- reductions ------------------------------------------------------ */

/* The heads [*h0, *h1) of head (-1: all) and the unmasked query rows;
 * 0 when there is nothing to sum. */
static int
query_rows (int *h0, int *h1, const uint8_t * query_mask, int heads,
    int head, int tq, int tk)
{
  int used = 0;

  if (heads <= 0 || tq <= 0 || tk <= 0 || head >= heads)
    return 0;
  *h0 = head >= 0 ? head : 0;
  *h1 = head >= 0 ? head + 1 : heads;
  for (int q = 0; q < tq; q++)
    used += !(query_mask && query_mask[q]);
  return used;
}

/* Key k summed over the heads [h0, h1) and the unmasked query rows, in
 * double: T may be a few hundred rows of small weights. */
static double
column_sum (const float *w, const uint8_t * query_mask, int h0, int h1,
    int tq, int tk, int k)
{
  double s = 0.0;

  for (int h = h0; h < h1; h++) {
    const float *wh = w + (size_t) h * tq * tk;
    for (int q = 0; q < tq; q++)
      if (!(query_mask && query_mask[q]))
        s += wh[(size_t) q * tk + k];
  }
  return s;
}

int
avf_heatmap_mean_over_queries (float *out, const float *w,
    const uint8_t * query_mask, int heads, int head, int tq, int tk)
{
  int h0 = 0, h1 = 0, used;

  if (tk > 0)
    memset (out, 0, (size_t) tk * sizeof *out);
  used = query_rows (&h0, &h1, query_mask, heads, head, tq, tk);
  if (used == 0)
    return 0;
  for (int k = 0; k < tk; k++)
    out[k] = (float) (column_sum (w, query_mask, h0, h1, tq, tk, k)
        / ((double) (h1 - h0) * used));
  return used;
}

int
avf_heatmap_strongest (int *key, double *weight, const float *w,
    const uint8_t * query_mask, int heads, int head, int tq, int tk)
{
  int h0 = 0, h1 = 0, used, best = 0;
  double best_s = -1.0;         /* below any sum of softmax weights */

  used = query_rows (&h0, &h1, query_mask, heads, head, tq, tk);
  if (used == 0)
    return 0;
  for (int k = 0; k < tk; k++) {
    const double s = column_sum (w, query_mask, h0, h1, tq, tk, k);
    if (s > best_s) {
      best_s = s;
      best = k;
    }
  }
  *key = best;
  if (weight)
    *weight = best_s / ((double) (h1 - h0) * used);
  return used;
}

int
avf_heatmap_max_over_keys (float *out, const float *w,
    const uint8_t * key_mask, int heads, int head, int tq, int tk)
{
  int h0 = 0, h1 = heads, used = 0;

  if (tq > 0)
    memset (out, 0, (size_t) tq * sizeof *out);
  if (heads <= 0 || tq <= 0 || tk <= 0 || head >= heads)
    return 0;
  if (head >= 0) {
    h0 = head;
    h1 = head + 1;
  }
  for (int k = 0; k < tk; k++)
    used += !(key_mask && key_mask[k]);
  if (used == 0)
    return 0;

  for (int q = 0; q < tq; q++) {
    double best = -INFINITY;
    for (int k = 0; k < tk; k++) {
      double s = 0.0;
      if (key_mask && key_mask[k])
        continue;
      for (int h = h0; h < h1; h++)
        s += w[((size_t) h * tq + q) * tk + k];
      s /= (double) (h1 - h0);
      if (isnan (s)) {
        /* a NaN stays NaN so that normalise() refuses the map */
        best = s;
        break;
      }
      if (s > best)
        best = s;
    }
    out[q] = (float) best;
  }
  return used;
}

/* ---- the heat map ---------------------------------------------------- */

struct AvfHeatmap
{
  int width, height, cols, rows;
  /* sampling tables, (width) and (height): the picture pixel x takes
   * (1 - xw[x]) * grid column xi[x] + xw[x] * grid column xi[x] + 1 */
  int *xi, *yi;
  float *xw, *yw;
  float *grid;                  /* (rows, cols) */
  float *col;                   /* (cols): the grid interpolated at one y */
  float *row;                   /* (width) */
  int row_y;                    /* the y that row holds, or -1 */
};

void
avf_heatmap_free (AvfHeatmap * hm)
{
  if (hm == NULL)
    return;
  free (hm->xi);
  free (hm->yi);
  free (hm->xw);
  free (hm->yw);
  free (hm->grid);
  free (hm->col);
  free (hm->row);
  free (hm);
}

AvfStatus
avf_heatmap_new (AvfHeatmap ** out, int width, int height, AvfError * err)
{
  *out = NULL;
  if (width <= 0 || height <= 0 || width > AVF_HEATMAP_MAX_SIDE
      || height > AVF_HEATMAP_MAX_SIDE)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "a heat map of %dx%d pixels is not possible: each side must be "
        "1 to %d pixels", width, height, AVF_HEATMAP_MAX_SIDE);

  AvfHeatmap *hm = calloc (1, sizeof *hm);
  if (hm == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  hm->width = width;
  hm->height = height;
  hm->row_y = -1;
  /* sides <= 65536: every size below fits easily */
  hm->xi = malloc ((size_t) width * sizeof *hm->xi);
  hm->xw = malloc ((size_t) width * sizeof *hm->xw);
  hm->yi = malloc ((size_t) height * sizeof *hm->yi);
  hm->yw = malloc ((size_t) height * sizeof *hm->yw);
  hm->row = calloc ((size_t) width, sizeof *hm->row);
  if (!hm->xi || !hm->xw || !hm->yi || !hm->yw || !hm->row) {
    avf_heatmap_free (hm);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for a %dx%d heat map", width, height);
  }
  *out = hm;
  return AVF_OK;
}

/* The bilinear sampling of n_in grid cells by n_out pixels, centres
 * aligned.  ref: aten/src/ATen/native/UpSample.h
 * area_pixel_compute_source_index (align_corners=False). */
static void
make_table (int *idx, float *frac, int n_out, int n_in)
{
  const double scale = (double) n_in / n_out;
  for (int i = 0; i < n_out; i++) {
    double s = (i + 0.5) * scale - 0.5;
    if (s < 0.0)
      s = 0.0;
    int i0 = (int) s;
    if (i0 > n_in - 1)
      i0 = n_in - 1;
    double f = s - i0;
    if (i0 == n_in - 1)
      f = 0.0;                  /* the last cell extends to the border */
    idx[i] = i0;
    frac[i] = (float) f;
  }
}

AvfStatus
avf_heatmap_set_grid (AvfHeatmap * hm, int cols, int rows, AvfError * err)
{
  if (cols <= 0 || rows <= 0
      || (int64_t) cols * rows > AVF_HEATMAP_MAX_PATCHES)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "a patch grid of %d x %d is not possible: it must have 1 to %d "
        "patches", cols, rows, AVF_HEATMAP_MAX_PATCHES);

  if (cols != hm->cols || rows != hm->rows) {
    const size_t n = (size_t) cols * rows;
    float *grid = malloc (n * sizeof *grid);
    float *col = malloc ((size_t) cols * sizeof *col);
    if (grid == NULL || col == NULL) {
      free (grid);
      free (col);
      return avf_error_set (err, AVF_ERR_NOMEM, -1,
          "out of memory for a %d x %d patch grid", cols, rows);
    }
    free (hm->grid);
    free (hm->col);
    hm->grid = grid;
    hm->col = col;
    hm->cols = cols;
    hm->rows = rows;
    make_table (hm->xi, hm->xw, hm->width, cols);
    make_table (hm->yi, hm->yw, hm->height, rows);
  }
  memset (hm->grid, 0, (size_t) cols * rows * sizeof *hm->grid);
  hm->row_y = -1;
  return AVF_OK;
}

float *
avf_heatmap_grid (AvfHeatmap * hm)
{
  return hm->grid;
}

int
avf_heatmap_normalise (AvfHeatmap * hm, int *column, int *row)
{
  const size_t n = (size_t) hm->cols * hm->rows;
  float best = 0.0f;
  size_t arg = 0;

  hm->row_y = -1;
  if (hm->grid == NULL)
    return 0;
  for (size_t i = 0; i < n; i++) {
    float v = hm->grid[i];
    if (!isfinite (v)) {
      memset (hm->grid, 0, n * sizeof *hm->grid);
      return 0;
    }
    if (v > best) {
      best = v;
      arg = i;
    }
  }
  if (!(best > 0.0f)) {
    memset (hm->grid, 0, n * sizeof *hm->grid);
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    hm->grid[i] = hm->grid[i] > 0.0f ? hm->grid[i] / best : 0.0f;
  hm->grid[arg] = 1.0f;
  if (column)
    *column = (int) (arg % (size_t) hm->cols);
  if (row)
    *row = (int) (arg / (size_t) hm->cols);
  return 1;
}

const float *
avf_heatmap_row (AvfHeatmap * hm, int y)
{
  if (y < 0)
    y = 0;
  if (y >= hm->height)
    y = hm->height - 1;
  if (hm->grid == NULL) {
    memset (hm->row, 0, (size_t) hm->width * sizeof *hm->row);
    return hm->row;
  }
  if (y == hm->row_y)
    return hm->row;

  /* vertical first, on the small grid, then horizontal */
  const int r0 = hm->yi[y], r1 = r0 + 1 < hm->rows ? r0 + 1 : r0;
  const float fy = hm->yw[y];
  const float *g0 = hm->grid + (size_t) r0 * hm->cols;
  const float *g1 = hm->grid + (size_t) r1 * hm->cols;
  for (int c = 0; c < hm->cols; c++)
    hm->col[c] = g0[c] + fy * (g1[c] - g0[c]);

  const int last = hm->cols - 1;
  for (int x = 0; x < hm->width; x++) {
    const int c0 = hm->xi[x], c1 = c0 < last ? c0 + 1 : c0;
    hm->row[x] = hm->col[c0] + hm->xw[x] * (hm->col[c1] - hm->col[c0]);
  }
  hm->row_y = y;
  return hm->row;
}

static inline int
level_of (float v)
{
  if (!(v > 0.0f))
    return 0;
  if (v >= 1.0f)
    return AVF_HEATMAP_LEVELS - 1;
  return (int) (v * (AVF_HEATMAP_LEVELS - 1) + 0.5f);
}

void
avf_heatmap_blend (AvfHeatmap * hm, const AvfHeatmapPlane * p,
    const AvfHeatmapLut * lut)
{
  const int nc = p->n_components < 3 ? p->n_components : 3;

  for (int y = 0; y < p->height; y++) {
    const int py = y << p->y_shift;
    if (py >= hm->height)
      break;
    const float *map = avf_heatmap_row (hm, py);
    uint8_t *line = p->data + (size_t) y * p->stride;
    for (int x = 0; x < p->width; x++) {
      const int px = x << p->x_shift;
      if (px >= hm->width)
        break;
      const int level = level_of (map[px]);
      const unsigned a = lut->alpha[level];
      if (a == 0)
        continue;
      uint8_t *pix = line + (size_t) x * p->pixel_stride;
      for (int k = 0; k < nc; k++) {
        const unsigned c = lut->colour[level][p->channel[k]];
        uint8_t *b = pix + p->offset[k];
        *b = (uint8_t) ((*b * (256u - a) + c * a + 128u) >> 8);
      }
    }
  }
}

void
avf_heatmap_marker (const AvfHeatmap * hm, AvfHeatmapMarker * m, int column,
    int row)
{
  const double pw = (double) hm->width / (hm->cols > 0 ? hm->cols : 1);
  const double ph = (double) hm->height / (hm->rows > 0 ? hm->rows : 1);
  const double cx = (column + 0.5) * pw, cy = (row + 0.5) * ph;
  int side = (int) ((pw < ph ? pw : ph) / 2.0);
  if (side < 4)
    side = 4;
  int line = side / 4;
  if (line < 1)
    line = 1;

  m->x0 = (int) floor (cx - side / 2.0 + 0.5);
  m->y0 = (int) floor (cy - side / 2.0 + 0.5);
  m->x1 = m->x0 + side;
  m->y1 = m->y0 + side;
  m->inner_x0 = m->x0 + line;
  m->inner_y0 = m->y0 + line;
  m->inner_x1 = m->x1 - line;
  m->inner_y1 = m->y1 - line;
  /* clip to the picture */
  if (m->x0 < 0)
    m->x0 = 0;
  if (m->y0 < 0)
    m->y0 = 0;
  if (m->x1 > hm->width)
    m->x1 = hm->width;
  if (m->y1 > hm->height)
    m->y1 = hm->height;
}

void
avf_heatmap_draw_marker (const AvfHeatmap * hm, const AvfHeatmapPlane * p,
    const uint8_t colour[3], int column, int row)
{
  AvfHeatmapMarker m;
  const int nc = p->n_components < 3 ? p->n_components : 3;

  avf_heatmap_marker (hm, &m, column, row);
  if (m.x0 >= m.x1 || m.y0 >= m.y1)
    return;
  /* plane pixels that cover some picture pixel of the outer square */
  const int sx = p->x_shift, sy = p->y_shift;
  int qx1 = ((m.x1 - 1) >> sx) + 1, qy1 = ((m.y1 - 1) >> sy) + 1;
  if (qx1 > p->width)
    qx1 = p->width;
  if (qy1 > p->height)
    qy1 = p->height;

  for (int y = m.y0 >> sy; y < qy1; y++) {
    /* the picture rows [Y0, Y1) that this plane row covers */
    const int Y0 = y << sy, Y1 = (y + 1) << sy;
    const int rows_inside = Y0 >= m.inner_y0 && Y1 <= m.inner_y1;
    uint8_t *line = p->data + (size_t) y * p->stride;
    for (int x = m.x0 >> sx; x < qx1; x++) {
      const int X0 = x << sx, X1 = (x + 1) << sx;
      /* inside the inner square entirely: not on the outline */
      if (rows_inside && X0 >= m.inner_x0 && X1 <= m.inner_x1)
        continue;
      uint8_t *pix = line + (size_t) x * p->pixel_stride;
      for (int k = 0; k < nc; k++)
        pix[p->offset[k]] = colour[p->channel[k]];
    }
  }
}
