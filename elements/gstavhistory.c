/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavhistory.h"

#include <string.h>

#include "gstavtensor.h"

/* Frames held at most: far more than any real video shows in a window (a
 * one-second window holds this many only with frames 15 us apart); beyond
 * it the oldest goes. */
#define MAX_FRAMES 65536

typedef struct
{
  gint64 start, end;            /* running time; end AVF_RHYTHM_NO_END */
  GstBuffer *rows;              /* (N, D) float32, read-only once added */
} HistFrame;

struct _GstAvHistory
{
  guint N, D, K, G;
  gint lag_min;
  guint n_centres;              /* K + lags - 1 */
  GstBufferPool *pool;          /* N * D * 4-byte buffers, no limit */
  /* the frames in the order received: [first, first + n) of a ring of cap
   * entries */
  HistFrame *frames;
  guint cap, first, n;
  /* lookup scratch (n_centres, cap each) */
  gint *found;
  gint64 *starts, *ends;
};

GstAvHistory *
gst_av_history_new (guint n_patches, const AvfRhythmConfig * rhythm)
{
  GstAvHistory *h;
  guint64 size = (guint64) n_patches * (guint) MAX (rhythm->D, 0)
      * sizeof (gfloat);

  if (size == 0 || size > G_MAXUINT || rhythm->K <= 0 || rhythm->G <= 0
      || rhythm->lags <= 0)
    return NULL;
  h = g_new0 (GstAvHistory, 1);
  h->N = n_patches;
  h->D = (guint) rhythm->D;
  h->K = (guint) rhythm->K;
  h->G = (guint) rhythm->G;
  h->lag_min = rhythm->lag_min;
  h->n_centres = (guint) avf_rhythm_n_centres (rhythm);
  h->pool = gst_av_buffer_pool_new (NULL, (guint) size);
  if (h->pool == NULL) {
    g_free (h);
    return NULL;
  }
  h->cap = 32;
  h->frames = g_new0 (HistFrame, h->cap);
  h->starts = g_new (gint64, h->cap);
  h->ends = g_new (gint64, h->cap);
  h->found = g_new (gint, h->n_centres);
  return h;
}

void
gst_av_history_clear (GstAvHistory * h)
{
  for (guint i = 0; i < h->n; i++)
    gst_buffer_unref (h->frames[(h->first + i) % h->cap].rows);
  h->first = h->n = 0;
}

void
gst_av_history_free (GstAvHistory * h)
{
  if (h == NULL)
    return;
  gst_av_history_clear (h);
  gst_buffer_pool_set_active (h->pool, FALSE);
  gst_object_unref (h->pool);
  g_free (h->frames);
  g_free (h->starts);
  g_free (h->ends);
  g_free (h->found);
  g_free (h);
}

guint
gst_av_history_length (const GstAvHistory * h)
{
  return h->n;
}

guint
gst_av_history_n_centres (const GstAvHistory * h)
{
  return h->n_centres;
}

static HistFrame *
nth (GstAvHistory * h, guint i)
{
  return &h->frames[(h->first + i) % h->cap];
}

static void
drop_oldest (GstAvHistory * h)
{
  gst_buffer_unref (nth (h, 0)->rows);
  h->first = (h->first + 1) % h->cap;
  h->n--;
}

/* Doubles the ring (the frames move to the front).  Only while a history
 * grows beyond every earlier size: no allocation in a steady stream. */
static void
grow (GstAvHistory * h)
{
  guint cap = h->cap * 2;
  HistFrame *frames = g_new0 (HistFrame, cap);

  for (guint i = 0; i < h->n; i++)
    frames[i] = *nth (h, i);
  g_free (h->frames);
  h->frames = frames;
  h->first = 0;
  h->cap = cap;
  h->starts = g_renew (gint64, h->starts, cap);
  h->ends = g_renew (gint64, h->ends, cap);
}

gboolean
gst_av_history_add (GstAvHistory * h, const guint8 * rows, gsize row_bytes,
    gint64 start, gint64 end, gint64 window_ns, gint hop, gint rate)
{
  GstBuffer *buf = NULL;
  GstMapInfo map;
  HistFrame *f;
  /* the earliest centre any lag reads in this window or a later one:
   * c_{lag_min}, before the window's start with a negative lag_min (the
   * start itself otherwise, which holds whatever hop and rate come
   * later) */
  gint64 first = start - window_ns;

  if (hop > 0 && rate > 0)
    first = MIN (first, avf_rhythm_bin_centre (start, window_ns, h->lag_min,
            (int) h->G, hop, rate));

  /* a frame shows [its start, min(its end, the next start)); one that
   * ends at or before the earliest centre shows no centre of this window
   * or of a later one */
  while (h->n > 0) {
    const HistFrame *old = nth (h, 0);
    gint64 cover = h->n > 1 ? nth (h, 1)->start : start;

    if (old->end < cover)
      cover = old->end;
    if (cover > first)
      break;
    drop_oldest (h);
  }
  if (h->n == MAX_FRAMES) {
    GST_WARNING ("video history full (%u frames): dropping the oldest",
        MAX_FRAMES);
    drop_oldest (h);
  }
  if (h->n == h->cap)
    grow (h);

  if (gst_buffer_pool_acquire_buffer (h->pool, &buf, NULL) != GST_FLOW_OK)
    return FALSE;
  if (!gst_buffer_map (buf, &map, GST_MAP_WRITE)) {
    gst_buffer_unref (buf);
    return FALSE;
  }
  for (guint n = 0; n < h->N; n++)
    memcpy ((gfloat *) map.data + (gsize) n * h->D, rows + n * row_bytes,
        h->D * sizeof (gfloat));
  gst_buffer_unmap (buf, &map);

  f = &h->frames[(h->first + h->n) % h->cap];
  f->start = start;
  f->end = end;
  f->rows = buf;
  h->n++;
  return TRUE;
}

guint
gst_av_history_lookup (GstAvHistory * h, GstBuffer ** bins, gint64 t,
    gint64 window_ns, gint hop, gint rate)
{
  guint have = 0;

  for (guint i = 0; i < h->n; i++) {
    h->starts[i] = nth (h, i)->start;
    h->ends[i] = nth (h, i)->end;
  }
  avf_rhythm_bin_frames (h->found, (int) h->n_centres, h->lag_min,
      (int) h->G, h->starts, h->ends, h->n, t, window_ns, hop, rate);
  for (guint i = 0; i < h->n_centres; i++) {
    bins[i] = h->found[i] < 0 ? NULL :
        gst_buffer_ref (nth (h, (guint) h->found[i])->rows);
    have += bins[i] != NULL;
  }
  return have;
}

void
gst_av_history_bins_clear (GstBuffer ** bins, guint n)
{
  for (guint i = 0; i < n; i++)
    gst_clear_buffer (&bins[i]);
}

/* ---- the worker side ------------------------------------------------------ */

struct _GstAvRhythmWork
{
  const AvfWeights *w;
  AvfRhythm *rhythm;
  guint n_centres;              /* K + lags - 1 */
  gfloat *tokens;               /* (N, E) */
  GstMapInfo *maps;             /* (n_centres) */
  const gfloat **rows;          /* (n_centres) */
};

GstAvRhythmWork *
gst_av_rhythm_work_new (const AvfWeights * w, gint T, AvfError * err)
{
  GstAvRhythmWork *rw = g_new0 (GstAvRhythmWork, 1);
  const gsize n = (gsize) avf_rhythm_n_centres (&w->rhythm);

  rw->w = w;
  rw->n_centres = (guint) n;
  if (avf_rhythm_new (&rw->rhythm, w, T, err) != AVF_OK) {
    g_free (rw);
    return NULL;
  }
  /* N, E <= 65536 */
  rw->tokens = g_try_new (gfloat, (gsize) w->cfg.N * w->cfg.E);
  rw->maps = g_try_new0 (GstMapInfo, n);
  rw->rows = g_try_new0 (const gfloat *, n);
  if (!rw->tokens || !rw->maps || !rw->rows) {
    gst_av_rhythm_work_free (rw);
    avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for the rhythm term");
    return NULL;
  }
  return rw;
}

void
gst_av_rhythm_work_free (GstAvRhythmWork * rw)
{
  if (rw == NULL)
    return;
  avf_rhythm_free (rw->rhythm);
  g_free (rw->tokens);
  g_free (rw->maps);
  g_free (rw->rows);
  g_free (rw);
}

const gfloat *
gst_av_rhythm_work_tokens (GstAvRhythmWork * rw, const gfloat * video,
    const gfloat * mel, const guint8 * mask, GstBuffer ** bins, gint * valid)
{
  const guint n = rw->n_centres;
  const gsize ldv = (gsize) rw->w->cfg.E;
  guint mapped = 0;
  gint v = -1;

  /* a frame that shows several centres is mapped once for each */
  for (; mapped < n; mapped++) {
    rw->rows[mapped] = NULL;
    if (bins[mapped] == NULL)
      continue;
    if (!gst_buffer_map (bins[mapped], &rw->maps[mapped], GST_MAP_READ))
      break;
    rw->rows[mapped] = (const gfloat *) rw->maps[mapped].data;
  }
  if (mapped == n)
    v = avf_rhythm_tokens (rw->rhythm, rw->tokens, video, ldv, mel, mask,
        rw->rows, NULL);
  while (mapped-- > 0)
    if (bins[mapped] != NULL)
      gst_buffer_unmap (bins[mapped], &rw->maps[mapped]);
  if (valid)
    *valid = v;
  return v < 0 ? NULL : rw->tokens;
}
