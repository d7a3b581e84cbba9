/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The avattention element with GstHarness: one harness on video_sink (with
 * the src pad) and one on audio_sink.  Parity with the PyTorch fixtures
 * (tests/fixtures/fusion_small.safetensors), timestamps, segments, gaps,
 * end-of-stream on each pad, flushing, negotiation errors, bus messages,
 * the live timeout path, weights-file errors and state cycling.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gstavattention.h"
#include "gstavattentionmeta.h"
#include "gstavtensor.h"
#include "safetensors.h"
#include "blas.h"
#include "safetensors_write.h"

#define MS GST_MSECOND
/* the small configuration of the fixtures */
#define SM_E 48
#define SM_H 3
#define SM_L 2
#define SM_M 40
#define SM_T 37
#define SM_COLS 4
#define SM_ROWS 3
#define SM_N (SM_COLS * SM_ROWS)
#define SM_WINDOW (370 * MS)
#define HOP_NS (10 * MS)        /* hop 160 at 16000 Hz */
#define FRAME_30 ((GstClockTime) 33333333)

/* ---- fixture tensors ---------------------------------------------------- */

static AvfSafetensors *
open_fixture (void)
{
  gchar *path = avf_fixture_path ("fusion_small.safetensors");
  AvfSafetensors *fx = NULL;
  AvfError err;

  fail_unless (avf_safetensors_open (&fx, path, &err) == AVF_OK,
      "cannot open %s: %s", path, err.message);
  g_free (path);
  return fx;
}

/* A copy of a fixture tensor (the file data may be unaligned). */
static gpointer
fx_tensor (AvfSafetensors * fx, AvfDtype dtype, gsize * n, const gchar * fmt,
    ...)
{
  const AvfTensorInfo *ti;
  gchar *name;
  gpointer data;
  va_list args;

  va_start (args, fmt);
  name = g_strdup_vprintf (fmt, args);
  va_end (args);
  ti = avf_safetensors_find (fx, name);
  fail_unless (ti != NULL, "fixture has no tensor %s", name);
  fail_unless (ti->dtype == dtype, "fixture tensor %s has dtype %s", name,
      avf_dtype_name (ti->dtype));
  data = g_memdup2 (ti->data, ti->numel * avf_dtype_size (dtype));
  if (n)
    *n = ti->numel;
  g_free (name);
  return data;
}

/* Max abs difference; NaN on both sides is equal, on one side infinite. */
static gdouble
max_diff (const gfloat * a, const gfloat * b, gsize n)
{
  gdouble m = 0.0;
  for (gsize i = 0; i < n; i++) {
    gdouble d;
    if (isnan (a[i]) && isnan (b[i]))
      continue;
    d = fabs ((gdouble) a[i] - (gdouble) b[i]);
    if (isnan (d))
      return INFINITY;
    m = MAX (m, d);
  }
  return m;
}

/* ---- harness set-up ----------------------------------------------------- */

typedef struct
{
  GstElement *att;
  GstHarness *v;                /* video_sink in, src out */
  GstHarness *a;                /* audio_sink in */
  GstBus *bus;
} Fx;

static GstElement *
make_att (const gchar * weights_fixture, guint64 window)
{
  GstElement *att = gst_element_factory_make ("avattention", NULL);

  fail_unless (att != NULL, "avattention is not in the registry");
  gst_object_ref_sink (att);
  if (weights_fixture) {
    gchar *path = avf_fixture_path (weights_fixture);
    g_object_set (att, "weights", path, NULL);
    g_free (path);
  } else {
    /* no file: the seeded built-in weights (E 256, 64 bands), asked for */
    gst_util_set_object_arg (G_OBJECT (att), "model", "seeded");
  }
  g_object_set (att, "window", window, NULL);
  return att;
}

static GstElement *
make_small (void)
{
  return make_att ("weights_small.safetensors", SM_WINDOW);
}

/* Starts the element (the harnesses set it to PLAYING).  live=FALSE makes
 * the harness sources report a non-live latency, so the element only
 * aggregates when both pads have data or are at end-of-stream. */
static void
fx_setup (Fx * f, GstElement * att, gboolean live)
{
  f->att = att;
  f->bus = gst_bus_new ();
  gst_element_set_bus (att, f->bus);
  f->v = gst_harness_new_with_element (att, "video_sink", "src");
  gst_harness_set_live (f->v, live);
  f->a = gst_harness_new_with_element (att, "audio_sink", NULL);
  gst_harness_set_live (f->a, live);
}

static void
fx_small_caps (Fx * f, gint fps_n, gint fps_d)
{
  gst_harness_set_src_caps (f->a, gst_av_tensor_caps_log_mel (SM_M, 16000,
          160, 400));
  gst_harness_set_src_caps (f->v, gst_av_tensor_caps_patches (SM_E, SM_COLS,
          SM_ROWS, 8, fps_n, fps_d));
}

static void
fx_teardown (Fx * f)
{
  avf_harness_teardown_pair (f->a, f->v);
  gst_element_set_bus (f->att, NULL);
  gst_bus_set_flushing (f->bus, TRUE);
  gst_object_unref (f->bus);
  gst_object_unref (f->att);
}

static GstBuffer *
float_buffer (const gfloat * data, gsize n, GstClockTime pts,
    GstClockTime dur)
{
  GstBuffer *b = gst_buffer_new_memdup (data, n * sizeof (gfloat));
  GST_BUFFER_PTS (b) = pts;
  GST_BUFFER_DURATION (b) = dur;
  return b;
}

static void
push (GstHarness * h, GstBuffer * b)
{
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
}

static void
push_gap (GstHarness * h, GstClockTime pts, GstClockTime dur)
{
  fail_unless (gst_harness_push_event (h, gst_event_new_gap (pts, dur)));
}

static void
push_segment (GstHarness * h, const GstSegment * seg)
{
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (seg)));
}

/* A deterministic spectrogram frame / patch-embedding frame. */
static void
mel_frame (gfloat * out, gint M, guint64 i)
{
  for (gint b = 0; b < M; b++)
    out[b] = (gfloat) (sin (0.1 * (gdouble) i + 0.37 * b) * 3.0 - 4.0);
}

static void
patch_frame (gfloat * out, gint N, gint E, guint64 k)
{
  for (gint i = 0; i < N * E; i++)
    out[i] = (gfloat) (cos (0.013 * i + 0.5 * (gdouble) k) * 0.8);
}

static GstAvAttentionMeta *
get_meta (GstBuffer * buf)
{
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);
  fail_unless (meta != NULL, "output without GstAvAttentionMeta");
  return meta;
}

/* The expected mask of the window at t for spectrogram frames at the given
 * running times (spec §3 in plain double arithmetic). */
static void
expected_mask (guint8 * mask, gint T, GstClockTime t, GstClockTime window,
    const GstClockTime * s, gsize n)
{
  memset (mask, 1, (gsize) T);
  for (gsize i = 0; i < n; i++) {
    gdouble x = ((gdouble) s[i] - ((gdouble) t - (gdouble) window))
        / (gdouble) HOP_NS;
    gdouble j = floor (x + 0.5);
    if (j >= 0 && j < T)
      mask[(gint) j] = 0;
  }
}

static guint
count_present (const guint8 * mask, gint T)
{
  guint n = 0;
  for (gint j = 0; j < T; j++)
    n += !mask[j];
  return n;
}

/* ---- (1) parity with PyTorch ------------------------------------------ */

/* Runs one fixture case: the video frame at running time 370 ms, the
 * spectrogram frames of the unmasked slots at 10 ms * j, then a gap event
 * at 370 ms so the audio reaches the frame.  With a segment the times are
 * mapped from running time to buffer time through it. */
static GstBuffer *
run_fixture_case (AvfSafetensors * fx, const gchar * cas,
    GstAvAttentionWeights mode, const GstSegment * seg)
{
  GstElement *att = make_small ();
  gfloat *mel = fx_tensor (fx, AVF_DTYPE_F32, NULL, "%s.mel", cas);
  guint8 *mask = fx_tensor (fx, AVF_DTYPE_U8, NULL, "%s.mask", cas);
  gfloat *patches = fx_tensor (fx, AVF_DTYPE_F32, NULL, "patches");
  GstSegment def;
  GstBuffer *out;
  Fx f;

  if (seg == NULL) {
    gst_segment_init (&def, GST_FORMAT_TIME);
    seg = &def;
  }
  g_object_set (att, "attention-weights", mode, NULL);
  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  push_segment (f.v, seg);
  push_segment (f.a, seg);

  push (f.v, float_buffer (patches, SM_N * SM_E,
          gst_segment_position_from_running_time (seg, GST_FORMAT_TIME,
              370 * MS), FRAME_30));
  for (gint j = 0; j < SM_T; j++) {
    if (mask[j])
      continue;
    push (f.a, float_buffer (mel + j * SM_M, SM_M,
            gst_segment_position_from_running_time (seg, GST_FORMAT_TIME,
                j * HOP_NS), HOP_NS));
  }
  push_gap (f.a, gst_segment_position_from_running_time (seg,
          GST_FORMAT_TIME, 370 * MS), HOP_NS);
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL, "no output for the %s case", cas);

  fx_teardown (&f);
  g_free (mel);
  g_free (mask);
  g_free (patches);
  return out;
}

static void
check_fixture_case (AvfSafetensors * fx, const gchar * cas,
    GstAvAttentionWeights mode, const GstSegment * seg)
{
  GstBuffer *out = run_fixture_case (fx, cas, mode, seg);
  gfloat *ref = fx_tensor (fx, AVF_DTYPE_F32, NULL, "%s.fused", cas);
  guint8 *mask = fx_tensor (fx, AVF_DTYPE_U8, NULL, "%s.mask", cas);
  const guint present = count_present (mask, SM_T);
  GstClockTime pts = seg ? gst_segment_position_from_running_time (seg,
      GST_FORMAT_TIME, 370 * MS) : 370 * MS;
  GstMapInfo map;
  gdouble d;

  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), pts);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), FRAME_30);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_int (map.size, 2 * SM_E * sizeof (gfloat));
  d = max_diff ((const gfloat *) map.data, ref, 2 * SM_E);
  fail_unless (d <= 1e-4, "%s: fused differs from PyTorch by %g", cas, d);
  gst_buffer_unmap (out, &map);

  if (mode == GST_AV_ATTENTION_WEIGHTS_NONE) {
    fail_unless (gst_buffer_get_av_attention_meta (out) == NULL,
        "attention-weights=none still attached a meta");
  } else {
    GstAvAttentionMeta *meta = get_meta (out);
    const gboolean per_head = mode == GST_AV_ATTENTION_WEIGHTS_PER_HEAD;

    fail_unless_equals_int (meta->n_layers, SM_L);
    fail_unless_equals_int (meta->n_heads, per_head ? SM_H : 1);
    fail_unless_equals_int (meta->model_heads, SM_H);
    fail_unless_equals_int (meta->n_audio_slots, SM_T);
    fail_unless_equals_int (meta->n_patches, SM_N);
    fail_unless_equals_int (meta->grid_columns, SM_COLS);
    fail_unless_equals_int (meta->grid_rows, SM_ROWS);
    fail_unless_equals_uint64 (meta->window_start, 0);
    fail_unless_equals_uint64 (meta->window_end, 370 * MS);
    fail_unless_equals_int (meta->n_audio_present, present);
    fail_unless_equals_int (meta->audio_missing, present == 0);
    fail_unless (!meta->audio_ended);
    fail_unless (memcmp (gst_av_attention_meta_get_audio_mask (meta), mask,
            SM_T) == 0, "%s: audio mask differs from the fixture", cas);
    for (guint l = 0; l < SM_L; l++) {
      for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
        guint heads, tq, tk;
        gsize n;
        const gfloat *w = gst_av_attention_meta_get_weights (meta, l, m,
            &heads, &tq, &tk);
        gfloat *rmap = fx_tensor (fx, AVF_DTYPE_F32, &n, "%s.layers.%u.%s%s",
            cas, l, gst_av_attention_module_name (m),
            per_head ? ".per_head" : "");

        fail_unless_equals_int (n, (gsize) heads * tq * tk);
        d = max_diff (w, rmap, n);
        fail_unless (d <= 1e-4, "%s layers.%u.%s: map differs from PyTorch "
            "by %g", cas, l, gst_av_attention_module_name (m), d);
        fail_unless_equals_int (gst_av_attention_meta_is_skipped (meta, l,
                m), isnan (rmap[0]) ? TRUE : FALSE);
        g_free (rmap);
      }
    }
  }
  g_free (ref);
  g_free (mask);
  gst_buffer_unref (out);
}

GST_START_TEST (test_parity_head_mean)
{
  AvfSafetensors *fx = open_fixture ();
  check_fixture_case (fx, "partial", GST_AV_ATTENTION_WEIGHTS_MEAN, NULL);
  check_fixture_case (fx, "full", GST_AV_ATTENTION_WEIGHTS_MEAN, NULL);
  check_fixture_case (fx, "empty", GST_AV_ATTENTION_WEIGHTS_MEAN, NULL);
  avf_safetensors_free (fx);
}

GST_END_TEST;

GST_START_TEST (test_parity_per_head)
{
  AvfSafetensors *fx = open_fixture ();
  check_fixture_case (fx, "partial", GST_AV_ATTENTION_WEIGHTS_PER_HEAD, NULL);
  check_fixture_case (fx, "full", GST_AV_ATTENTION_WEIGHTS_PER_HEAD, NULL);
  check_fixture_case (fx, "empty", GST_AV_ATTENTION_WEIGHTS_PER_HEAD, NULL);
  avf_safetensors_free (fx);
}

GST_END_TEST;

GST_START_TEST (test_parity_without_maps)
{
  AvfSafetensors *fx = open_fixture ();
  check_fixture_case (fx, "partial", GST_AV_ATTENTION_WEIGHTS_NONE, NULL);
  check_fixture_case (fx, "empty", GST_AV_ATTENTION_WEIGHTS_NONE, NULL);
  avf_safetensors_free (fx);
}

GST_END_TEST;

/* The same window through segments with a start of 7 s and rate 2 (buffer
 * times are twice the running times past the start): running time is
 * what places the frames. */
GST_START_TEST (test_parity_segment_start_and_rate)
{
  AvfSafetensors *fx = open_fixture ();
  GstSegment seg;

  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.start = 7 * GST_SECOND;
  seg.time = 7 * GST_SECOND;
  seg.position = seg.start;
  check_fixture_case (fx, "partial", GST_AV_ATTENTION_WEIGHTS_MEAN, &seg);
  seg.rate = 2.0;
  check_fixture_case (fx, "partial", GST_AV_ATTENTION_WEIGHTS_MEAN, &seg);
  avf_safetensors_free (fx);
}

GST_END_TEST;

/* ---- (2) timestamps ----------------------------------------------------- */

typedef struct
{
  guint n_video;
  GstClockTime offset;          /* segment start of both pads */
  guint video_per_buffer;       /* video frames per buffer */
  guint audio_per_buffer;       /* spectrogram frames per buffer */
} StreamSpec;

static GstClockTime
video_pts (guint64 k)
{
  return gst_util_uint64_scale (k, GST_SECOND, 30);
}

/* Pushes n_video frames at 30 fps and a continuous spectrogram stream,
 * frame by frame: a video buffer, then audio until it reaches the frame,
 * then the output is pulled.  (A sink pad of a non-live aggregator holds
 * one buffer, so this order never blocks for good.)  Ends with
 * end-of-stream on both pads; returns the outputs. */
static GPtrArray *
run_stream (const StreamSpec * spec)
{
  GstElement *att = make_small ();
  GPtrArray *outs = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  gfloat *vdata = g_new (gfloat, (gsize) SM_N * SM_E * spec->video_per_buffer);
  gfloat *adata = g_new (gfloat, (gsize) SM_M * spec->audio_per_buffer);
  GstClockTime audio_end = 0;   /* end of the audio pushed so far */
  guint64 i = 0;
  GstSegment seg;
  GstBuffer *out;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.start = seg.time = seg.position = spec->offset;
  push_segment (f.v, &seg);
  push_segment (f.a, &seg);

  for (guint64 k = 0; k < spec->n_video; k += spec->video_per_buffer) {
    const guint nf = MIN (spec->video_per_buffer, spec->n_video - k);
    const GstClockTime tv = video_pts (k);

    for (guint q = 0; q < nf; q++)
      patch_frame (vdata + (gsize) q * SM_N * SM_E, SM_N, SM_E, k + q);
    push (f.v, float_buffer (vdata, (gsize) nf * SM_N * SM_E,
            spec->offset + tv, video_pts (k + nf) - tv));
    for (guint q = 0; q < nf; q++) {
      while (audio_end <= video_pts (k + q)) {
        for (guint r = 0; r < spec->audio_per_buffer; r++)
          mel_frame (adata + (gsize) r * SM_M, SM_M, i + r);
        push (f.a, float_buffer (adata,
                (gsize) SM_M * spec->audio_per_buffer,
                spec->offset + i * HOP_NS, spec->audio_per_buffer * HOP_NS));
        i += spec->audio_per_buffer;
        audio_end = i * HOP_NS;
      }
      out = gst_harness_pull (f.v);
      fail_unless (out != NULL, "no output for video frame %u",
          (guint) (k + q));
      g_ptr_array_add (outs, out);
    }
  }
  fail_unless (gst_harness_push_event (f.v, gst_event_new_eos ()));
  gst_harness_push_event (f.a, gst_event_new_eos ());
  /* the end-of-stream comes after the last frame, and nothing else */
  for (;;) {
    GstEvent *ev = gst_harness_pull_event (f.v);
    fail_unless (ev != NULL, "no end-of-stream after the last frame");
    if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS) {
      gst_event_unref (ev);
      break;
    }
    gst_event_unref (ev);
  }
  fail_unless (gst_harness_try_pull (f.v) == NULL, "more outputs than "
      "video frames");
  fx_teardown (&f);
  g_free (vdata);
  g_free (adata);
  return outs;
}

static void
check_stream (const StreamSpec * spec, GPtrArray * outs)
{
  const guint n_audio = 2 * SM_T + (guint) (video_pts (spec->n_video)
      / HOP_NS);
  GstClockTime *s = g_new (GstClockTime, n_audio);
  guint8 want[SM_T];

  for (guint i = 0; i < n_audio; i++)
    s[i] = i * HOP_NS;
  fail_unless_equals_int (outs->len, spec->n_video);
  for (guint k = 0; k < outs->len; k++) {
    GstBuffer *b = g_ptr_array_index (outs, k);
    GstAvAttentionMeta *meta = get_meta (b);
    const GstClockTime t = video_pts (k);
    gsize n_past = 0;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), spec->offset + t);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (b),
        video_pts (k + 1) - t);
    /* running time: the segment starts at the offset */
    fail_unless_equals_uint64 (meta->window_end, t);
    /* causal: only spectrogram frames before t */
    while (n_past < n_audio && s[n_past] < t)
      n_past++;
    expected_mask (want, SM_T, t, SM_WINDOW, s, n_past);
    fail_unless (memcmp (gst_av_attention_meta_get_audio_mask (meta), want,
            SM_T) == 0, "frame %u: wrong audio mask", k);
    fail_unless_equals_int (meta->n_audio_present,
        count_present (want, SM_T));
    fail_unless_equals_int (meta->audio_missing,
        count_present (want, SM_T) == 0);
  }
  g_free (s);
}

GST_START_TEST (test_timestamps_30fps)
{
  StreamSpec spec = { 20, 0, 1, 5 };
  GPtrArray *outs = run_stream (&spec);
  check_stream (&spec, outs);
  g_ptr_array_unref (outs);
}

GST_END_TEST;

/* Several frames per buffer on both pads, and a segment that starts at 5 s:
 * the same outputs as one frame per buffer from 0, only the PTS moves. */
GST_START_TEST (test_timestamps_segment_and_multi_frame_buffers)
{
  StreamSpec plain = { 12, 0, 1, 5 };
  StreamSpec shifted = { 12, 5 * GST_SECOND, 3, 7 };
  GPtrArray *a = run_stream (&plain), *b = run_stream (&shifted);

  check_stream (&plain, a);
  check_stream (&shifted, b);
  for (guint k = 0; k < a->len; k++) {
    GstMapInfo ma, mb;
    fail_unless (gst_buffer_map (g_ptr_array_index (a, k), &ma,
            GST_MAP_READ));
    fail_unless (gst_buffer_map (g_ptr_array_index (b, k), &mb,
            GST_MAP_READ));
    fail_unless (ma.size == mb.size && memcmp (ma.data, mb.data,
            ma.size) == 0, "frame %u differs with the shifted segment", k);
    gst_buffer_unmap (g_ptr_array_index (a, k), &ma);
    gst_buffer_unmap (g_ptr_array_index (b, k), &mb);
  }
  g_ptr_array_unref (a);
  g_ptr_array_unref (b);
}

GST_END_TEST;

/* ---- (3) gaps ----------------------------------------------------------- */

GST_START_TEST (test_gap_masks_slots)
{
  GstElement *att = make_small ();
  gfloat frame[SM_M], video[SM_N * SM_E];
  guint8 want[SM_T];
  GstClockTime s[64];
  gsize n_s = 0;
  GstAvAttentionMeta *meta;
  GstBuffer *out;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);

  /* frame at 370 ms: audio 0..90 ms, a GAP event over [100, 200) ms,
   * then 200..360 ms */
  patch_frame (video, SM_N, SM_E, 0);
  push (f.v, float_buffer (video, SM_N * SM_E, 370 * MS, FRAME_30));
  for (guint i = 0; i < 37; i++) {
    if (i == 10)
      push_gap (f.a, 100 * MS, 100 * MS);
    if (i >= 10 && i < 20)
      continue;
    mel_frame (frame, SM_M, i);
    push (f.a, float_buffer (frame, SM_M, i * HOP_NS, HOP_NS));
    s[n_s++] = i * HOP_NS;
  }
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  meta = get_meta (out);
  expected_mask (want, SM_T, 370 * MS, SM_WINDOW, s, n_s);
  for (gint j = 0; j < SM_T; j++)
    fail_unless_equals_int (want[j], j >= 10 && j < 20);
  fail_unless (memcmp (gst_av_attention_meta_get_audio_mask (meta), want,
          SM_T) == 0, "the gap is not masked at slots 10..19");
  fail_unless_equals_int (meta->n_audio_present, 27);
  fail_unless (!meta->audio_missing && !meta->audio_ended);
  gst_buffer_unref (out);

  /* frame at 470 ms: the window [100, 470) starts with the gap */
  patch_frame (video, SM_N, SM_E, 1);
  push (f.v, float_buffer (video, SM_N * SM_E, 470 * MS, FRAME_30));
  for (guint i = 37; i < 47; i++) {
    mel_frame (frame, SM_M, i);
    push (f.a, float_buffer (frame, SM_M, i * HOP_NS, HOP_NS));
    s[n_s++] = i * HOP_NS;
  }
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  meta = get_meta (out);
  expected_mask (want, SM_T, 470 * MS, SM_WINDOW, s, n_s);
  for (gint j = 0; j < SM_T; j++)
    fail_unless_equals_int (want[j], j < 10);
  fail_unless (memcmp (gst_av_attention_meta_get_audio_mask (meta), want,
          SM_T) == 0, "the gap is not masked at slots 0..9");
  fail_unless_equals_int (meta->n_audio_present, 27);
  gst_buffer_unref (out);

  /* a gap alone lets video through: [480 ms, 2 s) of silence */
  push_gap (f.a, 480 * MS, 1520 * MS);
  push (f.v, float_buffer (video, SM_N * SM_E, 1500 * MS, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  meta = get_meta (out);
  fail_unless (meta->audio_missing);
  fail_unless_equals_int (meta->n_audio_present, 0);
  gst_buffer_unref (out);
  fx_teardown (&f);
}

GST_END_TEST;

/* ---- (4) end-of-stream on the audio pad --------------------------------- */


/* A GAP event on video_sink: no fused output for it, a GAP event with its
 * times on src (a sink waiting to preroll moves on), then the next frame. */
GST_START_TEST (test_video_gap_is_forwarded)
{
  GstElement *att = make_small ();
  gfloat video[SM_N * SM_E];
  GstBuffer *out;
  GstEvent *gap;
  GstClockTime ts, dur;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  patch_frame (video, SM_N, SM_E, 0);
  push (f.v, float_buffer (video, SM_N * SM_E, 0, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  gst_buffer_unref (out);

  push_gap (f.v, FRAME_30, 2 * FRAME_30);
  gap = pull_event_of_type (f.v, GST_EVENT_GAP);
  fail_unless (gap != NULL, "the GAP on video_sink was not forwarded");
  gst_event_parse_gap (gap, &ts, &dur);
  fail_unless_equals_uint64 (ts, FRAME_30);
  fail_unless_equals_uint64 (dur, 2 * FRAME_30);
  gst_event_unref (gap);

  push (f.v, float_buffer (video, SM_N * SM_E, 3 * FRAME_30, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 3 * FRAME_30);
  gst_buffer_unref (out);
  fail_unless (gst_harness_try_pull (f.v) == NULL);
  fx_teardown (&f);
}

GST_END_TEST;

GST_START_TEST (test_audio_eos_video_keeps_flowing)
{
  GstElement *att = make_small ();
  gfloat audio[20 * SM_M], video[SM_N * SM_E];
  const GstClockTime times[] = { 370 * MS, 400 * MS, 1000 * MS, 5000 * MS };
  const guint present[] = { 20, 17, 0, 0 };
  GstMapInfo map;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  /* 200 ms of audio in one buffer, then the audio ends */
  for (guint i = 0; i < 20; i++)
    mel_frame (audio + i * SM_M, SM_M, i);
  push (f.a, float_buffer (audio, 20 * SM_M, 0, 200 * MS));
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));

  for (guint k = 0; k < G_N_ELEMENTS (times); k++) {
    GstBuffer *out;
    GstAvAttentionMeta *meta;
    const gfloat *fused;

    patch_frame (video, SM_N, SM_E, k);
    push (f.v, float_buffer (video, SM_N * SM_E, times[k], FRAME_30));
    out = gst_harness_pull (f.v);
    fail_unless (out != NULL, "no output for frame %u after the audio "
        "ended", k);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), times[k]);
    meta = get_meta (out);
    fail_unless (meta->audio_ended, "frame %u: audio_ended not set", k);
    fail_unless_equals_int (meta->n_audio_present, present[k]);
    fail_unless_equals_int (meta->audio_missing, present[k] == 0);
    fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
    fused = (const gfloat *) map.data;
    for (gint e = 0; e < 2 * SM_E; e++) {
      fail_unless (isfinite (fused[e]));
      /* spec §3: no audio, the audio half is zeros */
      if (present[k] == 0 && e < SM_E)
        fail_unless_equals_float (fused[e], 0.0f);
    }
    gst_buffer_unmap (out, &map);
    gst_buffer_unref (out);
  }
  fx_teardown (&f);
}

GST_END_TEST;

/* A clip without audio: the audio pad ends before any data. */
GST_START_TEST (test_audio_eos_without_data)
{
  GstElement *att = make_small ();
  gfloat video[SM_N * SM_E];
  Fx f;

  fx_setup (&f, att, FALSE);
  gst_harness_set_src_caps (f.v, gst_av_tensor_caps_patches (SM_E, SM_COLS,
          SM_ROWS, 8, 30, 1));
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  for (guint k = 0; k < 3; k++) {
    GstBuffer *out;
    patch_frame (video, SM_N, SM_E, k);
    push (f.v, float_buffer (video, SM_N * SM_E, video_pts (k), FRAME_30));
    out = gst_harness_pull (f.v);
    fail_unless (out != NULL);
    fail_unless (get_meta (out)->audio_missing);
    fail_unless (get_meta (out)->audio_ended);
    gst_buffer_unref (out);
  }
  fx_teardown (&f);
}

GST_END_TEST;

/* ---- (5) end-of-stream on the video pad --------------------------------- */

static guint
count_eos (GstHarness * h)
{
  GstEvent *ev;
  guint n = 0;
  while ((ev = gst_harness_try_pull_event (h)) != NULL) {
    n += GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
  }
  return n;
}

GST_START_TEST (test_video_eos_one_eos)
{
  GstElement *att = make_small ();
  gfloat frame[SM_M], video[SM_N * SM_E];
  GstBuffer *out;
  guint n_eos = 0;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  patch_frame (video, SM_N, SM_E, 0);
  push (f.v, float_buffer (video, SM_N * SM_E, 0, FRAME_30));
  mel_frame (frame, SM_M, 0);
  push (f.a, float_buffer (frame, SM_M, 0, HOP_NS));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  gst_buffer_unref (out);

  /* the video ends while the audio goes on */
  fail_unless (gst_harness_push_event (f.v, gst_event_new_eos ()));
  for (guint i = 1; i < 6; i++) {
    mel_frame (frame, SM_M, i);
    gst_harness_push (f.a, float_buffer (frame, SM_M, i * HOP_NS, HOP_NS));
  }
  /* wait for the end-of-stream downstream */
  for (;;) {
    GstEvent *ev = gst_harness_pull_event (f.v);
    fail_unless (ev != NULL, "no end-of-stream downstream");
    n_eos += GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
    if (n_eos)
      break;
  }
  /* the audio ends too: still one EOS, no more output */
  gst_harness_push_event (f.a, gst_event_new_eos ());
  g_usleep (G_USEC_PER_SEC / 5);
  n_eos += count_eos (f.v);
  fail_unless_equals_int (n_eos, 1);
  fail_unless (gst_harness_try_pull (f.v) == NULL);
  fx_teardown (&f);
}

GST_END_TEST;

GST_START_TEST (test_both_eos_without_data)
{
  GstElement *att = make_small ();
  GstEvent *ev;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  fail_unless (gst_harness_push_event (f.v, gst_event_new_eos ()));
  while ((ev = gst_harness_pull_event (f.v)) != NULL) {
    gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
    if (eos)
      break;
  }
  fail_unless (ev != NULL, "no end-of-stream downstream");
  g_usleep (G_USEC_PER_SEC / 10);
  fail_unless_equals_int (count_eos (f.v), 0);
  fail_unless (gst_harness_try_pull (f.v) == NULL);
  fx_teardown (&f);
}

GST_END_TEST;

/* ---- (6) flushing ------------------------------------------------------- */

static void
flush_both (Fx * f)
{
  GstEvent *start = gst_event_new_flush_start ();
  GstEvent *stop = gst_event_new_flush_stop (TRUE);
  GstEvent *start2 = gst_event_copy (start), *stop2 = gst_event_copy (stop);
  GstSegment seg;

  gst_event_set_seqnum (start2, gst_event_get_seqnum (start));
  gst_event_set_seqnum (stop2, gst_event_get_seqnum (stop));
  gst_harness_push_event (f->a, start);
  gst_harness_push_event (f->v, start2);
  gst_harness_push_event (f->a, stop);
  gst_harness_push_event (f->v, stop2);
  gst_segment_init (&seg, GST_FORMAT_TIME);
  push_segment (f->a, &seg);
  push_segment (f->v, &seg);
}

typedef struct
{
  GstHarness *h;
  GPtrArray *items;             /* GstBuffer or GstEvent, transfer full */
} PushJob;

static gpointer
push_items (gpointer data)
{
  PushJob *job = data;
  for (guint i = 0; i < job->items->len; i++) {
    gpointer item = g_ptr_array_index (job->items, i);
    if (GST_IS_BUFFER (item))
      gst_harness_push (job->h, item);
    else
      gst_harness_push_event (job->h, item);
  }
  return NULL;
}

/* Full audio before the flush, a frame left waiting, then the partial case
 * after it: the result must be the partial fixture, so nothing of the old
 * history (or the waiting frame) survives the flush. */
GST_START_TEST (test_flush_clears_history)
{
  AvfSafetensors *fx = open_fixture ();
  GstElement *att = make_small ();
  gfloat *full = fx_tensor (fx, AVF_DTYPE_F32, NULL, "full.mel");
  gfloat *part = fx_tensor (fx, AVF_DTYPE_F32, NULL, "partial.mel");
  guint8 *pmask = fx_tensor (fx, AVF_DTYPE_U8, NULL, "partial.mask");
  gfloat *patches = fx_tensor (fx, AVF_DTYPE_F32, NULL, "patches");
  gfloat *ref = fx_tensor (fx, AVF_DTYPE_F32, NULL, "partial.fused");
  gfloat *fref = fx_tensor (fx, AVF_DTYPE_F32, NULL, "full.fused");
  PushJob job;
  GPtrArray *audio;
  GThread *pusher;
  GstBuffer *out;
  GstMapInfo map;
  gdouble d;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  push (f.v, float_buffer (patches, SM_N * SM_E, 370 * MS, FRAME_30));
  for (gint j = 0; j < SM_T; j++)
    push (f.a, float_buffer (full + j * SM_M, SM_M, j * HOP_NS, HOP_NS));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  d = max_diff ((const gfloat *) map.data, fref, 2 * SM_E);
  fail_unless (d <= 1e-4, "full case before the flush differs by %g", d);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);

  /* a frame that waits for audio when the flush comes */
  push (f.v, float_buffer (patches, SM_N * SM_E, 2 * GST_SECOND, FRAME_30));
  g_usleep (G_USEC_PER_SEC / 20);
  flush_both (&f);

  push (f.v, float_buffer (patches, SM_N * SM_E, 370 * MS, FRAME_30));
  /* the audio from another thread: were stale audio kept, the output would
   * come before this audio and the check below would fail (not hang) */
  audio = g_ptr_array_new ();
  for (gint j = 0; j < SM_T; j++)
    if (!pmask[j])
      g_ptr_array_add (audio, float_buffer (part + j * SM_M, SM_M,
              j * HOP_NS, HOP_NS));
  g_ptr_array_add (audio, gst_event_new_gap (370 * MS, HOP_NS));
  job.h = f.a;
  job.items = audio;
  pusher = g_thread_new ("audio", push_items, &job);
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL, "no output after the flush");
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 370 * MS);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  d = max_diff ((const gfloat *) map.data, ref, 2 * SM_E);
  fail_unless (d <= 1e-4, "partial case after the flush differs by %g: "
      "stale audio survived", d);
  gst_buffer_unmap (out, &map);
  fail_unless_equals_int (get_meta (out)->n_audio_present,
      count_present (pmask, SM_T));
  gst_buffer_unref (out);
  fail_unless (gst_harness_try_pull (f.v) == NULL,
      "the frame flushed away was output");
  g_thread_join (pusher);
  g_ptr_array_unref (audio);

  fx_teardown (&f);
  g_free (full);
  g_free (part);
  g_free (pmask);
  g_free (patches);
  g_free (ref);
  g_free (fref);
  avf_safetensors_free (fx);
}

GST_END_TEST;

/* ---- (7) negotiation ---------------------------------------------------- */

static GError *
pop_error (GstBus * bus, gchar ** debug)
{
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND,
      GST_MESSAGE_ERROR);
  GError *err = NULL;

  fail_unless (msg != NULL, "no error message on the bus");
  gst_message_parse_error (msg, &err, debug);
  gst_message_unref (msg);
  return err;
}

GST_START_TEST (test_caps_mel_bands_mismatch)
{
  /* the seeded weights expect 64 mel bands */
  GstElement *att = make_att (NULL, GST_SECOND);
  GstCaps *c40 = gst_av_tensor_caps_log_mel (40, 16000, 160, 400);
  GstCaps *c64 = gst_av_tensor_caps_log_mel (64, 16000, 160, 400);
  GstPad *pad;
  GstCaps *q;
  GError *err;
  Fx f;

  fx_setup (&f, att, FALSE);
  /* the caps query offers 64 bands only, so a link to 40 fails there */
  pad = gst_element_get_static_pad (att, "audio_sink");
  q = gst_pad_query_caps (pad, NULL);
  fail_unless (!gst_caps_can_intersect (q, c40), "query caps %"
      GST_PTR_FORMAT " accept 40 mel bands", q);
  fail_unless (gst_caps_can_intersect (q, c64));
  gst_caps_unref (q);
  gst_object_unref (pad);
  gst_caps_unref (c64);

  /* caps forced on the pad are refused with the values named */
  gst_harness_set_src_caps (f.a, c40);
  err = pop_error (f.bus, NULL);
  fail_unless (g_error_matches (err, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s", err->message);
  avf_check_contains (err->message, "audio_sink");
  avf_check_contains (err->message, "40 mel bands");
  avf_check_contains (err->message, "expect 64");
  avf_check_contains (err->message, "audio_proj.weight [256, 64]");
  g_error_free (err);
  fx_teardown (&f);
}

GST_END_TEST;

GST_START_TEST (test_caps_embed_dim_mismatch)
{
  GstElement *att = make_small ();
  GstCaps *c32 = gst_av_tensor_caps_patches (32, SM_COLS, SM_ROWS, 8, 30, 1);
  GstPad *pad;
  GstCaps *q;
  GError *err;
  Fx f;

  fx_setup (&f, att, FALSE);
  pad = gst_element_get_static_pad (att, "video_sink");
  q = gst_pad_query_caps (pad, NULL);
  fail_unless (!gst_caps_can_intersect (q, c32));
  gst_caps_unref (q);
  gst_object_unref (pad);

  gst_harness_set_src_caps (f.v, c32);
  err = pop_error (f.bus, NULL);
  fail_unless (g_error_matches (err, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s", err->message);
  avf_check_contains (err->message, "video_sink");
  avf_check_contains (err->message, "32 wide");
  avf_check_contains (err->message, "expect 48");
  g_error_free (err);
  fx_teardown (&f);
}

GST_END_TEST;

GST_START_TEST (test_caps_patch_count_mismatch)
{
  GstElement *att = make_small ();
  GError *err;
  Fx f;

  fx_setup (&f, att, FALSE);
  gst_harness_set_src_caps (f.v, gst_av_tensor_caps_patches (SM_E, 5, 3, 8,
          30, 1));
  err = pop_error (f.bus, NULL);
  fail_unless (g_error_matches (err, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s", err->message);
  avf_check_contains (err->message, "15 patches");
  avf_check_contains (err->message, "5 x 3");
  avf_check_contains (err->message, "expect 12");
  g_error_free (err);
  fx_teardown (&f);
}

GST_END_TEST;

/* A window longer than the weights' audio positions (40 x 10 ms). */
GST_START_TEST (test_caps_window_too_long)
{
  GstElement *att = make_att ("weights_small.safetensors", GST_SECOND);
  GError *err;
  Fx f;

  fx_setup (&f, att, FALSE);
  gst_harness_set_src_caps (f.a, gst_av_tensor_caps_log_mel (SM_M, 16000,
          160, 400));
  err = pop_error (f.bus, NULL);
  fail_unless (g_error_matches (err, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s", err->message);
  avf_check_contains (err->message, "100 spectrogram frames");
  avf_check_contains (err->message, "audio_pos [40, 48]");
  avf_check_contains (err->message, "at most 400.000 ms");
  g_error_free (err);
  fx_teardown (&f);
}

GST_END_TEST;

/* ---- (8) bus messages --------------------------------------------------- */

GST_START_TEST (test_post_messages)
{
  AvfSafetensors *fx = open_fixture ();
  GstElement *att = make_small ();
  gfloat *mel = fx_tensor (fx, AVF_DTYPE_F32, NULL, "partial.mel");
  guint8 *mask = fx_tensor (fx, AVF_DTYPE_U8, NULL, "partial.mask");
  gfloat *patches = fx_tensor (fx, AVF_DTYPE_F32, NULL, "patches");
  GstBuffer *out1, *out2;
  GstMessage *msg;
  const GstStructure *s;
  guint64 u64;
  guint u, col, row;
  gfloat weight;
  gdouble dw;
  gboolean b;
  Fx f;

  g_object_set (att, "post-messages", TRUE, NULL);
  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  push (f.v, float_buffer (patches, SM_N * SM_E, 370 * MS, FRAME_30));
  for (gint j = 0; j < SM_T; j++)
    if (!mask[j])
      push (f.a, float_buffer (mel + j * SM_M, SM_M, j * HOP_NS, HOP_NS));
  push_gap (f.a, 370 * MS, 1700 * MS);
  out1 = gst_harness_pull (f.v);
  fail_unless (out1 != NULL);
  /* a frame whose window is all gap */
  push (f.v, float_buffer (patches, SM_N * SM_E, 2 * GST_SECOND, FRAME_30));
  out2 = gst_harness_pull (f.v);
  fail_unless (out2 != NULL);

  /* one message per output, in order */
  msg = gst_bus_timed_pop_filtered (f.bus, 5 * GST_SECOND,
      GST_MESSAGE_ELEMENT);
  fail_unless (msg != NULL, "no element message");
  fail_unless (GST_MESSAGE_SRC (msg) == GST_OBJECT (att));
  s = gst_message_get_structure (msg);
  fail_unless (gst_structure_has_name (s, "avattention"));
  fail_unless (gst_structure_get_uint64 (s, "timestamp", &u64));
  fail_unless_equals_uint64 (u64, 370 * MS);
  fail_unless (gst_structure_get_uint64 (s, "running-time", &u64));
  fail_unless_equals_uint64 (u64, 370 * MS);
  fail_unless (gst_structure_get_uint64 (s, "stream-time", &u64));
  fail_unless_equals_uint64 (u64, 370 * MS);
  fail_unless (gst_structure_get_uint64 (s, "duration", &u64));
  fail_unless_equals_uint64 (u64, FRAME_30);
  fail_unless (gst_structure_get_uint (s, "audio-slots", &u));
  fail_unless_equals_int (u, SM_T);
  fail_unless (gst_structure_get_uint (s, "audio-present", &u));
  fail_unless_equals_int (u, count_present (mask, SM_T));
  fail_unless (gst_structure_get_boolean (s, "audio-missing", &b));
  fail_unless (!b);
  /* the strongest patch agrees with the meta of the output */
  fail_unless (gst_av_attention_meta_get_strongest_patch (get_meta (out1),
          SM_L - 1, &col, &row, &weight));
  fail_unless (gst_structure_get_uint (s, "patch-column", &u));
  fail_unless_equals_int (u, col);
  fail_unless (u < SM_COLS);
  fail_unless (gst_structure_get_uint (s, "patch-row", &u));
  fail_unless_equals_int (u, row);
  fail_unless (u < SM_ROWS);
  fail_unless (gst_structure_get_double (s, "patch-weight", &dw));
  fail_unless (dw == (gdouble) weight && dw > 0.0 && dw <= 1.0);
  /* the small weights name no visible_threshold: 0, unknown, and a window
   * with audio counts as a visible object sounding */
  fail_unless (gst_structure_get_boolean (s, "sound-visible", &b));
  fail_unless (b);
  fail_unless (gst_structure_get_double (s, "visible-threshold", &dw));
  fail_unless (dw == 0.0, "visible-threshold %g", dw);
  fail_unless_equals_float (get_meta (out1)->visible_threshold, 0.0f);
  gst_message_unref (msg);

  msg = gst_bus_timed_pop_filtered (f.bus, 5 * GST_SECOND,
      GST_MESSAGE_ELEMENT);
  fail_unless (msg != NULL, "no message for the second output");
  s = gst_message_get_structure (msg);
  fail_unless (gst_structure_get_uint64 (s, "timestamp", &u64));
  fail_unless_equals_uint64 (u64, 2 * GST_SECOND);
  fail_unless (gst_structure_get_boolean (s, "audio-missing", &b));
  fail_unless (b);
  fail_unless (gst_structure_get_uint (s, "audio-present", &u));
  fail_unless_equals_int (u, 0);
  fail_unless (!gst_structure_has_field (s, "patch-column"),
      "a window without audio names a patch");
  fail_unless (gst_structure_get_boolean (s, "sound-visible", &b));
  fail_unless (!b, "a window without audio has a visible sound");
  fail_unless (gst_structure_has_field_typed (s, "visible-threshold",
          G_TYPE_DOUBLE));
  gst_message_unref (msg);
  fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_ELEMENT) == NULL);

  gst_buffer_unref (out1);
  gst_buffer_unref (out2);
  fx_teardown (&f);
  g_free (mel);
  g_free (mask);
  g_free (patches);
  avf_safetensors_free (fx);
}

GST_END_TEST;

/* The weights' visible_threshold reaches the meta and the message: with the
 * small weights at threshold 1 (no patch of a 4 x 3 grid draws it all)
 * nothing visible sounds, although the window holds audio. */
GST_START_TEST (test_post_messages_visible_threshold)
{
  AvfSafetensors *fx = open_fixture ();
  gchar *dir = avf_tmp_dir_new ("avattention");
  gchar *small = avf_fixture_path ("weights_small.safetensors");
  gchar *path = g_build_filename (dir, "threshold.safetensors", NULL);
  GstElement *att = gst_element_factory_make ("avattention", NULL);
  gfloat *patches = fx_tensor (fx, AVF_DTYPE_F32, NULL, "patches");
  gfloat *mel = fx_tensor (fx, AVF_DTYPE_F32, NULL, "full.mel");
  GstAvAttentionMeta *meta;
  GstMessage *msg;
  const GstStructure *s;
  GstBuffer *out;
  gfloat thr, w;
  gdouble dthr;
  gboolean b;
  Fx f;

  avf_weights_copy_with_threshold (small, path, 1.0f);
  gst_object_ref_sink (att);
  g_object_set (att, "weights", path, "window", SM_WINDOW, "post-messages",
      TRUE, NULL);
  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  push (f.a, float_buffer (mel, SM_T * SM_M, 0, SM_T * HOP_NS));
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  push (f.v, float_buffer (patches, SM_N * SM_E, 370 * MS, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  meta = get_meta (out);
  fail_unless_equals_float (meta->visible_threshold, 1.0f);
  fail_unless (!meta->audio_missing);
  fail_if (gst_av_attention_meta_get_sound_visible (meta, &w, &thr));
  fail_unless (w > 0.0f && w < 1.0f && thr == 1.0f, "%g %g", w, thr);
  msg = gst_bus_timed_pop_filtered (f.bus, 5 * GST_SECOND,
      GST_MESSAGE_ELEMENT);
  fail_unless (msg != NULL);
  s = gst_message_get_structure (msg);
  fail_unless (gst_structure_has_field (s, "patch-column"));
  fail_unless (gst_structure_get_boolean (s, "sound-visible", &b));
  fail_unless (!b);
  fail_unless (gst_structure_get_double (s, "visible-threshold", &dthr));
  fail_unless (dthr == 1.0, "visible-threshold %g", dthr);
  gst_message_unref (msg);

  gst_buffer_unref (out);
  fx_teardown (&f);
  avf_remove_tree (dir);
  g_free (path);
  g_free (small);
  g_free (dir);
  g_free (mel);
  g_free (patches);
  avf_safetensors_free (fx);
}

GST_END_TEST;

/* ---- live: a stalled audio input does not stall the video --------------- */

GST_START_TEST (test_live_audio_stall_times_out)
{
  GstElement *att = make_small ();
  gfloat video[SM_N * SM_E];
  GstAvAttentionMeta *meta;
  GstBuffer *out;
  Fx f;

  fx_setup (&f, att, TRUE);
  fx_small_caps (&f, 30, 1);
  patch_frame (video, SM_N, SM_E, 0);
  push (f.v, float_buffer (video, SM_N * SM_E, 100 * MS, FRAME_30));
  /* no audio: the element waits on the clock for the frame's running time
   * plus the latency, then fuses with a masked window */
  fail_unless (gst_harness_crank_single_clock_wait (f.v));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 100 * MS);
  meta = get_meta (out);
  fail_unless (meta->audio_missing);
  fail_unless (!meta->audio_ended);
  gst_buffer_unref (out);
  fx_teardown (&f);
}

GST_END_TEST;

/* ---- (10) weights files ------------------------------------------------- */

static GError *
start_error (GstElement * att)
{
  GstBus *bus = gst_bus_new ();
  GError *err;

  gst_element_set_bus (att, bus);
  fail_unless_equals_int (gst_element_set_state (att, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  err = pop_error (bus, NULL);
  gst_element_set_state (att, GST_STATE_NULL);
  gst_element_set_bus (att, NULL);
  gst_object_unref (bus);
  return err;
}

GST_START_TEST (test_weights_missing_file)
{
  const gchar *path = "/nonexistent/avattention/weights.safetensors";
  GstElement *att = gst_element_factory_make ("avattention", NULL);
  GError *err;

  g_object_set (att, "weights", path, NULL);
  err = start_error (att);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_FOUND), "%s", err->message);
  avf_check_contains (err->message, path);
  g_error_free (err);
  gst_object_unref (att);
}

GST_END_TEST;

GST_START_TEST (test_weights_malformed_file)
{
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("avattention-XXXXXX.safetensors", &path, NULL);
  GstElement *att = gst_element_factory_make ("avattention", NULL);
  GError *err;

  fail_unless (fd >= 0);
  g_close (fd, NULL);
  fail_unless (g_file_set_contents (path, "not a safetensors file", -1,
          NULL));
  g_object_set (att, "weights", path, NULL);
  err = start_error (att);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_READ), "%s", err->message);
  avf_check_contains (err->message, path);
  g_error_free (err);
  gst_object_unref (att);
  g_unlink (path);
  g_free (path);
}

GST_END_TEST;

/* The small weights without audio_proj.bias: the message names the tensor. */
GST_START_TEST (test_weights_inconsistent_file)
{
  gchar *src = avf_fixture_path ("weights_small.safetensors");
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("avattention-XXXXXX.safetensors", &path, NULL);
  GstElement *att = gst_element_factory_make ("avattention", NULL);
  AvfSafetensors *st = NULL;
  AvfTensorOut *outs;
  AvfMetadataEntry *meta;
  gsize n = 0, n_meta;
  AvfError aerr;
  GError *err;

  fail_unless (fd >= 0);
  g_close (fd, NULL);
  fail_unless (avf_safetensors_open (&st, src, &aerr) == AVF_OK, "%s",
      aerr.message);
  outs = g_new0 (AvfTensorOut, avf_safetensors_count (st));
  for (gsize i = 0; i < avf_safetensors_count (st); i++) {
    const AvfTensorInfo *ti = avf_safetensors_tensor (st, i);
    if (strcmp (ti->name, "audio_proj.bias") == 0)
      continue;
    outs[n].name = ti->name;
    outs[n].dtype = ti->dtype;
    outs[n].ndim = ti->ndim;
    memcpy (outs[n].shape, ti->shape, sizeof outs[n].shape);
    outs[n].data = ti->data;
    n++;
  }
  n_meta = avf_safetensors_metadata_count (st);
  meta = g_new0 (AvfMetadataEntry, n_meta);
  for (gsize i = 0; i < n_meta; i++)
    meta[i] = *avf_safetensors_metadata_entry (st, i);
  fail_unless (avf_safetensors_write (path, outs, n, meta, n_meta,
          &aerr) == AVF_OK, "%s", aerr.message);

  g_object_set (att, "weights", path, NULL);
  err = start_error (att);
  fail_unless (err->domain == GST_RESOURCE_ERROR, "%s", err->message);
  avf_check_contains (err->message, path);
  avf_check_contains (err->message, "audio_proj.bias");
  g_error_free (err);

  gst_object_unref (att);
  avf_safetensors_free (st);
  g_free (outs);
  g_free (meta);
  g_unlink (path);
  g_free (path);
  g_free (src);
}

GST_END_TEST;

/* ---- (9) state cycles of a real pipeline -------------------------------- */

static void
on_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, gpointer data)
{
  g_atomic_int_inc ((gint *) data);
}

GST_START_TEST (test_pipeline_state_cycles)
{
  const gchar *needed[] = { "avspectrogram", "avpatchembed" };
  GstElement *pipeline, *sink;
  GError *error = NULL;
  gchar *weights, *desc;
  GstBus *bus;
  gint n_out = 0;

  for (guint i = 0; i < G_N_ELEMENTS (needed); i++) {
    GstElementFactory *fac = gst_element_factory_find (needed[i]);
    if (fac == NULL) {
      g_print ("SKIPPED test_pipeline_state_cycles: %s is not in the "
          "plugin yet\n", needed[i]);
      return;
    }
    gst_object_unref (fac);
  }
  /* the small model (40 mel bands, 8-pixel patches, 4 x 3 grid) keeps the
   * 40 cycles quick under valgrind; audioresample converts to the model's
   * rate, which avspectrogram asks for */
  weights = avf_fixture_path ("weights_small.safetensors");
  desc = g_strdup_printf ("avattention name=att weights=%s window=%"
      G_GUINT64_FORMAT " ! fakesink name=sink signal-handoffs=true "
      "audiotestsrc ! audioconvert ! audioresample ! "
      "avspectrogram n-mels=40 ! att.audio_sink "
      "videotestsrc ! videoconvert ! videoscale ! avpatchembed weights=%s ! "
      "att.video_sink", weights, (guint64) SM_WINDOW, weights);
  pipeline = gst_parse_launch (desc, &error);
  fail_unless (pipeline != NULL, "%s", error ? error->message : "");
  g_free (desc);
  g_free (weights);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  /* the first output of a cycle is the preroll buffer */
  g_signal_connect (sink, "preroll-handoff", G_CALLBACK (on_handoff),
      &n_out);
  bus = gst_element_get_bus (pipeline);

  for (guint cycle = 0; cycle < 40; cycle++) {
    GstMessage *msg;
    GstStateChangeReturn ret = gst_element_set_state (pipeline,
        GST_STATE_PLAYING);

    fail_unless (ret != GST_STATE_CHANGE_FAILURE, "cycle %u", cycle);
    if (cycle % 2 == 0) {
      /* with data: wait for the preroll (a first fused output) */
      ret = gst_element_get_state (pipeline, NULL, NULL, 60 * GST_SECOND);
      fail_unless_equals_int (ret, GST_STATE_CHANGE_SUCCESS);
    }
    fail_unless_equals_int (gst_element_set_state (pipeline,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
    if (msg) {
      GError *err = NULL;
      if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
        gst_message_parse_error (msg, &err, NULL);
      else
        gst_message_parse_warning (msg, &err, NULL);
      fail ("cycle %u: %s from %s: %s", cycle, GST_MESSAGE_TYPE_NAME (msg),
          GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), err->message);
    }
    gst_bus_set_flushing (bus, TRUE);
    gst_bus_set_flushing (bus, FALSE);
  }
  fail_unless (g_atomic_int_get (&n_out) >= 20, "only %d prerolls in 20 "
      "cycles with data", n_out);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* ---- flushing seeks on a recorded clip ---------------------------------- */

typedef struct
{
  GMutex lock;
  guint n;                      /* outputs since the last seek */
  GstClockTime min_pts;         /* smallest PTS since the last seek */
  gboolean meta_ok;             /* every output had its meta */
} SeekWatch;

static void
on_seek_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad,
    gpointer data)
{
  SeekWatch *w = data;
  g_mutex_lock (&w->lock);
  w->n++;
  if (!GST_CLOCK_TIME_IS_VALID (w->min_pts) || GST_BUFFER_PTS (buf) <
      w->min_pts)
    w->min_pts = GST_BUFFER_PTS (buf);
  if (gst_buffer_get_av_attention_meta (buf) == NULL)
    w->meta_ok = FALSE;
  g_mutex_unlock (&w->lock);
}

/* Waits for async-done; an error fails. */
static void
wait_async_done (GstBus * bus, const gchar * what)
{
  avf_wait_message (bus, GST_MESSAGE_ASYNC_DONE, 60 * GST_SECOND, FALSE,
      what);
}

/* Accurate flushing seeks back and forth in a 3 s clip: after each, the
 * first output is at the seek position (nothing stale from before the
 * seek), and the clip then plays to its end. */
GST_START_TEST (test_flushing_seeks_on_clip)
{
  const gchar *needed[] = { "avspectrogram", "avpatchembed", "matroskademux",
    "vp8dec", "vorbisdec"
  };
  gchar *clip = g_build_filename (g_getenv ("AVF_CLIP_DIR") ?
      g_getenv ("AVF_CLIP_DIR") : "tests/clips", "speech-vp8-vorbis.webm",
      NULL);
  gchar *weights = avf_fixture_path ("weights_small.safetensors");
  SeekWatch w = { 0 };
  GstElement *pipeline, *sink;
  GError *error = NULL;
  gchar *desc;
  GstBus *bus;

  for (guint i = 0; i < G_N_ELEMENTS (needed); i++) {
    GstElementFactory *fac = gst_element_factory_find (needed[i]);
    if (fac == NULL) {
      g_print ("SKIPPED test_flushing_seeks_on_clip: no %s\n", needed[i]);
      goto out;
    }
    gst_object_unref (fac);
  }
  if (!g_file_test (clip, G_FILE_TEST_EXISTS)) {
    g_print ("SKIPPED test_flushing_seeks_on_clip: no %s\n", clip);
    goto out;
  }
  desc = g_strdup_printf ("avattention name=att weights=%s window=%"
      G_GUINT64_FORMAT " ! fakesink name=sink signal-handoffs=true "
      "filesrc location=%s ! matroskademux name=d "
      "d.audio_0 ! queue ! vorbisdec ! audioconvert ! audioresample ! "
      "avspectrogram n-mels=40 ! queue ! att.audio_sink "
      "d.video_0 ! queue ! vp8dec ! videoconvert ! videoscale ! "
      "avpatchembed weights=%s ! queue ! att.video_sink", weights,
      (guint64) SM_WINDOW, clip, weights);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  fail_unless (pipeline != NULL, "%s", error ? error->message : "");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_mutex_init (&w.lock);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_seek_handoff), &w);
  g_signal_connect (sink, "preroll-handoff", G_CALLBACK (on_seek_handoff),
      &w);
  bus = gst_element_get_bus (pipeline);

  fail_unless (gst_element_set_state (pipeline, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  wait_async_done (bus, "preroll");
  for (guint i = 0; i < 12; i++) {
    /* 0.5 s, 2.1 s, 1.3 s, 0.2 s, ... */
    const GstClockTime pos = ((i * 1700 + 500) % 2600) * MS;
    gchar what[64];

    g_mutex_lock (&w.lock);
    w.n = 0;
    w.min_pts = GST_CLOCK_TIME_NONE;
    w.meta_ok = TRUE;
    g_mutex_unlock (&w.lock);
    fail_unless (gst_element_seek_simple (pipeline, GST_FORMAT_TIME,
            GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, pos));
    g_snprintf (what, sizeof what, "seek %u to %" GST_TIME_FORMAT, i,
        GST_TIME_ARGS (pos));
    wait_async_done (bus, what);
    g_mutex_lock (&w.lock);
    fail_unless (w.n >= 1, "%s: no output", what);
    fail_unless (w.meta_ok, "%s: an output without meta", what);
    /* one video frame (< 34 ms) of tolerance for the frame at pos */
    fail_unless (w.min_pts + 34 * MS >= pos, "%s: output at %"
        GST_TIME_FORMAT " is from before the seek", what,
        GST_TIME_ARGS (w.min_pts));
    g_mutex_unlock (&w.lock);
  }
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  avf_wait_eos (bus, 60 * GST_SECOND, FALSE, "after the seeks");
  fail_unless (w.meta_ok);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_mutex_clear (&w.lock);
out:
  g_free (clip);
  g_free (weights);
}

GST_END_TEST;

/* ---- the same bytes whatever the thread settings ------------------------ */

/* One fused frame of the seeded model (built-in weights, 64 bands, a 14 x
 * 14 grid of 256-wide patches, 100 slots: products large enough for
 * OpenBLAS to split over threads), with OpenBLAS set to @process_threads
 * before the element starts, as a host application might have it. */
static void
default_frame (gint process_threads, gint blas_threads, gfloat * fused)
{
  GstElement *att = make_att (NULL, GST_SECOND);
  gfloat *audio = g_new (gfloat, 100 * 64), *video = g_new (gfloat,
      196 * 256);
  GstBuffer *out;
  Fx f;

  avf_blas_set_threads (process_threads);
  g_object_set (att, "blas-threads", blas_threads, NULL);
  fx_setup (&f, att, FALSE);
  gst_harness_set_src_caps (f.a, gst_av_tensor_caps_log_mel (64, 16000, 160,
          400));
  gst_harness_set_src_caps (f.v, gst_av_tensor_caps_patches (256, 14, 14,
          16, 30, 1));
  for (guint i = 0; i < 100; i++)
    mel_frame (audio + i * 64, 64, i);
  patch_frame (video, 196, 256, 3);
  push (f.a, float_buffer (audio, 100 * 64, 0, GST_SECOND));
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  push (f.v, float_buffer (video, 196 * 256, GST_SECOND, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  fail_unless_equals_int (gst_buffer_get_size (out), 512 * sizeof (gfloat));
  gst_buffer_extract (out, 0, fused, 512 * sizeof (gfloat));
  gst_buffer_unref (out);
  fx_teardown (&f);
  g_free (audio);
  g_free (video);
  avf_blas_set_threads (1);
}

/* Robustness item 32, other thread counts: OpenBLAS rounds differently with
 * more than one thread (measured: sgemm 196 x 256 x 256 with 1 and 2
 * threads differs in the last bits), so avattention pins one BLAS thread
 * per call (blas-threads=1, the default) and its bytes do not depend on the
 * process's OpenBLAS setting. */
GST_START_TEST (test_same_bytes_whatever_the_thread_setting)
{
  gfloat one[512], four[512], again[512];

  default_frame (1, 1, one);
  default_frame (4, 1, four);
  default_frame (1, 1, again);
  fail_unless (memcmp (one, again, sizeof one) == 0,
      "the same input gave other bytes");
  fail_unless (memcmp (one, four, sizeof one) == 0,
      "OpenBLAS set to 4 threads in the process changed the bytes");
}

GST_END_TEST;

/* ---- property changes while PLAYING ------------------------------------ */

/* Robustness item 5: weights, seed, window, attention-weights and
 * blas-threads are refused while running (a warning names the property, the
 * value stays); post-messages and qos apply at once; data keeps flowing. */
GST_START_TEST (test_property_change_while_playing)
{
  GstElement *att = make_small ();
  gfloat video[SM_N * SM_E];
  const gchar *refused[] = { "weights", "model", "seed", "window",
    "attention-weights", "blas-threads"
  };
  GstBuffer *out;
  GstMessage *msg;
  Fx f;

  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  patch_frame (video, SM_N, SM_E, 0);
  push (f.v, float_buffer (video, SM_N * SM_E, 0, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL);
  gst_buffer_unref (out);

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS
        (att), refused[i]);
    GValue before = G_VALUE_INIT, after = G_VALUE_INIT, other = G_VALUE_INIT;
    GError *err = NULL;

    fail_unless (pspec != NULL, "no property %s", refused[i]);
    g_value_init (&before, pspec->value_type);
    g_value_init (&after, pspec->value_type);
    g_value_init (&other, pspec->value_type);
    g_object_get_property (G_OBJECT (att), refused[i], &before);
    /* some other legal value */
    if (pspec->value_type == G_TYPE_STRING)
      g_value_set_string (&other, "/nonexistent.safetensors");
    else if (pspec->value_type == G_TYPE_UINT64)
      g_value_set_uint64 (&other, 2 * GST_SECOND);
    else if (pspec->value_type == G_TYPE_INT)
      g_value_set_int (&other, 2);
    else if (strcmp (refused[i], "model") == 0)
      g_value_set_enum (&other, 1);     /* seeded */
    else
      g_value_set_enum (&other, 2);
    g_object_set_property (G_OBJECT (att), refused[i], &other);
    msg = gst_bus_pop_filtered (f.bus, GST_MESSAGE_WARNING);
    fail_unless (msg != NULL, "%s: no warning for a change while PLAYING",
        refused[i]);
    gst_message_parse_warning (msg, &err, NULL);
    avf_check_contains (err->message, refused[i]);
    g_error_free (err);
    gst_message_unref (msg);
    g_object_get_property (G_OBJECT (att), refused[i], &after);
    fail_unless (g_param_values_cmp (pspec, &before, &after) == 0,
        "%s changed while PLAYING", refused[i]);
    g_value_unset (&before);
    g_value_unset (&after);
    g_value_unset (&other);
  }

  /* these apply while running */
  g_object_set (att, "post-messages", TRUE, "qos", FALSE, NULL);
  fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_WARNING) == NULL);
  patch_frame (video, SM_N, SM_E, 1);
  push (f.v, float_buffer (video, SM_N * SM_E, FRAME_30, FRAME_30));
  out = gst_harness_pull (f.v);
  fail_unless (out != NULL, "no output after the property changes");
  gst_buffer_unref (out);
  /* posted after the buffer went out */
  msg = gst_bus_timed_pop_filtered (f.bus, 10 * GST_SECOND,
      GST_MESSAGE_ELEMENT);
  fail_unless (msg != NULL, "post-messages=true set while PLAYING did not "
      "apply");
  gst_message_unref (msg);
  fx_teardown (&f);
}

GST_END_TEST;

/* ---- QoS: late frames are skipped --------------------------------------- */

/* Pushes frames at 0, 100, ..., 500 ms (33 ms long) after a QoS event that
 * says buffers are 100 ms late at running time 200 ms: the element then
 * skips every frame that ends at or before 200 + 2 x 100 ms and posts a
 * QoS message for each.  Returns the PTS of the outputs. */
static GArray *
run_qos_case (gboolean qos, gboolean flush_after_qos, guint * n_qos_msgs,
    guint64 * last_dropped)
{
  GstElement *att = make_small ();
  gfloat video[SM_N * SM_E];
  GArray *pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  GstBuffer *out;
  GstMessage *msg;
  Fx f;

  g_object_set (att, "qos", qos, NULL);
  fx_setup (&f, att, FALSE);
  fx_small_caps (&f, 30, 1);
  /* no audio: frames need not wait for it */
  fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  fail_unless (gst_harness_push_upstream_event (f.v,
          gst_event_new_qos (GST_QOS_TYPE_UNDERFLOW, 1.5, 100 * MS,
              200 * MS)));
  if (flush_after_qos) {
    /* a flush (of both pads, as a seek does) forgets the QoS state */
    flush_both (&f);
    fail_unless (gst_harness_push_event (f.a, gst_event_new_eos ()));
  }
  for (guint k = 0; k < 6; k++) {
    patch_frame (video, SM_N, SM_E, k);
    push (f.v, float_buffer (video, SM_N * SM_E, k * 100 * MS, FRAME_30));
  }
  fail_unless (gst_harness_push_event (f.v, gst_event_new_eos ()));
  for (;;) {
    GstClockTime t;

    fail_unless (gst_harness_pull_until_eos (f.v, &out), "no end-of-stream");
    if (out == NULL)
      break;
    t = GST_BUFFER_PTS (out);
    g_array_append_val (pts, t);
    gst_buffer_unref (out);
  }
  *n_qos_msgs = 0;
  *last_dropped = 0;
  while ((msg = gst_bus_pop_filtered (f.bus, GST_MESSAGE_QOS)) != NULL) {
    GstFormat format;
    guint64 processed, dropped;

    gst_message_parse_qos_stats (msg, &format, &processed, &dropped);
    fail_unless_equals_int (format, GST_FORMAT_BUFFERS);
    (*n_qos_msgs)++;
    *last_dropped = dropped;
    gst_message_unref (msg);
  }
  fx_teardown (&f);
  return pts;
}

GST_START_TEST (test_qos_skips_late_frames)
{
  guint n_msgs;
  guint64 dropped;
  GArray *pts;

  /* earliest = 200 + 2 x 100 = 400 ms: frames 0..300 ms (ending by 333 ms)
   * are late, 400 and 500 ms are not */
  pts = run_qos_case (TRUE, FALSE, &n_msgs, &dropped);
  fail_unless_equals_int (pts->len, 2);
  fail_unless_equals_uint64 (g_array_index (pts, GstClockTime, 0), 400 * MS);
  fail_unless_equals_uint64 (g_array_index (pts, GstClockTime, 1), 500 * MS);
  fail_unless_equals_int (n_msgs, 4);
  fail_unless_equals_uint64 (dropped, 4);
  g_array_unref (pts);

  /* qos=false: every frame */
  pts = run_qos_case (FALSE, FALSE, &n_msgs, &dropped);
  fail_unless_equals_int (pts->len, 6);
  fail_unless_equals_int (n_msgs, 0);
  g_array_unref (pts);

  /* a flush after the QoS event: every frame */
  pts = run_qos_case (TRUE, TRUE, &n_msgs, &dropped);
  fail_unless_equals_int (pts->len, 6);
  fail_unless_equals_int (n_msgs, 0);
  g_array_unref (pts);
}

GST_END_TEST;

/* A real late sink: a live 30 fps source, and 60 ms of work per buffer
 * after avattention (identity sleep-time) before a syncing sink with QoS.
 * Every buffer reaches the sink late, the sink's QoS events come back, and
 * avattention skips frames instead of queueing work; every frame is either
 * an output or counted in a QoS message, and memory stays bounded because
 * nothing queues in between. */
GST_START_TEST (test_qos_real_late_sink)
{
  gchar *weights = avf_fixture_path ("weights_small.safetensors");
  GstElement *pipeline, *sink;
  GError *error = NULL;
  GstMessage *msg;
  gchar *desc;
  GstBus *bus;
  gint n_out = 0;
  guint64 dropped = 0;
  gboolean eos = FALSE;

  desc = g_strdup_printf ("videotestsrc is-live=true num-buffers=45 ! "
      "video/x-raw,framerate=30/1 ! videoconvert ! videoscale ! "
      "avpatchembed weights=%s ! avattention name=att weights=%s window=%"
      G_GUINT64_FORMAT " ! identity sleep-time=60000 ! fakesink name=sink "
      "sync=true qos=true signal-handoffs=true", weights, weights,
      (guint64) SM_WINDOW);
  pipeline = gst_parse_launch (desc, &error);
  fail_unless (pipeline != NULL && error == NULL, "%s", desc);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), &n_out);
  bus = gst_element_get_bus (pipeline);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while (!eos && (msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
              GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_QOS))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gst_message_parse_error (msg, &err, NULL);
      fail ("%s", err->message);
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
      eos = TRUE;
    } else if (g_str_equal (GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), "att")) {
      gst_message_parse_qos_stats (msg, NULL, NULL, &dropped);
    }
    gst_message_unref (msg);
  }
  fail_unless (eos, "no end-of-stream within 30 s");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  g_print ("test_qos_real_late_sink: %d outputs, %" G_GUINT64_FORMAT
      " frames skipped\n", n_out, dropped);
  fail_unless (dropped > 0, "no frame was skipped although every buffer "
      "reached the sink late");
  fail_unless (n_out > 0, "every frame was skipped");
  /* a frame is an output or skipped, never both (the sink may drop late
   * outputs too, so not every frame need show up) */
  fail_unless ((guint64) n_out + dropped <= 45, "%d outputs + %"
      G_GUINT64_FORMAT " skipped > 45 frames", n_out, dropped);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (weights);
}

GST_END_TEST;

/* ---- an audio pad that nothing can feed --------------------------------- */

typedef struct
{
  GMutex lock;
  guint n;                      /* outputs */
  guint n_missing;              /* outputs whose meta says audio-missing */
} MissingWatch;

static void
on_missing_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad,
    gpointer data)
{
  MissingWatch *w = data;
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);

  g_mutex_lock (&w->lock);
  w->n++;
  if (meta != NULL && meta->audio_missing && meta->audio_ended &&
      meta->n_audio_present == 0)
    w->n_missing++;
  g_mutex_unlock (&w->lock);
}

/* The three shapes of an audio_sink without a source: unlinked; linked to
 * a branch whose first element is unlinked (what gst-launch leaves when
 * decodebin finds no audio track); the same branch inside a bin behind a
 * ghost pad without target.  12 frames at 30 fps end in fakesink "sink",
 * whose handoffs @w counts. */
#define N_SHAPES_WITHOUT_AUDIO 3

static GstElement *
pipeline_without_audio (guint shape, const gchar * weights, gboolean sync,
    MissingWatch * w, gchar ** desc)
{
  const gchar *branches[N_SHAPES_WITHOUT_AUDIO] = {
    "",
    "audioconvert ! audioresample ! avspectrogram n-mels=40 ! queue ! "
        "att.audio_sink",
    "",                         /* + a bin, made below */
  };
  GstElement *pipeline, *sink;
  GError *error = NULL;

  *desc = g_strdup_printf ("avattention name=att weights=%s window=%"
      G_GUINT64_FORMAT " ! fakesink name=sink signal-handoffs=true sync=%s "
      "videotestsrc ! video/x-raw,framerate=30/1 ! "
      "videoconvert ! videoscale ! avpatchembed weights=%s ! queue ! "
      "att.video_sink %s", weights, (guint64) SM_WINDOW,
      sync ? "true" : "false", weights, branches[shape]);
  pipeline = gst_parse_launch (*desc, &error);
  fail_unless (pipeline != NULL && error == NULL, "%s: %s", *desc,
      error ? error->message : "");
  if (shape == 2) {
    /* a bin whose source ghost pad has no target, linked to audio_sink */
    GstElement *bin = gst_bin_new ("nobin");
    GstElement *spec = gst_element_factory_make ("avspectrogram", NULL);
    GstElement *att = gst_bin_get_by_name (GST_BIN (pipeline), "att");
    GstPad *ghost = gst_ghost_pad_new_no_target ("src", GST_PAD_SRC);

    gst_bin_add (GST_BIN (bin), spec);
    gst_element_add_pad (bin, ghost);
    gst_bin_add (GST_BIN (pipeline), bin);
    fail_unless (gst_element_link_pads (bin, "src", att, "audio_sink"));
    gst_object_unref (att);
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_signal_connect (sink, "handoff", G_CALLBACK (on_missing_handoff), w);
  gst_object_unref (sink);
  return pipeline;
}

/* Waits for end-of-stream; an error or warning fails. */
static void
wait_eos (GstBus * bus, const gchar * what)
{
  /* no end-of-stream in time: the video waits for the audio */
  avf_wait_eos (bus, 60 * GST_SECOND * avf_slowdown (), TRUE, what);
}

/* Robustness item 4.  In a pipeline that is not live GstAggregator waits
 * until every sink pad has data; an audio_sink that no source can feed must
 * not hold the video forever.  Each shape prerolls, takes a flushing seek
 * to [0, 400 ms), plays its 12 frames to EOS with masked audio, and does it
 * all again after going to NULL. */
GST_START_TEST (test_audio_pad_without_source)
{
  gchar *weights = avf_fixture_path ("weights_small.safetensors");

  for (guint b = 0; b < N_SHAPES_WITHOUT_AUDIO; b++) {
    MissingWatch w = { 0 };
    GstElement *pipeline;
    gchar *desc;
    GstBus *bus;

    g_mutex_init (&w.lock);
    pipeline = pipeline_without_audio (b, weights, FALSE, &w, &desc);
    bus = gst_element_get_bus (pipeline);

    for (guint run = 0; run < 2; run++) {
      g_mutex_lock (&w.lock);
      w.n = w.n_missing = 0;
      g_mutex_unlock (&w.lock);
      fail_unless (gst_element_set_state (pipeline, GST_STATE_PAUSED) !=
          GST_STATE_CHANGE_FAILURE);
      wait_async_done (bus, desc);
      /* a flushing seek back to the start: the audio pad is checked again
       * after the flush and the video does not wait for it */
      fail_unless (gst_element_seek (pipeline, 1.0, GST_FORMAT_TIME,
              GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET,
              0, GST_SEEK_TYPE_SET, 400 * MS), "%s: seek refused", desc);
      wait_async_done (bus, desc);
      g_mutex_lock (&w.lock);
      w.n = w.n_missing = 0;
      g_mutex_unlock (&w.lock);
      fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
          GST_STATE_CHANGE_FAILURE);
      wait_eos (bus, desc);
      g_mutex_lock (&w.lock);
      /* the seek plays [0, 400 ms): 12 frames */
      fail_unless_equals_int (w.n, 12);
      fail_unless_equals_int (w.n_missing, 12);
      g_mutex_unlock (&w.lock);
      fail_unless_equals_int (gst_element_set_state (pipeline,
              GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    }
    gst_object_unref (bus);
    gst_object_unref (pipeline);
    g_mutex_clear (&w.lock);
    g_free (desc);
  }
  g_free (weights);
}

GST_END_TEST;

/* A non-flushing seek while playing, with audio_sink in each shape without
 * a source: the seek goes to the video alone and succeeds (it failed on
 * the branch that ends unlinked and behind the ghost pad: the audio branch
 * refused it), and the stream ends at the seek's stop with masked audio. */
GST_START_TEST (test_non_flushing_seek_without_audio_source)
{
  gchar *weights = avf_fixture_path ("weights_small.safetensors");

  for (guint b = 0; b < N_SHAPES_WITHOUT_AUDIO; b++) {
    MissingWatch w = { 0 };
    GstElement *pipeline;
    gchar *desc;
    GstBus *bus;
    guint n;

    g_mutex_init (&w.lock);
    pipeline = pipeline_without_audio (b, weights, TRUE, &w, &desc);
    bus = gst_element_get_bus (pipeline);
    fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    do {
      g_usleep (10000);
      g_mutex_lock (&w.lock);
      n = w.n;
      g_mutex_unlock (&w.lock);
    } while (n < 3);
    /* the video source restarts at 0 and stops at 200 ms */
    fail_unless (gst_element_seek (pipeline, 1.0, GST_FORMAT_TIME,
            GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_SET,
            200 * MS), "%s: non-flushing seek refused", desc);
    wait_eos (bus, desc);
    g_mutex_lock (&w.lock);
    fail_unless (w.n >= n + 6, "%s: %u outputs before the seek, %u in all",
        desc, n, w.n);
    fail_unless_equals_int (w.n_missing, w.n);
    g_mutex_unlock (&w.lock);
    fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
        GST_STATE_CHANGE_SUCCESS);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
    g_mutex_clear (&w.lock);
    g_free (desc);
  }
  g_free (weights);
}

GST_END_TEST;

/* ---- an audio branch linked while the video plays ------------------------ */

#define LATE_FRAMES 40          /* video frames of the stream */
#define LATE_HOLD 11            /* the output held while the audio is linked */
#define LATE_THREADS 2          /* fusing threads: the frames in flight */

/* What test_audio_linked_while_playing controls and sees, under @lock:
 * the outputs of avattention (at its src pad, in the aggregate thread),
 * the one it holds there, and what reached the element from each branch. */
typedef struct
{
  GMutex lock;
  GCond cond;
  guint n;                      /* outputs so far */
  gboolean ended[LATE_FRAMES];  /* their meta: audio-ended */
  guint present[LATE_FRAMES];   /* audio slots that hold audio */
  guint slots;                  /* audio slots per window */
  gboolean held[2];             /* output 0, output LATE_HOLD waits */
  gboolean go[2];               /* lets it go */
  gboolean video_queued;        /* every video frame reached avattention */
  gboolean audio_blocked;       /* the audio branch's first buffer waits:
                                 * its stream-start, caps and segment have
                                 * reached audio_sink */
  GstBus *bus;                  /* the pipeline's, to name an error */
  GstElement *pipeline;         /* stopped before a failed check leaves */
} LateLink;

/* On avattention's src pad: notes each output; holds outputs 0 and
 * LATE_HOLD (and with them the aggregate thread, in the middle of its
 * frames) until the test lets them go. */
static GstPadProbeReturn
late_link_output (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  LateLink *ll = data;
  GstAvAttentionMeta *meta =
      gst_buffer_get_av_attention_meta (GST_PAD_PROBE_INFO_BUFFER (info));
  guint i;

  g_mutex_lock (&ll->lock);
  i = ll->n++;
  if (i < LATE_FRAMES && meta != NULL) {
    ll->ended[i] = meta->audio_ended;
    ll->present[i] = meta->n_audio_present;
    ll->slots = meta->n_audio_slots;
  }
  if (i == 0 || i == LATE_HOLD) {
    const guint h = i == 0 ? 0 : 1;

    ll->held[h] = TRUE;
    g_cond_broadcast (&ll->cond);
    while (!ll->go[h])
      g_cond_wait (&ll->cond, &ll->lock);
  }
  g_mutex_unlock (&ll->lock);
  return GST_PAD_PROBE_OK;
}

/* Sets *flag under ll->lock and wakes the waiters. */
static void
late_link_set (LateLink * ll, gboolean * flag)
{
  g_mutex_lock (&ll->lock);
  *flag = TRUE;
  g_cond_broadcast (&ll->cond);
  g_mutex_unlock (&ll->lock);
}

/* On the src pad of the queue in front of video_sink: its end-of-stream
 * comes after the last frame was handed to avattention. */
static GstPadProbeReturn
late_link_video_eos (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  LateLink *ll = data;

  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS)
    late_link_set (ll, &ll->video_queued);
  return GST_PAD_PROBE_OK;
}

/* Blocks the audio branch at its last pad, before its first buffer; a pad
 * pushes the sticky events before a buffer's probes run. */
static GstPadProbeReturn
late_link_audio_block (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  LateLink *ll = data;

  late_link_set (ll, &ll->audio_blocked);
  return GST_PAD_PROBE_OK;      /* stays blocked until removed */
}

/* Lets the held outputs go and stops the pipeline (ll->lock not held):
 * before a failed check while it plays.  The check leaves the test
 * (CK_FORK=no: in the same process), and streaming threads still running,
 * held here or paused at end-of-stream would keep gst_task_cleanup_all ()
 * after it waiting for ever instead of the failure being reported. */
static void
late_link_stop (LateLink * ll)
{
  g_mutex_lock (&ll->lock);
  ll->go[0] = ll->go[1] = TRUE;
  g_cond_broadcast (&ll->cond);
  g_mutex_unlock (&ll->lock);
  gst_element_set_state (ll->pipeline, GST_STATE_NULL);
}

/* fail_unless for a check made while the pipeline plays */
#define late_link_fail_unless(ll, expr, ...) G_STMT_START {     \
    if (!(expr)) {                                               \
      late_link_stop (ll);                                       \
      fail (__VA_ARGS__);                                        \
    }                                                            \
  } G_STMT_END

/* For a failure's message: every pad of @pipeline's elements with the
 * last flow return pushed through it (src pads) or its end-of-stream flag
 * (sink pads), and "(unlinked)" where it has no peer.  Free with
 * g_free (). */
static gchar *
late_link_pads (GstElement * pipeline)
{
  GString *s = g_string_new (NULL);
  GstIterator *it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&item);
    GList *l;

    GST_OBJECT_LOCK (e);
    for (l = e->pads; l != NULL; l = l->next) {
      GstPad *pad = l->data;

      if (GST_PAD_IS_SRC (pad))
        g_string_append_printf (s, " %s:%s=%s", GST_OBJECT_NAME (e),
            GST_OBJECT_NAME (pad),
            gst_flow_get_name (gst_pad_get_last_flow_return (pad)));
      else
        g_string_append_printf (s, " %s:%s%s", GST_OBJECT_NAME (e),
            GST_OBJECT_NAME (pad), GST_PAD_IS_EOS (pad) ? "=eos" : "");
      if (GST_PAD_PEER (pad) == NULL)
        g_string_append (s, "(unlinked)");
    }
    GST_OBJECT_UNLOCK (e);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return g_string_free (s, FALSE);
}

/* Waits (with ll->lock held) until *flag is set. */
static void
late_link_wait (LateLink * ll, const gboolean * flag, const gchar * what,
    const gchar * desc)
{
  const gint64 deadline = g_get_monotonic_time () +
      60 * G_USEC_PER_SEC * avf_slowdown ();

  while (!*flag) {
    if (!g_cond_wait_until (&ll->cond, &ll->lock, deadline)) {
      GstMessage *msg = ll->bus ? gst_bus_pop_filtered (ll->bus,
          GST_MESSAGE_ERROR) : NULL;
      GError *err = NULL;
      gchar *dbg = NULL, *pads;

      if (msg != NULL)
        gst_message_parse_error (msg, &err, &dbg);
      g_mutex_unlock (&ll->lock);
      /* before the stop resets them; ll->lock is not held while the
       * elements' and pads' locks are taken */
      pads = late_link_pads (ll->pipeline);
      late_link_stop (ll);
      g_mutex_lock (&ll->lock);
      fail ("%s: no %s in 60 s%s%s%s%s (from %s); pads:%s", desc, what,
          err ? "; the pipeline's error: " : "", err ? err->message : "",
          dbg ? " " : "", dbg ? dbg : "",
          msg ? GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)) : "no element", pads);
    }
  }
}

/* An audio branch linked while the video plays, to an audio_sink that had
 * no source (and was ended by the element), in two shapes: audio_sink
 * itself unlinked, and the head of a branch that ends unlinked.  The audio
 * is heard from the moment its stream-start reaches audio_sink: every
 * frame avattention takes up after that waits for the audio of its window
 * (here the audio starts at running time 0 and covers every window), even
 * when the frames are queued and the audio is not.  Nothing depends on
 * timing: pad probes order the steps.
 *
 * 1. Output 0 is held (in the aggregate thread) until every video frame
 *    is queued on video_sink, so that from then on the element always
 *    finds the next frame waiting.
 * 2. Output LATE_HOLD is held, in the middle of the element's frames; the
 *    audio branch is linked and started, with its first buffer blocked:
 *    its stream-start, caps and segment reach audio_sink.
 * 3. The output goes, then the audio.
 *
 * The frames taken up before the stream-start arrived (0 to LATE_HOLD, and
 * up to LATE_THREADS more: with every workspace busy, frame LATE_HOLD +
 * LATE_THREADS is the one that waits for output LATE_HOLD to go) carry
 * audio-ended and no audio; every later one hears the whole window.  (An
 * element that reads the end of audio_sink at GstAggregator's word alone
 * gives none of them the audio: the queued stream-start clears it only
 * once the element stops for events, here at the end of the video.) */
GST_START_TEST (test_audio_linked_while_playing)
{
  gchar *weights = avf_fixture_path ("weights_small.safetensors");

  for (guint shape = 0; shape < 2; shape++) {
    LateLink ll = { 0 };
    GstElement *pipeline, *att, *vq, *head, *src;
    GstPad *srcpad, *vqpad, *apad, *peer;
    GError *error = NULL;
    GstMessage *msg;
    gulong block;
    gchar *desc;
    GstBus *bus;
    guint first_heard;

    /* latency: video_sink may queue the whole stream */
    desc = g_strdup_printf ("avattention name=att weights=%s window=%"
        G_GUINT64_FORMAT " threads=%d latency=%" G_GUINT64_FORMAT " ! "
        "fakesink sync=false videotestsrc num-buffers=%d ! "
        "video/x-raw,framerate=30/1 ! videoconvert ! videoscale ! "
        "avpatchembed weights=%s ! queue name=vq ! att.video_sink %s",
        weights, (guint64) SM_WINDOW, LATE_THREADS,
        (guint64) (4 * GST_SECOND), LATE_FRAMES, weights,
        shape == 0 ? "" : "audioconvert name=head ! audioresample ! "
        "avspectrogram n-mels=40 ! queue ! att.audio_sink");
    pipeline = gst_parse_launch (desc, &error);
    fail_unless (pipeline != NULL && error == NULL, "%s: %s", desc,
        error ? error->message : "");
    g_mutex_init (&ll.lock);
    g_cond_init (&ll.cond);
    att = gst_bin_get_by_name (GST_BIN (pipeline), "att");
    srcpad = gst_element_get_static_pad (att, "src");
    gst_pad_add_probe (srcpad, GST_PAD_PROBE_TYPE_BUFFER, late_link_output,
        &ll, NULL);
    vq = gst_bin_get_by_name (GST_BIN (pipeline), "vq");
    vqpad = gst_element_get_static_pad (vq, "src");
    gst_pad_add_probe (vqpad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        late_link_video_eos, &ll, NULL);
    bus = gst_element_get_bus (pipeline);
    ll.bus = bus;
    ll.pipeline = pipeline;
    late_link_fail_unless (&ll, gst_element_set_state (pipeline,
            GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE,
        "%s: cannot play", desc);

    /* 1. */
    g_mutex_lock (&ll.lock);
    late_link_wait (&ll, &ll.held[0], "first output", desc);
    late_link_wait (&ll, &ll.video_queued, "end of the video queued", desc);
    ll.go[0] = TRUE;
    g_cond_broadcast (&ll.cond);
    late_link_wait (&ll, &ll.held[1], "output " G_STRINGIFY (LATE_HOLD), desc);
    g_mutex_unlock (&ll.lock);

    /* 2.  The branch's state is locked until it is linked: the pipeline
     * goes to PLAYING in a thread of its own once fakesink has prerolled
     * (on output 0), and that can still be under way here; it would start
     * an unlocked source added to it before its link is made, and the
     * source's first push would fail "not-linked". */
    if (shape == 0) {
      src = gst_parse_bin_from_description ("audiotestsrc ! audioconvert ! "
          "audioresample ! avspectrogram n-mels=40", TRUE, &error);
      late_link_fail_unless (&ll, src != NULL, "%s",
          error ? error->message : "");
      gst_element_set_locked_state (src, TRUE);
      gst_bin_add (GST_BIN (pipeline), src);
      late_link_fail_unless (&ll, gst_element_link_pads (src, "src", att,
              "audio_sink"), "%s: cannot link the audio branch", desc);
    } else {
      src = gst_element_factory_make ("audiotestsrc", NULL);
      gst_element_set_locked_state (src, TRUE);
      gst_bin_add (GST_BIN (pipeline), src);
      head = gst_bin_get_by_name (GST_BIN (pipeline), "head");
      late_link_fail_unless (&ll, gst_element_link (src, head),
          "%s: cannot link audiotestsrc to the audio branch", desc);
      gst_object_unref (head);
    }
    apad = gst_element_get_static_pad (att, "audio_sink");
    peer = gst_pad_get_peer (apad);
    block = gst_pad_add_probe (peer, GST_PAD_PROBE_TYPE_BLOCK |
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
        late_link_audio_block, &ll, NULL);
    gst_element_set_locked_state (src, FALSE);
    late_link_fail_unless (&ll, gst_element_sync_state_with_parent (src),
        "%s: the audio branch did not start", desc);
    g_mutex_lock (&ll.lock);
    late_link_wait (&ll, &ll.audio_blocked, "audio at audio_sink", desc);

    /* 3. */
    ll.go[1] = TRUE;
    g_cond_broadcast (&ll.cond);
    g_mutex_unlock (&ll.lock);
    gst_pad_remove_probe (peer, block);

    msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND * avf_slowdown (),
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    /* stopped before any check, which could leave the test (above) */
    gst_element_set_state (pipeline, GST_STATE_NULL);
    fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
        "%s: no end-of-stream", desc);
    gst_message_unref (msg);

    g_mutex_lock (&ll.lock);
    fail_unless_equals_int (ll.n, LATE_FRAMES);
    fail_unless (ll.slots > 0);
    for (first_heard = 0; first_heard < LATE_FRAMES; first_heard++)
      if (!ll.ended[first_heard])
        break;
    /* the frames after LATE_HOLD up to the one that waited for output
     * LATE_HOLD's workspace were taken up before the link */
    fail_unless (first_heard > LATE_HOLD
        && first_heard <= LATE_HOLD + 1 + LATE_THREADS,
        "%s: %u frames marked audio-ended, the audio was linked while "
        "output %d was held and the element fuses %d at once", desc,
        first_heard, LATE_HOLD, LATE_THREADS);
    for (guint i = 0; i < LATE_FRAMES; i++) {
      if (i < first_heard) {
        fail_unless_equals_int (ll.present[i], 0);
        continue;
      }
      fail_unless (!ll.ended[i] && ll.present[i] == ll.slots,
          "%s: frame %u (of %d, audio linked during frame %d) hears %u "
          "of %u audio slots%s", desc, i, LATE_FRAMES, LATE_HOLD,
          ll.present[i], ll.slots, ll.ended[i] ? ", marked audio-ended" : "");
    }
    g_mutex_unlock (&ll.lock);

    gst_object_unref (peer);
    gst_object_unref (apad);
    gst_object_unref (vqpad);
    gst_object_unref (vq);
    gst_object_unref (srcpad);
    gst_object_unref (att);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
    g_cond_clear (&ll.cond);
    g_mutex_clear (&ll.lock);
    g_free (desc);
  }
  g_free (weights);
}

GST_END_TEST;

/* ---- rate negotiation ---------------------------------------------------- */

/* The rate avspectrogram's src pad negotiated in
 * `audiotestsrc (44.1 kHz) ! audioconvert ! audioresample ! avspectrogram !
 * avattention weights=W`, with no capsfilter on the rate. */
static gint
negotiated_mel_rate (const gchar * weights)
{
  GstElement *pipeline, *spec;
  GError *error = NULL;
  GstCaps *caps;
  GstPad *pad;
  gchar *desc;
  gint rate = 0;
  GstBus *bus;

  desc = g_strdup_printf ("avattention name=att weights=%s window=%"
      G_GUINT64_FORMAT " ! fakesink "
      "audiotestsrc num-buffers=20 ! audio/x-raw,rate=44100 ! audioconvert ! "
      "audioresample ! avspectrogram name=spec n-mels=40 ! queue ! "
      "att.audio_sink "
      "videotestsrc num-buffers=6 ! video/x-raw,framerate=30/1 ! "
      "videoconvert ! videoscale ! avpatchembed weights=%s ! queue ! "
      "att.video_sink", weights, (guint64) (200 * MS), weights);
  pipeline = gst_parse_launch (desc, &error);
  fail_unless (pipeline != NULL && error == NULL, "%s: %s", desc,
      error ? error->message : "");
  bus = gst_element_get_bus (pipeline);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  avf_wait_eos (bus, 60 * GST_SECOND * avf_slowdown (), FALSE, desc);
  spec = gst_bin_get_by_name (GST_BIN (pipeline), "spec");
  pad = gst_element_get_static_pad (spec, "src");
  caps = gst_pad_get_current_caps (pad);
  fail_unless (caps != NULL);
  fail_unless (gst_structure_get_int (gst_caps_get_structure (caps, 0),
          "rate", &rate));
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (spec);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (desc);
  return rate;
}

/* audio_sink's caps query offers the weights' sample rate first (else
 * 16 kHz), so that avspectrogram asks audioresample for it: 44.1 kHz audio
 * reaches the spectrogram at 22050 Hz for weights made at 22050 Hz, and at
 * 16 kHz for weights that name no rate. */
GST_START_TEST (test_negotiates_weights_rate)
{
  gchar *small = avf_fixture_path ("weights_small.safetensors");
  gchar *dir = avf_tmp_dir_new ("avattention");
  const gint rates[] = { 22050, 0 };

  for (guint i = 0; i < G_N_ELEMENTS (rates); i++) {
    gchar *path = g_build_filename (dir, "rate.safetensors", NULL);
    AvfWeights *w = NULL;
    AvfError err;

    fail_unless (avf_weights_load (&w, small, &err) == AVF_OK, "%s",
        err.message);
    w->cfg.sample_rate = rates[i];
    fail_unless (avf_weights_save (w, path, &err) == AVF_OK, "%s",
        err.message);
    avf_weights_free (w);
    fail_unless_equals_int (negotiated_mel_rate (path),
        rates[i] > 0 ? rates[i] : 16000);
    g_unlink (path);
    g_free (path);
  }
  avf_remove_tree (dir);
  g_free (dir);
  g_free (small);
}

GST_END_TEST;

/* ---- lifecycle ---------------------------------------------------------- */

GST_START_TEST (test_properties_and_inspect)
{
  GstElement *att = gst_element_factory_make ("avattention", NULL);
  gchar *weights = NULL;
  guint64 seed, window;
  gint mode, threads;
  gboolean post;

  fail_unless (att != NULL);
  g_object_get (att, "weights", &weights, "seed", &seed, "window", &window,
      "attention-weights", &mode, "post-messages", &post, "blas-threads",
      &threads, NULL);
  /* the shipped trained model by default; a seed selects the seeded one */
  avf_check_enum_nick (att, "model", "trained");
  fail_unless_equals_string (weights, "");
  fail_unless_equals_uint64 (seed, 0);
  fail_unless_equals_uint64 (window, GST_SECOND);
  fail_unless_equals_int (mode, GST_AV_ATTENTION_WEIGHTS_MEAN);
  fail_unless (!post);
  fail_unless_equals_int (threads, 1);
  g_free (weights);
  /* the property's enum keeps its registered name (gst-inspect-1.0) */
  fail_unless_equals_string (g_type_name (G_PARAM_SPEC_VALUE_TYPE
          (g_object_class_find_property (G_OBJECT_GET_CLASS (att),
                  "attention-weights"))), "GstAvAttentionWeights");
  avf_check_enum_nick (att, "attention-weights", "mean");
  g_object_set (att, "attention-weights", GST_AV_ATTENTION_WEIGHTS_PER_HEAD,
      "seed", (guint64) 7, NULL);
  g_object_get (att, "attention-weights", &mode, "seed", &seed, NULL);
  fail_unless_equals_int (mode, GST_AV_ATTENTION_WEIGHTS_PER_HEAD);
  fail_unless_equals_uint64 (seed, 7);
  avf_check_enum_nick (att, "model", "seeded");
  gst_util_set_object_arg (G_OBJECT (att), "model", "trained");
  avf_check_enum_nick (att, "model", "trained");
  for (guint i = 0; i < 3; i++) {
    const gchar *names[] = { "audio_sink", "video_sink", "src" };
    GstPad *pad = gst_element_get_static_pad (att, names[i]);
    fail_unless (pad != NULL, "no pad %s", names[i]);
    gst_object_unref (pad);
  }
  gst_object_unref (att);
}

GST_END_TEST;

/* Start and stop, with and without a stream: all set-up is rebuilt and
 * freed each time (valgrind sees any leak). */
GST_START_TEST (test_state_cycles_harness)
{
  for (guint cycle = 0; cycle < 8; cycle++) {
    GstElement *att = make_small ();
    gfloat video[SM_N * SM_E];
    Fx f;

    fx_setup (&f, att, FALSE);
    if (cycle % 2) {
      GstBuffer *out;
      fx_small_caps (&f, 30, 1);
      patch_frame (video, SM_N, SM_E, cycle);
      push (f.v, float_buffer (video, SM_N * SM_E, 0, FRAME_30));
      push_gap (f.a, 0, HOP_NS);
      out = gst_harness_pull (f.v);
      fail_unless (out != NULL);
      gst_buffer_unref (out);
    }
    fx_teardown (&f);
  }
}

GST_END_TEST;

static Suite *
avattention_suite (void)
{
  Suite *s = suite_create ("avattention");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties_and_inspect);
  tcase_add_test (tc, test_parity_head_mean);
  tcase_add_test (tc, test_parity_per_head);
  tcase_add_test (tc, test_parity_without_maps);
  tcase_add_test (tc, test_parity_segment_start_and_rate);
  tcase_add_test (tc, test_timestamps_30fps);
  tcase_add_test (tc, test_timestamps_segment_and_multi_frame_buffers);
  tcase_add_test (tc, test_gap_masks_slots);
  tcase_add_test (tc, test_video_gap_is_forwarded);
  tcase_add_test (tc, test_audio_eos_video_keeps_flowing);
  tcase_add_test (tc, test_audio_eos_without_data);
  tcase_add_test (tc, test_video_eos_one_eos);
  tcase_add_test (tc, test_both_eos_without_data);
  tcase_add_test (tc, test_flush_clears_history);
  tcase_add_test (tc, test_caps_mel_bands_mismatch);
  tcase_add_test (tc, test_caps_embed_dim_mismatch);
  tcase_add_test (tc, test_caps_patch_count_mismatch);
  tcase_add_test (tc, test_caps_window_too_long);
  tcase_add_test (tc, test_post_messages);
  tcase_add_test (tc, test_live_audio_stall_times_out);
  tcase_add_test (tc, test_post_messages_visible_threshold);
  tcase_add_test (tc, test_weights_missing_file);
  tcase_add_test (tc, test_weights_malformed_file);
  tcase_add_test (tc, test_weights_inconsistent_file);
  tcase_add_test (tc, test_state_cycles_harness);
  tcase_add_test (tc, test_pipeline_state_cycles);
  tcase_add_test (tc, test_flushing_seeks_on_clip);
  tcase_add_test (tc, test_audio_pad_without_source);
  tcase_add_test (tc, test_non_flushing_seek_without_audio_source);
  tcase_add_test (tc, test_audio_linked_while_playing);
  tcase_add_test (tc, test_negotiates_weights_rate);
  tcase_add_test (tc, test_qos_skips_late_frames);
  tcase_add_test (tc, test_property_change_while_playing);
  tcase_add_test (tc, test_same_bytes_whatever_the_thread_setting);
  tcase_add_test (tc, test_qos_real_late_sink);
  return s;
}

AVF_CHECK_MAIN (avattention);
