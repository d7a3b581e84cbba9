/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tests of avtensorsink's compact and rolling files (issue 20): the
 * summary of the attention maps (maps=summary, the default, and none)
 * against the full layout (maps=all) of the same stream, float16 maps,
 * deflated members (read back with numpy.load), rolling files by time and
 * by bytes with their "file-closed" messages, a gst-launch-1.0 recording
 * killed with SIGKILL in the middle, and bad settings, a file size limit
 * and (where this process may mount a tmpfs) a full disk.
 *
 * The files are read back with tools/npzread.h and, when
 * /usr/bin/python3 has numpy, with numpy.load.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "gstavattentionmeta.h"
#include "gstavtensor.h"
#include "npzread.h"

/* The synthetic stream: 2 layers, 2 heads stored, T 6 slots, a 4 x 3
 * grid, 8 floats of data per frame at 30 fps. */
#define L 2
#define HEADS 2
#define T 6
#define COLS 4
#define ROWS 3
#define N (COLS * ROWS)
#define WIDTH 8
#define FPS 30

static gboolean
quick (void)
{
  return g_getenv ("AVF_TEST_QUICK") != NULL
      || g_getenv ("AVF_UNDER_VALGRIND") != NULL;
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar * const *) a, *(const gchar * const *) b);
}

/* The names in @dir, sorted, hidden ones too. */
static GPtrArray *
list_dir (const gchar * dir)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;

  fail_unless (d != NULL);
  while ((name = g_dir_read_name (d)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  g_dir_close (d);
  g_ptr_array_sort (names, compare_names);
  return names;
}

static gchar *
listing (const gchar * dir)
{
  GPtrArray *names = list_dir (dir);
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < names->len; i++)
    g_string_append_printf (s, "%s%s", i ? " " : "",
        (const gchar *) names->pdata[i]);
  g_ptr_array_unref (names);
  return g_string_free (s, FALSE);
}

static gboolean
member (NpzFile * z, const gchar * name, NpzArray * v)
{
  const NpzArray *a = npz_find (z, name);
  if (a == NULL)
    return FALSE;
  *v = *a;
  return TRUE;
}

static NpzArray
need (NpzFile * z, const gchar * name)
{
  NpzArray v;
  fail_unless (member (z, name, &v), "no member %s", name);
  return v;
}

static GstClockTime
frame_time (guint64 f)
{
  return gst_util_uint64_scale (f, GST_SECOND, FPS);
}

/* @n frames from @from: frame f holds f * 10 + k. */
static GstBuffer *
make_frames (guint64 from, guint n)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, n * WIDTH * 4, NULL);
  GstMapInfo map;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (guint i = 0; i < n; i++)
    for (guint k = 0; k < WIDTH; k++)
      ((gfloat *) map.data)[i * WIDTH + k] = (gfloat) ((from + i) * 10 + k);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = frame_time (from);
  GST_BUFFER_DURATION (buf) = frame_time (from + n) - frame_time (from);
  return buf;
}

/* A value in (0, 1) that depends on everything. */
static gfloat
value (guint frame, guint l, guint m, gsize i)
{
  guint32 x = frame * 2654435761u ^ (l * 97u + m * 13u) ^ (guint32) i *
      40503u;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  return ((x & 0xFFFF) + 1) / 65538.0f;
}

/* Frame @frame's meta: every 5th window has no audio (audio modules
 * skipped), every 3rd frame reuses maps, half the slots of the others
 * miss. */
static void
add_meta (GstBuffer * buf, guint frame)
{
  GstAvAttentionMeta *meta = gst_buffer_add_av_attention_meta (buf, L, HEADS,
      HEADS, T, COLS, ROWS, NULL);
  const gboolean silent = frame % 5 == 4;
  guint8 *mask;

  fail_unless (meta != NULL);
  meta->visible_threshold = 0.1f;
  meta->reused = frame % 3 == 1;
  meta->audio_missing = silent;
  mask = gst_av_attention_meta_get_audio_mask_writable (meta);
  for (guint t = 0; t < T; t++)
    mask[t] = silent || (frame + t) % 2 ? 1 : 0;
  for (guint l = 0; l < L; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      guint heads, tq, tk;
      gfloat *w = gst_av_attention_meta_get_weights_writable (meta, l, m);
      gst_av_attention_meta_get_weights (meta, l, m, &heads, &tq, &tk);
      for (gsize i = 0; i < (gsize) heads * tq * tk; i++)
        w[i] = value (frame, l, m, i);
      if (silent && m != GST_AV_ATTENTION_MODULE_VIDEO_SELF)
        gst_av_attention_meta_set_skipped (meta, l, m, TRUE);
    }
  }
}

static GstElement *
make_sink (const gchar * location, const gchar * maps, GstBus ** bus)
{
  GstElement *sink = gst_element_factory_make ("avtensorsink", NULL);

  fail_unless (sink != NULL);
  g_object_set (sink, "location", location, NULL);
  if (maps)
    gst_util_set_object_arg (G_OBJECT (sink), "maps", maps);
  if (bus) {
    *bus = gst_bus_new ();
    gst_element_set_bus (sink, *bus);
  }
  return sink;
}

/* The synthetic stream into @sink: frames 0 and 1 without meta, then one
 * buffer a frame except frames 6 and 7 together; @n frames. */
static void
push_stream (GstHarness * h, guint from, guint n)
{
  for (guint f = from; f < from + n;) {
    const guint count = f == 6 && f + 1 < from + n ? 2 : 1;
    GstBuffer *buf = make_frames (f, count);
    if (f >= 2)
      add_meta (buf, f);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
    f += count;
  }
}

static void
write_stream (const gchar * path, const gchar * maps, const gchar * dtype,
    gboolean compress, guint n)
{
  GstElement *sink = make_sink (path, maps, NULL);
  GstHarness *h;

  if (dtype)
    gst_util_set_object_arg (G_OBJECT (sink), "dtype", dtype);
  g_object_set (sink, "compress", compress, NULL);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (WIDTH, FPS, 1));
  push_stream (h, 0, n);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  gst_harness_teardown (h);
  gst_object_unref (sink);
}

/* The same bytes in two arrays. */
static void
assert_same (NpzFile * a, NpzFile * b, const gchar * name)
{
  NpzArray x = need (a, name), y = need (b, name);

  fail_unless_equals_string (x.descr, y.descr);
  fail_unless_equals_int (x.ndim, y.ndim);
  fail_unless (x.numel == y.numel, "%s", name);
  fail_unless (memcmp (x.data, y.data, x.numel * x.itemsize) == 0, "%s",
      name);
}

/* The summary file @path against the maps=all file @all, frame by frame:
 * the weight of each patch (mean over heads and slots with audio), the
 * strongest patch (the first largest sum), NaN and -1 without audio. */
static void
check_summary (const gchar * path, const gchar * all, gboolean with_weights,
    gboolean half)
{
  static const gchar *const frame_arrays[] = { "data", "pts", "stream_time",
    "duration", "audio_mask", "sound_visible", "visible_threshold"
  };
  const gchar *const expect_names[] = { "data", "pts", "stream_time",
    "duration", "audio_mask", "sound_visible", "visible_threshold", "reused",
    "strongest_column", "strongest_row", "strongest_weight", "grid_shape",
    "model", "patch_weights"
  };
  NpzFile s, a;
  NpzArray cross, mask, col, row, wt, reused, grid, model, pw;
  guint64 frames;

  ASSERT_ZIP_OPEN (&s, path);
  ASSERT_ZIP_OPEN (&a, all);
  fail_unless_equals_int (s.n_arrays, with_weights ? 14 : 13);
  for (guint i = 0; i < s.n_arrays; i++)
    fail_unless_equals_string (s.arrays[i].name, expect_names[i]);
  for (guint i = 0; i < G_N_ELEMENTS (frame_arrays); i++)
    assert_same (&s, &a, frame_arrays[i]);

  cross = need (&a, "layers.1.audio_cross");
  mask = need (&a, "audio_mask");
  frames = mask.shape[0];
  col = need (&s, "strongest_column");
  row = need (&s, "strongest_row");
  wt = need (&s, "strongest_weight");
  reused = need (&s, "reused");
  grid = need (&s, "grid_shape");
  model = need (&s, "model");
  fail_unless_equals_string (col.descr, "<i4");
  fail_unless_equals_int (grid.ndim, 1);
  fail_unless_equals_int (npz_i32 (&grid, 0), ROWS);
  fail_unless_equals_int (npz_i32 (&grid, 1), COLS);
  /* no avattention upstream of a harness */
  fail_unless_equals_int (model.ndim, 0);
  fail_unless (model.itemsize >= 7 && memcmp (model.data, "unknown", 7) == 0);
  if (with_weights) {
    pw = need (&s, "patch_weights");
    fail_unless_equals_string (pw.descr, half ? "<f2" : "<f4");
    fail_unless (pw.ndim == 2 && pw.shape[0] == frames && pw.shape[1] == N);
  }
  fail_unless (frames >= 8);

  for (guint64 f = 0; f < frames; f++) {
    gdouble sum[N], best = -1.0;
    guint used = 0, b = 0;

    for (guint t = 0; t < T; t++)
      used += !npz_b1 (&mask, f * T + t);
    /* frame 7 rides with frame 6 in one buffer: frame 6's meta */
    fail_unless_equals_int (npz_b1 (&reused, f), f >= 2 && (f == 7 ? 6 : f)
        % 3 == 1);
    if (used == 0) {
      /* no meta (frames 0, 1) or no audio */
      fail_unless_equals_int (npz_i32 (&col, f), -1);
      fail_unless_equals_int (npz_i32 (&row, f), -1);
      fail_unless (isnan (npz_f32 (&wt, f)));
      for (guint n = 0; with_weights && n < N; n++)
        fail_unless (isnan (half ? npz_f16 (&pw, f * N + n)
                : npz_f32 (&pw, f * N + n)));
      continue;
    }
    for (guint n = 0; n < N; n++) {
      sum[n] = 0.0;
      for (guint hh = 0; hh < HEADS; hh++)
        for (guint t = 0; t < T; t++)
          if (!npz_b1 (&mask, f * T + t))
            sum[n] += npz_f32 (&cross, ((f * HEADS + hh) * T + t) * N + n);
      if (sum[n] > best) {
        best = sum[n];
        b = n;
      }
    }
    fail_unless_equals_int (npz_i32 (&col, f), b % COLS);
    fail_unless_equals_int (npz_i32 (&row, f), b / COLS);
    fail_unless (fabs (npz_f32 (&wt, f) - best / (HEADS * used)) < 1e-6);
    for (guint n = 0; with_weights && n < N; n++) {
      const gdouble expect = sum[n] / (HEADS * used);
      const gdouble got = half ? npz_f16 (&pw, f * N + n)
          : npz_f32 (&pw, f * N + n);
      fail_unless (fabs (got - expect) <= (half ? 1e-3 : 1e-6),
          "frame %" G_GUINT64_FORMAT " patch %u: %g, expected %g", f, n,
          got, expect);
    }
  }
  npz_close (&s);
  npz_close (&a);
}

/* maps=summary (the default), none and float16 against maps=all of the
 * same stream; compress=true holds the same arrays, deflated, and
 * numpy.load reads it. */
GST_START_TEST (test_summary_matches_all)
{
  gchar *dir = avf_tmp_dir_new ("avtensorfiles");
  gchar *all = g_build_filename (dir, "all.npz", NULL);
  gchar *sum = g_build_filename (dir, "sum.npz", NULL);
  gchar *none = g_build_filename (dir, "none.npz", NULL);
  gchar *half = g_build_filename (dir, "half.npz", NULL);
  gchar *zip = g_build_filename (dir, "zip.npz", NULL);
  gchar *all16 = g_build_filename (dir, "all16.npz", NULL);
  GstElement *sink = gst_element_factory_make ("avtensorsink", NULL);
  gchar *maps = NULL;

  /* the default */
  g_object_get (sink, "maps", &maps, NULL);
  gst_object_unref (sink);
  write_stream (all, "all", NULL, FALSE, 14);
  write_stream (sum, NULL, NULL, FALSE, 14);
  write_stream (none, "none", NULL, FALSE, 14);
  write_stream (half, "summary", "float16", FALSE, 14);
  write_stream (zip, "summary", NULL, TRUE, 14);
  write_stream (all16, "all", "float16", FALSE, 14);
  check_summary (sum, all, TRUE, FALSE);
  check_summary (none, all, FALSE, FALSE);
  check_summary (half, all, TRUE, TRUE);

  if (avf_have_numpy ()) {
    avf_run_numpy ("import sys, zipfile, numpy as np\n"
        "a, b = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
        "assert a.files == b.files, (a.files, b.files)\n"
        "for k in a.files:\n"
        "    assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k\n"
        "    assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == 'f'), k\n"
        "z = zipfile.ZipFile(sys.argv[2])\n"
        "assert z.testzip() is None\n"
        "assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())\n"
        "assert b['model'] == b'unknown' and list(b['grid_shape']) == [3, 4]\n",
        sum, zip);
    /* maps=all dtype=float16: every map as float16, the rest the same */
    avf_run_numpy ("import sys, numpy as np\n"
        "a, h = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
        "assert a.files == h.files\n"
        "for k in a.files:\n"
        "    if k.startswith('layers.'):\n"
        "        assert h[k].dtype == np.float16 and h[k].shape == a[k].shape, k\n"
        "        assert np.allclose(h[k], a[k], rtol=1e-3, atol=1e-4, equal_nan=True), k\n"
        "    else:\n"
        "        assert np.array_equal(a[k], h[k], equal_nan=a[k].dtype.kind == 'f'), k\n",
        all, all16);
  } else {
    g_print ("numpy.load check of compress=true skipped: no numpy\n");
  }
  avf_tmp_dir_free (dir);
  g_free (all);
  g_free (sum);
  g_free (none);
  g_free (half);
  g_free (zip);
  g_free (all16);
}

GST_END_TEST;

/* ---- rolling files ----------------------------------------------------- */

typedef struct
{
  gchar *location;
  guint index;
  guint64 frames, first, start, end;
} Closed;

static void
closed_clear (gpointer p)
{
  g_free (((Closed *) p)->location);
}

/* The "file-closed" messages on @bus, in order. */
static GArray *
pop_closed (GstBus * bus)
{
  GArray *out = g_array_new (FALSE, TRUE, sizeof (Closed));
  GstMessage *msg;

  g_array_set_clear_func (out, closed_clear);
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);
    Closed c;
    if (gst_structure_has_name (s, "file-closed")) {
      c.location = g_strdup (gst_structure_get_string (s, "location"));
      fail_unless (gst_structure_get_uint (s, "index", &c.index));
      fail_unless (gst_structure_get_uint64 (s, "frames", &c.frames));
      fail_unless (gst_structure_get_uint64 (s, "first-frame", &c.first));
      fail_unless (gst_structure_get_uint64 (s, "start-pts", &c.start));
      fail_unless (gst_structure_get_uint64 (s, "end-pts", &c.end));
      g_array_append_val (out, c);
    }
    gst_message_unref (msg);
  }
  return out;
}

/* Rolling file @path holds frames @from.. (@n of them), each array the
 * same frames, the data and the times of those frames. */
static void
check_part (const gchar * path, guint64 from, guint64 n, gboolean attention)
{
  NpzFile z;
  NpzArray data, pts, st, dur;

  ASSERT_ZIP_OPEN (&z, path);
  data = need (&z, "data");
  pts = need (&z, "pts");
  st = need (&z, "stream_time");
  dur = need (&z, "duration");
  fail_unless (data.shape[0] == n, "%s: %" G_GUINT64_FORMAT " frames, "
      "%" G_GUINT64_FORMAT " expected", path, data.shape[0], n);
  for (guint64 f = 0; f < n; f++) {
    fail_unless_equals_float (npz_f32 (&data, f * WIDTH), (from + f) * 10.0);
    fail_unless_equals_uint64 (npz_i64 (&pts, f), frame_time (from + f));
    /* the harness's segment starts at 0: stream time = pts */
    fail_unless_equals_uint64 (npz_i64 (&st, f), frame_time (from + f));
    fail_unless_equals_uint64 (npz_i64 (&dur, f), frame_time (from + f + 1)
        - frame_time (from + f));
  }
  for (guint i = 0; i < z.n_arrays; i++) {
    const NpzArray *a = &z.arrays[i];
    const gboolean attribute = g_str_equal (a->name, "grid_shape")
        || g_str_equal (a->name, "model");
    fail_unless (attribute || a->shape[0] == n, "%s: %s", path, a->name);
  }
  /* every part is complete on its own: its grid and model */
  fail_unless_equals_int (member (&z, "grid_shape", &data), attention);
  fail_unless_equals_int (member (&z, "model", &data), attention);
  npz_close (&z);
}

/* max-size-time=1 s at 30 fps: parts of 30 frames, numbered from 0, a
 * "file-closed" for each, contiguous frames, the attention arrays in each
 * part (the first frames without meta in the first one only) and nothing
 * else in the folder.  max-size-bytes: parts that stay under the size. */
GST_START_TEST (test_rolling_files)
{
  const guint total = 100;

  for (guint c = 0; c < 3; c++) {
    const gboolean by_bytes = c == 2;
    gchar *dir = avf_tmp_dir_new ("avtensorfiles");
    gchar *location = g_build_filename (dir, "part-%05d.npz", NULL);
    GstBus *bus;
    GstElement *sink = make_sink (location, c == 1 ? "all" : NULL, &bus);
    GstHarness *h;
    GArray *closed;
    GPtrArray *names;
    guint64 next = 0;

    if (by_bytes)
      g_object_set (sink, "max-size-bytes", (guint64) 4096, NULL);
    else
      g_object_set (sink, "max-size-time", (guint64) GST_SECOND, NULL);
    h = gst_harness_new_with_element (sink, "sink", NULL);
    gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (WIDTH, FPS, 1));
    push_stream (h, 0, total);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    gst_harness_teardown (h);
    /* (popping one type drops the others) */
    closed = pop_closed (bus);
    names = list_dir (dir);
    fail_unless_equals_int (names->len, closed->len);
    if (!by_bytes) {
      fail_unless_equals_int (closed->len, 4);
    } else {
      fail_unless (closed->len >= 3, "%u parts", closed->len);
    }
    for (guint i = 0; i < closed->len; i++) {
      const Closed *p = &g_array_index (closed, Closed, i);
      gchar *name = g_strdup_printf ("part-%05u.npz", i);
      gchar *path = g_build_filename (dir, name, NULL);
      struct stat st;

      fail_unless_equals_string (names->pdata[i], name);
      fail_unless_equals_string (p->location, path);
      fail_unless_equals_int (p->index, i);
      fail_unless_equals_uint64 (p->first, next);
      fail_unless_equals_uint64 (p->start, frame_time (next));
      fail_unless_equals_uint64 (p->end, frame_time (next + p->frames));
      if (!by_bytes) {
        fail_unless_equals_uint64 (p->frames, i < 3 ? 30 : 10);
      } else {
        fail_unless (g_stat (path, &st) == 0);
        fail_unless (st.st_size <= 4096,
            "%s: %" G_GINT64_FORMAT " bytes", name, (gint64) st.st_size);
      }
      check_part (path, next, p->frames, c != 1);
      next += p->frames;
      g_free (name);
      g_free (path);
    }
    fail_unless_equals_uint64 (next, total);
    g_array_unref (closed);
    g_ptr_array_unref (names);
    gst_element_set_bus (sink, NULL);
    gst_object_unref (bus);
    gst_object_unref (sink);
    g_free (location);
    avf_tmp_dir_free (dir);
  }
}

GST_END_TEST;

/* ---- stream time ------------------------------------------------------- */

/* What mp4mux does for H.264 with B-frames: the segment starts two frames
 * in (start = 66666666, time = 0), as do the pts.  "stream_time" is each
 * frame's pts through that segment, pts - 66666666, while "pts" stays as
 * it was; a frame of a buffer that starts before the segment (frame 1 of
 * frames 1-2) has none (-1).  With the harness's own segment (start 0)
 * both are the same, and the "file-closed" times stay pts. */
GST_START_TEST (test_stream_time)
{
  const GstClockTime start = frame_time (2);
  gchar *dir = avf_tmp_dir_new ("avtensorfiles");
  gchar *later = g_build_filename (dir, "later.npz", NULL);
  gchar *plain = g_build_filename (dir, "plain.npz", NULL);
  GstBus *bus;
  GstElement *sink = make_sink (later, NULL, &bus);
  GstHarness *h;
  GstSegment segment;
  GArray *closed;
  NpzFile z;
  NpzArray pts, st;

  fail_unless_equals_uint64 (start, 66666666);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (WIDTH, FPS, 1));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  segment.start = start;
  segment.time = 0;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  fail_unless_equals_int (gst_harness_push (h, make_frames (1, 2)),
      GST_FLOW_OK);
  push_stream (h, 3, 11);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  gst_harness_teardown (h);
  closed = pop_closed (bus);
  fail_unless_equals_int (closed->len, 1);
  fail_unless_equals_uint64 (g_array_index (closed, Closed, 0).start,
      frame_time (1));
  fail_unless_equals_uint64 (g_array_index (closed, Closed, 0).end,
      frame_time (14));

  ASSERT_ZIP_OPEN (&z, later);
  pts = need (&z, "pts");
  st = need (&z, "stream_time");
  fail_unless_equals_string (st.descr, "<i8");
  fail_unless (st.ndim == 1 && st.shape[0] == 13 && pts.shape[0] == 13);
  for (guint64 f = 0; f < 13; f++) {
    const GstClockTime p = frame_time (f + 1);
    fail_unless_equals_int64 (npz_i64 (&pts, f), (gint64) p);
    fail_unless_equals_int64 (npz_i64 (&st, f), f == 0 ? -1 :
        (gint64) (p - start));
  }
  npz_close (&z);

  write_stream (plain, NULL, NULL, FALSE, 14);
  ASSERT_ZIP_OPEN (&z, plain);
  pts = need (&z, "pts");
  st = need (&z, "stream_time");
  fail_unless (st.shape[0] == 14 && pts.shape[0] == 14);
  for (guint64 f = 0; f < 14; f++) {
    fail_unless_equals_int64 (npz_i64 (&pts, f), (gint64) frame_time (f));
    fail_unless_equals_int64 (npz_i64 (&st, f), (gint64) frame_time (f));
  }
  npz_close (&z);

  if (avf_have_numpy ())
    avf_run_numpy ("import sys, numpy as np\n"
        "z = np.load(sys.argv[1])\n"
        "p, s = z['pts'], z['stream_time']\n"
        "assert s.dtype == np.int64 and s.shape == p.shape == (13,)\n"
        "assert s[0] == -1 and (s[1:] == p[1:] - 66666666).all(), s\n"
        "assert z.files[:4] == ['data', 'pts', 'stream_time', 'duration']\n",
        later, NULL);
  g_array_unref (closed);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  g_free (later);
  g_free (plain);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* Mounts a tmpfs with @options on @dir; FALSE where this process may not
 * (not root, no mount in the sandbox). */
static gboolean
mount_tmpfs (const gchar * dir, const gchar * options)
{
  gchar *argv[] = { (gchar *) "mount", (gchar *) "-t", (gchar *) "tmpfs",
    (gchar *) "-o", (gchar *) options, (gchar *) "tmpfs", (gchar *) dir, NULL
  };
  gint status = 1;

  return g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH |
      G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
      NULL, NULL, &status, NULL) && g_spawn_check_wait_status (status, NULL);
}

static void
umount_dir (const gchar * dir)
{
  gchar *argv[] = { (gchar *) "umount", (gchar *) dir, NULL };
  gint status = 1;

  fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
          NULL, NULL, NULL, &status, NULL));
}

/* Starts a sink with @location and max-size-time set: the error. */
static gchar *
rolling_start_error (const gchar * location, GQuark * domain, gint * code)
{
  GstBus *bus;
  GstElement *sink = make_sink (location, NULL, &bus);
  gchar *text;

  g_object_set (sink, "max-size-time", (guint64) GST_SECOND, NULL);
  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (sink, GST_STATE_NULL);
  text = avf_pop_error (bus, 0, FALSE, domain, code);
  fail_unless (text != NULL, "%s: no error", location);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  return text;
}

/* Rolling without a number in the name, with two, with another
 * conversion; into a folder that does not exist: a clear error at start,
 * nothing written. */
GST_START_TEST (test_rolling_bad_location)
{
  const gchar *const bad[] = { "x.npz", "x-%d-%d.npz", "x-%s.npz",
    "x-%05.npz"
  };
  gchar *dir = avf_tmp_dir_new ("avtensorfiles");
  GQuark domain;
  gint code;
  gchar *text, *ls;

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    gchar *path = g_build_filename (dir, bad[i], NULL);
    text = rolling_start_error (path, &domain, &code);
    fail_unless (domain == GST_RESOURCE_ERROR
        && code == GST_RESOURCE_ERROR_SETTINGS, "%s", text);
    fail_unless (strstr (text, "%05d") != NULL && strstr (text, path),
        "%s", text);
    g_free (text);
    g_free (path);
  }
  text = rolling_start_error ("/nonexistent-avtensorfiles/x-%05d.npz",
      &domain, &code);
  fail_unless (domain == GST_RESOURCE_ERROR
      && code == GST_RESOURCE_ERROR_OPEN_WRITE, "%s", text);
  fail_unless (strstr (text, "/nonexistent-avtensorfiles/x-00000.npz"),
      "%s", text);
  g_free (text);
  ls = listing (dir);
  fail_unless_equals_string (ls, "");
  g_free (ls);

  /* a folder that cannot be written (a read-only tmpfs: root writes
   * anywhere else) */
  if (mount_tmpfs (dir, "ro,size=64k")) {
    gchar *path = g_build_filename (dir, "x-%05d.npz", NULL);
    text = rolling_start_error (path, &domain, &code);
    fail_unless (domain == GST_RESOURCE_ERROR
        && code == GST_RESOURCE_ERROR_OPEN_WRITE, "%s", text);
    fail_unless (strstr (text, "x-00000.npz") != NULL
        && strstr (text, "Read-only") != NULL, "%s", text);
    g_free (text);
    g_free (path);
    umount_dir (dir);
  } else {
    g_print ("read-only folder case skipped: cannot mount a tmpfs here\n");
  }
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored: EFBIG, as a full disk)
 * hit in the second part: RESOURCE/NO_SPACE_LEFT naming that part, the
 * first part complete, nothing else in the folder. */
GST_START_TEST (test_rolling_no_space)
{
  gchar *dir = avf_tmp_dir_new ("avtensorfiles");
  gchar *location = g_build_filename (dir, "part-%05d.npz", NULL);
  gchar *part1 = g_build_filename (dir, "part-00001.npz", NULL);
  gchar *part0 = g_build_filename (dir, "part-00000.npz", NULL);
  GstBus *bus;
  GstElement *sink = make_sink (location, NULL, &bus);
  GstHarness *h;
  GstFlowReturn ret = GST_FLOW_OK;
  struct sigaction ignore, old_action;
  struct rlimit old, r;
  GQuark domain;
  gint code;
  gchar *text, *ls;

  g_object_set (sink, "max-size-time", (guint64) GST_SECOND, NULL);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (WIDTH, FPS, 1));
  push_stream (h, 0, 30);

  memset (&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  fail_unless (sigaction (SIGXFSZ, &ignore, &old_action) == 0);
  fail_unless (getrlimit (RLIMIT_FSIZE, &old) == 0);
  r = old;
  /* the part0 part is written at frame 30, before the limit bites: its
   * final file is larger than the limit, so set the limit after it */
  fail_unless_equals_int (gst_harness_push (h, make_frames (30, 1)),
      GST_FLOW_OK);
  r.rlim_cur = 512;
  fail_unless (setrlimit (RLIMIT_FSIZE, &r) == 0);
  for (guint f = 31; f < 60 && ret == GST_FLOW_OK; f++)
    ret = gst_harness_push (h, make_frames (f, 1));
  if (ret == GST_FLOW_OK)
    fail_if (gst_harness_push_event (h, gst_event_new_eos ()));
  setrlimit (RLIMIT_FSIZE, &old);
  sigaction (SIGXFSZ, &old_action, NULL);

  text = avf_pop_error (bus, 0, FALSE, &domain, &code);
  fail_unless (text != NULL);
  fail_unless (domain == GST_RESOURCE_ERROR
      && code == GST_RESOURCE_ERROR_NO_SPACE_LEFT, "%s", text);
  fail_unless (strstr (text, part1) != NULL, "%s", text);
  g_free (text);
  gst_harness_teardown (h);
  fail_unless (avf_pop_error (bus, 0, FALSE, NULL, NULL) == NULL);
  ls = listing (dir);
  fail_unless_equals_string (ls, "part-00000.npz");
  g_free (ls);
  check_part (part0, 0, 30, TRUE);

  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  g_free (location);
  g_free (part0);
  g_free (part1);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* A full disk: a 192 KiB tmpfs (skipped where this process may not mount
 * one).  The parts that fit are complete and contiguous, the error is
 * RESOURCE/NO_SPACE_LEFT, no partial file under a final name. */
GST_START_TEST (test_rolling_full_disk)
{
  gchar *dir = avf_tmp_dir_new ("avtensorfiles");
  gchar *location = g_build_filename (dir, "p-%05d.npz", NULL);
  GstBus *bus;
  GstElement *sink;
  GstHarness *h;
  GstFlowReturn ret = GST_FLOW_OK;
  GPtrArray *names;
  GQuark domain;
  gint code;
  gchar *text;
  guint64 next = 0;

  if (!mount_tmpfs (dir, "size=192k")) {
    g_print ("full-disk test skipped: cannot mount a tmpfs here\n");
    g_free (location);
    avf_tmp_dir_free (dir);
    return;
  }
  sink = make_sink (location, NULL, &bus);
  g_object_set (sink, "max-size-time", (guint64) GST_SECOND, NULL);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_set_src_caps (h, gst_av_tensor_caps_fused (256, FPS, 1));
  for (guint f = 0; f < 100000 && ret == GST_FLOW_OK; f++) {
    GstBuffer *buf = gst_buffer_new_allocate (NULL, 256 * 4, NULL);
    gst_buffer_memset (buf, 0, f & 0xFF, 256 * 4);
    GST_BUFFER_PTS (buf) = frame_time (f);
    GST_BUFFER_DURATION (buf) = frame_time (f + 1) - frame_time (f);
    ret = gst_harness_push (h, buf);
  }
  fail_unless_equals_int (ret, GST_FLOW_ERROR);
  text = avf_pop_error (bus, 0, FALSE, &domain, &code);
  fail_unless (text != NULL);
  fail_unless (domain == GST_RESOURCE_ERROR
      && code == GST_RESOURCE_ERROR_NO_SPACE_LEFT, "%s", text);
  g_free (text);
  gst_harness_teardown (h);

  names = list_dir (dir);
  fail_unless (names->len >= 1);
  for (guint i = 0; i < names->len; i++) {
    gchar *name = g_strdup_printf ("p-%05u.npz", i);
    gchar *path = g_build_filename (dir, name, NULL);
    NpzFile z;
    NpzArray pts;

    fail_unless_equals_string (names->pdata[i], name);
    ASSERT_ZIP_OPEN (&z, path);
    pts = need (&z, "pts");
    fail_unless_equals_uint64 (npz_i64 (&pts, 0), frame_time (next));
    next += pts.shape[0];
    npz_close (&z);
    g_free (name);
    g_free (path);
  }
  g_ptr_array_unref (names);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  umount_dir (dir);
  g_free (location);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* ---- a recording killed with SIGKILL ----------------------------------- */

/* Final names in @dir ("k-NNNNN.npz", no hidden temporary). */
static guint
final_files (const gchar * dir)
{
  GPtrArray *names = list_dir (dir);
  guint n = 0;

  for (guint i = 0; i < names->len; i++)
    n += ((const gchar *) names->pdata[i])[0] != '.';
  g_ptr_array_unref (names);
  return n;
}

/* gst-launch-1.0 records the spectrogram of an endless tone into parts of
 * half a second of stream; once three parts are closed it is killed with
 * SIGKILL.  Every file under a final name loads and holds its frames, the
 * parts are numbered from 0 without a hole, their frames follow each other
 * without a gap or a duplicate, and what is left besides them is at most
 * the hidden temporary file of the part that was being written. */
GST_START_TEST (test_rolling_killed)
{
  gchar *launch = g_find_program_in_path ("gst-launch-1.0");
  gchar *dir, *location, *desc, **argv;
  GPid pid;
  GPtrArray *names;
  gint64 prev_pts = -1, step = 0;
  guint n_final = 0, n_hidden = 0;
  gint status;

#if defined(__SANITIZE_ADDRESS__)
  /* the system's gst-launch-1.0 cannot load an ASan-instrumented plugin */
  g_print ("SIGKILL test skipped in a sanitized build\n");
  g_clear_pointer (&launch, g_free);
#endif
  if (launch == NULL) {
    g_print ("SIGKILL test skipped: no gst-launch-1.0\n");
    return;
  }
  dir = avf_tmp_dir_new ("avtensorfiles");
  location = g_build_filename (dir, "k-%05d.npz", NULL);
  desc = g_strdup_printf ("%s -q audiotestsrc freq=440 ! "
      "audio/x-raw,rate=16000 ! audioconvert ! avspectrogram ! "
      "avtensorsink location=%s max-size-time=500000000", launch, location);
  fail_unless (g_shell_parse_argv (desc, NULL, &argv, NULL));
  fail_unless (g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
          G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pid, NULL));
  /* not a timing assertion: the limit only keeps a broken run from
   * hanging the test */
  for (guint i = 0; i < 6000 && final_files (dir) < 3; i++) {
    fail_unless (waitpid (pid, &status, WNOHANG) == 0,
        "gst-launch-1.0 ended before it was killed");
    g_usleep (20000);
  }
  fail_unless (final_files (dir) >= 3, "no three parts in two minutes");
  fail_unless (kill (pid, SIGKILL) == 0);
  fail_unless (waitpid (pid, &status, 0) == pid);
  fail_unless (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
  g_spawn_close_pid (pid);

  names = list_dir (dir);
  for (guint i = 0; i < names->len; i++) {
    const gchar *name = names->pdata[i];
    gchar *expect = g_strdup_printf ("k-%05u.npz", n_final);
    gchar *path = g_build_filename (dir, name, NULL);

    if (name[0] == '.') {
      /* ".k-NNNNN.npz-XXXXXX.tmp", one at most */
      fail_unless (g_str_has_suffix (name, ".tmp"), "%s", name);
      n_hidden++;
    } else {
      NpzFile z;
      NpzArray data, pts, dur;

      fail_unless_equals_string (name, expect);
      ASSERT_ZIP_OPEN (&z, path);
      data = need (&z, "data");
      pts = need (&z, "pts");
      dur = need (&z, "duration");
      fail_unless (data.shape[0] > 0 && pts.shape[0] == data.shape[0]
          && dur.shape[0] == data.shape[0], "%s", name);
      for (guint64 f = 0; f < pts.shape[0]; f++) {
        /* every frame one hop after the one before it, in this part or
         * in the part before: no gap, no duplicate */
        const gint64 t = npz_i64 (&pts, f);
        if (prev_pts < 0) {
          fail_unless_equals_int64 (t, 0);
        } else {
          if (step == 0)
            step = t - prev_pts;
          fail_unless (step > 0 && llabs (t - prev_pts - step) <= 1,
              "%s frame %" G_GUINT64_FORMAT ": %" G_GINT64_FORMAT " after %"
              G_GINT64_FORMAT, name, f, t, prev_pts);
        }
        fail_unless (npz_i64 (&dur, f) > 0);
        prev_pts = t;
      }
      npz_close (&z);
      n_final++;
    }
    g_free (expect);
    g_free (path);
  }
  fail_unless (n_final >= 3);
  fail_unless (n_hidden <= 1);
  g_ptr_array_unref (names);
  g_strfreev (argv);
  g_free (desc);
  g_free (location);
  g_free (launch);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

/* ---- a real pipeline ----------------------------------------------------- */

/* The shipped model through real elements, into two sinks behind a tee:
 * maps=all and the default summary.  The summary's strongest patch is the
 * one the full maps give on every frame, and its model is the shipped
 * model's file (found upstream through queue and tee). */
GST_START_TEST (test_summary_pipeline)
{
  const guint frames = quick ()? 3 : 10;
  gchar *dir = avf_tmp_dir_new ("avtensorfiles");
  gchar *all = g_build_filename (dir, "all.npz", NULL);
  gchar *sum = g_build_filename (dir, "sum.npz", NULL);
  gchar *desc;
  GstElement *p;
  GstBus *bus;
  NpzFile a, s;
  NpzArray cross, mask, col, row, model;
  guint64 T_, N_, F;

  desc = g_strdup_printf ("videotestsrc num-buffers=%u pattern=ball ! "
      "video/x-raw,width=224,height=224,framerate=30/1 ! videoconvert ! "
      "avpatchembed ! queue ! att.video_sink "
      "audiotestsrc num-buffers=%u freq=660 ! audioconvert ! audioresample "
      "! avspectrogram ! queue ! att.audio_sink "
      "avattention name=att ! tee name=t "
      "t. ! queue ! avtensorsink maps=all location=\"%s\" "
      "t. ! queue ! avtensorsink location=\"%s\"", frames, frames * 2, all,
      sum);
  p = gst_parse_launch (desc, NULL);
  fail_unless (p != NULL, "%s", desc);
  bus = gst_element_get_bus (p);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  avf_wait_eos (bus, GST_CLOCK_TIME_NONE, FALSE, desc);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (p);

  ASSERT_ZIP_OPEN (&a, all);
  ASSERT_ZIP_OPEN (&s, sum);
  mask = need (&a, "audio_mask");
  F = mask.shape[0];
  T_ = mask.shape[1];
  fail_unless_equals_uint64 (F, frames);
  {
    /* the last layer's audio_cross */
    gchar name[64];
    guint last = 0;
    for (guint l = 0; l < 64; l++) {
      g_snprintf (name, sizeof name, "layers.%u.audio_cross", l);
      if (npz_find (&a, name))
        last = l;
    }
    g_snprintf (name, sizeof name, "layers.%u.audio_cross", last);
    cross = need (&a, name);
  }
  N_ = cross.shape[2];
  col = need (&s, "strongest_column");
  row = need (&s, "strongest_row");
  model = need (&s, "model");
  fail_unless (model.itemsize >= strlen (AVF_MODEL_NAME)
      && memcmp (model.data, AVF_MODEL_NAME, strlen (AVF_MODEL_NAME)) == 0);
  for (guint64 f = 0; f < F; f++) {
    gdouble best = -1.0;
    gint b = -1;
    for (guint64 n = 0; n < N_; n++) {
      gdouble sum_ = 0.0;
      gboolean any = FALSE;
      for (guint64 t = 0; t < T_; t++) {
        if (npz_b1 (&mask, f * T_ + t))
          continue;
        any = TRUE;
        sum_ += npz_f32 (&cross, (f * T_ + t) * N_ + n);
      }
      if (any && sum_ > best) {
        best = sum_;
        b = (gint) n;
      }
    }
    fail_unless_equals_int (npz_i32 (&col, f), b < 0 ? -1 : b % 14);
    fail_unless_equals_int (npz_i32 (&row, f), b < 0 ? -1 : b / 14);
  }
  npz_close (&a);
  npz_close (&s);
  g_free (desc);
  g_free (all);
  g_free (sum);
  avf_tmp_dir_free (dir);
}

GST_END_TEST;

static Suite *
tensorfiles_suite (void)
{
  Suite *s = suite_create ("tensorfiles");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_summary_matches_all);
  tcase_add_test (tc, test_stream_time);
  tcase_add_test (tc, test_rolling_files);
  tcase_add_test (tc, test_rolling_bad_location);
  tcase_add_test (tc, test_rolling_no_space);
  tcase_add_test (tc, test_rolling_full_disk);
  tcase_add_test (tc, test_rolling_killed);
  tcase_add_test (tc, test_summary_pipeline);
  return s;
}

AVF_CHECK_MAIN (tensorfiles);
