/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GstAvAttentionMeta, the public metadata API: layout of the maps, the
 * audio mask, skipped modules, the strongest patch, whether a visible
 * object sounds, and copies.  GstAvRhythmMeta (avfusion-v2's rhythm rows
 * beside avpatchembed's tensor): add, get, rows, copies (whole buffer,
 * deep, regions of whole frames and of part of one), refused sizes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <math.h>

#include "gstavattentionmeta.h"
#include "gstavrhythmmeta.h"

enum { L = 2, H = 3, T = 5, COLS = 4, ROWS = 3, N = COLS * ROWS };

static GstAvAttentionMeta *
make_meta (GstBuffer * buf, guint heads)
{
  gsize size = gst_av_attention_meta_data_size (L, heads, T, N);
  GstBuffer *data = gst_buffer_new_allocate (NULL, size, NULL);
  return gst_buffer_add_av_attention_meta (buf, L, heads, H, T, COLS, ROWS,
      data);
}

GST_START_TEST (test_layout_and_values)
{
  GstBuffer *buf = gst_buffer_new ();
  GstAvAttentionMeta *meta = make_meta (buf, H);
  guint heads, tq, tk;

  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->n_patches, N);
  fail_unless_equals_int (gst_av_attention_meta_data_size (L, H, T, N),
      16 + L * H * (T * T + N * N + 2 * T * N) * 4);
  /* write a distinct value into every map, read each back */
  for (guint l = 0; l < L; l++)
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      gfloat *w = gst_av_attention_meta_get_weights_writable (meta, l, m);
      gst_av_attention_meta_get_weights (meta, l, m, &heads, &tq, &tk);
      for (guint i = 0; i < heads * tq * tk; i++)
        w[i] = (gfloat) (l * 10 + m) + i * 1e-4f;
    }
  for (guint l = 0; l < L; l++)
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      const gfloat *w = gst_av_attention_meta_get_weights (meta, l, m,
          &heads, &tq, &tk);
      fail_unless_equals_int (heads, H);
      fail_unless_equals_float (w[0], (gfloat) (l * 10 + m));
      fail_unless_equals_float (w[heads * tq * tk - 1],
          (gfloat) (l * 10 + m) + (heads * tq * tk - 1) * 1e-4f);
    }
  gst_av_attention_meta_get_weights (meta, 1,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS, &heads, &tq, &tk);
  fail_unless (tq == T && tk == N);
  gst_av_attention_meta_get_weights (meta, 0,
      GST_AV_ATTENTION_MODULE_VIDEO_CROSS, &heads, &tq, &tk);
  fail_unless (tq == N && tk == T);
  fail_unless_equals_string (gst_av_attention_module_name
      (GST_AV_ATTENTION_MODULE_VIDEO_SELF), "video_self");
  gst_buffer_unref (buf);
}

GST_END_TEST;

GST_START_TEST (test_strongest_patch)
{
  GstBuffer *buf = gst_buffer_new ();
  GstAvAttentionMeta *meta = make_meta (buf, 1);
  guint8 *mask = gst_av_attention_meta_get_audio_mask_writable (meta);
  gfloat *w = gst_av_attention_meta_get_weights_writable (meta, 1,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
  guint col = 99, row = 99;
  gfloat weight = 0;

  /* slot 0 is masked and points at patch 0; the others point at patch
   * (3, 1) = 7 with 0.5 and spread the rest */
  memset (mask, 0, T);
  mask[0] = 1;
  for (guint q = 0; q < T; q++)
    for (guint n = 0; n < N; n++)
      w[q * N + n] = q == 0 ? (n == 0 ? 1.0f : 0.0f) :
          (n == 7 ? 0.5f : 0.5f / (N - 1));
  meta->n_audio_present = T - 1;
  fail_unless (gst_av_attention_meta_get_strongest_patch (meta, 1, &col,
          &row, &weight));
  fail_unless_equals_int (col, 3);
  fail_unless_equals_int (row, 1);
  fail_unless (fabsf (weight - 0.5f) < 1e-6f, "weight %g", weight);

  /* no audio: no answer */
  meta->audio_missing = TRUE;
  fail_if (gst_av_attention_meta_get_strongest_patch (meta, 1, &col, &row,
          NULL));
  meta->audio_missing = FALSE;
  gst_av_attention_meta_set_skipped (meta, 1,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS, TRUE);
  fail_unless (gst_av_attention_meta_is_skipped (meta, 1,
          GST_AV_ATTENTION_MODULE_AUDIO_CROSS));
  fail_if (gst_av_attention_meta_get_strongest_patch (meta, 1, &col, &row,
          NULL));
  gst_buffer_unref (buf);
}

GST_END_TEST;

/* Does a visible object sound?  The last layer's strongest-patch weight
 * (as get_strongest_patch reports it) against visible_threshold: at or
 * above it TRUE, below it FALSE, with threshold 0 (unknown) TRUE whenever
 * there is audio, and FALSE without audio whatever the threshold. */
GST_START_TEST (test_sound_visible)
{
  GstBuffer *buf = gst_buffer_new ();
  GstAvAttentionMeta *meta = make_meta (buf, H);
  guint8 *mask = gst_av_attention_meta_get_audio_mask_writable (meta);
  gfloat *w0 = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
  gfloat *w1 = gst_av_attention_meta_get_weights_writable (meta, 1,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
  gfloat weight = -1, threshold = -1, strongest = -1;

  fail_unless_equals_float (meta->visible_threshold, 0.0f);
  /* layer 1 (the last): patch 7 gets 0.4 from each head and unmasked slot,
   * layer 0 puts everything on patch 0 (it must not count) */
  memset (mask, 0, T);
  mask[2] = 1;
  for (guint h = 0; h < H; h++)
    for (guint q = 0; q < T; q++)
      for (guint n = 0; n < N; n++) {
        w0[(h * T + q) * N + n] = n == 0 ? 1.0f : 0.0f;
        w1[(h * T + q) * N + n] = n == 7 ? 0.4f : 0.6f / (N - 1);
      }
  fail_unless (gst_av_attention_meta_get_strongest_patch (meta, 1, NULL,
          NULL, &strongest));
  fail_unless (fabsf (strongest - 0.4f) < 1e-6f, "%g", strongest);

  /* threshold 0: unknown, TRUE with audio */
  fail_unless (gst_av_attention_meta_get_sound_visible (meta, &weight,
          &threshold));
  fail_unless_equals_float (weight, strongest);
  fail_unless_equals_float (threshold, 0.0f);
  /* at, below and above */
  meta->visible_threshold = strongest;
  fail_unless (gst_av_attention_meta_get_sound_visible (meta, NULL, NULL));
  meta->visible_threshold = 0.3f;
  fail_unless (gst_av_attention_meta_get_sound_visible (meta, NULL, NULL));
  meta->visible_threshold = 0.5f;
  fail_if (gst_av_attention_meta_get_sound_visible (meta, &weight,
          &threshold));
  fail_unless_equals_float (weight, strongest);
  fail_unless_equals_float (threshold, 0.5f);

  /* no audio: FALSE, weight 0, also with threshold 0 */
  meta->visible_threshold = 0.0f;
  meta->audio_missing = TRUE;
  fail_if (gst_av_attention_meta_get_sound_visible (meta, &weight, NULL));
  fail_unless_equals_float (weight, 0.0f);
  meta->audio_missing = FALSE;
  memset (mask, 1, T);
  fail_if (gst_av_attention_meta_get_sound_visible (meta, NULL, NULL));
  memset (mask, 0, T);
  gst_av_attention_meta_set_skipped (meta, 1,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS, TRUE);
  fail_if (gst_av_attention_meta_get_sound_visible (meta, NULL, NULL));
  gst_buffer_unref (buf);
}

GST_END_TEST;

GST_START_TEST (test_copy_keeps_meta)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 16, NULL);
  GstAvAttentionMeta *meta = make_meta (buf, 1), *copy_meta;
  GstBuffer *copy;
  gfloat *w = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_VIDEO_SELF);
  w[5] = 0.25f;
  meta->window_start = 1 * GST_SECOND;
  meta->window_end = 2 * GST_SECOND;
  meta->audio_ended = TRUE;
  meta->visible_threshold = 0.0625f;
  gst_av_attention_meta_set_skipped (meta, 1,
      GST_AV_ATTENTION_MODULE_VIDEO_CROSS, TRUE);

  copy = gst_buffer_copy (buf);
  copy_meta = gst_buffer_get_av_attention_meta (copy);
  fail_unless (copy_meta != NULL);
  fail_unless_equals_float (gst_av_attention_meta_get_weights (copy_meta, 0,
          GST_AV_ATTENTION_MODULE_VIDEO_SELF, NULL, NULL, NULL)[5], 0.25f);
  fail_unless_equals_uint64 (copy_meta->window_start, GST_SECOND);
  fail_unless_equals_uint64 (copy_meta->window_end, 2 * GST_SECOND);
  fail_unless (copy_meta->audio_ended);
  fail_unless_equals_float (copy_meta->visible_threshold, 0.0625f);
  fail_unless (gst_av_attention_meta_is_skipped (copy_meta, 1,
          GST_AV_ATTENTION_MODULE_VIDEO_CROSS));
  /* the original goes, the copy's maps stay valid */
  gst_buffer_unref (buf);
  fail_unless_equals_float (gst_av_attention_meta_get_weights (copy_meta, 0,
          GST_AV_ATTENTION_MODULE_VIDEO_SELF, NULL, NULL, NULL)[5], 0.25f);
  gst_buffer_unref (copy);
}

GST_END_TEST;

GST_START_TEST (test_too_small_data_is_refused)
{
  GstBuffer *buf = gst_buffer_new ();
  GstBuffer *data = gst_buffer_new_allocate (NULL, 8, NULL);
  GstAvAttentionMeta *meta;
  ASSERT_CRITICAL (meta = gst_buffer_add_av_attention_meta (buf, L, 1, H, T,
          COLS, ROWS, data));
  fail_unless (meta == NULL);
  fail_unless (gst_buffer_get_av_attention_meta (buf) == NULL);
  gst_buffer_unref (buf);
}

GST_END_TEST;


/* At least one audio slot and one patch: fewer is refused with a critical
 * (an empty block was once handed out as a NULL mapping; fuzz_elements),
 * and sizes whose maps cannot fit in memory saturate. */
GST_START_TEST (test_add_refuses_empty_sizes)
{
  const guint sizes[][3] = { {0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {0, 0, 0} };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++) {
    GstBuffer *buf = gst_buffer_new ();
    GstBuffer *data = gst_buffer_new_allocate (NULL, 4096, NULL);
    GstAvAttentionMeta *m = NULL;

    ASSERT_CRITICAL (m = gst_buffer_add_av_attention_meta (buf, 1, 1, 1,
            sizes[i][0], sizes[i][1], sizes[i][2], data));
    fail_unless (m == NULL);
    fail_unless (gst_buffer_get_av_attention_meta (buf) == NULL);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (gst_av_attention_meta_data_size (64, 65536,
          G_MAXUINT, G_MAXUINT), G_MAXSIZE);
  fail_unless (gst_av_attention_meta_data_size (2, 4, 10, 12) < 65536);
}

GST_END_TEST;

/* The functions for bindings: bytes and buffers that share the block and
 * outlive the buffer, the setters, and a meta with its own block. */
GST_START_TEST (test_bytes_and_setters)
{
  GstBuffer *buf = gst_buffer_new (), *wbuf;
  GstAvAttentionMeta *meta = make_meta (buf, H);
  guint heads = 0, tq = 0, tk = 0;
  gsize size;
  const gfloat *w, *bw;
  GBytes *bytes, *mask, *in;
  GstMapInfo map;
  gfloat *values;
  guint8 mask_in[T] = { 1, 0, 0, 1, 0 };

  fail_unless (gst_buffer_get_av_attention_meta (buf) == meta);
  w = gst_av_attention_meta_get_weights (meta, 1,
      GST_AV_ATTENTION_MODULE_VIDEO_CROSS, NULL, NULL, NULL);
  values = g_new (gfloat, H * N * T);
  for (guint i = 0; i < H * N * T; i++)
    values[i] = i * 0.5f;
  in = g_bytes_new_take (values, H * N * T * sizeof (gfloat));
  fail_unless (gst_av_attention_meta_set_weights (meta, 1,
          GST_AV_ATTENTION_MODULE_VIDEO_CROSS, in));
  fail_unless_equals_float (w[7], 3.5f);

  bytes = gst_av_attention_meta_get_weights_bytes (meta, 1,
      GST_AV_ATTENTION_MODULE_VIDEO_CROSS, &heads, &tq, &tk);
  fail_unless (heads == H && tq == N && tk == T);
  bw = g_bytes_get_data (bytes, &size);
  fail_unless (bw == w, "the bytes are a view, not a copy");
  fail_unless_equals_uint64 (size, H * N * T * sizeof (gfloat));

  wbuf = gst_av_attention_meta_get_weights_buffer (meta, 1,
      GST_AV_ATTENTION_MODULE_VIDEO_CROSS, NULL, NULL, NULL);
  fail_unless (gst_buffer_map (wbuf, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, size);
  fail_unless (memcmp (map.data, w, size) == 0);
  gst_buffer_unmap (wbuf, &map);

  mask = g_bytes_new_static (mask_in, T);
  fail_unless (gst_av_attention_meta_set_audio_mask (meta, mask));
  g_bytes_unref (mask);
  mask = gst_av_attention_meta_get_audio_mask_bytes (meta);
  fail_unless (memcmp (g_bytes_get_data (mask, &size), mask_in, T) == 0);
  fail_unless_equals_uint64 (size, T);

  /* wrong sizes are refused */
  ASSERT_CRITICAL (fail_if (gst_av_attention_meta_set_weights (meta, 0,
              GST_AV_ATTENTION_MODULE_AUDIO_SELF, in)));

  /* the views outlive the buffer */
  gst_buffer_unref (buf);
  fail_unless_equals_float (((const gfloat *) g_bytes_get_data (bytes,
              NULL))[7], 3.5f);
  fail_unless (gst_buffer_map (wbuf, &map, GST_MAP_READ));
  fail_unless_equals_float (((const gfloat *) map.data)[7], 3.5f);
  gst_buffer_unmap (wbuf, &map);
  g_bytes_unref (bytes);
  g_bytes_unref (mask);
  g_bytes_unref (in);
  gst_buffer_unref (wbuf);

  /* NULL data: a zeroed block of the meta's own, writable */
  buf = gst_buffer_new ();
  meta = gst_buffer_add_av_attention_meta (buf, L, 1, H, T, COLS, ROWS,
      NULL);
  fail_unless (meta != NULL);
  fail_unless (gst_av_attention_meta_get_weights_writable (meta, 0,
          GST_AV_ATTENTION_MODULE_AUDIO_SELF) != NULL);
  fail_unless_equals_int (gst_av_attention_meta_get_audio_mask (meta)[T - 1],
      0);
  fail_unless_equals_float (gst_av_attention_meta_get_weights (meta, L - 1,
          GST_AV_ATTENTION_MODULE_VIDEO_CROSS, NULL, NULL, NULL)[N * T - 1],
      0.0f);
  gst_buffer_unref (buf);
}

GST_END_TEST;

/* ---- GstAvRhythmMeta ----------------------------------------------------- */

enum { RF = 3, RN = 12, RD = 5 };

/* value of frame f, patch n, feature d */
static gfloat
rhythm_value (guint f, guint n, guint d)
{
  return (gfloat) f * 100.0f + (gfloat) n + (gfloat) d * 0.125f;
}

/* A buffer of RF frames of 8 bytes each and its rows, frame by frame. */
static GstBuffer *
rhythm_buffer (void)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, RF * 8, NULL);
  GstBuffer *data = gst_buffer_new_allocate (NULL,
      gst_av_rhythm_meta_data_size (RF, RN, RD), NULL);
  GstAvRhythmMeta *meta = gst_buffer_add_av_rhythm_meta (buf, RF, RN, RD,
      data);

  fail_unless (meta != NULL);
  for (guint f = 0; f < RF; f++) {
    gfloat *rows = gst_av_rhythm_meta_get_rows_writable (meta, f);
    for (guint i = 0; i < RN * RD; i++)
      rows[i] = rhythm_value (f, i / RD, i % RD);
  }
  return buf;
}

/* The rows of @meta are those of frames @from.. of rhythm_buffer(). */
static void
check_rhythm_rows (GstAvRhythmMeta * meta, guint from, guint n)
{
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->n_frames, n);
  fail_unless_equals_int (meta->n_patches, RN);
  fail_unless_equals_int (meta->rhythm_dim, RD);
  for (guint f = 0; f < n; f++) {
    const gfloat *rows = gst_av_rhythm_meta_get_rows (meta, f);
    for (guint i = 0; i < RN * RD; i++)
      fail_unless (rows[i] == rhythm_value (from + f, i / RD, i % RD),
          "frame %u value %u: %g", f, i, rows[i]);
  }
}

GST_START_TEST (test_rhythm_add_get)
{
  GstBuffer *buf = rhythm_buffer (), *plain = gst_buffer_new ();
  GstAvRhythmMeta *meta = gst_buffer_get_av_rhythm_meta (buf);
  GstAvRhythmMeta *zero;
  GBytes *bytes;
  gsize size;
  const gfloat *b;

  fail_unless_equals_uint64 (gst_av_rhythm_meta_data_size (RF, RN, RD),
      RF * RN * RD * 4);
  check_rhythm_rows (meta, 0, RF);
  fail_unless (gst_buffer_get_av_rhythm_meta (plain) == NULL);
  fail_unless (gst_buffer_get_av_attention_meta (buf) == NULL);
  /* the bytes for bindings: a copy of one frame */
  bytes = gst_av_rhythm_meta_get_rows_bytes (meta, 2);
  b = g_bytes_get_data (bytes, &size);
  fail_unless_equals_uint64 (size, RN * RD * 4);
  fail_unless (b[RD + 1] == rhythm_value (2, 1, 1));
  ASSERT_CRITICAL (fail_unless (gst_av_rhythm_meta_get_rows (meta, RF)
          == NULL));
  gst_buffer_unref (buf);
  /* the copy outlives the buffer */
  fail_unless (b[0] == rhythm_value (2, 0, 0));
  g_bytes_unref (bytes);
  /* a block of its own, zeros */
  zero = gst_buffer_add_av_rhythm_meta (plain, 1, RN, RD, NULL);
  fail_unless (zero != NULL);
  for (guint i = 0; i < RN * RD; i++)
    fail_unless (gst_av_rhythm_meta_get_rows (zero, 0)[i] == 0.0f);
  gst_buffer_unref (plain);
}

GST_END_TEST;

/* gst_buffer_copy (what GstBaseTransform and tee's users do) and a deep
 * copy keep the rows; the original may go first. */
GST_START_TEST (test_rhythm_copy)
{
  GstBuffer *buf = rhythm_buffer ();
  GstBuffer *copy = gst_buffer_copy (buf);
  GstBuffer *deep = gst_buffer_copy_deep (buf);

  gst_buffer_unref (buf);
  check_rhythm_rows (gst_buffer_get_av_rhythm_meta (copy), 0, RF);
  check_rhythm_rows (gst_buffer_get_av_rhythm_meta (deep), 0, RF);
  gst_buffer_unref (copy);
  gst_buffer_unref (deep);
}

GST_END_TEST;

/* A region of whole frames keeps their rows; one that cuts a frame drops
 * the meta (its rows would belong to no frame). */
GST_START_TEST (test_rhythm_region)
{
  GstBuffer *buf = rhythm_buffer ();
  GstBuffer *mid = gst_buffer_copy_region (buf, GST_BUFFER_COPY_ALL, 8, 8);
  GstBuffer *tail = gst_buffer_copy_region (buf, GST_BUFFER_COPY_ALL, 8, -1);
  GstBuffer *cut = gst_buffer_copy_region (buf, GST_BUFFER_COPY_ALL, 4, 8);

  check_rhythm_rows (gst_buffer_get_av_rhythm_meta (mid), 1, 1);
  check_rhythm_rows (gst_buffer_get_av_rhythm_meta (tail), 1, 2);
  fail_unless (gst_buffer_get_av_rhythm_meta (cut) == NULL);
  gst_buffer_unref (buf);
  gst_buffer_unref (mid);
  gst_buffer_unref (tail);
  gst_buffer_unref (cut);
}

GST_END_TEST;

/* Sizes of 0, a block too small, and sizes beyond memory are refused. */
GST_START_TEST (test_rhythm_refused)
{
  const guint sizes[][3] = { {0, 1, 1}, {1, 0, 1}, {1, 1, 0} };
  GstBuffer *buf = gst_buffer_new ();
  GstAvRhythmMeta *m = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++) {
    ASSERT_CRITICAL (m = gst_buffer_add_av_rhythm_meta (buf, sizes[i][0],
            sizes[i][1], sizes[i][2], gst_buffer_new_allocate (NULL, 64,
                NULL)));
    fail_unless (m == NULL);
  }
  ASSERT_CRITICAL (m = gst_buffer_add_av_rhythm_meta (buf, 2, RN, RD,
          gst_buffer_new_allocate (NULL, RN * RD * 4, NULL)));
  fail_unless (m == NULL);
  fail_unless (gst_buffer_get_av_rhythm_meta (buf) == NULL);
  fail_unless_equals_uint64 (gst_av_rhythm_meta_data_size (G_MAXUINT,
          G_MAXUINT, G_MAXUINT), G_MAXSIZE);
  gst_buffer_unref (buf);
}

GST_END_TEST;

static Suite *
meta_suite (void)
{
  Suite *s = suite_create ("avattentionmeta");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_layout_and_values);
  tcase_add_test (tc, test_add_refuses_empty_sizes);
  tcase_add_test (tc, test_strongest_patch);
  tcase_add_test (tc, test_sound_visible);
  tcase_add_test (tc, test_copy_keeps_meta);
  tcase_add_test (tc, test_too_small_data_is_refused);
  tcase_add_test (tc, test_bytes_and_setters);
  tcase_add_test (tc, test_rhythm_add_get);
  tcase_add_test (tc, test_rhythm_copy);
  tcase_add_test (tc, test_rhythm_region);
  tcase_add_test (tc, test_rhythm_refused);
  return s;
}

AVF_CHECK_MAIN (meta);
