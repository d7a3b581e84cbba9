/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tests of avtensorsink and of the .npy/.npz writer (elements/npy.c).
 *
 * The files are read back with a small reader of our own (ZIP central
 * directory, ZIP64 records, local headers, CRC-32 computed bit by bit, .npy
 * headers) and, when /usr/bin/python3 has numpy, with numpy.load itself.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "gstavattentionmeta.h"
#include "gstavtensor.h"
#include "npy.h"
#include "npzread.h"

/* ====================================================================== */
/* Reading what was written: npzread.h                                     */
/* ====================================================================== */

/* The member "<name>.npy" of an archive; FALSE when missing. */
static gboolean
zip_member (NpzFile * z, const gchar * name, NpzArray * v)
{
  const NpzArray *a = npz_find (z, name);

  if (a == NULL)
    return FALSE;
  *v = *a;
  return TRUE;
}

/* Parses a .npy file image; NULL on success, else why it is bad. */
static const gchar *
npy_parse (const guint8 * buf, gsize len, NpzArray * v)
{
  static char err[256];

  memset (v, 0, sizeof *v);
  return npz_parse_npy (v, buf, len, err, sizeof err) ? NULL : err;
}

static void
assert_shape (const NpzArray * v, const gchar * descr, guint ndim, ...)
{
  va_list ap;

  fail_unless_equals_string (v->descr, descr);
  fail_unless_equals_int (v->ndim, ndim);
  va_start (ap, ndim);
  for (guint d = 0; d < ndim; d++) {
    guint64 want = va_arg (ap, guint64);
    fail_unless (v->shape[d] == want, "dimension %u is %" G_GUINT64_FORMAT
        ", expected %" G_GUINT64_FORMAT, d, v->shape[d], want);
  }
  va_end (ap);
  fail_unless_equals_int (v->header_len % 64, 0);
}

/* ====================================================================== */
/* Helpers                                                                */
/* ====================================================================== */

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const gchar * const *) a, *(const gchar * const *) b);
}

/* Names in @dir, sorted, joined with ' ' (hidden ones too). */
static gchar *
dir_listing (const gchar * dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  const gchar *n;
  gchar *s;

  if (d == NULL)
    return g_strdup ("(no directory)");
  while ((n = g_dir_read_name (d)))
    g_ptr_array_add (names, g_strdup (n));
  g_dir_close (d);
  g_ptr_array_sort (names, compare_names);
  g_ptr_array_add (names, NULL);
  s = g_strjoinv (" ", (gchar **) names->pdata);
  g_ptr_array_free (names, TRUE);
  return s;
}

static GstElement *
make_sink (const gchar * location, GstBus ** bus)
{
  GstElement *sink = gst_element_factory_make ("avtensorsink", NULL);
  fail_unless (sink != NULL, "avtensorsink is not in the plugin");
  /* the tests of the full layout: maps=all (the default is summary) */
  gst_util_set_object_arg (G_OBJECT (sink), "maps", "all");
  g_object_set (sink, "location", location, NULL);
  if (bus) {
    *bus = gst_bus_new ();
    gst_element_set_bus (sink, *bus);
  }
  return sink;
}

static GstClockTime
frame_time (guint64 frame, gint fps_n, gint fps_d)
{
  return gst_util_uint64_scale (frame * fps_d, GST_SECOND, fps_n);
}

/* A buffer of @n frames of @size floats, value frame * 10 + k, timed as
 * frames @first.. of a stream at fps_n/fps_d. */
static GstBuffer *
make_frames (guint64 first, guint n, gsize size, gint fps_n, gint fps_d)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, n * size * 4, NULL);
  GstMapInfo map;
  gfloat *f;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  f = (gfloat *) map.data;
  for (guint i = 0; i < n; i++)
    for (gsize k = 0; k < size; k++)
      f[i * size + k] = (gfloat) ((first + i) * 10 + k);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = frame_time (first, fps_n, fps_d);
  GST_BUFFER_DURATION (buf) = frame_time (first + n, fps_n, fps_d)
      - GST_BUFFER_PTS (buf);
  return buf;
}

/* ====================================================================== */
/* Writer unit tests                                                       */
/* ====================================================================== */

GST_START_TEST (test_npy_header)
{
  gchar h[256];
  guint64 shape[3] = { 0, 2, 3 };
  gsize n;
  NpzArray v;

  /* 10 + 57 + 1 bytes, padded to 128 */
  n = gst_av_npy_header (h, sizeof h, GST_AV_NPY_FLOAT32, 1, shape);
  fail_unless_equals_int (n, 128);
  fail_unless_equals_int (h[8], 118);
  fail_unless_equals_int (h[9], 0);
  fail_unless (memcmp (h + 10, "{'descr': '<f4', 'fortran_order': False, "
          "'shape': (0,), }", 57) == 0);
  fail_unless_equals_int (h[127], '\n');
  fail_unless_equals_int (h[126], ' ');
  fail_unless_equals_int (h[67], ' ');
  fail_unless (npy_parse ((guint8 *) h, n, &v) == NULL);
  assert_shape (&v, "<f4", 1, (guint64) 0);

  n = gst_av_npy_header (h, sizeof h, GST_AV_NPY_BOOL, 3, shape);
  fail_unless_equals_int (n % 64, 0);
  fail_unless (g_strstr_len (h + 10, n - 10, "'descr': '|b1'") != NULL);
  fail_unless (g_strstr_len (h + 10, n - 10, "'shape': (0, 2, 3)") != NULL);
  fail_unless (npy_parse ((guint8 *) h, n, &v) == NULL);
  assert_shape (&v, "|b1", 3, (guint64) 0, (guint64) 2, (guint64) 3);

  /* too small an output buffer */
  fail_unless_equals_int (gst_av_npy_header (h, 32, GST_AV_NPY_INT64, 1,
          shape), 0);
}

GST_END_TEST;

/* Arrays for the writer tests: f32 [3, 2, 2], i64 [3], bool [3, 5]. */
static void
fill_writer_arrays (GstAvNpyArray ** a, const gchar * dir)
{
  guint64 s22[2] = { 2, 2 }, s5[1] = { 5 };
  GError *err = NULL;

  a[0] = gst_av_npy_array_new ("data", GST_AV_NPY_FLOAT32, dir, &err);
  a[1] = gst_av_npy_array_new ("pts", GST_AV_NPY_INT64, dir, &err);
  a[2] = gst_av_npy_array_new ("audio_mask", GST_AV_NPY_BOOL, dir, &err);
  fail_unless (a[0] && a[1] && a[2], "%s", err ? err->message : "");
  fail_unless (gst_av_npy_array_set_frame_shape (a[0], 2, s22, NULL));
  fail_unless (gst_av_npy_array_set_frame_shape (a[2], 1, s5, NULL));
  for (guint f = 0; f < 3; f++) {
    gfloat d[4] = { f, f + 0.5f, -1.0f * f, 1e-3f * f };
    gint64 p = (gint64) f * 1000000000 - 1;
    guint8 m[5] = { f & 1, 0, 1, 0, 1 };
    fail_unless (gst_av_npy_array_append (a[0], d, 1, NULL));
    fail_unless (gst_av_npy_array_append (a[1], &p, 1, NULL));
    fail_unless (gst_av_npy_array_append (a[2], m, 1, NULL));
  }
  /* the temporary files are unlinked at once */
  {
    gchar *ls = dir_listing (dir);
    fail_unless_equals_string (ls, "");
    g_free (ls);
  }
}

static void
check_writer_archive (const gchar * path, gboolean zip64)
{
  NpzFile z;
  NpzArray v;

  ASSERT_ZIP_OPEN (&z, path);
  fail_unless_equals_int (z.n_arrays, 3);
  fail_unless_equals_int (z.zip64, zip64);
  for (guint i = 0; i < 3; i++) {
    const NpzArray *e = &z.arrays[i];
    fail_unless_equals_int (e->zip64, zip64);
    fail_unless_equals_int (e->version_needed, zip64 ? 45 : 20);
  }
  fail_unless_equals_string (z.arrays[0].name,
      "data");
  fail_unless (zip_member (&z, "data", &v));
  assert_shape (&v, "<f4", 3, (guint64) 3, (guint64) 2, (guint64) 2);
  fail_unless_equals_float (npz_f32 (&v, 4 * 2 + 1), 2.5f);
  fail_unless_equals_float (npz_f32 (&v, 4 * 2 + 3), 2e-3f);
  fail_unless (zip_member (&z, "pts", &v));
  assert_shape (&v, "<i8", 1, (guint64) 3);
  fail_unless_equals_int64 (npz_i64 (&v, 0), -1);
  fail_unless_equals_int64 (npz_i64 (&v, 2), 1999999999);
  fail_unless (zip_member (&z, "audio_mask", &v));
  assert_shape (&v, "|b1", 2, (guint64) 3, (guint64) 5);
  fail_unless_equals_int (v.data[5], 1);
  fail_unless_equals_int (v.data[10], 0);
  npz_close (&z);
}

static const gchar *writer_script =
    "import sys, numpy as np\n"
    "z = np.load(sys.argv[1])\n"
    "assert z.files == ['data', 'pts', 'audio_mask'], z.files\n"
    "d = z['data']\n"
    "assert d.dtype == np.float32 and d.shape == (3, 2, 2), d.shape\n"
    "assert d[2, 0, 1] == 2.5 and d[1, 1, 0] == -1.0\n"
    "p = z['pts']\n"
    "assert p.dtype == np.int64 and list(p) == [-1, 999999999, 1999999999]\n"
    "m = z['audio_mask']\n"
    "assert m.dtype == np.bool_ and m.shape == (3, 5)\n"
    "assert m[1].tolist() == [True, False, True, False, True]\n";

/* ZIP64 cannot be reached without writing 4 GiB; the FORCE flag writes
 * the same records (local and central extras, ZIP64 end record and
 * locator) for a small archive, and both readers must accept it. */
GST_START_TEST (test_npz_writer_zip64)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *plain = g_build_filename (dir, "plain.npz", NULL);
  gchar *z64 = g_build_filename (dir, "zip64.npz", NULL);
  GstAvNpyArray *a[3];
  GError *err = NULL;

  fill_writer_arrays (a, dir);
  fail_unless (gst_av_npz_save (plain, a, 3, GST_AV_NPZ_FLAGS_NONE, &err),
      "%s", err ? err->message : "");
  fail_unless (gst_av_npz_save (z64, a, 3, GST_AV_NPZ_FORCE_ZIP64, &err),
      "%s", err ? err->message : "");
  check_writer_archive (plain, FALSE);
  check_writer_archive (z64, TRUE);
  avf_run_numpy (writer_script, plain, NULL);
  avf_run_numpy (writer_script, z64, NULL);

  /* saving twice gives the same bytes; frames appended later show up */
  {
    gchar *b1, *b2;
    gsize l1, l2;
    gfloat d[4] = { 9, 9, 9, 9 };
    gint64 p = 7;
    guint8 m[5] = { 1, 1, 1, 1, 1 };
    NpzFile z;
    NpzArray v;

    fail_unless (g_file_get_contents (plain, &b1, &l1, NULL));
    fail_unless (gst_av_npz_save (plain, a, 3, 0, NULL));
    fail_unless (g_file_get_contents (plain, &b2, &l2, NULL));
    fail_unless (l1 == l2 && memcmp (b1, b2, l1) == 0);
    g_free (b1);
    g_free (b2);
    fail_unless (gst_av_npy_array_append (a[0], d, 1, NULL));
    fail_unless (gst_av_npy_array_append (a[1], &p, 1, NULL));
    fail_unless (gst_av_npy_array_append (a[2], m, 1, NULL));
    fail_unless (gst_av_npz_save (plain, a, 3, 0, NULL));
    ASSERT_ZIP_OPEN (&z, plain);
    fail_unless (zip_member (&z, "pts", &v));
    assert_shape (&v, "<i8", 1, (guint64) 4);
    fail_unless_equals_int64 (npz_i64 (&v, 3), 7);
    npz_close (&z);
  }

  /* a destination in a missing directory: clear error, nothing left */
  {
    gchar *bad = g_build_filename (dir, "missing", "x.npz", NULL);
    fail_if (gst_av_npz_save (bad, a, 3, 0, &err));
    fail_unless (err != NULL);
    fail_unless (strstr (err->message, bad) != NULL, "%s", err->message);
    fail_unless (strstr (err->message, g_strerror (ENOENT)) != NULL, "%s",
        err->message);
    g_clear_error (&err);
    fail_if (gst_av_npy_save (bad, a[0], &err));
    fail_unless (strstr (err->message, bad) != NULL, "%s", err->message);
    g_clear_error (&err);
    g_free (bad);
  }

  for (guint i = 0; i < 3; i++)
    gst_av_npy_array_free (a[i]);
  {
    gchar *ls = dir_listing (dir);
    fail_unless_equals_string (ls, "plain.npz zip64.npz");
    g_free (ls);
  }
  g_free (plain);
  g_free (z64);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* ====================================================================== */
/* Element: .npy                                                           */
/* ====================================================================== */

GST_START_TEST (test_npy_round_trip)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "patches.npy", NULL);
  GstElement *sink = make_sink (path, NULL);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  /* frames of [2, 3]: a 2x1 grid of 3-wide embeddings */
  const guint sizes[] = { 1, 2, 3, 1 };
  guint64 frame = 0;
  gchar *bytes, *ls;
  gsize len;
  NpzArray v;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_patches (3, 2, 1, 16, 30,
          1));
  for (guint b = 0; b < G_N_ELEMENTS (sizes); b++) {
    fail_unless_equals_int (gst_harness_push (h, make_frames (frame,
                sizes[b], 6, 30, 1)), GST_FLOW_OK);
    frame += sizes[b];
  }
  /* nothing at the location before the stream ends */
  fail_if (g_file_test (path, G_FILE_TEST_EXISTS));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  fail_unless (g_file_get_contents (path, &bytes, &len, NULL));
  fail_unless (npy_parse ((guint8 *) bytes, len, &v) == NULL);
  assert_shape (&v, "<f4", 3, (guint64) 7, (guint64) 2, (guint64) 3);
  for (guint f = 0; f < 7; f++)
    for (guint k = 0; k < 6; k++)
      fail_unless_equals_float (npz_f32 (&v, f * 6 + k), f * 10.0f + k);
  g_free (bytes);

  /* the .tmp is renamed and the temporary arrays are gone */
  ls = dir_listing (dir);
  fail_unless_equals_string (ls, "patches.npy");
  g_free (ls);

  gst_harness_teardown (h);
  gst_object_unref (sink);
  ls = dir_listing (dir);
  fail_unless_equals_string (ls, "patches.npy");
  g_free (ls);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_npy_eos_without_frames)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "empty.npy", NULL);
  GstElement *sink = make_sink (path, NULL);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  gchar *bytes;
  gsize len;
  NpzArray v;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (8, 30, 1));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (g_file_get_contents (path, &bytes, &len, NULL));
  fail_unless (npy_parse ((guint8 *) bytes, len, &v) == NULL);
  assert_shape (&v, "<f4", 2, (guint64) 0, (guint64) 8);
  fail_unless_equals_int (v.numel * v.itemsize, 0);
  g_free (bytes);
  gst_harness_teardown (h);
  gst_object_unref (sink);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* ====================================================================== */
/* Element: .npz with timestamps and attention maps                        */
/* ====================================================================== */

#define ATT_WIDTH 4
#define ATT_LAYERS 2
#define ATT_T 3
#define ATT_COLS 2
#define ATT_ROWS 1
#define ATT_N (ATT_COLS * ATT_ROWS)
#define ATT_FRAMES 6

static gfloat
att_value (guint frame, guint layer, guint module, gsize i)
{
  return frame * 1000.0f + layer * 100.0f + module * 10.0f + i * 0.125f;
}

static void
module_size (guint module, guint * tq, guint * tk)
{
  *tq = (module == GST_AV_ATTENTION_MODULE_AUDIO_SELF
      || module == GST_AV_ATTENTION_MODULE_AUDIO_CROSS) ? ATT_T : ATT_N;
  *tk = (module == GST_AV_ATTENTION_MODULE_AUDIO_SELF
      || module == GST_AV_ATTENTION_MODULE_VIDEO_CROSS) ? ATT_T : ATT_N;
}

/* The visible_threshold of frame @frame's meta (the maps are far above) */
static gfloat
att_threshold (guint frame)
{
  return 0.125f * (frame + 1);
}

static GstAvAttentionMeta *
add_attention (GstBuffer * buf, guint frame, guint heads, guint T)
{
  gsize size = gst_av_attention_meta_data_size (ATT_LAYERS, heads, T, ATT_N);
  GstAvAttentionMeta *meta = gst_buffer_add_av_attention_meta (buf,
      ATT_LAYERS, heads, 2, T, ATT_COLS, ATT_ROWS,
      gst_buffer_new_allocate (NULL, size, NULL));
  guint8 *mask;

  fail_unless (meta != NULL);
  meta->visible_threshold = att_threshold (frame);
  mask = gst_av_attention_meta_get_audio_mask_writable (meta);
  /* 7: any non-zero byte means "missing"; numpy's bool must get 1 */
  for (guint t = 0; t < T; t++)
    mask[t] = (frame + t) % 2 ? 7 : 0;
  for (guint l = 0; l < ATT_LAYERS; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      gfloat *w = gst_av_attention_meta_get_weights_writable (meta, l, m);
      guint tq, tk;
      module_size (m, &tq, &tk);
      for (gsize i = 0; i < (gsize) heads * tq * tk; i++)
        w[i] = att_value (frame, l, m, i);
    }
  }
  return meta;
}

/* Which frame's meta frame @f carries (-1: none) in attention_stream(). */
static gint
att_source (guint f, gboolean first_without_meta)
{
  switch (f) {
    case 0:
      return first_without_meta ? -1 : 0;
    case 1:
      return 1;
    case 2:
      return -1;
    case 3:
    case 4:
      return 3;                 /* one buffer of two frames, one meta */
    default:
      return 5;
  }
}

static gboolean
att_skipped (guint f, guint l, guint m)
{
  return f == 1 && l == 1 && m == GST_AV_ATTENTION_MODULE_AUDIO_CROSS;
}

/* The reference stream: frames 0..5 of width 4 at 30 fps in buffers
 * {0} {1} {2} {3, 4} {5}; frame 1 has layer 1 audio_cross skipped, frame 2
 * has no meta, the last buffer has neither PTS nor duration. */
static void
attention_stream (const gchar * path, guint heads, gboolean first_without)
{
  GstElement *sink = make_sink (path, NULL);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  const guint starts[] = { 0, 1, 2, 3, 5 }, count[] = { 1, 1, 1, 2, 1 };

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (ATT_WIDTH, 30, 1));
  for (guint b = 0; b < G_N_ELEMENTS (starts); b++) {
    GstBuffer *buf = make_frames (starts[b], count[b], ATT_WIDTH, 30, 1);
    if (att_source (starts[b], first_without) >= 0) {
      GstAvAttentionMeta *meta = add_attention (buf, starts[b], heads, ATT_T);
      if (starts[b] == 1)
        gst_av_attention_meta_set_skipped (meta, 1,
            GST_AV_ATTENTION_MODULE_AUDIO_CROSS, TRUE);
    }
    if (b == G_N_ELEMENTS (starts) - 1)
      GST_BUFFER_PTS (buf) = GST_BUFFER_DURATION (buf) = GST_CLOCK_TIME_NONE;
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  gst_harness_teardown (h);
  gst_object_unref (sink);
}

static void
check_attention_file (const gchar * path, guint heads, gboolean first_without)
{
  const gchar *modules[] = { "audio_self", "video_self", "audio_cross",
    "video_cross"
  };
  NpzFile z;
  NpzArray v;

  ASSERT_ZIP_OPEN (&z, path);
  fail_unless_equals_int (z.n_arrays, 7 + 4 * ATT_LAYERS);
  fail_unless_equals_string (z.arrays[0].name,
      "data");
  fail_unless_equals_string (z.arrays[1].name,
      "pts");
  fail_unless_equals_string (z.arrays[2].name,
      "stream_time");
  fail_unless_equals_string (z.arrays[3].name,
      "duration");
  fail_unless_equals_string (z.arrays[4].name,
      "audio_mask");
  fail_unless_equals_string (z.arrays[5].name,
      "sound_visible");
  fail_unless_equals_string (z.arrays[6].name,
      "visible_threshold");
  fail_unless_equals_string (z.arrays[7].name,
      "layers.0.audio_self");

  fail_unless (zip_member (&z, "data", &v));
  assert_shape (&v, "<f4", 2, (guint64) ATT_FRAMES, (guint64) ATT_WIDTH);
  for (guint f = 0; f < ATT_FRAMES; f++)
    for (guint k = 0; k < ATT_WIDTH; k++)
      fail_unless_equals_float (npz_f32 (&v, f * ATT_WIDTH + k), f * 10.0f + k);

  /* frame f of a buffer at pts P with n frames over D: P + f/30 s and D
   * split evenly; the last buffer has neither: -1 and 1/30 s */
  fail_unless (zip_member (&z, "pts", &v));
  assert_shape (&v, "<i8", 1, (guint64) ATT_FRAMES);
  for (guint f = 0; f < 5; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f), (gint64) frame_time (f, 30, 1));
  fail_unless_equals_int64 (npz_i64 (&v, 4), 133333333);
  fail_unless_equals_int64 (npz_i64 (&v, 5), -1);
  /* the harness's segment starts at 0: the stream time is the pts */
  fail_unless (zip_member (&z, "stream_time", &v));
  assert_shape (&v, "<i8", 1, (guint64) ATT_FRAMES);
  for (guint f = 0; f < 5; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f), (gint64) frame_time (f, 30, 1));
  fail_unless_equals_int64 (npz_i64 (&v, 5), -1);
  fail_unless (zip_member (&z, "duration", &v));
  assert_shape (&v, "<i8", 1, (guint64) ATT_FRAMES);
  for (guint f = 0; f < 3; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f),
        (gint64) (frame_time (f + 1, 30, 1) - frame_time (f, 30, 1)));
  /* frames 3-4: 166666666 - 100000000 = 66666666 split 33333333 twice */
  fail_unless_equals_int64 (npz_i64 (&v, 3), 33333333);
  fail_unless_equals_int64 (npz_i64 (&v, 4), 33333333);
  fail_unless_equals_int64 (npz_i64 (&v, 5), 33333333);

  fail_unless (zip_member (&z, "audio_mask", &v));
  assert_shape (&v, "|b1", 2, (guint64) ATT_FRAMES, (guint64) ATT_T);
  for (guint f = 0; f < ATT_FRAMES; f++) {
    gint src = att_source (f, first_without);
    for (guint t = 0; t < ATT_T; t++)
      fail_unless_equals_int (v.data[f * ATT_T + t],
          src < 0 ? 1 : (src + t) % 2);
  }

  /* a visible object sounds where the meta says so: a meta with audio
   * (every frame's mask leaves slots) whose last layer's audio_cross was
   * not skipped (frame 1's was) and whose strongest patch (the maps are
   * far above 1) reaches its threshold; without a meta: False and NaN */
  fail_unless (zip_member (&z, "sound_visible", &v));
  assert_shape (&v, "|b1", 1, (guint64) ATT_FRAMES);
  for (guint f = 0; f < ATT_FRAMES; f++)
    fail_unless_equals_int (v.data[f], att_source (f, first_without) >= 0
        && !att_skipped (f, ATT_LAYERS - 1,
            GST_AV_ATTENTION_MODULE_AUDIO_CROSS));
  fail_unless (zip_member (&z, "visible_threshold", &v));
  assert_shape (&v, "<f4", 1, (guint64) ATT_FRAMES);
  for (guint f = 0; f < ATT_FRAMES; f++) {
    gint src = att_source (f, first_without);
    if (src < 0)
      fail_unless (isnan (npz_f32 (&v, f)), "frame %u", f);
    else
      fail_unless_equals_float (npz_f32 (&v, f), att_threshold (src));
  }

  for (guint l = 0; l < ATT_LAYERS; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      gchar *name = g_strdup_printf ("layers.%u.%s", l, modules[m]);
      guint tq, tk;
      gsize per;
      module_size (m, &tq, &tk);
      per = (gsize) heads * tq * tk;
      fail_unless (zip_member (&z, name, &v), "no member %s", name);
      if (heads == 1)
        assert_shape (&v, "<f4", 3, (guint64) ATT_FRAMES, (guint64) tq,
            (guint64) tk);
      else
        assert_shape (&v, "<f4", 4, (guint64) ATT_FRAMES, (guint64) heads,
            (guint64) tq, (guint64) tk);
      for (guint f = 0; f < ATT_FRAMES; f++) {
        gint src = att_source (f, first_without);
        for (gsize i = 0; i < per; i++) {
          gfloat w = npz_f32 (&v, f * per + i);
          if (src < 0 || att_skipped (f, l, m))
            fail_unless (isnan (w), "%s frame %u [%zu] = %g, expected NaN",
                name, f, i, w);
          else
            fail_unless (w == att_value (src, l, m, i),
                "%s frame %u [%zu] = %g, expected %g", name, f, i, w,
                att_value (src, l, m, i));
        }
      }
      g_free (name);
    }
  }
  npz_close (&z);
}

GST_START_TEST (test_npz_attention_mean)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "fused.npz", NULL);
  gchar *ls;

  attention_stream (path, 1, FALSE);
  check_attention_file (path, 1, FALSE);
  ls = dir_listing (dir);
  fail_unless_equals_string (ls, "fused.npz");
  g_free (ls);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* Per-head maps; the first buffer has no meta, so the maps start later
 * and the first frame is filled in as missing. */
GST_START_TEST (test_npz_attention_per_head)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "fused.npz", NULL);

  attention_stream (path, 2, TRUE);
  check_attention_file (path, 2, TRUE);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* A stream without attention metadata: data, pts, stream_time and
 * duration only. */
GST_START_TEST (test_npz_without_attention)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "mel.npz", NULL);
  GstElement *sink = make_sink (path, NULL);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  NpzFile z;
  NpzArray v;

  /* log-mel: 100 frames/s from rate 16000 and hop 160 */
  gst_harness_set_src_caps (h, gst_av_tensor_caps_log_mel (5, 16000, 160,
          400));
  for (guint b = 0; b < 4; b++)
    fail_unless_equals_int (gst_harness_push (h, make_frames (b * 3, 3, 5,
                16000, 160)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  ASSERT_ZIP_OPEN (&z, path);
  fail_unless_equals_int (z.n_arrays, 4);
  fail_unless (zip_member (&z, "data", &v));
  assert_shape (&v, "<f4", 2, (guint64) 12, (guint64) 5);
  fail_unless_equals_float (npz_f32 (&v, 11 * 5 + 4), 114.0f);
  fail_unless (zip_member (&z, "pts", &v));
  for (guint f = 0; f < 12; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f), (gint64) f * 10 * GST_MSECOND);
  fail_unless (zip_member (&z, "stream_time", &v));
  for (guint f = 0; f < 12; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f), (gint64) f * 10 * GST_MSECOND);
  fail_unless (zip_member (&z, "duration", &v));
  for (guint f = 0; f < 12; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f), 10 * GST_MSECOND);
  fail_if (zip_member (&z, "audio_mask", &v));
  npz_close (&z);

  gst_harness_teardown (h);
  gst_object_unref (sink);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* Bytes in the element's temporary arrays now: the open, deleted files in
 * @dir of this process -- "<dir>/#<inode> (deleted)" when made without a
 * name (O_TMPFILE), "<dir>/.avtensorsink-* (deleted)" where the file
 * system cannot (Linux /proc/self/fd; what stdio holds back is not
 * counted).  *@n_files gets their number. */
static guint64
temporary_bytes (const gchar * dir, guint * n_files)
{
  GDir *d = g_dir_open ("/proc/self/fd", 0, NULL);
  gchar *prefix = g_build_filename (dir, ".avtensorsink-", NULL);
  gchar *unnamed = g_build_filename (dir, "#", NULL);
  const gchar *n;
  guint64 total = 0;

  *n_files = 0;
  fail_unless (d != NULL, "no /proc/self/fd");
  while ((n = g_dir_read_name (d))) {
    gchar *fd = g_build_filename ("/proc/self/fd", n, NULL);
    gchar *target = g_file_read_link (fd, NULL);
    GStatBuf st;

    if (target && (g_str_has_prefix (target, prefix)
            || g_str_has_prefix (target, unnamed))
        && g_str_has_suffix (target, " (deleted)") && g_stat (fd, &st) == 0) {
      total += (guint64) st.st_size;
      (*n_files)++;
    }
    g_free (target);
    g_free (fd);
  }
  g_dir_close (d);
  g_free (unnamed);
  g_free (prefix);
  return total;
}

/* Each map is stored once while the stream runs: NaN maps of the frames
 * before the first meta take no room, nor do the copies of a meta on a
 * buffer of many frames; the temporary files hold no more than the frames,
 * their times and the maps received.  The final file still spells every
 * frame out ([frames, Tq, Tk] per map, interface.md). */
GST_START_TEST (test_maps_stored_once)
{
  const guint n = 3000;         /* frames per buffer */
  const guint64 frames = 2 * n + 1;
  const gsize map_bytes = gst_av_attention_meta_data_size (ATT_LAYERS, 1,
      ATT_T, ATT_N);
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "many.npz", NULL);
  GstElement *sink = make_sink (path, NULL);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  GstBuffer *buf;
  guint64 stored, received;
  guint n_files;
  NpzFile z;
  NpzArray v;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (ATT_WIDTH, 30, 1));
  /* n frames without a meta, n frames with one meta, one frame with one */
  fail_unless_equals_int (gst_harness_push (h, make_frames (0, n, ATT_WIDTH,
              30, 1)), GST_FLOW_OK);
  buf = make_frames (n, n, ATT_WIDTH, 30, 1);
  add_attention (buf, n, 1, ATT_T);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  buf = make_frames (2 * n, 1, ATT_WIDTH, 30, 1);
  add_attention (buf, 2 * n, 1, ATT_T);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);

  /* data, pts, stream time and duration of every frame; two metas (their
   * maps, masks, visibility and threshold) */
  received = frames * (ATT_WIDTH * sizeof (gfloat) + 3 * sizeof (gint64))
      + 2 * (map_bytes + ATT_T + 1 + sizeof (gfloat));
  stored = temporary_bytes (dir, &n_files);
  fail_unless_equals_int (n_files, 7 + 4 * ATT_LAYERS);
  fail_unless (stored <= received, "%" G_GUINT64_FORMAT " bytes stored for %"
      G_GUINT64_FORMAT " received (the maps spelled out: %" G_GUINT64_FORMAT
      ")", stored, received, frames * map_bytes);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  ASSERT_ZIP_OPEN (&z, path);
  fail_unless (zip_member (&z, "data", &v));
  assert_shape (&v, "<f4", 2, frames, (guint64) ATT_WIDTH);
  fail_unless (zip_member (&z, "audio_mask", &v));
  assert_shape (&v, "|b1", 2, frames, (guint64) ATT_T);
  for (guint64 f = 0; f < frames; f++)
    for (guint t = 0; t < ATT_T; t++)
      fail_unless_equals_int (v.data[f * ATT_T + t], f < n ? 1
          : (f < 2 * n ? (n + t) % 2 : (2 * n + t) % 2));
  fail_unless (zip_member (&z, "visible_threshold", &v));
  for (guint64 f = 0; f < frames; f++)
    if (f < n)
      fail_unless (isnan (npz_f32 (&v, f)));
    else
      fail_unless_equals_float (npz_f32 (&v, f), att_threshold (f < 2 * n ? n
              : 2 * n));
  fail_unless (zip_member (&z, "layers.1.video_self", &v));
  assert_shape (&v, "<f4", 3, frames, (guint64) ATT_N, (guint64) ATT_N);
  for (guint64 f = 0; f < frames; f++) {
    for (gsize i = 0; i < ATT_N * ATT_N; i++) {
      gfloat w = npz_f32 (&v, f * ATT_N * ATT_N + i);
      if (f < n)
        fail_unless (isnan (w), "frame %" G_GUINT64_FORMAT, f);
      else
        fail_unless (w == att_value (f < 2 * n ? n : 2 * n, 1,
                GST_AV_ATTENTION_MODULE_VIDEO_SELF, i), "frame %"
            G_GUINT64_FORMAT " [%zu] = %g", f, i, w);
    }
  }
  npz_close (&z);

  gst_harness_teardown (h);
  gst_object_unref (sink);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

static const gchar *attention_script =
    "import sys, numpy as np\n"
    "z = np.load(sys.argv[1])\n"
    "heads = int(sys.argv[2])\n"
    "mods = ['audio_self', 'video_self', 'audio_cross', 'video_cross']\n"
    "want = ['data', 'pts', 'stream_time', 'duration', 'audio_mask',\n"
    "    'sound_visible', 'visible_threshold'] + \\\n"
    "    ['layers.%d.%s' % (l, m) for l in range(2) for m in mods]\n"
    "assert z.files == want, z.files\n"
    "d = z['data']\n"
    "assert d.dtype == np.float32 and d.shape == (6, 4), d.shape\n"
    "assert (d == np.arange(6)[:, None] * 10 + np.arange(4)).all()\n"
    "p = z['pts']\n"
    "assert p.dtype == np.int64\n"
    "assert p.tolist() == [0, 33333333, 66666666, 100000000, 133333333, -1]\n"
    "assert z['stream_time'].tolist() == p.tolist(), z['stream_time']\n"
    "assert z['duration'].tolist() == [33333333, 33333333, 33333334,\n"
    "    33333333, 33333333, 33333333], z['duration']\n"
    "m = z['audio_mask']\n"
    "assert m.dtype == np.bool_ and m.shape == (6, 3)\n"
    "assert m[1].tolist() == [True, False, True] and m[2].all()\n"
    "sv = z['sound_visible']\n"
    "assert sv.dtype == np.bool_ and sv.shape == (6,)\n"
    "assert sv.tolist() == [True, False, False, True, True, True], sv\n"
    "th = z['visible_threshold']\n"
    "assert th.dtype == np.float32 and th.shape == (6,)\n"
    "assert np.isnan(th[2]) and th[4] == 0.5 and th[5] == 0.75, th\n"
    "T, N = 3, 2\n"
    "dims = {'audio_self': (T, T), 'video_self': (N, N),\n"
    "        'audio_cross': (T, N), 'video_cross': (N, T)}\n"
    "for l in range(2):\n"
    "    for i, mod in enumerate(mods):\n"
    "        a = z['layers.%d.%s' % (l, mod)]\n"
    "        hs = () if heads == 1 else (heads,)\n"
    "        assert a.dtype == np.float32 and a.shape == (6,) + hs + dims[mod]\n"
    "        assert np.isnan(a[2]).all()\n"
    "        assert np.isnan(a[1]).all() == (l == 1 and mod == 'audio_cross')\n"
    "        v = a[4].ravel()\n"
    "        assert (v == 3000 + l * 100 + i * 10 + np.arange(v.size) / 8).all()\n";

GST_START_TEST (test_numpy_load)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *mean = g_build_filename (dir, "mean.npz", NULL);
  gchar *per = g_build_filename (dir, "per.npz", NULL);
  gchar *npy = g_build_filename (dir, "data.npy", NULL);

  if (!avf_have_numpy ()) {
    g_print ("numpy.load check skipped: /usr/bin/python3 has no numpy\n");
  } else {
    GstElement *sink = make_sink (npy, NULL);
    GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);

    attention_stream (mean, 1, FALSE);
    attention_stream (per, 2, FALSE);
    avf_run_numpy (attention_script, mean, "1");
    avf_run_numpy (attention_script, per, "2");

    gst_harness_set_src_caps (h, gst_av_tensor_caps_patches (3, 2, 2, 16,
            25, 1));
    fail_unless_equals_int (gst_harness_push (h, make_frames (0, 5, 12, 25,
                1)), GST_FLOW_OK);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    gst_harness_teardown (h);
    gst_object_unref (sink);
    avf_run_numpy ("import sys, numpy as np\n"
        "d = np.load(sys.argv[1])\n"
        "assert d.dtype == np.float32 and d.shape == (5, 4, 3), d.shape\n"
        "assert (d.reshape(5, 12) == np.arange(5)[:, None] * 10 + "
        "np.arange(12)).all()\n", npy, NULL);
  }
  g_free (mean);
  g_free (per);
  g_free (npy);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* ====================================================================== */
/* Element: errors                                                         */
/* ====================================================================== */

/* Starts a sink at @location; returns the error text and code. */
static gchar *
start_error (const gchar * location, GQuark * domain, gint * code)
{
  GstBus *bus;
  GstElement *sink = make_sink (location, &bus);
  gchar *text;

  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  text = avf_pop_error (bus, 0, FALSE, domain, code);
  fail_unless (text != NULL, "no error for location %s", location);
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  return text;
}

GST_START_TEST (test_bad_location)
{
  const gchar *path = "/nonexistent-avtensorsink-dir/out.npz";
  GQuark domain;
  gint code;
  gchar *text = start_error (path, &domain, &code);

  fail_unless (domain == GST_RESOURCE_ERROR);
  fail_unless_equals_int (code, GST_RESOURCE_ERROR_OPEN_WRITE);
  fail_unless (strstr (text, path) != NULL, "%s", text);
  fail_unless (strstr (text, "/nonexistent-avtensorsink-dir") != NULL);
  fail_unless (strstr (text, g_strerror (ENOENT)) != NULL, "%s", text);
  g_free (text);
}

GST_END_TEST;

GST_START_TEST (test_unknown_extension)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "out.txt", NULL);
  GQuark domain;
  gint code;
  gchar *text = start_error (path, &domain, &code), *ls;

  fail_unless (domain == GST_RESOURCE_ERROR);
  fail_unless_equals_int (code, GST_RESOURCE_ERROR_SETTINGS);
  fail_unless (strstr (text, path) != NULL, "%s", text);
  fail_unless (strstr (text, ".npy") && strstr (text, ".npz"), "%s", text);
  g_free (text);

  text = start_error ("", &domain, &code);
  fail_unless_equals_int (code, GST_RESOURCE_ERROR_NOT_FOUND);
  fail_unless (strstr (text, "location") != NULL, "%s", text);
  g_free (text);

  /* nothing was created */
  ls = dir_listing (dir);
  fail_unless_equals_string (ls, "");
  g_free (ls);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_bad_buffer_size)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "x.npy", NULL);
  GstBus *bus;
  GstElement *sink = make_sink (path, &bus);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  gchar *text, *bytes;
  gsize len;
  NpzArray v;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (4, 30, 1));
  fail_unless_equals_int (gst_harness_push (h, make_frames (0, 2, 4, 30, 1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_allocate (NULL, 10, NULL)), GST_FLOW_ERROR);
  text = avf_pop_error (bus, 0, FALSE, NULL, NULL);
  fail_unless (text != NULL);
  fail_unless (strstr (text, "10 bytes") && strstr (text, "16 bytes")
      && strstr (text, "[4]"), "%s", text);
  g_free (text);

  /* stopping keeps the two frames received before the error */
  gst_harness_teardown (h);
  fail_unless (g_file_get_contents (path, &bytes, &len, NULL));
  fail_unless (npy_parse ((guint8 *) bytes, len, &v) == NULL);
  assert_shape (&v, "<f4", 2, (guint64) 2, (guint64) 4);
  g_free (bytes);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_caps_change)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "x.npz", NULL);
  GstBus *bus;
  GstElement *sink = make_sink (path, &bus);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  GstCaps *caps;
  gchar *text;
  NpzFile z;
  NpzArray v;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (4, 30, 1));
  fail_unless_equals_int (gst_harness_push (h, make_frames (0, 2, 4, 30, 1)),
      GST_FLOW_OK);
  /* a frame rate change is fine: later frames use the new one */
  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (4, 25, 1));
  {
    GstBuffer *buf = make_frames (0, 2, 4, 25, 1);
    GST_BUFFER_PTS (buf) = GST_SECOND;
    GST_BUFFER_DURATION (buf) = GST_CLOCK_TIME_NONE;
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless (avf_pop_error (bus, 0, FALSE, NULL, NULL) == NULL);

  /* a shape change is not: the caps are refused, and so is the data */
  caps = gst_av_tensor_caps_fused (5, 25, 1);
  gst_harness_push_event (h, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  text = avf_pop_error (bus, 0, FALSE, NULL, NULL);
  fail_unless (text != NULL);
  fail_unless (strstr (text, "[4]") && strstr (text, "[5]")
      && strstr (text, path), "%s", text);
  g_free (text);
  fail_if (gst_harness_push (h, make_frames (4, 1, 5, 25, 1)) == GST_FLOW_OK);
  gst_harness_teardown (h);

  /* the file holds the four frames of the first shape */
  ASSERT_ZIP_OPEN (&z, path);
  fail_unless (zip_member (&z, "data", &v));
  assert_shape (&v, "<f4", 2, (guint64) 4, (guint64) 4);
  fail_unless (zip_member (&z, "pts", &v));
  fail_unless_equals_int64 (npz_i64 (&v, 1), 33333333);
  fail_unless_equals_int64 (npz_i64 (&v, 2), GST_SECOND);
  fail_unless_equals_int64 (npz_i64 (&v, 3), GST_SECOND + 40 * GST_MSECOND);
  fail_unless (zip_member (&z, "duration", &v));
  fail_unless_equals_int64 (npz_i64 (&v, 3), 40 * GST_MSECOND);
  npz_close (&z);

  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_attention_size_change)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "x.npz", NULL);
  GstBus *bus;
  GstElement *sink = make_sink (path, &bus);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  GstBuffer *buf;
  gchar *text;
  NpzFile z;
  NpzArray v;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (4, 30, 1));
  buf = make_frames (0, 1, 4, 30, 1);
  add_attention (buf, 0, 1, ATT_T);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  buf = make_frames (1, 1, 4, 30, 1);
  add_attention (buf, 1, 1, ATT_T + 1);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_ERROR);
  text = avf_pop_error (bus, 0, FALSE, NULL, NULL);
  fail_unless (text != NULL);
  fail_unless (strstr (text, "4 audio slots") && strstr (text, "changed"),
      "%s", text);
  g_free (text);
  gst_harness_teardown (h);

  /* every array holds the one good frame */
  ASSERT_ZIP_OPEN (&z, path);
  for (guint i = 0; i < z.n_arrays; i++) {
    const NpzArray *e = &z.arrays[i];
    gchar *name = g_strdup (e->name);
    fail_unless (zip_member (&z, name, &v));
    fail_unless (v.shape[0] == 1, "%s has %" G_GUINT64_FORMAT " frames",
        name, v.shape[0]);
    g_free (name);
  }
  npz_close (&z);

  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* The directory disappears before EOS: the final write fails with a
 * clear error naming the file, and nothing is left at the location. */
GST_START_TEST (test_write_failure)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "x.npz", NULL);
  GstBus *bus;
  GstElement *sink = make_sink (path, &bus);
  GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
  GQuark domain;
  gint code;
  gchar *text;

  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (4, 30, 1));
  fail_unless_equals_int (gst_harness_push (h, make_frames (0, 3, 4, 30, 1)),
      GST_FLOW_OK);
  /* the temporary arrays are unlinked already: the directory is empty */
  fail_unless_equals_int (g_rmdir (dir), 0);
  fail_if (gst_harness_push_event (h, gst_event_new_eos ()));
  text = avf_pop_error (bus, 0, FALSE, &domain, &code);
  fail_unless (text != NULL);
  fail_unless (domain == GST_RESOURCE_ERROR);
  fail_unless_equals_int (code, GST_RESOURCE_ERROR_WRITE);
  fail_unless (strstr (text, path) && strstr (text, g_strerror (ENOENT)),
      "%s", text);
  g_free (text);
  /* no second error at stop */
  gst_harness_teardown (h);
  fail_unless (avf_pop_error (bus, 0, FALSE, NULL, NULL) == NULL);
  fail_if (g_file_test (dir, G_FILE_TEST_EXISTS));

  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  g_free (path);
  g_free (dir);
}

GST_END_TEST;

/* Files of at most @bytes for this process from now (RLIMIT_FSIZE, with
 * SIGXFSZ ignored: a write past the limit fails with EFBIG, as on a full
 * disk), until file_limit_clear(). */
typedef struct
{
  struct rlimit old;
  struct sigaction old_action;
} FileLimit;

static void
file_limit_set (FileLimit * l, guint64 bytes)
{
  struct sigaction ignore;
  struct rlimit r;

  memset (&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  fail_unless (sigaction (SIGXFSZ, &ignore, &l->old_action) == 0);
  fail_unless (getrlimit (RLIMIT_FSIZE, &l->old) == 0);
  r = l->old;
  r.rlim_cur = (rlim_t) bytes;
  fail_unless (r.rlim_max == RLIM_INFINITY || r.rlim_max >= r.rlim_cur);
  fail_unless (setrlimit (RLIMIT_FSIZE, &r) == 0);
}

static void
file_limit_clear (FileLimit * l)
{
  setrlimit (RLIMIT_FSIZE, &l->old);
  sigaction (SIGXFSZ, &l->old_action, NULL);
}

/* No space: a file size limit hit while the stream runs (the temporary
 * arrays) or at end-of-stream (the final file), for .npz and .npy.  The
 * error is RESOURCE/NO_SPACE_LEFT naming the location, the file that was
 * at the location before stays as it was, and nothing else is left in the
 * folder. */
GST_START_TEST (test_no_space)
{
  const gchar *names[] = { "x.npz", "x.npy" };
  const guint width = 64, frames = 50;
  const guint64 data_bytes = (guint64) frames * width * sizeof (gfloat);
  static const gchar previous[] = "the file of a previous run";

  for (guint c = 0; c < 4; c++) {
    const gboolean at_eos = c % 2 == 0;
    gchar *dir = avf_tmp_dir_new ("avtensorsink");
    gchar *path = g_build_filename (dir, names[c / 2], NULL);
    GstBus *bus;
    GstElement *sink = make_sink (path, &bus);
    GstHarness *h = gst_harness_new_with_element (sink, "sink", NULL);
    GstFlowReturn last = GST_FLOW_OK;
    gboolean eos_ok;
    FileLimit limit;
    GQuark domain;
    gint code;
    gchar *text, *ls, *contents = NULL;

    fail_unless (g_file_set_contents (path, previous, -1, NULL));
    gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (width, 30, 1));
    /* the stream fits; the final file (headers and, for .npz, the times
     * too) does not */
    if (at_eos) {
      for (guint f = 0; f < frames; f++)
        fail_unless_equals_int (gst_harness_push (h, make_frames (f, 1,
                    width, 30, 1)), GST_FLOW_OK);
      file_limit_set (&limit, data_bytes + 64);
    } else {
      /* the stream does not fit either */
      file_limit_set (&limit, data_bytes / 4);
      for (guint f = 0; f < frames && last == GST_FLOW_OK; f++)
        last = gst_harness_push (h, make_frames (f, 1, width, 30, 1));
    }
    eos_ok = gst_harness_push_event (h, gst_event_new_eos ());
    file_limit_clear (&limit);

    fail_unless_equals_int (last, at_eos ? GST_FLOW_OK : GST_FLOW_ERROR);
    fail_if (eos_ok);
    text = avf_pop_error (bus, 0, FALSE, &domain, &code);
    fail_unless (text != NULL, "%s: no error", names[c / 2]);
    fail_unless (domain == GST_RESOURCE_ERROR && code ==
        GST_RESOURCE_ERROR_NO_SPACE_LEFT, "%s: not NO_SPACE_LEFT: %s",
        names[c / 2], text);
    fail_unless (strstr (text, path) != NULL, "%s", text);
    g_free (text);
    gst_harness_teardown (h);
    /* one error, none at stop */
    fail_unless (avf_pop_error (bus, 0, FALSE, NULL, NULL) == NULL);

    fail_unless (g_file_get_contents (path, &contents, NULL, NULL));
    fail_unless_equals_string (contents, previous);
    ls = dir_listing (dir);
    fail_unless_equals_string (ls, names[c / 2]);
    g_free (ls);
    g_free (contents);
    gst_element_set_bus (sink, NULL);
    gst_object_unref (bus);
    gst_object_unref (sink);
    g_free (path);
    avf_tmp_dir_free (dir);
  }
}

GST_END_TEST;

/* ====================================================================== */
/* Element in pipelines                                                    */
/* ====================================================================== */

static GstElement *
appsrc_pipeline (const gchar * location, GstElement ** src,
    GstElement ** sink)
{
  GstCaps *caps = gst_av_tensor_caps_fused (4, 30, 1);
  gchar *cs = gst_caps_to_string (caps);
  gchar *desc = g_strdup_printf ("appsrc name=src format=time caps=\"%s\" ! "
      "avtensorsink name=sink location=\"%s\"", cs, location);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);

  fail_unless (p != NULL && err == NULL, "%s", err ? err->message : "");
  *src = gst_bin_get_by_name (GST_BIN (p), "src");
  *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  gst_caps_unref (caps);
  g_free (cs);
  g_free (desc);
  return p;
}

static void
push_appsrc (GstElement * src, guint64 start, guint n)
{
  for (guint i = 0; i < n; i++) {
    GstFlowReturn ret;
    GstBuffer *buf = make_frames (start + i, 1, 4, 30, 1);
    g_signal_emit_by_name (src, "push-buffer", buf, &ret);
    gst_buffer_unref (buf);
    fail_unless_equals_int (ret, GST_FLOW_OK);
  }
}

static guint64
rendered (GstElement * sink)
{
  GstStructure *stats;
  guint64 n = 0;

  g_object_get (sink, "stats", &stats, NULL);
  gst_structure_get_uint64 (stats, "rendered", &n);
  gst_structure_free (stats);
  return n;
}

static guint64
npz_frames (const gchar * path)
{
  NpzFile z;
  NpzArray v;
  guint64 n;

  ASSERT_ZIP_OPEN (&z, path);
  fail_unless (zip_member (&z, "data", &v));
  n = v.shape[0];
  for (guint64 f = 0; f < n; f++)
    fail_unless_equals_float (npz_f32 (&v, f * 4 + 1), f * 10.0f + 1);
  fail_unless (zip_member (&z, "pts", &v));
  for (guint64 f = 0; f < n; f++)
    fail_unless_equals_int64 (npz_i64 (&v, f), (gint64) frame_time (f, 30, 1));
  npz_close (&z);
  return n;
}

/* Stopping without EOS writes what was received, completely. */
GST_START_TEST (test_stop_without_eos)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "live.npz", NULL);
  GstElement *src, *sink;
  GstElement *p = appsrc_pipeline (path, &src, &sink);
  gchar *ls;

  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  push_appsrc (src, 0, 7);
  for (guint i = 0; i < 1000 && rendered (sink) < 7; i++)
    g_usleep (10000);
  fail_unless_equals_uint64 (rendered (sink), 7);
  fail_if (g_file_test (path, G_FILE_TEST_EXISTS));
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);

  fail_unless_equals_uint64 (npz_frames (path), 7);
  ls = dir_listing (dir);
  fail_unless_equals_string (ls, "live.npz");
  g_free (ls);

  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* Run to EOS, back to NULL, run again: the same bytes; state cycles
 * without data write nothing. */
GST_START_TEST (test_rerun_and_state_cycles)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "run.npz", NULL);
  GstElement *src, *sink;
  GstElement *p = appsrc_pipeline (path, &src, &sink);
  gchar *run0 = NULL, *bytes, *ls;
  gsize run0_len = 0, len;

  for (guint run = 0; run < 2; run++) {
    GstFlowReturn ret;
    fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
        != GST_STATE_CHANGE_FAILURE);
    push_appsrc (src, 0, 5);
    g_signal_emit_by_name (src, "end-of-stream", &ret);
    avf_wait_eos (GST_ELEMENT_BUS (p), 30 * GST_SECOND, FALSE, "the pipeline");
    /* complete when EOS reaches the bus */
    fail_unless_equals_uint64 (npz_frames (path), 5);
    fail_unless (g_file_get_contents (path, &bytes, &len, NULL));
    gst_element_set_state (p, GST_STATE_NULL);
    if (run == 0) {
      run0 = bytes;
      run0_len = len;
    } else {
      fail_unless (len == run0_len && memcmp (bytes, run0, len) == 0);
      g_free (bytes);
    }
  }
  g_free (run0);
  g_unlink (path);

  for (guint i = 0; i < 40; i++) {
    fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
        != GST_STATE_CHANGE_FAILURE);
    fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
        GST_STATE_CHANGE_SUCCESS);
  }
  ls = dir_listing (dir);
  fail_unless_equals_string (ls, "");
  g_free (ls);

  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_location_while_playing)
{
  gchar *dir = avf_tmp_dir_new ("avtensorsink");
  gchar *path = g_build_filename (dir, "a.npz", NULL);
  gchar *other = g_build_filename (dir, "b.npz", NULL);
  GstElement *src, *sink;
  GstElement *p = appsrc_pipeline (path, &src, &sink);
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg;
  gchar *loc;

  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  push_appsrc (src, 0, 2);
  fail_unless (gst_element_get_state (p, NULL, NULL, 10 * GST_SECOND)
      == GST_STATE_CHANGE_SUCCESS);
  g_object_set (sink, "location", other, NULL);
  g_object_get (sink, "location", &loc, NULL);
  fail_unless_equals_string (loc, path);
  g_free (loc);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL);
  gst_message_unref (msg);
  /* both frames written before the stop (appsrc pushes from its own
   * thread; stopping first would race with the second frame) */
  for (gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
      rendered (sink) < 2 && g_get_monotonic_time () < until;)
    g_usleep (1000);
  gst_element_set_state (p, GST_STATE_NULL);
  fail_unless_equals_uint64 (npz_frames (path), 2);
  fail_if (g_file_test (other, G_FILE_TEST_EXISTS));

  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (path);
  g_free (other);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* audiotestsrc ! audioconvert ! avspectrogram ! avtensorsink, when the
 * plugin has avspectrogram. */
GST_START_TEST (test_spectrogram_pipeline)
{
  GstElementFactory *f = gst_element_factory_find ("avspectrogram");
  gchar *dir, *path, *desc, *bytes;
  GstElement *p, *spec;
  gint n_fft = 0, hop = 0, n_mels = 0;
  gsize len;
  NpzArray v;

  if (f == NULL) {
    g_print ("spectrogram pipeline skipped: the plugin has no "
        "avspectrogram yet\n");
    return;
  }
  gst_object_unref (f);
  dir = avf_tmp_dir_new ("avtensorsink");
  path = g_build_filename (dir, "mel.npy", NULL);
  desc = g_strdup_printf ("audiotestsrc num-buffers=50 samplesperbuffer=1024 "
      "! audioconvert ! avspectrogram name=spec ! avtensorsink "
      "location=\"%s\"", path);
  p = gst_parse_launch (desc, NULL);
  fail_unless (p != NULL);
  spec = gst_bin_get_by_name (GST_BIN (p), "spec");
  g_object_get (spec, "n-fft", &n_fft, "hop-length", &hop, "n-mels",
      &n_mels, NULL);
  gst_object_unref (spec);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  avf_wait_eos (GST_ELEMENT_BUS (p), 30 * GST_SECOND, FALSE, "the pipeline");
  gst_element_set_state (p, GST_STATE_NULL);

  fail_unless (g_file_get_contents (path, &bytes, &len, NULL));
  fail_unless (npy_parse ((guint8 *) bytes, len, &v) == NULL);
  /* spec 1: frame t covers [t*hop, t*hop + n_fft); trailing samples drop */
  assert_shape (&v, "<f4", 2, (guint64) ((50 * 1024 - n_fft) / hop + 1),
      (guint64) n_mels);
  for (guint64 i = 0; i < v.numel; i++)
    fail_unless (isfinite (npz_f32 (&v, i)));
  g_free (bytes);
  gst_object_unref (p);
  g_free (desc);
  g_free (path);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

static gboolean
have_elements (void)
{
  static const gchar *const needed[] = { "avspectrogram", "avpatchembed",
    "avattention", NULL
  };

  return avf_have_elements ("the visible pipeline", needed);
}

/* A real pipeline into avtensorsink .npz with the small weights carrying
 * visible_threshold @threshold; checks sound_visible and
 * visible_threshold against the maps of the same file (the last layer's
 * audio_cross summed over the unmasked slots, as
 * gst_av_attention_meta_get_strongest_patch does) and returns how many
 * frames have a visible sounding object, *with_audio how many have audio. */
static guint
visible_pipeline (const gchar * dir, gfloat threshold, guint * with_audio)
{
  gchar *small = g_build_filename (g_getenv ("AVF_FIXTURE_DIR") ?
      g_getenv ("AVF_FIXTURE_DIR") : "tests/fixtures",
      "weights_small.safetensors", NULL);
  gchar *weights = g_build_filename (dir, "w.safetensors", NULL);
  gchar *path = g_build_filename (dir, "v.npz", NULL);
  gchar *desc;
  GstElement *p;
  NpzFile z;
  NpzArray vis, thr, mask, map;
  guint frames, T, N, visible = 0;

  avf_weights_copy_with_threshold (small, weights, threshold);
  desc = g_strdup_printf ("videotestsrc num-buffers=15 pattern=ball ! "
      "video/x-raw,width=320,height=240,framerate=30/1 ! videoconvert ! "
      "videoscale ! avpatchembed weights=\"%s\" ! att.video_sink "
      "audiotestsrc num-buffers=20 freq=880 ! audioconvert ! audioresample "
      "! avspectrogram n-mels=40 ! att.audio_sink "
      "avattention name=att weights=\"%s\" window=370000000 ! avtensorsink maps=all "
      "location=\"%s\"", weights, weights, path);
  p = gst_parse_launch (desc, NULL);
  fail_unless (p != NULL, "%s", desc);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  avf_wait_eos (GST_ELEMENT_BUS (p), 30 * GST_SECOND, FALSE, "the pipeline");
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);

  ASSERT_ZIP_OPEN (&z, path);
  fail_unless (zip_member (&z, "sound_visible", &vis));
  fail_unless (zip_member (&z, "visible_threshold", &thr));
  fail_unless (zip_member (&z, "audio_mask", &mask));
  /* the small weights have 2 layers: the last one judges */
  fail_unless (zip_member (&z, "layers.1.audio_cross", &map));
  frames = (guint) vis.shape[0];
  fail_unless_equals_int (frames, 15);
  assert_shape (&vis, "|b1", 1, (guint64) frames);
  assert_shape (&thr, "<f4", 1, (guint64) frames);
  T = (guint) mask.shape[1];
  N = (guint) map.shape[2];
  assert_shape (&map, "<f4", 3, (guint64) frames, (guint64) T, (guint64) N);
  *with_audio = 0;
  for (guint f = 0; f < frames; f++) {
    gdouble best = -1.0;
    guint used = 0;
    gboolean expect;

    for (guint t = 0; t < T; t++)
      used += !mask.data[f * T + t];
    for (guint n = 0; n < N; n++) {
      gdouble s = 0.0;
      for (guint t = 0; t < T; t++)
        if (!mask.data[f * T + t])
          s += npz_f32 (&map, ((guint64) f * T + t) * N + n);
      best = MAX (best, s);
    }
    expect = used > 0 && (gfloat) (best / used) >= threshold;
    *with_audio += used > 0;
    fail_unless_equals_int (vis.data[f], expect);
    fail_unless_equals_float (npz_f32 (&thr, f), threshold);
    visible += vis.data[f];
  }
  npz_close (&z);
  g_unlink (weights);
  g_unlink (path);
  g_free (desc);
  g_free (path);
  g_free (weights);
  g_free (small);
  return visible;
}

/* sound_visible through real pipelines: with a threshold no patch of the
 * small model's 4 x 3 grid reaches (1) no frame; with a tiny one every
 * frame with audio; each frame as its own maps say. */
GST_START_TEST (test_visible_pipeline)
{
  gchar *dir;
  guint with_audio = 0, visible;

  if (!have_elements ())
    return;
  dir = avf_tmp_dir_new ("avtensorsink");
  visible = visible_pipeline (dir, 1.0f, &with_audio);
  fail_unless_equals_int (visible, 0);
  fail_unless (with_audio >= 10, "only %u frames with audio", with_audio);
  visible = visible_pipeline (dir, 1e-6f, &with_audio);
  fail_unless_equals_int (visible, with_audio);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

static Suite *
avtensorsink_suite (void)
{
  Suite *s = suite_create ("avtensorsink");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_npy_header);
  tcase_add_test (tc, test_npz_writer_zip64);
  tcase_add_test (tc, test_npy_round_trip);
  tcase_add_test (tc, test_npy_eos_without_frames);
  tcase_add_test (tc, test_npz_attention_mean);
  tcase_add_test (tc, test_visible_pipeline);
  tcase_add_test (tc, test_npz_attention_per_head);
  tcase_add_test (tc, test_npz_without_attention);
  tcase_add_test (tc, test_maps_stored_once);
  tcase_add_test (tc, test_numpy_load);
  tcase_add_test (tc, test_bad_location);
  tcase_add_test (tc, test_unknown_extension);
  tcase_add_test (tc, test_bad_buffer_size);
  tcase_add_test (tc, test_caps_change);
  tcase_add_test (tc, test_attention_size_change);
  tcase_add_test (tc, test_write_failure);
  tcase_add_test (tc, test_no_space);
  tcase_add_test (tc, test_stop_without_eos);
  tcase_add_test (tc, test_rerun_and_state_cycles);
  tcase_add_test (tc, test_location_while_playing);
  tcase_add_test (tc, test_spectrogram_pipeline);
  return s;
}

AVF_CHECK_MAIN (avtensorsink);
