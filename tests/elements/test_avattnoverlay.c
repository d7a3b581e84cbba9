/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The avattnoverlay element with GstHarness: one harness on video_sink
 * (with the src pad) and one on attention_sink, fed with attention
 * outputs whose GstAvAttentionMeta the tests build themselves.  Where the
 * heat map lands, pass-through byte for byte, every video format, the
 * modules and heads, the live timeout, stale and early attention outputs,
 * caps changes, errors, property refusals, state cycling, and a real
 * pipeline through avspectrogram, avpatchembed and avattention.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "gstavattentionmeta.h"

#define FRAME_NS ((GstClockTime) 33333333)    /* 30 fps */
#define FUSED_WIDTH 16
#define ATTENTION_CAPS "other/x-avtensor, kind=(string)fused, " \
  "dtype=(string)float32, frame-shape=(string)16, frame-size=(int)16, " \
  "width=(int)16, framerate=(fraction)30/1"

/* ---- helpers ------------------------------------------------------------ */

typedef struct
{
  GstHarness *video;            /* video_sink and src */
  GstHarness *attention;        /* attention_sink */
} Pair;

static gchar *
video_caps_str (const gchar * format, gint w, gint h)
{
  return g_strdup_printf ("video/x-raw, format=(string)%s, width=(int)%d, "
      "height=(int)%d, framerate=(fraction)30/1", format, w, h);
}

static Pair
pair_new (const gchar * format, gint w, gint h)
{
  Pair p;
  gchar *caps = video_caps_str (format, w, h);

  p.video = gst_harness_new_with_padnames ("avattnoverlay", "video_sink",
      "src");
  p.attention = gst_harness_new_with_element (p.video->element,
      "attention_sink", NULL);
  gst_harness_set_src_caps_str (p.video, caps);
  gst_harness_set_src_caps_str (p.attention, ATTENTION_CAPS);
  g_free (caps);
  return p;
}

static void
pair_free (Pair * p)
{
  avf_harness_teardown_pair (p->attention, p->video);
}

static GstVideoInfo
video_info (const gchar * format, gint w, gint h)
{
  GstVideoInfo info;
  gst_video_info_set_format (&info, gst_video_format_from_string (format), w,
      h);
  GST_VIDEO_INFO_FPS_N (&info) = 30;
  GST_VIDEO_INFO_FPS_D (&info) = 1;
  return info;
}

/* A frame of one colour: R, G, B for RGB formats (alpha and padding bytes
 * 0xAB), or the same colour in limited-range BT.601 YUV. */
static GstBuffer *
make_frame (const gchar * format, gint w, gint h, guint8 r, guint8 g,
    guint8 b, GstClockTime pts)
{
  GstVideoInfo info = video_info (format, w, h);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, info.size, NULL);
  GstVideoFrame f;
  guint8 val[4] = { r, g, b, 0xAB };

  gst_buffer_memset (buf, 0, 0xAB, info.size);
  if (GST_VIDEO_INFO_IS_YUV (&info)) {
    gdouble y = 0.299 * r + 0.587 * g + 0.114 * b;
    val[0] = (guint8) (16 + 219 * y / 255 + 0.5);
    val[1] = (guint8) (128 + 224 * (b - y) / 255 / 1.772 + 0.5);
    val[2] = (guint8) (128 + 224 * (r - y) / 255 / 1.402 + 0.5);
  }
  fail_unless (gst_video_frame_map (&f, &info, buf, GST_MAP_WRITE));
  for (guint c = 0; c < GST_VIDEO_FRAME_N_COMPONENTS (&f); c++) {
    guint8 *d = GST_VIDEO_FRAME_COMP_DATA (&f, c);
    for (gint y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT (&f, c); y++)
      for (gint x = 0; x < GST_VIDEO_FRAME_COMP_WIDTH (&f, c); x++)
        d[y * GST_VIDEO_FRAME_COMP_STRIDE (&f, c)
            + x * GST_VIDEO_FRAME_COMP_PSTRIDE (&f, c)] = val[c];
  }
  gst_video_frame_unmap (&f);
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = FRAME_NS;
  return buf;
}

/* An avattention-like output at pts with a meta of one layer, T audio
 * slots and a cols x rows grid; every map zero.  *meta_out to fill. */
static GstBuffer *
make_attention (GstClockTime pts, guint heads, guint T, guint cols,
    guint rows, GstAvAttentionMeta ** meta_out)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FUSED_WIDTH * 4, NULL);
  gsize size = gst_av_attention_meta_data_size (1, heads, T, cols * rows);
  GstBuffer *data = gst_buffer_new_allocate (NULL, size, NULL);
  GstAvAttentionMeta *meta;

  gst_buffer_memset (buf, 0, 0, FUSED_WIDTH * 4);
  gst_buffer_memset (data, 0, 0, size);
  meta = gst_buffer_add_av_attention_meta (buf, 1, heads, heads, T, cols,
      rows, data);
  fail_unless (meta != NULL);
  meta->n_audio_present = T;
  meta->window_start = pts > GST_SECOND ? pts - GST_SECOND : 0;
  meta->window_end = pts;
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = FRAME_NS;
  if (meta_out)
    *meta_out = meta;
  return buf;
}

/* The attention output of the tests' first case: audio_cross all zeros
 * except patch (c, r) = 1 for every audio slot. */
static GstBuffer *
make_delta_attention (GstClockTime pts, guint cols, guint rows, guint c,
    guint r)
{
  GstAvAttentionMeta *meta;
  GstBuffer *buf = make_attention (pts, 1, 4, cols, rows, &meta);
  gfloat *w = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
  for (guint t = 0; t < 4; t++)
    w[t * cols * rows + r * cols + c] = 1.0f;
  return buf;
}

/* Component c of the picture pixel (x, y) (of the subsampled pixel that
 * covers it). */
static guint8
comp_at (GstVideoFrame * f, guint c, gint x, gint y)
{
  const GstVideoFormatInfo *fi = f->info.finfo;
  const guint8 *d = GST_VIDEO_FRAME_COMP_DATA (f, c);
  const gint px = x >> GST_VIDEO_FORMAT_INFO_W_SUB (fi, c);
  const gint py = y >> GST_VIDEO_FORMAT_INFO_H_SUB (fi, c);
  return d[py * GST_VIDEO_FRAME_COMP_STRIDE (f, c)
      + px * GST_VIDEO_FRAME_COMP_PSTRIDE (f, c)];
}

/* The centre of the brightest pixels of an output frame: component G
 * (RGB) or Y (YUV).  With the gray colour map over black the brightness
 * grows with the map, so they are the heat map's peak.  Returns the peak
 * value; *count how many pixels have it. */
static guint8
peak (GstBuffer * buf, const gchar * format, gint w, gint h, gdouble * cx,
    gdouble * cy, gint * count, gint box[4])
{
  GstVideoInfo info = video_info (format, w, h);
  GstVideoFrame f;
  const guint c = GST_VIDEO_INFO_IS_YUV (&info) ? 0 : 1;
  guint8 best = 0;
  gdouble sx = 0, sy = 0;
  gint n = 0;

  fail_unless (gst_video_frame_map (&f, &info, buf, GST_MAP_READ));
  box[0] = w;
  box[1] = h;
  box[2] = box[3] = -1;
  for (gint y = 0; y < h; y++)
    for (gint x = 0; x < w; x++) {
      guint8 v = comp_at (&f, c, x, y);
      if (v > best) {
        best = v;
        sx = sy = 0;
        n = 0;
        box[0] = w;
        box[1] = h;
        box[2] = box[3] = -1;
      }
      if (v == best) {
        sx += x + 0.5;
        sy += y + 0.5;
        n++;
        box[0] = MIN (box[0], x);
        box[1] = MIN (box[1], y);
        box[2] = MAX (box[2], x);
        box[3] = MAX (box[3], y);
      }
    }
  gst_video_frame_unmap (&f);
  *cx = sx / n;
  *cy = sy / n;
  *count = n;
  return best;
}

/* Settings that make the output brightness the heat map itself. */
static void
set_gray (GstElement * e)
{
  g_object_set (e, "colormap", 2, "opacity", 1.0, "marker", FALSE, NULL);
}

/* ---- (1) a known attention map ------------------------------------------ */

GST_START_TEST (test_known_map)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *in, *out;
  GstVideoInfo info = video_info ("RGB", 64, 48);
  GstVideoFrame f;
  const guint8 top[3] = { 252, 255, 164 };      /* inferno's top colour */
  gint before = 0, after = 0;

  /* 4x3 grid over 64x48: 16x16 patches; patch (2, 1) */
  gst_harness_push (p.attention, make_delta_attention (10 * FRAME_NS, 4, 3, 2,
          1));
  in = make_frame ("RGB", 64, 48, 128, 128, 128, 10 * FRAME_NS);
  gst_harness_push (p.video, gst_buffer_ref (in));
  out = gst_harness_pull (p.video);
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 10 * FRAME_NS);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), FRAME_NS);

  fail_unless (gst_video_frame_map (&f, &info, out, GST_MAP_READ));
  /* the centre of patch (2, 1), (2.5 * 16, 1.5 * 16), moved towards the
   * colour map's top colour */
  for (guint c = 0; c < 3; c++) {
    before += ABS (128 - top[c]);
    after += ABS (comp_at (&f, c, 40, 24) - top[c]);
  }
  fail_unless (after < before * 0.75, "centre pixel (%d, %d, %d) is not "
      "closer to the top colour", comp_at (&f, 0, 40, 24),
      comp_at (&f, 1, 40, 24), comp_at (&f, 2, 40, 24));
  fail_unless (comp_at (&f, 0, 40, 24) > 170 && comp_at (&f, 1, 40, 24) > 160);
  /* far away: unchanged */
  for (guint c = 0; c < 3; c++) {
    fail_unless (ABS (comp_at (&f, c, 2, 2) - 128) <= 2,
        "pixel (2, 2) changed to %d", comp_at (&f, c, 2, 2));
    fail_unless_equals_int (comp_at (&f, c, 60, 45), 128);
  }
  /* the marker outlines the strongest patch in the top colour: a square of
   * half the patch side around (40, 24), its line 2 pixels wide */
  for (guint c = 0; c < 3; c++) {
    fail_unless_equals_int (comp_at (&f, c, 36, 24), top[c]);
    fail_unless_equals_int (comp_at (&f, c, 43, 27), top[c]);
    fail_unless (comp_at (&f, c, 34, 24) != top[c]);
  }
  gst_video_frame_unmap (&f);
  /* the input buffer was not written to */
  fail_unless (!avf_buffers_equal (in, out));
  {
    GstBuffer *ref = make_frame ("RGB", 64, 48, 128, 128, 128, 0);
    fail_unless (avf_buffers_equal (in, ref));
    gst_buffer_unref (ref);
  }
  gst_buffer_unref (out);
  gst_buffer_unref (in);
  pair_free (&p);
}

GST_END_TEST;

/* ---- (2)-(4) frames that pass through unchanged ------------------------- */

GST_START_TEST (test_attention_eos_passes_through)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *in, *out;

  fail_unless (gst_harness_push_event (p.attention, gst_event_new_eos ()));
  for (guint i = 0; i < 3; i++) {
    in = make_frame ("RGB", 64, 48, 10 * i, 200, 77, i * FRAME_NS);
    gst_harness_push (p.video, gst_buffer_ref (in));
    out = gst_harness_pull (p.video);
    fail_unless (avf_buffers_equal (in, out), "frame %u changed", i);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), i * FRAME_NS);
    gst_buffer_unref (out);
    gst_buffer_unref (in);
  }
  /* end of the video: one EOS downstream */
  fail_unless (gst_harness_push_event (p.video, gst_event_new_eos ()));
  {
    GstEvent *e;
    gboolean eos = FALSE;
    while ((e = gst_harness_pull_event (p.video))) {
      eos |= GST_EVENT_TYPE (e) == GST_EVENT_EOS;
      gst_event_unref (e);
      if (eos)
        break;
    }
    fail_unless (eos);
  }
  pair_free (&p);
}

GST_END_TEST;


/* A GAP event on video_sink (no frame for 2 frame durations) goes on as a
 * GAP event on src with its times, no buffer is made for it, and the next
 * frame passes as usual. */
GST_START_TEST (test_video_gap_is_forwarded)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *in, *out;
  GstEvent *gap;
  GstClockTime ts, dur;

  fail_unless (gst_harness_push_event (p.attention, gst_event_new_eos ()));
  in = make_frame ("RGB", 64, 48, 1, 2, 3, 0);
  gst_harness_push (p.video, in);
  out = gst_harness_pull (p.video);
  gst_buffer_unref (out);

  fail_unless (gst_harness_push_event (p.video,
          gst_event_new_gap (FRAME_NS, 2 * FRAME_NS)));
  gap = pull_event_of_type (p.video, GST_EVENT_GAP);
  fail_unless (gap != NULL, "the GAP on video_sink was not forwarded");
  gst_event_parse_gap (gap, &ts, &dur);
  fail_unless_equals_uint64 (ts, FRAME_NS);
  fail_unless_equals_uint64 (dur, 2 * FRAME_NS);
  gst_event_unref (gap);

  in = make_frame ("RGB", 64, 48, 1, 2, 3, 3 * FRAME_NS);
  gst_harness_push (p.video, in);
  out = gst_harness_pull (p.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 3 * FRAME_NS);
  gst_buffer_unref (out);
  /* only the two frames came out */
  fail_unless (gst_harness_try_pull (p.video) == NULL);
  pair_free (&p);
}

GST_END_TEST;

/* Robustness item 4 for the overlay: an attention_sink that no source can
 * feed (unlinked, or behind a branch that ends unlinked) does not hold the
 * video in a pipeline that is not live: 12 frames pass, through a
 * flushing seek and a restart. */
GST_START_TEST (test_attention_pad_without_source)
{
  const gchar *branches[] = {
    "",
    "queue ! capsfilter caps=other/x-avtensor ! ov.attention_sink",
  };

  for (guint b = 0; b < G_N_ELEMENTS (branches); b++) {
    gchar *desc = g_strdup_printf ("videotestsrc ! video/x-raw,format=RGB,"
        "width=64,height=48,framerate=30/1 ! ov.video_sink "
        "avattnoverlay name=ov ! fakesink name=sink signal-handoffs=true %s",
        branches[b]);
    GstElement *pipeline = gst_parse_launch (desc, NULL);
    GstElement *sink;
    GstBus *bus;
    gint n = 0;

    fail_unless (pipeline != NULL, "%s", desc);
    sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
    g_signal_connect_swapped (sink, "handoff", G_CALLBACK (g_atomic_int_inc),
        &n);
    bus = gst_element_get_bus (pipeline);
    for (guint run = 0; run < 2; run++) {
      fail_unless (gst_element_set_state (pipeline, GST_STATE_PAUSED) !=
          GST_STATE_CHANGE_FAILURE);
      avf_wait_message (bus, GST_MESSAGE_ASYNC_DONE, 30 * GST_SECOND, FALSE,
          desc);
      fail_unless (gst_element_seek (pipeline, 1.0, GST_FORMAT_TIME,
              GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET,
              0, GST_SEEK_TYPE_SET, 400 * GST_MSECOND), "%s: seek", desc);
      /* the preroll after the seek */
      avf_wait_message (bus, GST_MESSAGE_ASYNC_DONE, 30 * GST_SECOND, FALSE,
          desc);
      g_atomic_int_set (&n, 0);
      fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
          GST_STATE_CHANGE_FAILURE);
      /* no end-of-stream: the video waits */
      avf_wait_eos (bus, 30 * GST_SECOND, FALSE, desc);
      fail_unless_equals_int (g_atomic_int_get (&n), 12);
      gst_element_set_state (pipeline, GST_STATE_NULL);
    }
    gst_object_unref (bus);
    gst_object_unref (sink);
    gst_object_unref (pipeline);
    g_free (desc);
  }
}

GST_END_TEST;

/* A non-flushing seek while playing goes to the video alone when
 * attention_sink has no source, and succeeds (the branch that ends
 * unlinked refused it, and with it the whole seek). */
GST_START_TEST (test_non_flushing_seek_without_attention_source)
{
  const gchar *branches[] = {
    "",
    "queue ! capsfilter caps=other/x-avtensor ! ov.attention_sink",
  };

  for (guint b = 0; b < G_N_ELEMENTS (branches); b++) {
    gchar *desc = g_strdup_printf ("videotestsrc ! video/x-raw,format=RGB,"
        "width=64,height=48,framerate=30/1 ! ov.video_sink "
        "avattnoverlay name=ov ! fakesink name=sink sync=true "
        "signal-handoffs=true %s", branches[b]);
    GstElement *pipeline = gst_parse_launch (desc, NULL);
    GstElement *sink;
    GstBus *bus;
    gint n = 0;

    fail_unless (pipeline != NULL, "%s", desc);
    sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
    g_signal_connect_swapped (sink, "handoff", G_CALLBACK (g_atomic_int_inc),
        &n);
    bus = gst_element_get_bus (pipeline);
    fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    while (g_atomic_int_get (&n) < 3)
      g_usleep (10000);
    fail_unless (gst_element_seek (pipeline, 1.0, GST_FORMAT_TIME,
            GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_SET,
            200 * GST_MSECOND), "%s: non-flushing seek refused", desc);
    avf_wait_eos (bus, 30 * GST_SECOND, FALSE, desc);
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (sink);
    gst_object_unref (pipeline);
    g_free (desc);
  }
}

GST_END_TEST;

static void
check_unchanged (GstBuffer * attention, void (*setup) (GstElement *))
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *in = make_frame ("RGB", 64, 48, 128, 128, 128, 5 * FRAME_NS);
  GstBuffer *out;

  if (setup)
    setup (p.video->element);
  gst_harness_push (p.attention, attention);
  gst_harness_push (p.video, gst_buffer_ref (in));
  out = gst_harness_pull (p.video);
  fail_unless (avf_buffers_equal (in, out), "the frame was changed");
  gst_buffer_unref (out);
  gst_buffer_unref (in);
  pair_free (&p);
}

GST_START_TEST (test_no_audio_passes_through)
{
  GstAvAttentionMeta *meta;
  GstBuffer *a;

  /* the window had no audio at all: the maps are NaN, audio_missing */
  a = make_delta_attention (5 * FRAME_NS, 4, 3, 2, 1);
  meta = gst_buffer_get_av_attention_meta (a);
  meta->audio_missing = TRUE;
  meta->n_audio_present = 0;
  {
    gfloat *w = gst_av_attention_meta_get_weights_writable (meta, 0,
        GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
    for (guint i = 0; i < 4 * 12; i++)
      w[i] = NAN;
  }
  check_unchanged (a, NULL);

  /* every slot masked (without the flag) */
  a = make_delta_attention (5 * FRAME_NS, 4, 3, 2, 1);
  meta = gst_buffer_get_av_attention_meta (a);
  memset (gst_av_attention_meta_get_audio_mask_writable (meta), 1, 4);
  check_unchanged (a, NULL);

  /* the module was skipped */
  a = make_delta_attention (5 * FRAME_NS, 4, 3, 2, 1);
  gst_av_attention_meta_set_skipped (gst_buffer_get_av_attention_meta (a),
      0, GST_AV_ATTENTION_MODULE_AUDIO_CROSS, TRUE);
  check_unchanged (a, NULL);

  /* an all-zero map has no strongest patch */
  check_unchanged (make_attention (5 * FRAME_NS, 1, 4, 4, 3, NULL), NULL);

  /* an attention output without a meta (attention-weights=none) */
  {
    GstBuffer *plain = gst_buffer_new_allocate (NULL, FUSED_WIDTH * 4, NULL);
    gst_buffer_memset (plain, 0, 0, FUSED_WIDTH * 4);
    GST_BUFFER_PTS (plain) = 5 * FRAME_NS;
    check_unchanged (plain, NULL);
  }
}

GST_END_TEST;

/* An attention output whose audio_cross map puts @peak on patch (2, 1) of a
 * 4 x 3 grid and spreads the rest evenly, with the meta's visible_threshold
 * @threshold: the strongest patch's weight is @peak. */
static GstBuffer *
make_spread_attention (GstClockTime pts, gfloat peak, gfloat threshold)
{
  GstAvAttentionMeta *meta;
  GstBuffer *buf = make_attention (pts, 1, 4, 4, 3, &meta);
  gfloat *w = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS);

  for (guint t = 0; t < 4; t++)
    for (guint n = 0; n < 12; n++)
      w[t * 12 + n] = n == 1 * 4 + 2 ? peak : (1.0f - peak) / 11;
  meta->visible_threshold = threshold;
  return buf;
}

static void
draw_when_not_visible (GstElement * e)
{
  g_object_set (e, "draw-when-not-visible", TRUE, NULL);
}

static void
video_self (GstElement * e)
{
  gst_util_set_object_arg (G_OBJECT (e), "module", "video-self");
}

static gboolean
frame_drawn (GstBuffer * attention, void (*setup) (GstElement *))
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *in = make_frame ("RGB", 64, 48, 128, 128, 128, 5 * FRAME_NS);
  GstBuffer *out;
  gboolean drawn;

  if (setup)
    setup (p.video->element);
  gst_harness_push (p.attention, attention);
  gst_harness_push (p.video, gst_buffer_ref (in));
  out = gst_harness_pull (p.video);
  fail_unless (out != NULL);
  drawn = !avf_buffers_equal (in, out);
  gst_buffer_unref (out);
  gst_buffer_unref (in);
  pair_free (&p);
  return drawn;
}

/* No visible object sounds (the strongest patch below the meta's
 * visible_threshold): the frame passes through unchanged, unless
 * draw-when-not-visible; at or above the threshold, or with threshold 0
 * (unknown), it is drawn.  video-self is drawn either way. */
GST_START_TEST (test_not_visible_passes_through)
{
  GstAvAttentionMeta *meta;
  GstBuffer *a;
  gfloat w = -1, thr = -1;

  /* the meta says so itself */
  a = make_spread_attention (5 * FRAME_NS, 0.25f, 0.3f);
  meta = gst_buffer_get_av_attention_meta (a);
  fail_if (gst_av_attention_meta_get_sound_visible (meta, &w, &thr));
  fail_unless (fabsf (w - 0.25f) < 1e-6f && thr == 0.3f, "%g %g",
      (gdouble) w, (gdouble) thr);
  fail_if (frame_drawn (a, NULL), "drawn although below the threshold");
  fail_unless (frame_drawn (make_spread_attention (5 * FRAME_NS, 0.25f,
              0.3f), draw_when_not_visible),
      "draw-when-not-visible=true drew nothing");
  fail_unless (frame_drawn (make_spread_attention (5 * FRAME_NS, 0.25f,
              0.25f), NULL), "not drawn at the threshold");
  fail_unless (frame_drawn (make_spread_attention (5 * FRAME_NS, 0.25f,
              0.0f), NULL), "not drawn with an unknown threshold");
  /* video-self is not the sound's map: drawn below the threshold too */
  a = make_spread_attention (5 * FRAME_NS, 0.25f, 0.9f);
  meta = gst_buffer_get_av_attention_meta (a);
  {
    gfloat *v = gst_av_attention_meta_get_weights_writable (meta, 0,
        GST_AV_ATTENTION_MODULE_VIDEO_SELF);
    for (guint q = 0; q < 12; q++)
      v[q * 12 + 5] = 1.0f;
  }
  fail_unless (frame_drawn (a, video_self), "video-self not drawn");
}

GST_END_TEST;

static void
opacity_zero (GstElement * e)
{
  g_object_set (e, "opacity", 0.0, NULL);
}

GST_START_TEST (test_opacity_zero_passes_through)
{
  check_unchanged (make_delta_attention (5 * FRAME_NS, 4, 3, 2, 1),
      opacity_zero);
}

GST_END_TEST;

/* ---- (5) the map scales to the frame ------------------------------------ */

GST_START_TEST (test_scales_to_720p)
{
  Pair p = pair_new ("RGB", 1280, 720);
  GstBuffer *out;
  gdouble cx, cy;
  gint n, box[4];
  guint8 best;

  set_gray (p.video->element);
  /* a 14x14 grid (224x224 with 16x16 patches) over 1280x720: patch (9, 4)
   * covers x [822.9, 914.3), y [205.7, 257.1) */
  gst_harness_push (p.attention, make_delta_attention (0, 14, 14, 9, 4));
  gst_harness_push (p.video, make_frame ("RGB", 1280, 720, 0, 0, 0, 0));
  out = gst_harness_pull (p.video);
  best = peak (out, "RGB", 1280, 720, &cx, &cy, &n, box);
  fail_unless (best > 240, "peak brightness %d", best);
  fail_unless (box[0] * 14 >= 9 * 1280 && (box[2] + 1) * 14 <= 10 * 1280
      && box[1] * 14 >= 4 * 720 && (box[3] + 1) * 14 <= 5 * 720,
      "the strongest pixels [%d, %d] x [%d, %d] are not all inside patch "
      "(9, 4)", box[0], box[2], box[1], box[3]);
  fail_unless (fabs (cx - 9.5 * 1280 / 14) < 2 && fabs (cy - 4.5 * 720 / 14)
      < 2, "peak at (%g, %g)", cx, cy);
  /* the other corner of the picture is untouched */
  {
    GstVideoInfo info = video_info ("RGB", 1280, 720);
    GstVideoFrame f;
    fail_unless (gst_video_frame_map (&f, &info, out, GST_MAP_READ));
    fail_unless_equals_int (comp_at (&f, 1, 10, 700), 0);
    gst_video_frame_unmap (&f);
  }
  gst_buffer_unref (out);
  pair_free (&p);
}

GST_END_TEST;

/* ---- (6) every format puts the heat in the same place ------------------- */

GST_START_TEST (test_formats_same_location)
{
  static const gchar *formats[] = { "RGB", "BGR", "RGBx", "BGRx", "xRGB",
    "xBGR", "RGBA", "BGRA", "ARGB", "ABGR", "I420", "NV12"
  };
  /* an odd size: 4:2:0 chroma with a half column and row, padded strides */
  const gint W = 150, H = 94;
  gdouble ref_x = -1, ref_y = -1;

  for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
    Pair p = pair_new (formats[i], W, H);
    GstBuffer *in, *out;
    gdouble cx, cy;
    gint n, box[4];
    guint8 best;
    GstVideoInfo info = video_info (formats[i], W, H);

    set_gray (p.video->element);
    gst_harness_push (p.attention, make_delta_attention (0, 5, 4, 3, 1));
    in = make_frame (formats[i], W, H, 0, 0, 0, 0);
    gst_harness_push (p.video, gst_buffer_ref (in));
    out = gst_harness_pull (p.video);
    fail_unless_equals_int (gst_buffer_get_size (out), info.size);
    best = peak (out, formats[i], W, H, &cx, &cy, &n, box);
    fail_unless (best > 200, "%s: peak %d", formats[i], best);
    /* patch (3, 1) of 5x4 is centred at (105, 35.25) */
    fail_unless (fabs (cx - 3.5 * W / 5) < 1.5 && fabs (cy - 1.5 * H / 4)
        < 1.5, "%s: peak at (%g, %g)", formats[i], cx, cy);
    if (i == 0) {
      ref_x = cx;
      ref_y = cy;
    } else {
      fail_unless (fabs (cx - ref_x) <= 1.0 && fabs (cy - ref_y) <= 1.0,
          "%s: peak at (%g, %g), RGB at (%g, %g)", formats[i], cx, cy, ref_x,
          ref_y);
    }
    {
      GstVideoFrame fi, fo;
      fail_unless (gst_video_frame_map (&fi, &info, in, GST_MAP_READ));
      fail_unless (gst_video_frame_map (&fo, &info, out, GST_MAP_READ));
      /* far from the patch the frame is unchanged */
      for (guint c = 0; c < GST_VIDEO_INFO_N_COMPONENTS (&info); c++)
        fail_unless_equals_int (comp_at (&fo, c, 2, H - 3),
            comp_at (&fi, c, 2, H - 3));
      /* alpha (component 3) keeps its value where the map is strongest */
      if (GST_VIDEO_INFO_HAS_ALPHA (&info))
        fail_unless_equals_int (comp_at (&fo, 3, 105, 35), 0xAB);
      /* gray's top colour is neutral: chroma stays at 128 */
      if (GST_VIDEO_INFO_IS_YUV (&info)) {
        fail_unless (ABS (comp_at (&fo, 1, 105, 35) - 128) <= 1);
        fail_unless (ABS (comp_at (&fo, 2, 105, 35) - 128) <= 1);
      }
      gst_video_frame_unmap (&fi);
      gst_video_frame_unmap (&fo);
    }
    /* padding bytes (xRGB's x) are kept */
    if (strchr (formats[i], 'x')) {
      GstMapInfo m;
      const gint xoff = formats[i][0] == 'x' ? 0 : 3;
      fail_unless (gst_buffer_map (out, &m, GST_MAP_READ));
      for (gint y = 0; y < H; y++)
        for (gint x = 0; x < W; x++)
          fail_unless (m.data[y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0)
                  + x * 4 + xoff] == 0xAB, "%s: padding byte changed",
              formats[i]);
      gst_buffer_unmap (out, &m);
    }
    gst_buffer_unref (out);
    gst_buffer_unref (in);
    pair_free (&p);
  }
}

GST_END_TEST;

/* A frame with its own row stride (GstVideoMeta): the heat map lands in
 * the same place and the bytes past each row are kept. */
GST_START_TEST (test_padded_strides)
{
  const gint W = 64, H = 48, STRIDE = W * 4 + 40;
  Pair p = pair_new ("BGRx", W, H);
  GstBuffer *in = gst_buffer_new_allocate (NULL, STRIDE * H, NULL);
  gsize offset[GST_VIDEO_MAX_PLANES] = { 0 };
  gint stride[GST_VIDEO_MAX_PLANES] = { STRIDE };
  GstBuffer *out;
  GstMapInfo m;
  gdouble cx, cy;
  gint n, box[4];

  set_gray (p.video->element);
  gst_buffer_memset (in, 0, 0, STRIDE * H);
  for (gint y = 0; y < H; y++)
    gst_buffer_memset (in, y * STRIDE + W * 4, 0x5A, STRIDE - W * 4);
  gst_buffer_add_video_meta_full (in, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_FORMAT_BGRx, W, H, 1, offset, stride);
  GST_BUFFER_PTS (in) = 0;
  GST_BUFFER_DURATION (in) = FRAME_NS;
  gst_harness_push (p.attention, make_delta_attention (0, 4, 3, 2, 1));
  gst_harness_push (p.video, in);
  out = gst_harness_pull (p.video);
  fail_unless_equals_int (gst_buffer_get_size (out), STRIDE * H);
  fail_unless (peak (out, "BGRx", W, H, &cx, &cy, &n, box) > 200);
  fail_unless (fabs (cx - 40) < 1 && fabs (cy - 24) < 1, "peak at (%g, %g)",
      cx, cy);
  fail_unless (gst_buffer_map (out, &m, GST_MAP_READ));
  for (gint y = 0; y < H; y++)
    for (gint x = W * 4; x < STRIDE; x++)
      fail_unless (m.data[y * STRIDE + x] == 0x5A, "row %d padding "
          "changed", y);
  gst_buffer_unmap (out, &m);
  gst_buffer_unref (out);
  pair_free (&p);
}

GST_END_TEST;

/* ---- modules and heads -------------------------------------------------- */

/* Draws `attention` over a black 64x48 RGB frame with the gray colour map
 * and settings props ("name=value", or NULL) and finds the peak: box[4]
 * (x0, y0, x1, y1 inclusive) of the brightest pixels. */
static void
locate (GstBuffer * attention, gint box[4], const gchar * props)
{
  GstHarness *hv = gst_harness_new_with_padnames ("avattnoverlay",
      "video_sink", "src");
  GstHarness *ha = gst_harness_new_with_element (hv->element,
      "attention_sink", NULL);
  gchar *caps = video_caps_str ("RGB", 64, 48);
  GstBuffer *out;
  gdouble cx, cy;
  gint n;

  gst_harness_set_src_caps_str (hv, caps);
  gst_harness_set_src_caps_str (ha, ATTENTION_CAPS);
  g_free (caps);
  set_gray (hv->element);
  if (props) {
    gchar **kv = g_strsplit (props, "=", 2);
    gst_util_set_object_arg (G_OBJECT (hv->element), kv[0], kv[1]);
    g_strfreev (kv);
  }
  gst_harness_push (ha, attention);
  gst_harness_push (hv, make_frame ("RGB", 64, 48, 0, 0, 0, 0));
  out = gst_harness_pull (hv);
  fail_unless (peak (out, "RGB", 64, 48, &cx, &cy, &n, box) > 200);
  gst_buffer_unref (out);
  avf_harness_teardown_pair (ha, hv);
}

/* The brightest pixels all lie in patch (c, r) of the 16x16 patches.  (At
 * the picture's border the map is flat from the patch centre outwards.) */
#define IN_PATCH(box, c, r) ((box)[0] >= (c) * 16 && (box)[2] < ((c) + 1) * 16 \
    && (box)[1] >= (r) * 16 && (box)[3] < ((r) + 1) * 16)
#define BOX_ARGS(box) (box)[0], (box)[2], (box)[1], (box)[3]

GST_START_TEST (test_modules)
{
  GstAvAttentionMeta *meta;
  GstBuffer *a;
  gfloat *w;
  gint box[4];
  const guint N = 12, T = 4;

  /* video_self [N, N]: every patch attends to patch 9 = (1, 2) a little
   * more; the mean over the queries peaks there */
  a = make_attention (0, 1, T, 4, 3, &meta);
  w = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_VIDEO_SELF);
  for (guint q = 0; q < N; q++)
    for (guint k = 0; k < N; k++)
      w[q * N + k] = k == 9 ? 0.3f : 0.7f / 11;
  /* audio_cross points elsewhere, at patch 0 */
  w = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
  for (guint t = 0; t < T; t++)
    w[t * N] = 1.0f;
  locate (gst_buffer_ref (a), box, "module=video-self");
  fail_unless (IN_PATCH (box, 1, 2), "video-self peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
  locate (a, box, NULL);
  fail_unless (IN_PATCH (box, 0, 0), "audio-cross peak over [%d, %d] x "
      "[%d, %d]", BOX_ARGS (box));

  /* video_cross [N, T]: patch 7 = (3, 1) picks one audio slot, the others
   * spread evenly; a masked slot where everything is large is left out */
  a = make_attention (0, 1, T, 4, 3, &meta);
  w = gst_av_attention_meta_get_weights_writable (meta, 0,
      GST_AV_ATTENTION_MODULE_VIDEO_CROSS);
  for (guint n = 0; n < N; n++)
    for (guint t = 0; t < T; t++)
      w[n * T + t] = t == 3 ? 5.0f : (n == 7 ? (t == 1 ? 1.0f : 0.0f)
          : 1.0f / 3);
  gst_av_attention_meta_get_audio_mask_writable (meta)[3] = 1;
  locate (a, box, "module=video-cross");
  fail_unless (IN_PATCH (box, 3, 1), "video-cross peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
}

GST_END_TEST;

GST_START_TEST (test_heads_and_layers)
{
  GstAvAttentionMeta *meta;
  GstBuffer *a;
  gint box[4];
  const guint N = 12, T = 4;
  gsize size;
  GstBuffer *data;

  /* two layers, per-head maps of 2 heads: layer 0 head 0 at patch 1,
   * layer 1 head 0 at patch 4 = (0, 1), layer 1 head 1 at patch 11 */
  a = gst_buffer_new_allocate (NULL, FUSED_WIDTH * 4, NULL);
  size = gst_av_attention_meta_data_size (2, 2, T, N);
  data = gst_buffer_new_allocate (NULL, size, NULL);
  gst_buffer_memset (data, 0, 0, size);
  meta = gst_buffer_add_av_attention_meta (a, 2, 2, 2, T, 4, 3, data);
  GST_BUFFER_PTS (a) = 0;
  for (guint l = 0; l < 2; l++) {
    gfloat *w = gst_av_attention_meta_get_weights_writable (meta, l,
        GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
    for (guint t = 0; t < T; t++) {
      w[(0 * T + t) * N + (l == 0 ? 1 : 4)] = 1.0f;
      w[(1 * T + t) * N + 11] = l == 0 ? 0.0f : 0.6f;
    }
  }
  /* default: last layer, head mean: 1.0 at patch 4 beats 0.6 at 11 */
  locate (gst_buffer_ref (a), box, NULL);
  fail_unless (IN_PATCH (box, 0, 1), "mean peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
  locate (gst_buffer_ref (a), box, "head=1");
  fail_unless (IN_PATCH (box, 3, 2), "head 1 peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
  locate (gst_buffer_ref (a), box, "layer=0");
  fail_unless (IN_PATCH (box, 1, 0), "layer 0 peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
  /* a head the model does not have: the mean, with a warning */
  locate (gst_buffer_ref (a), box, "head=5");
  fail_unless (IN_PATCH (box, 0, 1), "head 5 peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
  /* a layer the model does not have: the last one */
  locate (a, box, "layer=7");
  fail_unless (IN_PATCH (box, 0, 1), "layer 7 peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));

  /* head 1 of head-mean maps: the mean, with a warning */
  locate (make_delta_attention (0, 4, 3, 2, 1), box, "head=1");
  fail_unless (IN_PATCH (box, 2, 1), "peak over [%d, %d] x [%d, %d]",
      BOX_ARGS (box));
}

GST_END_TEST;

/* ---- timing ------------------------------------------------------------- */

/* The harness is live (its latency answer says so): with nothing on the
 * attention pad, the frame passes through once the clock reaches it. */
GST_START_TEST (test_live_timeout_passes_through)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *in = make_frame ("RGB", 64, 48, 50, 60, 70, GST_SECOND);
  GstBuffer *out;

  gst_harness_push (p.video, gst_buffer_ref (in));
  /* the aggregator waits on the clock for the frame's running time */
  fail_unless (gst_harness_crank_single_clock_wait (p.video));
  out = gst_harness_pull (p.video);
  fail_unless (avf_buffers_equal (in, out));
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_SECOND);
  gst_buffer_unref (out);
  gst_buffer_unref (in);
  pair_free (&p);
}

GST_END_TEST;

static gboolean
frame_changed (GstBuffer * out)
{
  GstBuffer *ref = make_frame ("RGB", 64, 48, 128, 128, 128, 0);
  gboolean changed = !avf_buffers_equal (ref, out);
  gst_buffer_unref (ref);
  return changed;
}

GST_START_TEST (test_stale_and_early_attention)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *out;

  /* an attention output for frame 30, then the frame 31: the output is
   * stale, dropped, and the frame waits for its own until the clock
   * reaches it */
  gst_harness_push (p.attention, make_delta_attention (30 * FRAME_NS, 4, 3,
          2, 1));
  gst_harness_push (p.video, make_frame ("RGB", 64, 48, 128, 128, 128,
          31 * FRAME_NS));
  fail_unless (gst_harness_crank_single_clock_wait (p.video));
  out = gst_harness_pull (p.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 31 * FRAME_NS);
  fail_unless (!frame_changed (out), "a stale attention output was drawn");
  gst_buffer_unref (out);

  /* an attention output for frame 33 and the frame 32: the frame passes
   * through, the output stays for frame 33 (within a quarter frame of
   * jitter) */
  gst_harness_push (p.attention, make_delta_attention (33 * FRAME_NS
          + FRAME_NS / 4, 4, 3, 2, 1));
  gst_harness_push (p.video, make_frame ("RGB", 64, 48, 128, 128, 128,
          32 * FRAME_NS));
  out = gst_harness_pull (p.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 32 * FRAME_NS);
  fail_unless (!frame_changed (out), "an early attention output was drawn");
  gst_buffer_unref (out);
  gst_harness_push (p.video, make_frame ("RGB", 64, 48, 128, 128, 128,
          33 * FRAME_NS));
  out = gst_harness_pull (p.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 33 * FRAME_NS);
  fail_unless (frame_changed (out), "frame 33 was not drawn on");
  gst_buffer_unref (out);
  pair_free (&p);
}

GST_END_TEST;

/* Running time, not timestamps: the attention stream's segment starts at
 * 10 s, so its PTS 10 s + 5 frames is the video's PTS 5 frames. */
GST_START_TEST (test_matches_running_time)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstSegment seg;
  GstBuffer *out;

  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.start = 10 * GST_SECOND;
  seg.time = 10 * GST_SECOND;
  fail_unless (gst_harness_push_event (p.attention,
          gst_event_new_segment (&seg)));
  gst_harness_push (p.attention, make_delta_attention (10 * GST_SECOND
          + 5 * FRAME_NS, 4, 3, 2, 1));
  gst_harness_push (p.video, make_frame ("RGB", 64, 48, 128, 128, 128,
          5 * FRAME_NS));
  out = gst_harness_pull (p.video);
  fail_unless (frame_changed (out));
  gst_buffer_unref (out);
  pair_free (&p);
}

GST_END_TEST;

/* ---- caps, errors, properties, states ----------------------------------- */

GST_START_TEST (test_resolution_change)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *out;
  gdouble cx, cy;
  gint n, box[4];

  set_gray (p.video->element);
  gst_harness_push (p.attention, make_delta_attention (0, 4, 3, 2, 1));
  gst_harness_push (p.video, make_frame ("RGB", 64, 48, 0, 0, 0, 0));
  out = gst_harness_pull (p.video);
  peak (out, "RGB", 64, 48, &cx, &cy, &n, box);
  fail_unless (fabs (cx - 40) < 1 && fabs (cy - 24) < 1);
  gst_buffer_unref (out);

  /* the same grid over a new size: the peak follows */
  gst_harness_set_src_caps_str (p.video, "video/x-raw, format=(string)I420, "
      "width=(int)200, height=(int)90, framerate=(fraction)30/1");
  gst_harness_push (p.attention, make_delta_attention (FRAME_NS, 4, 3, 2,
          1));
  gst_harness_push (p.video, make_frame ("I420", 200, 90, 0, 0, 0,
          FRAME_NS));
  out = gst_harness_pull (p.video);
  fail_unless_equals_int (gst_buffer_get_size (out),
      video_info ("I420", 200, 90).size);
  peak (out, "I420", 200, 90, &cx, &cy, &n, box);
  fail_unless (fabs (cx - 125) < 1.5 && fabs (cy - 45) < 1.5,
      "peak at (%g, %g)", cx, cy);
  gst_buffer_unref (out);
  pair_free (&p);
}

GST_END_TEST;

static gchar *
pop_message (GstBus * bus, GstMessageType type)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, type);
  GError *err = NULL;
  gchar *text;

  if (msg == NULL)
    return NULL;
  if (type == GST_MESSAGE_ERROR)
    gst_message_parse_error (msg, &err, NULL);
  else
    gst_message_parse_warning (msg, &err, NULL);
  text = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (msg);
  return text;
}

GST_START_TEST (test_short_buffer_is_an_error)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBus *bus = gst_bus_new ();
  GstBuffer *in = gst_buffer_new_allocate (NULL, 100, NULL);
  gchar *text;

  gst_element_set_bus (p.video->element, bus);
  gst_harness_push (p.attention, make_delta_attention (0, 4, 3, 2, 1));
  GST_BUFFER_PTS (in) = 0;
  GST_BUFFER_DURATION (in) = FRAME_NS;
  gst_harness_push (p.video, in);
  /* the src task stops with an error and pushes EOS */
  {
    GstEvent *e;
    while ((e = gst_harness_pull_event (p.video))) {
      gboolean eos = GST_EVENT_TYPE (e) == GST_EVENT_EOS;
      gst_event_unref (e);
      if (eos)
        break;
    }
  }
  text = pop_message (bus, GST_MESSAGE_ERROR);
  fail_unless (text != NULL);
  fail_unless (strstr (text, "Could not map a video frame of 100 bytes")
      != NULL, "%s", text);
  fail_unless (strstr (text, "64x48 RGB") != NULL, "%s", text);
  fail_unless_equals_int (gst_harness_buffers_received (p.video), 0);
  g_free (text);
  gst_element_set_bus (p.video->element, NULL);
  gst_object_unref (bus);
  pair_free (&p);
}

GST_END_TEST;

GST_START_TEST (test_wrong_attention_caps)
{
  GstHarness *hv = gst_harness_new_with_padnames ("avattnoverlay",
      "video_sink", "src");
  GstHarness *ha = gst_harness_new_with_element (hv->element,
      "attention_sink", NULL);
  GstCaps *mel = gst_caps_from_string ("other/x-avtensor, "
      "kind=(string)log-mel, dtype=(string)float32, n-mels=(int)64, "
      "rate=(int)16000, hop-length=(int)160, n-fft=(int)400");
  GstPad *pad = gst_element_get_static_pad (hv->element, "attention_sink");

  /* a spectrogram cannot be linked to attention_sink */
  fail_unless (!gst_pad_query_accept_caps (pad, mel));
  gst_caps_unref (mel);
  gst_object_unref (pad);
  avf_harness_teardown_pair (ha, hv);
}

GST_END_TEST;

GST_START_TEST (test_video_caps_follow_downstream)
{
  GstHarness *hv = gst_harness_new_with_padnames ("avattnoverlay",
      "video_sink", "src");
  GstPad *sink = gst_element_get_static_pad (hv->element, "video_sink");
  GstCaps *caps, *want;

  gst_harness_set_sink_caps_str (hv, "video/x-raw, format=(string)NV12, "
      "width=(int)320, height=(int)240, framerate=(fraction)30/1");
  caps = gst_pad_query_caps (sink, NULL);
  want = gst_caps_from_string ("video/x-raw, format=(string)NV12, "
      "width=(int)320, height=(int)240, framerate=(fraction)30/1");
  fail_unless (gst_caps_is_equal (caps, want), "%" GST_PTR_FORMAT, caps);
  gst_caps_unref (caps);
  gst_caps_unref (want);
  /* what downstream does not take is refused */
  want = gst_caps_from_string ("video/x-raw, format=(string)RGB, "
      "width=(int)320, height=(int)240, framerate=(fraction)30/1");
  fail_unless (!gst_pad_query_accept_caps (sink, want));
  gst_caps_unref (want);
  /* a format the element cannot draw on is not offered */
  caps = gst_pad_get_pad_template_caps (sink);
  want = gst_caps_from_string ("video/x-raw, format=(string)YUY2");
  fail_unless (!gst_caps_can_intersect (caps, want));
  gst_caps_unref (want);
  gst_caps_unref (caps);
  gst_object_unref (sink);
  gst_harness_teardown (hv);
}

GST_END_TEST;

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("avattnoverlay", NULL);
  GstBus *bus = gst_bus_new ();
  gint layer, head, module, cmap;
  gdouble opacity;
  gboolean marker, not_visible;
  gchar *text;

  fail_unless (e != NULL);
  gst_element_set_bus (e, bus);
  g_object_get (e, "layer", &layer, "head", &head, "module", &module,
      "colormap", &cmap, "opacity", &opacity, "marker", &marker,
      "draw-when-not-visible", &not_visible, NULL);
  fail_if (not_visible);
  fail_unless_equals_int (layer, -1);
  fail_unless_equals_int (head, -1);
  fail_unless_equals_int (module, GST_AV_ATTENTION_MODULE_AUDIO_CROSS);
  fail_unless_equals_int (cmap, 0);
  fail_unless_equals_float (opacity, 0.5);
  fail_unless (marker);

  /* audio-self is refused with a warning; the module stays */
  gst_util_set_object_arg (G_OBJECT (e), "module", "video-cross");
  gst_util_set_object_arg (G_OBJECT (e), "module", "audio-self");
  g_object_get (e, "module", &module, NULL);
  fail_unless_equals_int (module, GST_AV_ATTENTION_MODULE_VIDEO_CROSS);
  text = pop_message (bus, GST_MESSAGE_WARNING);
  fail_unless (text != NULL && strstr (text, "audio-self") != NULL, "%s",
      text);
  g_free (text);

  gst_util_set_object_arg (G_OBJECT (e), "colormap", "jet");
  g_object_get (e, "colormap", &cmap, NULL);
  fail_unless_equals_int (cmap, 1);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_END_TEST;

/* Property changes while frames flow: applied to the next frame. */
GST_START_TEST (test_property_change_while_playing)
{
  Pair p = pair_new ("RGB", 64, 48);
  GstBuffer *out;

  for (guint i = 0; i < 6; i++) {
    g_object_set (p.video->element, "opacity", i % 2 ? 0.0 : 0.8,
        "colormap", i % 3, "marker", i % 2 == 0, NULL);
    gst_harness_push (p.attention, make_delta_attention (i * FRAME_NS, 4, 3,
            i % 4, i % 3));
    gst_harness_push (p.video, make_frame ("RGB", 64, 48, 128, 128, 128,
            i * FRAME_NS));
    out = gst_harness_pull (p.video);
    fail_unless_equals_int (frame_changed (out), i % 2 == 0);
    gst_buffer_unref (out);
  }
  pair_free (&p);
}

GST_END_TEST;

GST_START_TEST (test_state_cycles)
{
  for (guint round = 0; round < 3; round++) {
    Pair p = pair_new ("BGRx", 32, 32);
    for (guint i = 0; i < 40; i++) {
      fail_unless (gst_element_set_state (p.video->element, GST_STATE_NULL)
          == GST_STATE_CHANGE_SUCCESS);
      fail_unless (gst_element_set_state (p.video->element,
              GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
    }
    /* after the cycles the element still works (caps again: the NULL
     * state forgot them) */
    gst_harness_set_src_caps_str (p.video, "video/x-raw, "
        "format=(string)BGRx, width=(int)32, height=(int)32, "
        "framerate=(fraction)30/1");
    gst_harness_set_src_caps_str (p.attention, ATTENTION_CAPS);
    gst_harness_push (p.attention, make_delta_attention (0, 2, 2, 1, 1));
    gst_harness_push (p.video, make_frame ("BGRx", 32, 32, 0, 0, 0, 0));
    GstBuffer *out = gst_harness_pull (p.video);
    fail_unless (out != NULL);
    gst_buffer_unref (out);
    pair_free (&p);
  }
}

GST_END_TEST;

/* ---- (8) a real pipeline ------------------------------------------------ */

/* The probes run in two threads (the video queue's, which pushes into
 * video_sink, and the aggregator's source pad task), so the table and the
 * counts are taken under @lock; a missing input frame is counted, not
 * failed on there, and checked in the test's own thread. */
typedef struct
{
  GMutex lock;
  GHashTable *in;               /* pts -> checksum of the input frame */
  guint frames, changed, unmatched;
  GstClockTime first_unmatched;
} Counts;

static gchar *
checksum (GstBuffer * buf)
{
  GstMapInfo m;
  gchar *sum;

  /* (no check macro here: this runs in a streaming thread) */
  if (!gst_buffer_map (buf, &m, GST_MAP_READ))
    return g_strdup ("unmappable");
  sum = g_compute_checksum_for_data (G_CHECKSUM_MD5, m.data, m.size);
  gst_buffer_unmap (buf, &m);
  return sum;
}

static GstPadProbeReturn
in_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Counts *c = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gchar *sum = checksum (buf);

  g_mutex_lock (&c->lock);
  g_hash_table_insert (c->in, g_memdup2 (&GST_BUFFER_PTS (buf),
          sizeof (GstClockTime)), sum);
  g_mutex_unlock (&c->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
out_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Counts *c = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime pts = GST_BUFFER_PTS (buf);
  gchar *after = checksum (buf);
  const gchar *before;

  g_mutex_lock (&c->lock);
  before = g_hash_table_lookup (c->in, &pts);
  if (before == NULL && c->unmatched++ == 0)
    c->first_unmatched = pts;
  c->frames++;
  c->changed += before != NULL && g_strcmp0 (before, after) != 0;
  g_mutex_unlock (&c->lock);
  g_free (after);
  return GST_PAD_PROBE_OK;
}

static guint
hash_time (gconstpointer v)
{
  return g_int64_hash (v);
}

static gboolean
equal_time (gconstpointer a, gconstpointer b)
{
  return g_int64_equal (a, b);
}

/* The pipeline of test_real_pipeline with the weights file @weights and
 * avattnoverlay's draw-when-not-visible @draw_all; counts the frames and
 * those with a heat map. */
static Counts
run_real_pipeline (const gchar * weights, gboolean draw_all)
{
  GstElement *pipe, *ov;
  GstPad *pad;
  GstBus *bus;
  GError *err = NULL;
  Counts c = { 0 };
  guint64 timeout_s;
  gchar *desc;

  g_mutex_init (&c.lock);

  desc = g_strdup_printf ("videotestsrc num-buffers=30 pattern=ball ! "
      "video/x-raw,width=320,height=240,framerate=30/1 ! tee name=t "
      "t. ! queue ! videoconvert ! videoscale ! avpatchembed weights=%s ! "
      "att.video_sink "
      "audiotestsrc num-buffers=60 freq=880 ! audioconvert ! "
      "audioresample ! avspectrogram n-mels=40 ! "
      "att.audio_sink "
      "avattention name=att weights=%s window=370000000 ! ov.attention_sink "
      "t. ! queue ! videoconvert ! ov.video_sink "
      "avattnoverlay name=ov draw-when-not-visible=%s ! fakesink sync=false",
      weights, weights, draw_all ? "true" : "false");
  pipe = gst_parse_launch (desc, &err);
  g_free (desc);
  fail_unless (pipe != NULL && err == NULL, "%s", err ? err->message : "");
  c.in = g_hash_table_new_full (hash_time, equal_time, g_free, g_free);
  ov = gst_bin_get_by_name (GST_BIN (pipe), "ov");
  pad = gst_element_get_static_pad (ov, "video_sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, in_probe, &c, NULL);
  gst_object_unref (pad);
  pad = gst_element_get_static_pad (ov, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, out_probe, &c, NULL);
  gst_object_unref (pad);

  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (pipe);
  /* as long as the test may run (longer under valgrind) */
  timeout_s = g_ascii_strtoull (g_getenv ("CK_DEFAULT_TIMEOUT") ?
      g_getenv ("CK_DEFAULT_TIMEOUT") : "120", NULL, 10);
  avf_wait_eos (bus, MAX (timeout_s, 10) * GST_SECOND, FALSE,
      "the real pipeline");
  gst_element_set_state (pipe, GST_STATE_NULL);
  g_hash_table_unref (c.in);
  c.in = NULL;
  g_mutex_clear (&c.lock);
  gst_object_unref (bus);
  gst_object_unref (ov);
  gst_object_unref (pipe);
  fail_unless (c.unmatched == 0, "%u output frame(s) have no input frame, "
      "the first at %" GST_TIME_FORMAT, c.unmatched,
      GST_TIME_ARGS (c.first_unmatched));
  return c;
}

static gboolean
have_elements (const gchar * test)
{
  static const gchar *const needed[] = { "avspectrogram", "avpatchembed",
    "avattention", NULL
  };

  return avf_have_elements (test, needed);
}

/* the small model of the fixtures (8-pixel patches, a 4 x 3 grid, 40 mel
 * bands, a 370 ms window) keeps this quick under valgrind */
static gchar *
small_weights (void)
{
  return g_build_filename (g_getenv ("AVF_FIXTURE_DIR") ?
      g_getenv ("AVF_FIXTURE_DIR") : "tests/fixtures",
      "weights_small.safetensors", NULL);
}

GST_START_TEST (test_real_pipeline)
{
  gchar *weights;
  Counts c;

  if (!have_elements ("test_real_pipeline"))
    return;
  weights = small_weights ();
  c = run_real_pipeline (weights, FALSE);
  g_free (weights);
  fail_unless_equals_int (c.frames, 30);
  /* the first frames' windows hold little or no audio (a frame whose
   * window is empty passes through); the others carry a heat map (the
   * small weights name no visible_threshold: every frame with audio is
   * drawn) */
  fail_unless (c.changed >= 20, "only %u of 30 frames have a heat map",
      c.changed);
  g_print ("real pipeline: %u frames, %u with a heat map\n", c.frames,
      c.changed);
}

GST_END_TEST;

/* The same pipeline with the small weights carrying visible_threshold 1 (no
 * patch of a 4 x 3 grid draws all the attention): the model never says that
 * a visible object sounds, so no frame gets a heat map -- unless
 * draw-when-not-visible=true, which draws as before. */
GST_START_TEST (test_real_pipeline_not_visible)
{
  gchar *dir, *small, *weights;
  Counts c;

  if (!have_elements ("test_real_pipeline_not_visible"))
    return;
  dir = avf_tmp_dir_new ("avattnoverlay");
  small = small_weights ();
  weights = g_build_filename (dir, "threshold-1.safetensors", NULL);
  avf_weights_copy_with_threshold (small, weights, 1.0f);

  c = run_real_pipeline (weights, FALSE);
  fail_unless_equals_int (c.frames, 30);
  fail_unless_equals_int (c.changed, 0);
  c = run_real_pipeline (weights, TRUE);
  fail_unless_equals_int (c.frames, 30);
  fail_unless (c.changed >= 20, "draw-when-not-visible=true: only %u of 30 "
      "frames have a heat map", c.changed);

  avf_tmp_dir_free (dir);
  g_free (weights);
  g_free (small);
}

GST_END_TEST;

static Suite *
avattnoverlay_suite (void)
{
  Suite *s = suite_create ("avattnoverlay");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_known_map);
  tcase_add_test (tc, test_attention_eos_passes_through);
  tcase_add_test (tc, test_video_gap_is_forwarded);
  tcase_add_test (tc, test_attention_pad_without_source);
  tcase_add_test (tc, test_non_flushing_seek_without_attention_source);
  tcase_add_test (tc, test_no_audio_passes_through);
  tcase_add_test (tc, test_opacity_zero_passes_through);
  tcase_add_test (tc, test_not_visible_passes_through);
  tcase_add_test (tc, test_scales_to_720p);
  tcase_add_test (tc, test_formats_same_location);
  tcase_add_test (tc, test_padded_strides);
  tcase_add_test (tc, test_modules);
  tcase_add_test (tc, test_heads_and_layers);
  tcase_add_test (tc, test_live_timeout_passes_through);
  tcase_add_test (tc, test_stale_and_early_attention);
  tcase_add_test (tc, test_matches_running_time);
  tcase_add_test (tc, test_resolution_change);
  tcase_add_test (tc, test_short_buffer_is_an_error);
  tcase_add_test (tc, test_wrong_attention_caps);
  tcase_add_test (tc, test_video_caps_follow_downstream);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_property_change_while_playing);
  tcase_add_test (tc, test_state_cycles);
  tcase_add_test (tc, test_real_pipeline);
  tcase_add_test (tc, test_real_pipeline_not_visible);
  return s;
}

AVF_CHECK_MAIN (avattnoverlay);
