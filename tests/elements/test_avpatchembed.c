/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avpatchembed: PyTorch parity (fixtures) for every packed RGB layout, with
 * tight and padded strides (GstVideoMeta); negotiation of a working size
 * through videoscale; refusal of sizes that do not work; weights-file
 * errors; resolution changes; short and lying buffers; recorded clips.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "patch_embed.h"
#include "safetensors.h"
#include "weights.h"
#include "safetensors_write.h"

static const gchar *formats[] = {
  "RGB", "BGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGBA", "BGRA", "ARGB",
  "ABGR"
};

/* ---- helpers ---------------------------------------------------------- */

/* A copy of a tensor of a fixture, with its dtype and element count
 * checked. */
static gpointer
fixture_tensor (const AvfSafetensors * st, const gchar * name,
    AvfDtype dtype, guint64 numel)
{
  const AvfTensorInfo *t = avf_safetensors_find (st, name);

  fail_unless (t != NULL, "fixture tensor %s missing", name);
  fail_unless (t->dtype == dtype, "fixture tensor %s: dtype %s", name,
      avf_dtype_name (t->dtype));
  fail_unless_equals_uint64 (t->numel, numel);
  return g_memdup2 (t->data, t->numel * avf_dtype_size (dtype));
}

static gint
fixture_int (const AvfSafetensors * st, const gchar * key)
{
  const gchar *v = avf_safetensors_metadata (st, key);
  fail_unless (v != NULL, "fixture metadata %s missing", key);
  return (gint) g_ascii_strtoll (v, NULL, 10);
}

typedef struct
{
  gint width, height;
  guint8 *rgb;                  /* (height, width, 3) */
  gfloat *patches;              /* (N, E) */
  gint N, E;
  gchar *weights;               /* path, or NULL for the built-in seed 0 */
} Fixture;

static void
fixture_load (Fixture * fx, const gchar * file)
{
  gchar *path = avf_fixture_path (file);
  AvfSafetensors *st = NULL;
  AvfError err;
  const gchar *w;

  fail_unless (avf_safetensors_open (&st, path, &err) == AVF_OK, "%s: %s",
      path, err.message);
  fx->width = fixture_int (st, "image_width");
  fx->height = fixture_int (st, "image_height");
  fx->N = fixture_int (st, "N");
  fx->E = fixture_int (st, "E");
  fx->rgb = fixture_tensor (st, "rgb", AVF_DTYPE_U8,
      (guint64) fx->width * fx->height * 3);
  fx->patches = fixture_tensor (st, "patches", AVF_DTYPE_F32,
      (guint64) fx->N * fx->E);
  w = avf_safetensors_metadata (st, "weights");
  fail_unless (w != NULL);
  fx->weights = g_strcmp0 (w, "built-in") == 0 ? NULL : avf_fixture_path (w);
  avf_safetensors_free (st);
  g_free (path);
}

static void
fixture_clear (Fixture * fx)
{
  g_free (fx->rgb);
  g_free (fx->patches);
  g_free (fx->weights);
}

/* A video buffer of `format` holding the packed RGB picture.  Without meta
 * the layout is the default one of GstVideoInfo; with meta the picture
 * starts `offset` bytes into the buffer and rows are `pad` bytes longer
 * than needed, described by a GstVideoMeta.  Padding holds junk. */
static GstBuffer *
picture_buffer (const guint8 * rgb, gint width, gint height,
    const gchar * format, gboolean meta, gsize offset, gsize pad)
{
  GstVideoFormat fmt = gst_video_format_from_string (format);
  const GstVideoFormatInfo *finfo = gst_video_format_get_info (fmt);
  const gint bpp = GST_VIDEO_FORMAT_INFO_PSTRIDE (finfo, 0);
  const gint off[3] = { GST_VIDEO_FORMAT_INFO_POFFSET (finfo, 0),
    GST_VIDEO_FORMAT_INFO_POFFSET (finfo, 1),
    GST_VIDEO_FORMAT_INFO_POFFSET (finfo, 2)
  };
  GstVideoInfo info;
  gsize stride, size;
  GstBuffer *buf;
  GstMapInfo map;

  fail_unless (fmt != GST_VIDEO_FORMAT_UNKNOWN);
  fail_unless (gst_video_info_set_format (&info, fmt, width, height));
  if (meta) {
    stride = (gsize) width * bpp + pad;
    size = offset + stride * height;
  } else {
    offset = GST_VIDEO_INFO_PLANE_OFFSET (&info, 0);
    stride = GST_VIDEO_INFO_PLANE_STRIDE (&info, 0);
    size = GST_VIDEO_INFO_SIZE (&info);
  }
  buf = gst_buffer_new_allocate (NULL, size, NULL);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  memset (map.data, 0xA5, size);
  for (gint y = 0; y < height; y++) {
    for (gint x = 0; x < width; x++) {
      guint8 *p = map.data + offset + y * stride + (gsize) x * bpp;
      const guint8 *s = rgb + ((gsize) y * width + x) * 3;
      for (gint c = 0; c < 3; c++)
        p[off[c]] = s[c];
    }
  }
  gst_buffer_unmap (buf, &map);
  if (meta) {
    gsize offsets[GST_VIDEO_MAX_PLANES] = { offset, };
    gint strides[GST_VIDEO_MAX_PLANES] = { (gint) stride, };
    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE, fmt,
        width, height, 1, offsets, strides);
  }
  return buf;
}

static gchar *
video_caps (const gchar * format, gint width, gint height)
{
  return g_strdup_printf ("video/x-raw, format=(string)%s, width=(int)%d, "
      "height=(int)%d, framerate=(fraction)30/1", format, width, height);
}

static GstElement *
new_element (const gchar * weights)
{
  GstElement *e = gst_element_factory_make ("avpatchembed", NULL);

  fail_unless (e != NULL, "avpatchembed not found");
  if (weights)
    g_object_set (e, "weights", weights, NULL);
  else                          /* no file: the seeded weights, asked for */
    gst_util_set_object_arg (G_OBJECT (e), "model", "seeded");
  return e;
}

static GstHarness *
new_harness (const gchar * weights, GstBus ** bus)
{
  GstElement *e = new_element (weights);
  GstHarness *h;

  if (bus) {
    *bus = gst_bus_new ();
    gst_element_set_bus (e, *bus);
  }
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  return h;
}

/* The patch tensor caps, read field by field. */
typedef struct
{
  gint embed_dim, num_patches, cols, rows, patch_size, frame_size;
  gint fps_n, fps_d;
} PatchCaps;

static void
parse_patch_caps (PatchCaps * pc, GstCaps * caps)
{
  const GstStructure *s;

  fail_unless (caps != NULL && gst_caps_is_fixed (caps));
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_has_name (s, "other/x-avtensor"));
  fail_unless_equals_string (gst_structure_get_string (s, "kind"),
      "patch-embedding");
  fail_unless_equals_string (gst_structure_get_string (s, "dtype"),
      "float32");
  fail_unless (gst_structure_get_int (s, "embed-dim", &pc->embed_dim));
  fail_unless (gst_structure_get_int (s, "num-patches", &pc->num_patches));
  fail_unless (gst_structure_get_int (s, "grid-columns", &pc->cols));
  fail_unless (gst_structure_get_int (s, "grid-rows", &pc->rows));
  fail_unless (gst_structure_get_int (s, "patch-size", &pc->patch_size));
  fail_unless (gst_structure_get_int (s, "frame-size", &pc->frame_size));
  fail_unless (gst_structure_get_fraction (s, "framerate", &pc->fps_n,
          &pc->fps_d));
  fail_unless_equals_int (pc->num_patches, pc->cols * pc->rows);
  fail_unless_equals_int (pc->frame_size, pc->num_patches * pc->embed_dim);
}

static gdouble
max_abs_diff (const gfloat * a, const gfloat * b, gsize n)
{
  gdouble m = 0.0;
  for (gsize i = 0; i < n; i++) {
    gdouble d = fabs ((gdouble) a[i] - (gdouble) b[i]);
    if (isnan (d))
      return INFINITY;
    m = MAX (m, d);
  }
  return m;
}

/* Pushes one frame, pulls one output and checks it against ref (N, E),
 * its timestamps against the input's and its caps against the grid. */
static void
push_and_check (GstHarness * h, GstBuffer * in, const gfloat * ref, gint N,
    gint E, gint cols, gint rows, gdouble tol, const gchar * what)
{
  static GstClockTime pts = GST_SECOND;
  const GstClockTime duration = GST_SECOND / 30;
  GstBuffer *out;
  GstMapInfo map;
  GstCaps *caps;
  PatchCaps pc;
  gdouble err;

  GST_BUFFER_PTS (in) = pts;
  GST_BUFFER_DURATION (in) = duration;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL, "%s: no output", what);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), pts);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), duration);
  fail_unless (out->pool != NULL, "%s: output not from a buffer pool", what);
  fail_unless (gst_buffer_get_video_meta (out) == NULL);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, (guint64) N * E * sizeof (gfloat));
  err = max_abs_diff ((const gfloat *) map.data, ref, (gsize) N * E);
  fail_unless (err <= tol, "%s: max abs error %g > %g", what, err, tol);
  GST_INFO ("%s: max abs error %g", what, err);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);

  caps = gst_pad_get_current_caps (h->sinkpad);
  parse_patch_caps (&pc, caps);
  gst_caps_unref (caps);
  fail_unless_equals_int (pc.embed_dim, E);
  fail_unless_equals_int (pc.num_patches, N);
  fail_unless_equals_int (pc.cols, cols);
  fail_unless_equals_int (pc.rows, rows);
  fail_unless_equals_int (pc.fps_n, 30);
  fail_unless_equals_int (pc.fps_d, 1);
  pts += duration;
}

/* Output frames seen by a fakesink, and the caps avpatchembed took. */
typedef struct
{
  GMutex lock;
  GArray *pts, *duration;       /* GstClockTime */
  guint n_bad_size;
  gsize frame_bytes;            /* expected bytes per output */
  GstCaps *in_caps;             /* of avpatchembed's sink pad */
  GstPad *pe_sink;
} Capture;

static void
capture_init (Capture * c, gsize frame_bytes)
{
  memset (c, 0, sizeof *c);
  g_mutex_init (&c->lock);
  c->pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  c->duration = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  c->frame_bytes = frame_bytes;
}

static void
capture_clear (Capture * c)
{
  g_array_free (c->pts, TRUE);
  g_array_free (c->duration, TRUE);
  if (c->in_caps)
    gst_caps_unref (c->in_caps);
  if (c->pe_sink)
    gst_object_unref (c->pe_sink);
  g_mutex_clear (&c->lock);
}

static void
on_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, Capture * c)
{
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);

  g_mutex_lock (&c->lock);
  g_array_append_val (c->pts, pts);
  g_array_append_val (c->duration, dur);
  if (gst_buffer_get_size (buf) != c->frame_bytes)
    c->n_bad_size++;
  if (c->in_caps == NULL && c->pe_sink)
    c->in_caps = gst_pad_get_current_caps (c->pe_sink);
  g_mutex_unlock (&c->lock);
}

static void
attach_capture (GstElement * pipeline, Capture * c)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstElement *pe = gst_bin_get_by_name (GST_BIN (pipeline), "pe");

  fail_unless (sink != NULL && pe != NULL);
  c->pe_sink = gst_element_get_static_pad (pe, "sink");
  g_object_set (sink, "signal-handoffs", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), c);
  gst_object_unref (sink);
  gst_object_unref (pe);
}

/* ---- tests ------------------------------------------------------------ */

/* (1) Parity with PyTorch for all ten packed layouts, tightly packed and
 * with a padded stride and offset from a GstVideoMeta, switching layouts
 * mid-stream; small weights from a file and the built-in seed-0 weights. */
GST_START_TEST (test_pytorch_parity)
{
  static const gchar *files[] = { "fusion_small.safetensors",
    "fusion_default.safetensors"
  };

  for (guint f = 0; f < G_N_ELEMENTS (files); f++) {
    Fixture fx;
    GstHarness *h;
    gint P;

    fixture_load (&fx, files[f]);
    h = new_harness (fx.weights, NULL);
    g_object_get (h->element, "patch-size", &P, NULL);
    if (fx.weights == NULL) {
      fail_unless_equals_int (P, 16);
    }
    P = (gint) sqrt ((gdouble) fx.width * fx.height / fx.N);
    for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
      gchar *caps = video_caps (formats[i], fx.width, fx.height);
      gchar *what;

      gst_harness_set_src_caps_str (h, caps);
      g_free (caps);
      what = g_strdup_printf ("%s %s packed", files[f], formats[i]);
      push_and_check (h, picture_buffer (fx.rgb, fx.width, fx.height,
              formats[i], FALSE, 0, 0), fx.patches, fx.N, fx.E,
          fx.width / P, fx.height / P, 1e-4, what);
      g_free (what);
      what = g_strdup_printf ("%s %s padded", files[f], formats[i]);
      push_and_check (h, picture_buffer (fx.rgb, fx.width, fx.height,
              formats[i], TRUE, 64 + i, 20 + i), fx.patches, fx.N, fx.E,
          fx.width / P, fx.height / P, 1e-4, what);
      g_free (what);
    }
    gst_harness_teardown (h);
    fixture_clear (&fx);
  }
}

GST_END_TEST;

/* The sink caps offer exactly the sizes whose grid has N patches, the most
 * square first. */
GST_START_TEST (test_caps_query)
{
  GstElement *e = new_element (NULL);
  GstPad *pad = gst_element_get_static_pad (e, "sink");
  GstCaps *caps, *bad, *good;
  const GstStructure *s;
  gint w, h;

  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_SUCCESS);
  caps = gst_pad_query_caps (pad, NULL);
  GST_INFO ("sink caps %" GST_PTR_FORMAT, caps);
  /* 196 = 2^2 7^2 has 9 divisors */
  fail_unless_equals_int (gst_caps_get_size (caps), 9);
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_get_int (s, "width", &w));
  fail_unless (gst_structure_get_int (s, "height", &h));
  fail_unless_equals_int (w, 224);
  fail_unless_equals_int (h, 224);
  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    s = gst_caps_get_structure (caps, i);
    fail_unless (gst_structure_get_int (s, "width", &w));
    fail_unless (gst_structure_get_int (s, "height", &h));
    fail_unless (w % 16 == 0 && h % 16 == 0 && (w / 16) * (h / 16) == 196,
        "%dx%d offered", w, h);
  }
  bad = gst_caps_from_string ("video/x-raw,format=RGB,width=230,height=224,"
      "framerate=30/1");
  good = gst_caps_from_string ("video/x-raw,format=BGRx,width=448,height=112,"
      "framerate=30/1");
  fail_if (gst_caps_can_intersect (caps, bad));
  fail_unless (gst_caps_can_intersect (caps, good));
  gst_caps_unref (bad);
  gst_caps_unref (good);
  gst_caps_unref (caps);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (pad);
  gst_object_unref (e);
}

GST_END_TEST;

/* (2) videotestsrc ! videoconvert ! videoscale ! avpatchembed negotiates a
 * working size by itself: 224x224 for the seeded weights, 32x24 for the
 * small weights file. */
GST_START_TEST (test_videoscale_negotiates)
{
  gchar *small = avf_fixture_path ("weights_small.safetensors");
  struct
  {
    const gchar *weights;
    gint width, height;
    gsize frame_bytes;
  } cases[] = {
    {NULL, 224, 224, 196 * 256 * sizeof (gfloat)},
    {small, 32, 24, 12 * 48 * sizeof (gfloat)},
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *launch = g_strdup_printf ("videotestsrc num-buffers=3 ! "
        "video/x-raw,format=I420,width=320,height=240,framerate=25/1 ! "
        "videoconvert ! videoscale ! avpatchembed name=pe %s%s%s ! "
        "fakesink name=sink", cases[i].weights ? "weights=\"" : "",
        cases[i].weights ? cases[i].weights : "model=seeded",
        cases[i].weights ? "\"" : "");
    GstElement *pipeline = gst_parse_launch (launch, NULL);
    const GstStructure *s;
    Capture c;
    AvfRun run = { 0 };
    gint w, h;

    fail_unless (pipeline != NULL, "%s", launch);
    capture_init (&c, cases[i].frame_bytes);
    attach_capture (pipeline, &c);
    avf_run_pipeline (pipeline, &run);
    avf_run_fail_on_messages (&run, launch);
    avf_run_clear (&run);
    fail_unless (run.eos);
    fail_unless_equals_int (c.pts->len, 3);
    fail_unless_equals_int (c.n_bad_size, 0);
    fail_unless (c.in_caps != NULL);
    s = gst_caps_get_structure (c.in_caps, 0);
    fail_unless (gst_structure_get_int (s, "width", &w));
    fail_unless (gst_structure_get_int (s, "height", &h));
    fail_unless_equals_int (w, cases[i].width);
    fail_unless_equals_int (h, cases[i].height);
    for (guint k = 0; k < 3; k++) {
      fail_unless_equals_uint64 (g_array_index (c.pts, GstClockTime, k),
          k * GST_SECOND / 25);
      fail_unless_equals_uint64 (g_array_index (c.duration, GstClockTime,
              k), GST_SECOND / 25);
    }
    capture_clear (&c);
    gst_object_unref (pipeline);
    g_free (launch);
  }
  g_free (small);
}

GST_END_TEST;

/* (3) 230x224 video is refused at negotiation with an error that names the
 * size given and the size needed. */
GST_START_TEST (test_wrong_size_refused)
{
  GstBus *bus;
  GstHarness *h = new_harness (NULL, &bus);
  GstCaps *caps = gst_caps_from_string ("video/x-raw,format=RGB,width=230,"
      "height=224,framerate=30/1");
  GstElement *pipeline;
  AvfRun run = { 0 };
  gchar *text;

  fail_unless (gst_harness_push_event (h,
          gst_event_new_stream_start ("wrong-size")));
  /* (a failed sticky event still returns TRUE: the error is what counts) */
  gst_pad_push_event (h->srcpad, gst_event_new_caps (caps));
  text = avf_expect_error (bus, 0, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION);
  fail_unless (strstr (text, "230x224") != NULL, "%s", text);
  fail_unless (strstr (text, "224x224") != NULL, "%s", text);
  g_free (text);
  /* and no data gets through */
  {
    GstSegment segment;
    gst_segment_init (&segment, GST_FORMAT_TIME);
    gst_harness_push_event (h, gst_event_new_segment (&segment));
  }
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_allocate (NULL, 230 * 224 * 3, NULL)),
      GST_FLOW_NOT_NEGOTIATED);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  gst_caps_unref (caps);
  avf_harness_teardown_with_bus (h, bus);

  /* a pipeline that forces the size fails instead of running */
  pipeline = gst_parse_launch ("videotestsrc num-buffers=2 ! "
      "video/x-raw,format=RGB,width=230,height=224 ! avpatchembed "
      "model=seeded ! fakesink", NULL);
  fail_unless (pipeline != NULL);
  avf_run_pipeline (pipeline, &run);
  fail_if (run.eos, "230x224 video was embedded");
  fail_unless (run.messages != NULL);
  fail_unless_equals_int (GST_MESSAGE_TYPE (run.messages->data),
      GST_MESSAGE_ERROR);
  avf_run_clear (&run);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* Starts a new element with `weights` and expects start to fail with an
 * error of domain/code whose text contains every string of `needles`. */
static void
check_start_error (const gchar * weights, GQuark domain, gint code,
    const gchar * const *needles)
{
  GstElement *e = new_element (weights);
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (e, bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  text = avf_expect_error (bus, 0, domain, code);
  for (; *needles; needles++)
    fail_unless (strstr (text, *needles) != NULL, "\"%s\" not in: %s",
        *needles, text);
  GST_INFO ("%s", text);
  g_free (text);
  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

/* Writes weights_small.safetensors without one tensor. */
static void
write_without (const gchar * path, const gchar * drop)
{
  gchar *src = avf_fixture_path ("weights_small.safetensors");
  AvfSafetensors *st = NULL;
  AvfError err;
  AvfTensorOut *out;
  AvfMetadataEntry *meta;
  gsize n = 0, n_meta;

  fail_unless (avf_safetensors_open (&st, src, &err) == AVF_OK, "%s",
      err.message);
  out = g_new0 (AvfTensorOut, avf_safetensors_count (st));
  for (gsize i = 0; i < avf_safetensors_count (st); i++) {
    const AvfTensorInfo *t = avf_safetensors_tensor (st, i);
    if (strcmp (t->name, drop) == 0)
      continue;
    out[n].name = t->name;
    out[n].dtype = t->dtype;
    out[n].ndim = t->ndim;
    memcpy (out[n].shape, t->shape, sizeof t->shape);
    out[n].data = t->data;
    n++;
  }
  fail_unless_equals_uint64 (n + 1, avf_safetensors_count (st));
  n_meta = avf_safetensors_metadata_count (st);
  meta = g_new0 (AvfMetadataEntry, n_meta);
  for (gsize i = 0; i < n_meta; i++)
    meta[i] = *avf_safetensors_metadata_entry (st, i);
  fail_unless (avf_safetensors_write (path, out, n, meta, n_meta, &err)
      == AVF_OK, "%s", err.message);
  g_free (meta);
  g_free (out);
  avf_safetensors_free (st);
  g_free (src);
}

/* (4) Weights-file errors name the file: missing is RESOURCE/NOT_FOUND,
 * junk is RESOURCE/READ, a safetensors file that is not a model and one
 * that lacks a tensor are refused naming the cause; impossible built-in
 * settings are refused too. */
GST_START_TEST (test_weights_errors)
{
  gchar *dir = avf_tmp_dir_new ("avpatchembed");
  gchar *missing = g_build_filename (dir, "no-such-weights.safetensors",
      NULL);
  gchar *junk = g_build_filename (dir, "junk.safetensors", NULL);
  gchar *partial = g_build_filename (dir, "no-video-pos.safetensors", NULL);
  gchar *not_model = avf_fixture_path ("fusion_small.safetensors");
  static const guint8 junk_bytes[] = { 0x13, 0x37, 0xde, 0xad, 0xbe, 0xef,
    0x00, 0x42, 0x7b, 0x22, 0x61
  };

  fail_unless (g_file_set_contents (junk, (const gchar *) junk_bytes,
          sizeof junk_bytes, NULL));
  write_without (partial, "video_pos");
  {
    const gchar *n1[] = { missing, NULL };
    check_start_error (missing, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_NOT_FOUND, n1);
  }
  {
    const gchar *n2[] = { junk, NULL };
    check_start_error (junk, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ,
        n2);
  }
  {
    const gchar *n3[] = { not_model, "avfusion-v1", NULL };
    check_start_error (not_model, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_READ, n3);
  }
  {
    const gchar *n4[] = { partial, "video_pos", NULL };
    check_start_error (partial, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_SETTINGS, n4);
  }
  {
    /* built-in weights: embed-dim 100 is not a multiple of the 8 heads */
    GstElement *e = new_element (NULL);
    GstBus *bus = gst_bus_new ();
    gchar *text;

    g_object_set (e, "embed-dim", 100, NULL);
    gst_element_set_bus (e, bus);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    text = avf_expect_error (bus, 0, GST_LIBRARY_ERROR,
        GST_LIBRARY_ERROR_SETTINGS);
    fail_unless (strstr (text, "100") != NULL, "%s", text);
    g_free (text);
    gst_bus_set_flushing (bus, TRUE);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_element_set_bus (e, NULL);
    gst_object_unref (bus);
    gst_object_unref (e);
  }

  avf_tmp_dir_free (dir);
  g_free (not_model);
  g_free (partial);
  g_free (junk);
  g_free (missing);
}

GST_END_TEST;

/* The embeddings core/patch_embed.h gives for a packed RGB picture. */
static gfloat *
core_embed (const AvfWeights * w, const guint8 * rgb, gint width, gint height)
{
  AvfPatchEmbed *pe = NULL;
  AvfError err;
  gfloat *out = g_new (gfloat, (gsize) w->cfg.N * w->cfg.E);

  fail_unless (avf_patch_embed_new (&pe, w, width, height, &err) == AVF_OK,
      "%s", err.message);
  avf_patch_embed_forward (pe, out, rgb, (gsize) width * 3,
      avf_pixel_layout_rgb ());
  avf_patch_embed_free (pe);
  return out;
}

/* (5) Resolution changes mid-stream: 224x224 -> 112x448 -> 448x112 give
 * new grids (caps) and the right embeddings; then 230x224 is refused with
 * a clear error. */
/* Built-in weights for a huge patch-size would need terabytes: refused
 * with an error naming the property, before any allocation (under ASan a
 * huge allocation would abort the process). */
GST_START_TEST (test_huge_patch_size_refused)
{
  const gint sizes[] = { 4096, 65536 };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++) {
    gchar *desc = g_strdup_printf ("videotestsrc num-buffers=1 ! "
        "avpatchembed model=seeded patch-size=%d ! fakesink", sizes[i]);
    GstElement *pipeline = gst_parse_launch (desc, NULL);
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *msg;
    GError *err = NULL;
    gchar *want = g_strdup_printf ("patch-size %d", sizes[i]);

    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
    fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR,
        "%s: no error", desc);
    gst_message_parse_error (msg, &err, NULL);
    fail_unless (g_error_matches (err, GST_LIBRARY_ERROR,
            GST_LIBRARY_ERROR_SETTINGS), "%s: %s", desc, err->message);
    fail_unless (strstr (err->message, want) != NULL &&
        strstr (err->message, "more than") != NULL, "%s: %s", desc,
        err->message);
    g_error_free (err);
    gst_message_unref (msg);
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
    g_free (want);
    g_free (desc);
  }
}

GST_END_TEST;

GST_START_TEST (test_resolution_change)
{
  static const gint sizes[][4] = {
    /* width, height, cols, rows */
    {224, 224, 14, 14}, {112, 448, 7, 28}, {448, 112, 28, 7},
    {224, 224, 14, 14},
  };
  AvfConfig cfg = avf_config_default ();
  AvfWeights *w = NULL;
  AvfError err;
  GstBus *bus;
  GstHarness *h = new_harness (NULL, &bus);
  GstCaps *caps;
  guint8 *rgb = g_new (guint8, 448 * 112 * 3);
  gchar *text;

  fail_unless (avf_weights_new_default (&w, &cfg, 0, &err) == AVF_OK, "%s",
      err.message);
  for (gsize i = 0; i < 448 * 112 * 3; i++)
    rgb[i] = (guint8) ((i * 2654435761u) >> 13);
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++) {
    gchar *c = video_caps (k % 2 ? "BGRx" : "RGB", sizes[k][0], sizes[k][1]);
    gfloat *ref = core_embed (w, rgb, sizes[k][0], sizes[k][1]);

    gst_harness_set_src_caps_str (h, c);
    push_and_check (h, picture_buffer (rgb, sizes[k][0], sizes[k][1],
            k % 2 ? "BGRx" : "RGB", FALSE, 0, 0), ref, 196, 256, sizes[k][2],
        sizes[k][3], 1e-5, c);
    g_free (ref);
    g_free (c);
  }

  caps = gst_caps_from_string ("video/x-raw,format=RGB,width=230,height=224,"
      "framerate=30/1");
  gst_pad_push_event (h->srcpad, gst_event_new_caps (caps));
  text = avf_expect_error (bus, 0, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION);
  fail_unless (strstr (text, "230x224") != NULL, "%s", text);
  fail_unless (strstr (text, "224x224") != NULL, "%s", text);
  g_free (text);
  gst_caps_unref (caps);
  /* the 224x224 embeddings stop: nothing more comes out */
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_allocate (NULL, 230 * 224 * 3, NULL)),
      GST_FLOW_NOT_NEGOTIATED);
  fail_unless_equals_int (gst_harness_buffers_received (h),
      G_N_ELEMENTS (sizes));

  avf_harness_teardown_with_bus (h, bus);
  avf_weights_free (w);
  g_free (rgb);
}

GST_END_TEST;

/* Buffers that hold less than their caps or video meta say are refused
 * with an error, never read past. */
GST_START_TEST (test_short_buffers)
{
  Fixture fx;
  GstBus *bus;
  GstHarness *h;
  GstBuffer *buf;
  gchar *caps, *text;

  fixture_load (&fx, "fusion_small.safetensors");
  h = new_harness (fx.weights, &bus);
  caps = video_caps ("RGBx", fx.width, fx.height);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);

  /* half a picture */
  buf = gst_buffer_new_allocate (NULL, fx.width * fx.height * 2, NULL);
  gst_buffer_memset (buf, 0, 0, fx.width * fx.height * 2);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_ERROR);
  text = avf_expect_error (bus, 0, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT);
  fail_unless (strstr (text, "32x24") != NULL, "%s", text);
  g_free (text);

  /* a meta whose stride runs past the end of the buffer */
  buf = picture_buffer (fx.rgb, fx.width, fx.height, "RGBx", FALSE, 0, 0);
  {
    gsize offsets[GST_VIDEO_MAX_PLANES] = { 0, };
    gint strides[GST_VIDEO_MAX_PLANES] = { fx.width * 4 * 2, };
    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_FORMAT_RGBx, fx.width, fx.height, 1, offsets, strides);
  }
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_ERROR);
  text = avf_expect_error (bus, 0, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT);
  g_free (text);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);

  avf_harness_teardown_with_bus (h, bus);
  fixture_clear (&fx);
}

GST_END_TEST;

/* Properties only change in NULL/READY: a change while playing is refused
 * with a warning; after a restart the new weights are used. */
GST_START_TEST (test_properties_and_restart)
{
  Fixture fx;
  GstBus *bus;
  GstHarness *h;
  GstMessage *m;
  gchar *caps, *text, *path = NULL;
  guint64 seed = 1;
  gint P, E;

  fixture_load (&fx, "fusion_small.safetensors");
  h = new_harness (NULL, &bus);
  g_object_get (h->element, "seed", &seed, "patch-size", &P, "embed-dim", &E,
      "weights", &path, NULL);
  fail_unless_equals_uint64 (seed, 0);
  fail_unless_equals_int (P, 16);
  fail_unless_equals_int (E, 256);
  fail_unless_equals_string (path, "");
  g_free (path);

  g_object_set (h->element, "weights", fx.weights, NULL);
  g_object_get (h->element, "weights", &path, NULL);
  fail_unless_equals_string (path, "");
  g_free (path);
  m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (m != NULL, "no warning for a refused property change");
  text = avf_message_text (m, NULL, NULL);
  fail_unless (strstr (text, "weights") != NULL, "%s", text);
  g_free (text);
  gst_message_unref (m);

  /* back to READY: the change is taken and used from the next start */
  gst_element_set_state (h->element, GST_STATE_READY);
  g_object_set (h->element, "weights", fx.weights, NULL);
  gst_harness_play (h);
  caps = video_caps ("RGB", fx.width, fx.height);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  push_and_check (h, picture_buffer (fx.rgb, fx.width, fx.height, "RGB",
          FALSE, 0, 0), fx.patches, fx.N, fx.E, 4, 3, 1e-4, "restarted");

  avf_harness_teardown_with_bus (h, bus);
  fixture_clear (&fx);
}

GST_END_TEST;

/* Which weights: "model" is trained by default; setting "seed" selects
 * seeded, setting "model" afterwards overrides; patch-size and embed-dim
 * set while the trained model is used are ignored with a warning that says
 * so (and the trained model's sizes are used). */
GST_START_TEST (test_model_property)
{
  GstElement *e = gst_element_factory_make ("avpatchembed", NULL);
  AvfConfig shipped = avf_shipped_model_config ();
  GstHarness *h;
  GstBus *bus;
  GstBuffer *out;
  GstCaps *caps;
  PatchCaps pc;
  gchar *text;
  guint8 *rgb;

  fail_unless (e != NULL);
  avf_check_enum_nick (e, "model", "trained");
  g_object_set (e, "seed", (guint64) 0, NULL);
  avf_check_enum_nick (e, "model", "seeded");
  gst_util_set_object_arg (G_OBJECT (e), "model", "trained");
  avf_check_enum_nick (e, "model", "trained");

  /* embed-dim and patch-size do not apply to the trained model */
  g_object_set (e, "embed-dim", 128, "patch-size", 8, NULL);
  bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_play (h);
  {
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
    fail_unless (m != NULL, "no warning for embed-dim with the trained "
        "model");
    text = avf_message_text (m, NULL, NULL);
    fail_unless (strstr (text, "seeded weights only") != NULL
        && strstr (text, AVF_MODEL_NAME) != NULL, "%s", text);
    g_free (text);
    gst_message_unref (m);
  }
  {
    gint side = (gint) sqrt ((gdouble) shipped.N);
    gint w = side * shipped.P, ht = (shipped.N / side) * shipped.P;
    gchar *c = video_caps ("RGB", w, ht);

    fail_unless_equals_int (side * (shipped.N / side), shipped.N);
    gst_harness_set_src_caps_str (h, c);
    g_free (c);
    rgb = g_malloc0 ((gsize) w * ht * 3);
    out = gst_harness_push_and_pull (h, picture_buffer (rgb, w, ht, "RGB",
            FALSE, 0, 0));
    g_free (rgb);
  }
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (gst_buffer_get_size (out),
      (guint64) shipped.N * shipped.E * sizeof (gfloat));
  gst_buffer_unref (out);
  caps = gst_pad_get_current_caps (h->sinkpad);
  parse_patch_caps (&pc, caps);
  gst_caps_unref (caps);
  fail_unless_equals_int (pc.embed_dim, shipped.E);
  fail_unless_equals_int (pc.num_patches, shipped.N);
  fail_unless_equals_int (pc.patch_size, shipped.P);
  avf_harness_teardown_with_bus (h, bus);
  gst_object_unref (e);
}

GST_END_TEST;

typedef struct
{
  GMutex lock;
  GArray *pts, *duration;
} Decoded;

static GstPadProbeReturn
record_decoded (GstPad * pad, GstPadProbeInfo * info, Decoded * d)
{
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);

  g_mutex_lock (&d->lock);
  g_array_append_val (d->pts, pts);
  g_array_append_val (d->duration, dur);
  g_mutex_unlock (&d->lock);
  return GST_PAD_PROBE_OK;
}

/* (6) Every recorded clip: one embedding per decoded video frame, with the
 * frame's timestamp and duration, and no error or warning. */
GST_START_TEST (test_clips)
{
  const gchar *dir_name = g_getenv ("AVF_MEDIA_DIR");
  GDir *dir;
  const gchar *file;
  guint n_clips = 0;

  if (g_getenv ("AVF_UNDER_VALGRIND")) {
    /* decoding and scaling run 50x slower under valgrind (15 minutes for
     * the shared clips, 5 for one small clip); the clips test program puts
     * a recorded clip through avpatchembed under valgrind, and this test
     * runs in the normal, ASan and leaks runs */
    g_print ("under valgrind: test_clips is left to the other runs\n");
    return;
  }
  if (dir_name == NULL || !g_file_test (dir_name, G_FILE_TEST_IS_DIR)) {
    GST_WARNING ("no clip folder (AVF_MEDIA_DIR), skipping");
    return;
  }
  dir = g_dir_open (dir_name, 0, NULL);
  fail_unless (dir != NULL);
  while ((file = g_dir_read_name (dir)) != NULL) {
    gchar *path, *launch;
    GstElement *pipeline, *conv, *aq;
    AvfDecodeLinks links = { NULL, };
    Decoded d;
    Capture c;
    AvfRun run = { 0 };

    if (!g_str_has_suffix (file, ".webm"))
      continue;
    n_clips++;
    path = g_build_filename (dir_name, file, NULL);
    launch = g_strdup_printf ("filesrc location=\"%s\" ! decodebin name=dec "
        "videoconvert name=conv ! videoscale ! avpatchembed name=pe "
        "model=seeded ! fakesink name=sink queue name=aq ! fakesink sync=false async=false",
        path);
    pipeline = gst_parse_launch (launch, NULL);
    fail_unless (pipeline != NULL, "%s", launch);
    conv = gst_bin_get_by_name (GST_BIN (pipeline), "conv");
    aq = gst_bin_get_by_name (GST_BIN (pipeline), "aq");
    links.video_sink = gst_element_get_static_pad (conv, "sink");
    links.audio_sink = gst_element_get_static_pad (aq, "sink");
    {
      GstElement *dec = gst_bin_get_by_name (GST_BIN (pipeline), "dec");
      g_signal_connect (dec, "pad-added",
          G_CALLBACK (avf_decode_links_pad_added), &links);
      gst_object_unref (dec);
    }
    memset (&d, 0, sizeof d);
    g_mutex_init (&d.lock);
    d.pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
    d.duration = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
    gst_pad_add_probe (links.video_sink, GST_PAD_PROBE_TYPE_BUFFER,
        (GstPadProbeCallback) record_decoded, &d, NULL);
    capture_init (&c, 196 * 256 * sizeof (gfloat));
    attach_capture (pipeline, &c);

    avf_run_pipeline (pipeline, &run);
    avf_run_fail_on_messages (&run, path);
    avf_run_clear (&run);
    fail_unless (run.eos, "%s: no EOS", path);
    fail_unless (links.video_linked, "%s: no video", path);
    fail_unless (d.pts->len > 0, "%s: no decoded frame", path);
    fail_unless_equals_int (c.pts->len, d.pts->len);
    fail_unless_equals_int (c.n_bad_size, 0);
    for (guint i = 0; i < d.pts->len; i++) {
      fail_unless_equals_uint64 (g_array_index (c.pts, GstClockTime, i),
          g_array_index (d.pts, GstClockTime, i));
      fail_unless_equals_uint64 (g_array_index (c.duration, GstClockTime, i),
          g_array_index (d.duration, GstClockTime, i));
    }
    GST_INFO ("%s: %u frames", file, c.pts->len);

    capture_clear (&c);
    g_array_free (d.pts, TRUE);
    g_array_free (d.duration, TRUE);
    g_mutex_clear (&d.lock);
    gst_object_unref (links.audio_sink);
    gst_object_unref (links.video_sink);
    gst_object_unref (conv);
    gst_object_unref (aq);
    gst_object_unref (pipeline);
    g_free (launch);
    g_free (path);
  }
  g_dir_close (dir);
  fail_unless (n_clips > 0, "no .webm clip in %s", dir_name);
}

GST_END_TEST;

/* NULL <-> PLAYING many times, with and without data flowing. */
GST_START_TEST (test_state_cycles)
{
  GstElement *pipeline = gst_parse_launch ("videotestsrc is-live=true ! "
      "video/x-raw,width=224,height=224,framerate=100/1 ! videoconvert ! "
      "avpatchembed ! fakesink sync=false", NULL);

  /* 40 cycles; 8 in quick mode (valgrind) */
  const guint cycles = g_getenv ("AVF_TEST_QUICK") ? 8 : 40;

  fail_unless (pipeline != NULL);
  for (guint i = 0; i < cycles; i++) {
    fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    if (i % 2)
      fail_if (gst_element_get_state (pipeline, NULL, NULL,
              5 * GST_SECOND) == GST_STATE_CHANGE_FAILURE);
    fail_unless_equals_int (gst_element_set_state (pipeline,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref (pipeline);
}

GST_END_TEST;

static Suite *
avpatchembed_suite (void)
{
  Suite *s = suite_create ("avpatchembed");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_pytorch_parity);
  tcase_add_test (tc, test_caps_query);
  tcase_add_test (tc, test_videoscale_negotiates);
  tcase_add_test (tc, test_wrong_size_refused);
  tcase_add_test (tc, test_weights_errors);
  tcase_add_test (tc, test_resolution_change);
  tcase_add_test (tc, test_huge_patch_size_refused);
  tcase_add_test (tc, test_short_buffers);
  tcase_add_test (tc, test_properties_and_restart);
  tcase_add_test (tc, test_model_property);
  tcase_add_test (tc, test_clips);
  tcase_add_test (tc, test_state_cycles);
  return s;
}

AVF_CHECK_MAIN (avpatchembed);
