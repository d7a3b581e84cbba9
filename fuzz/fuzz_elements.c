/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * fuzz_elements: libFuzzer harness for the five elements of the plugin,
 * each driven through a real pipeline
 *
 *   appsrc ! ELEMENT ! fakesink            (avspectrogram, avpatchembed)
 *   appsrc ! avtensorsink                  (location in a temporary folder)
 *   appsrc ! avattention.audio_sink, appsrc ! avattention.video_sink,
 *       avattention ! fakesink
 *   appsrc ! avattnoverlay.video_sink, appsrc ! avattnoverlay.attention_sink,
 *       avattnoverlay ! fakesink
 *
 * The input bytes choose the element, its properties (legal values only:
 * every value is inside the range its GParamSpec declares), the caps of
 * every appsrc and then up to MAX_ACTIONS actions: push a buffer (size,
 * contents, alignment, memory layout, PTS, duration, flags, GstVideoMeta
 * or GstAvAttentionMeta), change the caps, send a GAP event, start a new
 * segment (odd start, stop, base, rate), flushing seek (on the pipeline or
 * on one appsrc), end one input, set a property while playing, go through
 * READY, wait for the queues, push the last buffer again.  Every
 * run ends with end-of-stream on every appsrc and a bounded wait for EOS or
 * an ERROR on the bus, then the pipeline goes to NULL.
 *
 * Errors posted on the bus are expected for bad input.  A failure is:
 * a sanitizer report (ASan, UBSan; the elements, the metadata and core/
 * are compiled in with the sanitizers and libFuzzer's coverage), a crash,
 * a g_critical / g_warning / g_error from any code (the log handler
 * aborts: the harness itself only makes legal API calls), no EOS and no
 * ERROR within BUS_TIMEOUT after the last input ended (a swallowed EOS or
 * a stall), a hang (libFuzzer -timeout) and a huge allocation
 * (-malloc_limit_mb / -rss_limit_mb).
 *
 * The input format is described in docs/fuzzing.md; fuzz/make-corpus.py
 * writes the seeds with an encoder that mirrors the reader below.
 *
 * Build and run: fuzz/run-fuzzers.sh (see docs/fuzzing.md).  Built with
 * -DFUZZ_EXPLORE, the harness may step around a bug it found and that is
 * not fixed yet, to look for others (none at the moment): for local runs
 * only, never for CI.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanitizer/lsan_interface.h>

#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/audio/audio.h>
#include <gst/video/video.h>

#include "gstavtensor.h"
#include "gstavattentionmeta.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

/* from elements/plugin.c built with GST_PLUGIN_BUILD_STATIC */
void gst_plugin_avattention_register (void);

#ifndef FUZZ_SRC_DIR
#error "FUZZ_SRC_DIR (the source tree) must be defined"
#endif
#ifndef FUZZ_BUILD_DIR
#error "FUZZ_BUILD_DIR (build-fuzz/) must be defined"
#endif
#ifndef FUZZ_GST_PLUGINS_DIR
#error "FUZZ_GST_PLUGINS_DIR (the system GStreamer plugins) must be defined"
#endif

/* Bounds that keep one input at a few milliseconds */
#define MAX_ACTIONS 32
#define MAX_BUFFER (256 * 1024)
#define MAX_TOTAL (1024 * 1024)
#define MAX_META_DATA (1024 * 1024)
/* avspectrogram does about n-fft + 8 n-mels operations per frame (an FFT,
 * then a log and a 4-byte write per band) and makes a frame every
 * hop-length samples: with hop-length 1 and 4096 bands, 240 KB of audio
 * would be a billion log calls (legal, and a minute of work under ASan).
 * The audio of one input is cut to this much work. */
#define SPECTROGRAM_WORK (8 * 1024 * 1024)
/* avtensorsink (.npz) keeps each map once while streaming, but its final
 * file spells out the maps of a GstAvAttentionMeta once per frame of its
 * buffer (and NaN maps for the frames without one): a 240 KB buffer of
 * 4-float frames with 120 KB of maps would be 7 GB of file at
 * end-of-stream.  The metadata of one input is cut to this many bytes of
 * maps in the final file. */
#define TENSORSINK_WORK (16 * 1024 * 1024)
/* avpatchembed: built-in weights whose patch_embed.weight alone is larger
 * than this are not asked for (see set_property) */
#define BUILTIN_PATCH_BYTES (64 * 1024 * 1024)
#define MAX_SRCS 2
/* No EOS and no ERROR this long after the last input ended: a failure */
#define BUS_TIMEOUT (5 * GST_SECOND)
/* The WAIT action and the wait before a seek poll the appsrc queues this
 * long at most */
#define DRAIN_TIMEOUT_US 50000
#define DRAIN_IDLE_US 3000

/* ---------------------------------------------------------------------- */
/* GLib messages: a warning or a critical is a failure                     */
/* ---------------------------------------------------------------------- */

static volatile gint fatal_logs;

/* Known criticals of GStreamer itself that the elements cannot cause and
 * that any element built on the same base class can show: they are
 * reported once, not fatal. */
static const gchar *const known_upstream[] = {
  /* GstAggregator's default GAP handling clips the GAP against the pad's
   * segment; when the caps event was refused, GstPad skips the SEGMENT
   * (the sticky events stop at the failed caps) but still forwards the
   * GAP, and the pad's segment is still GST_FORMAT_UNDEFINED:
   *   appsrc caps=<refused> ! audiomixer, then a GAP event */
  "gst_segment_clip: assertion 'segment->format == format' failed",
  /* GstAggregator's push_eos() sets the seqnum of the segment it pushed
   * first; when no segment went out (none arrived, and the aggregator
   * still counts as flushing right after start, so push_mandatory_events
   * skips it), the seqnum is still invalid: the subclass has no say in
   * either (seen rarely, with EOS on every input before any data) */
  "gst_event_set_seqnum: assertion 'seqnum != GST_SEQNUM_INVALID' failed",
};

static void
fail_log (const gchar * domain, GLogLevelFlags level, const gchar * msg)
{
  const gchar *what = (level & G_LOG_LEVEL_ERROR) ? "ERROR" :
      (level & G_LOG_LEVEL_CRITICAL) ? "CRITICAL" : "WARNING";

  for (guint i = 0; msg && i < G_N_ELEMENTS (known_upstream); i++) {
    if (g_strcmp0 (domain, "GStreamer") == 0
        && strstr (msg, known_upstream[i]) != NULL) {
      /* once per process, and not in the "fuzz_elements: " form that
       * fuzz/run-fuzzers.sh takes for the start of a report */
      static gint told;
      if (g_atomic_int_compare_and_exchange (&told, 0, 1))
        fprintf (stderr, "fuzz_elements note: %s-%s: %s (a known GStreamer "
            "issue, not fatal: see docs/fuzzing.md)\n", domain, what, msg);
      return;
    }
  }
  /* "ERROR:" so that libFuzzer's fork mode shows this line too */
  fprintf (stderr, "fuzz_elements: ERROR: %s-%s: %s\n",
      domain ? domain : "(none)", what, msg ? msg : "(no message)");
  fflush (stderr);
  if (g_atomic_int_get (&fatal_logs))
    abort ();
}

static void
log_handler (const gchar * domain, GLogLevelFlags level, const gchar * msg,
    gpointer user_data)
{
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL |
          G_LOG_LEVEL_WARNING))
    fail_log (domain, level, msg);
}

static GLogWriterOutput
log_writer (GLogLevelFlags level, const GLogField * fields, gsize n_fields,
    gpointer user_data)
{
  const gchar *domain = NULL, *msg = NULL;

  if (!(level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL |
              G_LOG_LEVEL_WARNING)))
    return G_LOG_WRITER_HANDLED;
  for (gsize i = 0; i < n_fields; i++) {
    if (g_strcmp0 (fields[i].key, "GLIB_DOMAIN") == 0 && fields[i].length < 0)
      domain = fields[i].value;
    else if (g_strcmp0 (fields[i].key, "MESSAGE") == 0
        && fields[i].length < 0)
      msg = fields[i].value;
  }
  fail_log (domain, level, msg);
  return G_LOG_WRITER_HANDLED;
}

static void G_GNUC_NORETURN
harness_fail (const gchar * what)
{
  fprintf (stderr, "fuzz_elements: ERROR: %s\n", what);
  fflush (stderr);
  abort ();
}

/* FUZZ_ELEMENTS_TRACE=1 in the environment prints what an input does (to
 * read a crash input: build-fuzz/fuzz_elements CRASH-FILE). */
static gboolean tracing;
static gint64 trace_start;
/* FUZZ_ELEMENTS_LEAK_CHECK=1: a full leak check after every input */
static gboolean leak_check;

static void G_GNUC_PRINTF (1, 2)
trace (const gchar * format, ...)
{
  va_list args;
  gchar *text;

  if (!tracing)
    return;
  va_start (args, format);
  text = gst_info_strdup_vprintf (format, args);
  va_end (args);
  fprintf (stderr, "fuzz_elements: [%5.1f ms] %s\n",
      (g_get_monotonic_time () - trace_start) / 1000.0, text);
  g_free (text);
}

/* ---------------------------------------------------------------------- */
/* Input reader: bytes past the end read as 0                              */
/* ---------------------------------------------------------------------- */

typedef struct
{
  const guint8 *p;
  gsize n, i;
} Input;

static guint8
in_u8 (Input * in)
{
  return in->i < in->n ? in->p[in->i++] : 0;
}

static guint16
in_u16 (Input * in)
{
  guint16 lo = in_u8 (in);
  return lo | (guint16) (in_u8 (in) << 8);
}

static guint32
in_u32 (Input * in)
{
  guint32 lo = in_u16 (in);
  return lo | ((guint32) in_u16 (in) << 16);
}

static guint64
in_u64 (Input * in)
{
  guint64 lo = in_u32 (in);
  return lo | ((guint64) in_u32 (in) << 32);
}

static gboolean
in_done (Input * in)
{
  return in->i >= in->n;
}

/* A choice byte c picks a value: 0 keeps the default (returns FALSE),
 * 255 reads a value from the following bytes and maps it into [lo, hi],
 * anything else takes table[(c - 1) % n].  Table values are clamped into
 * [lo, hi], so whatever the bytes, only legal values come out. */
static gboolean
pick_int (Input * in, const gint64 * table, guint n, gint64 lo, gint64 hi,
    gint64 * out)
{
  guint8 c = in_u8 (in);

  if (c == 0)
    return FALSE;
  if (c == 255) {
    guint64 span = (guint64) (hi - lo) + 1;
    guint64 v = in_u64 (in);
    *out = span == 0 ? (gint64) v : lo + (gint64) (v % span);
  } else {
    *out = CLAMP (table[(c - 1) % n], lo, hi);
  }
  return TRUE;
}

static gboolean
pick_uint64 (Input * in, const guint64 * table, guint n, guint64 lo,
    guint64 hi, guint64 * out)
{
  guint8 c = in_u8 (in);

  if (c == 0)
    return FALSE;
  if (c == 255) {
    guint64 v = in_u64 (in);
    *out = (lo == 0 && hi == G_MAXUINT64) ? v : lo + v % (hi - lo + 1);
  } else {
    *out = CLAMP (table[(c - 1) % n], lo, hi);
  }
  return TRUE;
}

static gboolean
pick_double (Input * in, const gdouble * table, guint n, gdouble lo,
    gdouble hi, gdouble * out)
{
  guint8 c = in_u8 (in);

  if (c == 0)
    return FALSE;
  if (c == 255)
    *out = lo + (hi - lo) * (in_u32 (in) / (gdouble) G_MAXUINT32);
  else
    *out = CLAMP (table[(c - 1) % n], lo, hi);
  return TRUE;
}

#define PICK_INT(in, table, lo, hi, out) \
  pick_int ((in), (table), G_N_ELEMENTS (table), (lo), (hi), (out))
#define PICK_U64(in, table, lo, hi, out) \
  pick_uint64 ((in), (table), G_N_ELEMENTS (table), (lo), (hi), (out))
#define PICK_DOUBLE(in, table, lo, hi, out) \
  pick_double ((in), (table), G_N_ELEMENTS (table), (lo), (hi), (out))

/* ---------------------------------------------------------------------- */
/* Tables                                                                  */
/* ---------------------------------------------------------------------- */

static const gint64 small_ints[] = {
  1, 2, 3, 4, 8, 16, 64, 100, 160, 196, 256, 400, 4096, 16000, 65536,
  65537, 131072, 768000, G_MAXINT, 0, -1, G_MININT + 1, 7, 14, 224
};

static const guint64 times[] = {
  0, 1, GST_MSECOND, 10 * GST_MSECOND, 40 * GST_MSECOND, GST_SECOND / 30,
  GST_SECOND, 10 * GST_SECOND, 3600 * GST_SECOND, G_MAXINT64 / 2,
  G_MAXINT64 - 1, G_MAXUINT64 - 2, 999999999, GST_SECOND / 16000
};

static const gdouble rates[] = {
  1.0, 2.0, 0.5, -1.0, 1e-3, 1e3, -0.25, 1e-9, 1e9, -3.0
};

/* The seeded built-in weights ("", with model=seeded) or files of the seed
 * corpus of fuzz_weights:
 * a tiny avfusion-v1 model (E 8, H 2, L 1, F 8, M 4, P 2, N 4, T_max 4),
 * the same with sample-rate metadata, one the loader refuses, a missing
 * file and a folder. */
static gchar *weights_paths[6];

static const gchar *location_names[] = {
  "out.npy", "out.npz", NULL, "out.bin", "", "missing-dir/out.npz", ".npy",
  "out.NPZ"
};

static gchar *tmp_dir;

/* ---------------------------------------------------------------------- */
/* Caps                                                                    */
/* ---------------------------------------------------------------------- */

typedef enum
{
  CLASS_AUDIO,                  /* audio/x-raw */
  CLASS_VIDEO,                  /* video/x-raw */
  CLASS_TENSOR                  /* other/x-avtensor */
} CapsClass;

static const gchar *audio_formats[] = {
  GST_AUDIO_NE (F32), GST_AUDIO_NE (S16), GST_AUDIO_NE (F64),
  GST_AUDIO_OE (F32), "U8", GST_AUDIO_NE (S32)
};

static const gint64 audio_rates[] = {
  16000, 1, 2, 8000, 44100, 48000, 768000, 7, 768001, 22050, 100
};

static const gint64 audio_channels[] = {
  1, 2, 3, 6, 8, 64, 65, 16
};

static GstCaps *
audio_caps (Input * in)
{
  guint8 mode = in_u8 (in);
  const gchar *format = GST_AUDIO_NE (F32), *layout = "interleaved";
  gint64 rate = 16000, channels = 1;
  GstCaps *caps;

  if (mode < 128) {
    /* presets: the format avspectrogram takes, at extreme rates and
     * channel counts, and some it refuses */
    static const struct
    {
      guint8 format;
      gboolean planar;
      gint rate, channels;
    } presets[] = {
      {0, FALSE, 16000, 1}, {0, FALSE, 48000, 2}, {0, FALSE, 1, 1},
      {0, FALSE, 768000, 1}, {0, FALSE, 16000, 64}, {1, FALSE, 16000, 1},
      {0, TRUE, 16000, 2}, {2, FALSE, 16000, 1}, {0, FALSE, 8000, 6},
      {0, FALSE, 2, 3},
    };
    guint k = mode % G_N_ELEMENTS (presets);

    format = audio_formats[presets[k].format];
    layout = presets[k].planar ? "non-interleaved" : "interleaved";
    rate = presets[k].rate;
    channels = presets[k].channels;
    caps = gst_caps_new_simple ("audio/x-raw", "format", G_TYPE_STRING,
        format, "layout", G_TYPE_STRING, layout, "rate", G_TYPE_INT,
        (gint) rate, "channels", G_TYPE_INT, (gint) channels, NULL);
    if (channels > 1)
      gst_caps_set_simple (caps, "channel-mask", GST_TYPE_BITMASK,
          gst_audio_channel_get_fallback_mask ((gint) channels), NULL);
    return caps;
  }

  format = audio_formats[in_u8 (in) % G_N_ELEMENTS (audio_formats)];
  layout = (in_u8 (in) & 1) ? "non-interleaved" : "interleaved";
  PICK_INT (in, audio_rates, 1, G_MAXINT, &rate);
  PICK_INT (in, audio_channels, 1, G_MAXINT, &channels);
  caps = gst_caps_new_simple ("audio/x-raw", "format", G_TYPE_STRING, format,
      "layout", G_TYPE_STRING, layout, "rate", G_TYPE_INT, (gint) rate,
      "channels", G_TYPE_INT, (gint) channels, NULL);
  /* Only masks that GStreamer takes as valid: a mask with positions that
   * do not exist makes gst_audio_info_from_caps() print a g_warning,
   * which is GStreamer's answer to invalid caps, not our elements'. */
  switch (in_u8 (in) % 4) {
    case 0:                    /* no mask */
      break;
    case 1:
      if (channels <= 64)
        gst_caps_set_simple (caps, "channel-mask", GST_TYPE_BITMASK,
            gst_audio_channel_get_fallback_mask ((gint) channels), NULL);
      break;
    case 2:                    /* unpositioned */
      gst_caps_set_simple (caps, "channel-mask", GST_TYPE_BITMASK,
          (guint64) 0, NULL);
      break;
    default:{                  /* channels positions out of the 28 named */
      guint32 bits = in_u32 (in);
      guint64 mask = 0;
      gint64 left = channels;
      for (guint b = 0; b < 28 && left > 0; b++) {
        if (bits & (1u << b)) {
          mask |= (guint64) 1 << b;
          left--;
        }
      }
      if (left == 0)
        gst_caps_set_simple (caps, "channel-mask", GST_TYPE_BITMASK, mask,
            NULL);
      break;
    }
  }
  return caps;
}

static const gchar *video_formats[] = {
  "RGB", "BGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGBA", "BGRA", "ARGB",
  "ABGR", "I420", "NV12", "GRAY8", "YUY2", "RGB16"
};

static const gint64 video_sides[] = {
  224, 1, 2, 3, 4, 8, 14, 16, 223, 448, 64, 48, 65536, 65537, 17, 32
};

static const gchar *colorimetries[] = {
  "bt601", "bt709", "sRGB", "bt2020", "1:4:0:0", "2:0:0:0", "nonsense"
};

static void
set_framerate (GstCaps * caps, Input * in)
{
  static const gint fps[][2] = {
    {30, 1}, {25, 1}, {0, 1}, {30000, 1001}, {1, 1000}, {G_MAXINT, 1},
    {1, G_MAXINT}, {16000, 160}, {100, 1}
  };
  guint8 c = in_u8 (in);

  if (c == 0)
    return;                     /* no frame rate */
  if (c == 255) {
    gint n = in_u16 (in), d = 1 + in_u16 (in);
    gst_caps_set_simple (caps, "framerate", GST_TYPE_FRACTION, n, d, NULL);
  } else if (c == 254) {
    /* of the wrong type */
    gst_caps_set_simple (caps, "framerate", G_TYPE_INT, 30, NULL);
  } else {
    guint k = (c - 1) % G_N_ELEMENTS (fps);
    gst_caps_set_simple (caps, "framerate", GST_TYPE_FRACTION, fps[k][0],
        fps[k][1], NULL);
  }
}

static GstCaps *
video_caps (Input * in)
{
  guint8 mode = in_u8 (in);
  gint64 width = 224, height = 224;
  const gchar *format;
  GstCaps *caps;
  guint8 extras;

  if (mode < 128) {
    /* presets: the sizes of the built-in and the tiny weights, tiny,
     * odd and huge pictures, YUV for the overlay */
    static const struct
    {
      guint8 format;
      gint width, height;
    } presets[] = {
      {0, 224, 224}, {2, 4, 4}, {6, 8, 2}, {1, 14, 14}, {10, 64, 48},
      {11, 64, 48}, {0, 1, 1}, {8, 65536, 1}, {12, 16, 16}, {0, 223, 224},
      {10, 3, 3}, {11, 1, 1}, {3, 16, 16}, {9, 2, 8}, {4, 5, 7},
    };
    guint k = mode % G_N_ELEMENTS (presets);

    caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING,
        video_formats[presets[k].format], "width", G_TYPE_INT,
        presets[k].width, "height", G_TYPE_INT, presets[k].height,
        "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
    return caps;
  }
  format = video_formats[in_u8 (in) % G_N_ELEMENTS (video_formats)];
  PICK_INT (in, video_sides, 1, G_MAXINT, &width);
  PICK_INT (in, video_sides, 1, G_MAXINT, &height);
  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, format,
      "width", G_TYPE_INT, (gint) width, "height", G_TYPE_INT, (gint) height,
      NULL);
  set_framerate (caps, in);
  extras = in_u8 (in);
  if (extras & 1)
    gst_caps_set_simple (caps, "colorimetry", G_TYPE_STRING,
        colorimetries[in_u8 (in) % G_N_ELEMENTS (colorimetries)], NULL);
  if (extras & 2)
    gst_caps_set_simple (caps, "pixel-aspect-ratio", GST_TYPE_FRACTION,
        1 + in_u8 (in), 1 + in_u8 (in), NULL);
  if (extras & 4)
    gst_caps_set_simple (caps, "interlace-mode", G_TYPE_STRING,
        (extras & 8) ? "interleaved" : "progressive", NULL);
  return caps;
}

/* One field of free-form tensor caps: an int from the table, absent, or a
 * value of the wrong type. */
static void
tensor_field (GstCaps * caps, Input * in, const gchar * name)
{
  guint8 how = in_u8 (in);
  gint64 v = 4;

  switch (how % 8) {
    case 5:                    /* absent */
      break;
    case 6:
      gst_caps_set_simple (caps, name, G_TYPE_STRING, "7", NULL);
      break;
    case 7:
      gst_caps_set_simple (caps, name, G_TYPE_DOUBLE, 4.0, NULL);
      break;
    default:
      PICK_INT (in, small_ints, G_MININT, G_MAXINT, &v);
      gst_caps_set_simple (caps, name, G_TYPE_INT, (gint) v, NULL);
      break;
  }
}

static GstCaps *
tensor_caps (Input * in)
{
  guint8 mode = in_u8 (in);
  static const gchar *kinds[] = {
    GST_AV_TENSOR_KIND_LOG_MEL, GST_AV_TENSOR_KIND_PATCHES,
    GST_AV_TENSOR_KIND_FUSED, "attention", NULL
  };
  static const gchar *dtypes[] = { "float32", "float16", NULL, "int8" };
  const gchar *kind, *dtype;
  GstCaps *caps;

  if (mode < 128) {
    /* presets made by the elements' own caps functions: those of the
     * built-in weights (M 64, E 256, 14x14 patches of 16, fused 512) and
     * of the tiny weights file (M 4, E 8, 2x2 patches of 2, fused 16) */
    switch (mode % 12) {
      case 0:
        return gst_av_tensor_caps_log_mel (64, 16000, 160, 400);
      case 1:
        return gst_av_tensor_caps_log_mel (4, 16000, 160, 400);
      case 2:
        return gst_av_tensor_caps_patches (256, 14, 14, 16, 30, 1);
      case 3:
        return gst_av_tensor_caps_patches (8, 2, 2, 2, 25, 1);
      case 4:
        return gst_av_tensor_caps_fused (512, 30, 1);
      case 5:
        return gst_av_tensor_caps_fused (16, 25, 1);
      case 6:
        return gst_av_tensor_caps_log_mel (4, 100, 25, 50);
      case 7:
        return gst_av_tensor_caps_patches (8, 4, 1, 2, 0, 1);
      case 8:
        return gst_av_tensor_caps_fused (1, 0, 1);
      case 9:
        return gst_av_tensor_caps_log_mel (4096, 768000, 1, 2);
      case 10:
        return gst_av_tensor_caps_patches (65536, 1, 1, 1, 1, 1);
      default:
        return gst_av_tensor_caps_log_mel (4, 1, 16777216, 65536);
    }
  }

  kind = kinds[in_u8 (in) % G_N_ELEMENTS (kinds)];
  dtype = dtypes[in_u8 (in) % G_N_ELEMENTS (dtypes)];
  caps = gst_caps_new_empty_simple (GST_AV_TENSOR_MEDIA_TYPE);
  if (kind)
    gst_caps_set_simple (caps, "kind", G_TYPE_STRING, kind, NULL);
  if (dtype && g_strcmp0 (dtype, "int8") != 0)
    gst_caps_set_simple (caps, "dtype", G_TYPE_STRING, dtype, NULL);
  else if (dtype)
    gst_caps_set_simple (caps, "dtype", G_TYPE_INT, 8, NULL);
  /* every field of every kind, so that a kind change finds its fields */
  tensor_field (caps, in, "n-mels");
  tensor_field (caps, in, "rate");
  tensor_field (caps, in, "hop-length");
  tensor_field (caps, in, "n-fft");
  tensor_field (caps, in, "embed-dim");
  tensor_field (caps, in, "num-patches");
  tensor_field (caps, in, "grid-columns");
  tensor_field (caps, in, "grid-rows");
  tensor_field (caps, in, "patch-size");
  tensor_field (caps, in, "width");
  if (in_u8 (in) & 1)
    gst_caps_set_simple (caps, "frame-shape", G_TYPE_STRING, "4,8", NULL);
  set_framerate (caps, in);
  return caps;
}

static GstCaps *
make_caps (CapsClass klass, Input * in)
{
  switch (klass) {
    case CLASS_AUDIO:
      return audio_caps (in);
    case CLASS_VIDEO:
      return video_caps (in);
    default:
      return tensor_caps (in);
  }
}

/* ---------------------------------------------------------------------- */
/* Sources                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct
{
  GstAppSrc *appsrc;
  CapsClass klass;
  GstCaps *caps;                /* the last caps given to appsrc */
  /* what the caps say, for natural sizes and durations */
  gsize unit;                   /* bytes of one sample frame / picture /
                                 * tensor frame; 0 when unknown */
  gint rate;                    /* audio */
  gint fps_n, fps_d;            /* video and tensors */
  gboolean have_vinfo;
  GstVideoInfo vinfo;
  gboolean seekable;             /* stream-type seekable, format time */
  GstClockTime next_pts;
  gboolean have_segment;
  GstSegment segment;           /* sent with the next buffer */
  GstBuffer *last;              /* for the REPEAT action */
} Src;

typedef struct
{
  GstElement *pipeline;
  GstElement *element;
  GstPad *sink_pad;             /* of the fakesink or avtensorsink */
  guint kind;                   /* ELEMENT_* */
  guint n_srcs;
  Src srcs[MAX_SRCS];
  gsize total;                  /* bytes pushed so far */
  /* avspectrogram: its settings and the work done so far, in frames times
   * (n-fft + 8 n-mels) (see SPECTROGRAM_WORK); avtensorsink: bytes of
   * attention maps (see TENSORSINK_WORK) */
  gint64 n_fft, hop, n_mels;
  guint64 work;
  guint64 frames;               /* avtensorsink: tensor frames pushed */
  gsize meta_size;              /* avtensorsink: the data block of the first
                                 * GstAvAttentionMeta, 0 before */
  gboolean failed;              /* an ERROR was seen on the bus */
} Run;

enum
{
  ELEMENT_SPECTROGRAM,
  ELEMENT_PATCHEMBED,
  ELEMENT_TENSORSINK,
  ELEMENT_ATTENTION,
  ELEMENT_OVERLAY,
  N_ELEMENTS
};

static void
src_set_caps (Src * s, GstCaps * caps)
{
  trace ("  caps %" GST_PTR_FORMAT, caps);
  gst_caps_replace (&s->caps, caps);
  s->unit = 0;
  s->rate = 0;
  s->fps_n = 0;
  s->fps_d = 1;
  s->have_vinfo = FALSE;

  switch (s->klass) {
    case CLASS_AUDIO:{
      GstAudioInfo info;
      if (gst_audio_info_from_caps (&info, caps)) {
        s->unit = GST_AUDIO_INFO_BPF (&info);
        s->rate = GST_AUDIO_INFO_RATE (&info);
      }
      break;
    }
    case CLASS_VIDEO:
      if (gst_video_info_from_caps (&s->vinfo, caps)) {
        s->have_vinfo = TRUE;
        s->unit = GST_VIDEO_INFO_SIZE (&s->vinfo);
        s->fps_n = GST_VIDEO_INFO_FPS_N (&s->vinfo);
        s->fps_d = GST_VIDEO_INFO_FPS_D (&s->vinfo);
      }
      break;
    default:{
      GstAvTensorInfo info;
      /* NULL: the reason is not wanted (this once leaked it) */
      gboolean ok = gst_av_tensor_info_from_caps (&info, caps, NULL);
      if (ok && info.frame_size <= MAX_BUFFER / sizeof (gfloat)) {
        s->unit = info.frame_size * sizeof (gfloat);
        s->fps_n = info.fps_n;
        s->fps_d = info.fps_d;
      }
      break;
    }
  }
  gst_app_src_set_caps (s->appsrc, caps);
}

/* The natural duration of a buffer of size bytes, or NONE. */
static GstClockTime
natural_duration (Src * s, gsize size)
{
  switch (s->klass) {
    case CLASS_AUDIO:
      if (s->unit > 0 && s->rate > 0)
        return gst_util_uint64_scale (size / s->unit, GST_SECOND, s->rate);
      return GST_CLOCK_TIME_NONE;
    case CLASS_VIDEO:
      if (s->fps_n > 0 && s->fps_d > 0)
        return gst_util_uint64_scale (GST_SECOND, s->fps_d, s->fps_n);
      return GST_CLOCK_TIME_NONE;
    default:
      if (s->unit > 0 && s->fps_n > 0 && s->fps_d > 0)
        return gst_util_uint64_scale (size / s->unit * (guint64) s->fps_d,
            GST_SECOND, s->fps_n);
      return GST_CLOCK_TIME_NONE;
  }
}

/* ---------------------------------------------------------------------- */
/* Buffer contents                                                         */
/* ---------------------------------------------------------------------- */

static const gfloat special_floats[] = {
  0.0f, 1.0f, -1.0f, NAN, INFINITY, -INFINITY, 3.4028235e38f,
  -3.4028235e38f, 1e-40f, 1e30f, 0.5f, -0.0f, 1e-7f, 0.25f
};

static void
fill (guint8 * data, gsize size, Input * in)
{
  guint8 mode = in_u8 (in);

  switch (mode % 5) {
    case 0:{                   /* a sine of the chosen step, float32 */
      gfloat step = (1 + in_u8 (in)) * 0.01f;
      for (gsize i = 0; i + 4 <= size; i += 4) {
        gfloat v = sinf (step * (gfloat) (i / 4));
        memcpy (data + i, &v, 4);
      }
      for (gsize i = size & ~(gsize) 3; i < size; i++)
        data[i] = 0x55;
      break;
    }
    case 1:{                   /* a pattern of up to 32 input bytes */
      guint8 pat[32];
      guint len = 1 + in_u8 (in) % 32;
      for (guint k = 0; k < len; k++)
        pat[k] = in_u8 (in);
      for (gsize i = 0; i < size; i++)
        data[i] = pat[i % len];
      break;
    }
    case 2:{                   /* two special floats, alternating */
      gfloat a = special_floats[in_u8 (in) % G_N_ELEMENTS (special_floats)];
      gfloat b = special_floats[in_u8 (in) % G_N_ELEMENTS (special_floats)];
      for (gsize i = 0; i + 4 <= size; i += 4)
        memcpy (data + i, (i / 4) % 2 ? &b : &a, 4);
      for (gsize i = size & ~(gsize) 3; i < size; i++)
        data[i] = 0xff;
      break;
    }
    case 3:
      memset (data, 0, size);
      break;
    default:{                  /* a byte ramp */
      guint8 step = in_u8 (in);
      for (gsize i = 0; i < size; i++)
        data[i] = (guint8) (i * (step | 1));
      break;
    }
  }
}

/* A buffer of size bytes: plain, unaligned, in two memories, read-only. */
static GstBuffer *
make_buffer (gsize size, Input * in)
{
  guint8 mode = in_u8 (in) % 5;
  static const gchar *names[] = {
    "aligned", "unaligned", "two memories", "read-only", "read-only"
  };
  GstBuffer *buf;

  trace ("  %s memory", names[mode == 2 && size < 2 ? 3 : mode]);

  if (mode == 0 || mode == 1) {
    gsize off = mode == 1 ? 1 + in_u8 (in) % 3 : 0;
    GstMapInfo map;

    buf = gst_buffer_new_allocate (NULL, size + off, NULL);
    gst_buffer_resize (buf, (gssize) off, (gssize) size);
    if (size > 0 && gst_buffer_map (buf, &map, GST_MAP_WRITE)) {
      fill (map.data, map.size, in);
      gst_buffer_unmap (buf, &map);
    } else {
      /* the same input bytes are read whatever the size */
      guint8 none;
      fill (&none, 0, in);
    }
  } else if (mode == 2 && size >= 2) {
    gsize cut = 1 + in_u16 (in) % (size - 1);
    guint8 *bytes = g_malloc (size);
    gpointer a, b;

    fill (bytes, size, in);
    a = g_memdup2 (bytes, cut);
    b = g_memdup2 (bytes + cut, size - cut);
    buf = gst_buffer_new ();
    gst_buffer_append_memory (buf, gst_memory_new_wrapped (0, a, cut, 0,
            cut, a, g_free));
    gst_buffer_append_memory (buf, gst_memory_new_wrapped (0, b, size - cut,
            0, size - cut, b, g_free));
    g_free (bytes);
  } else {
    /* read-only memory (mode 3) or two bytes or less */
    guint8 *bytes = g_malloc (MAX (size, 1));

    fill (bytes, size, in);
    buf = gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY, bytes,
        MAX (size, 1), 0, size, bytes, g_free);
  }
  return buf;
}

/* A GstVideoMeta layout: the strides and offsets of the caps, padded by
 * input bytes (so that the buffer has to be larger), or (how 2) one whose
 * picture is wider than the caps say. */
typedef struct
{
  guint n_planes;
  gsize offset[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
  guint width, height;
  gsize size;                   /* bytes the planes need */
} MetaLayout;

static void
video_meta_layout (MetaLayout * m, const GstVideoInfo * vi, guint8 how,
    Input * in)
{
  gsize at = in_u8 (in) % 64;
  guint pad = in_u8 (in);
  gint w = GST_VIDEO_INFO_WIDTH (vi);

  m->n_planes = GST_VIDEO_INFO_N_PLANES (vi);
  for (guint p = 0; p < m->n_planes; p++) {
    gsize end = p + 1 < m->n_planes ? GST_VIDEO_INFO_PLANE_OFFSET (vi, p + 1)
        : GST_VIDEO_INFO_SIZE (vi);
    gint stride = GST_VIDEO_INFO_PLANE_STRIDE (vi, p);
    gsize rows = stride > 0 ? (end - GST_VIDEO_INFO_PLANE_OFFSET (vi, p))
        / (gsize) stride : 1;

    m->stride[p] = stride + (gint) pad;
    m->offset[p] = at;
    at += (gsize) m->stride[p] * MAX (rows, 1);
  }
  m->size = at;
  m->width = (guint) (how == 2 ? (w < G_MAXINT ? w + 1 : w - 1) : w);
  m->height = (guint) GST_VIDEO_INFO_HEIGHT (vi);
}

/* A GstAvAttentionMeta made through the public API with input sizes and
 * contents, as avattention would attach it (or an inconsistent one). */
static gboolean
add_attention_meta (Run * r, GstBuffer * buf, gsize frames, Input * in)
{
  static const GstAvAttentionModule modules[] = {
    GST_AV_ATTENTION_MODULE_AUDIO_SELF, GST_AV_ATTENTION_MODULE_VIDEO_SELF,
    GST_AV_ATTENTION_MODULE_AUDIO_CROSS, GST_AV_ATTENTION_MODULE_VIDEO_CROSS
  };
  guint8 l = in_u8 (in), h = in_u8 (in), mh = in_u8 (in);
  guint n_layers = l == 255 ? GST_AV_ATTENTION_MAX_LAYERS : 1 + l % 3;
  guint n_heads = 1 + h % 4, model_heads = 1 + mh % 8;
  guint T = in_u8 (in) % 9, cols = in_u8 (in) % 17, rows = in_u8 (in) % 17;
  guint8 flags = in_u8 (in), skipped = in_u8 (in);
  gsize size;
  GstAvAttentionMeta *meta;
  GstBuffer *data;
  GstMapInfo map;

  /* the meta API wants at least one slot and one patch (a critical
   * otherwise); this input once found that an empty block was
   * dereferenced, now refused by gst_buffer_add_av_attention_meta */
  T = MAX (T, 1);
  cols = MAX (cols, 1);
  rows = MAX (rows, 1);
  size = gst_av_attention_meta_data_size (n_layers, n_heads, T, cols * rows);
  if (size > MAX_META_DATA)
    return FALSE;
  /* avtensorsink's final file has the maps once per frame of the buffer,
   * and with the first meta NaN maps for every frame before it */
  if (r->kind == ELEMENT_TENSORSINK) {
    guint64 out = (guint64) MAX (frames, 1) * size;
    if (r->meta_size == 0)
      out += r->frames * size;
    if (r->work + out > TENSORSINK_WORK) {
      trace ("  (no GstAvAttentionMeta: over the work budget)");
      return FALSE;
    }
    r->work += out;
    if (r->meta_size == 0)
      r->meta_size = MAX (size, 1);
  }
  data = gst_buffer_new_allocate (NULL, size, NULL);
  if (size > 0 && gst_buffer_map (data, &map, GST_MAP_WRITE)) {
    fill (map.data, map.size, in);
    gst_buffer_unmap (data, &map);
  } else {
    guint8 none;
    fill (&none, 0, in);
  }
  meta = gst_buffer_add_av_attention_meta (buf, n_layers, n_heads,
      model_heads, T, cols, rows, data);
  if (meta == NULL)
    return FALSE;
  trace ("  GstAvAttentionMeta: %u layers, %u heads (model %u), T %u, "
      "grid %ux%u, flags 0x%x, skipped 0x%x", n_layers, n_heads, model_heads,
      T, cols, rows, flags, skipped);
  meta->window_start = times[in_u8 (in) % G_N_ELEMENTS (times)];
  meta->window_end = times[in_u8 (in) % G_N_ELEMENTS (times)];
  meta->n_audio_present = flags & 4 ? T : in_u8 (in);
  meta->audio_missing = (flags & 1) != 0;
  meta->audio_ended = (flags & 2) != 0;
  if ((flags & 8) && T > 0) {
    /* a mask of 0/1 (or any byte) per slot (an empty data block has no
     * writable mapping) */
    guint8 *mask = gst_av_attention_meta_get_audio_mask_writable (meta);
    for (guint t = 0; mask && t < T; t++)
      mask[t] = (flags & 16) ? in_u8 (in) : (in_u8 (in) & 1);
  }
  for (guint m = 0; m < G_N_ELEMENTS (modules); m++)
    gst_av_attention_meta_set_skipped (meta, 0, modules[m],
        (skipped >> m) & 1);
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Actions                                                                 */
/* ---------------------------------------------------------------------- */

enum
{
  ACT_PUSH,
  ACT_CAPS,
  ACT_GAP,
  ACT_SEGMENT,
  ACT_SEEK,
  ACT_EOS,
  ACT_PROPERTY,
  ACT_STATE,
  ACT_WAIT,
  ACT_REPEAT,
  N_ACTIONS
};

static Src *
pick_src (Run * r, Input * in)
{
  return &r->srcs[in_u8 (in) % r->n_srcs];
}

static void
do_push (Run * r, Input * in)
{
  static const guint flag_bits[] = {
    GST_BUFFER_FLAG_DISCONT, GST_BUFFER_FLAG_GAP, GST_BUFFER_FLAG_DELTA_UNIT,
    GST_BUFFER_FLAG_HEADER, GST_BUFFER_FLAG_DROPPABLE,
    GST_BUFFER_FLAG_RESYNC, GST_BUFFER_FLAG_CORRUPTED,
  };
  Src *s = pick_src (r, in);
  guint8 size_mode = in_u8 (in), meta = in_u8 (in);
  gsize unit = s->unit > 0 ? s->unit : 4, small = unit, size, room;
  MetaLayout layout = { 0 };
  gboolean video_meta = FALSE;
  GstClockTime pts = GST_CLOCK_TIME_NONE, dur = GST_CLOCK_TIME_NONE;
  guint8 pts_mode, dur_mode, flags;
  GstBuffer *buf;

  room = MIN (MAX_BUFFER, MAX_TOTAL - r->total);
  if (r->kind == ELEMENT_TENSORSINK && r->meta_size > 0 && s->unit > 0) {
    /* after the first meta every frame gets maps (NaN without a meta) */
    guint64 frames = (TENSORSINK_WORK - MIN (r->work, TENSORSINK_WORK))
        / r->meta_size;
    if (frames < room / s->unit)
      room = frames * s->unit;
  }
  if (r->kind == ELEMENT_SPECTROGRAM && s->unit > 0) {
    guint64 per_frame = (guint64) (r->n_fft + 8 * r->n_mels);
    guint64 frames = (SPECTROGRAM_WORK - MIN (r->work, SPECTROGRAM_WORK))
        / per_frame;
    guint64 samples = frames * (guint64) r->hop;
    if (samples < room / s->unit)
      room = samples * s->unit;
  }
  /* video with a padded GstVideoMeta: the unit is what the planes need */
  if (s->klass == CLASS_VIDEO && s->have_vinfo && meta % 4 != 0) {
    video_meta_layout (&layout, &s->vinfo, meta % 4, in);
    video_meta = TRUE;
    if (layout.size > 0)
      unit = small = layout.size;
  }
  /* audio comes in chunks of 64 sample frames */
  if (s->klass == CLASS_AUDIO)
    unit = small * 64;
  switch (size_mode % 4) {
    case 0:{                   /* k whole units (1 when k is 0) */
      gsize k = MAX (1, size_mode / 4);
      size = unit <= room / k ? k * unit : room / unit * unit;
      break;
    }
    case 1:{                   /* one small unit and a few bytes more or
                                 * less: partial sample frames, short
                                 * pictures and tensors */
      gint d = (gint) (size_mode / 4) % 16 - 8;
      size = (gssize) small + d > 0 ? (gsize) ((gssize) small + d) : 0;
      break;
    }
    case 2:
      size = in_u16 (in);
      break;
    default:                   /* nothing, or any size */
      size = size_mode / 4 == 0 ? 0 : in_u32 (in) % (room + 1);
      break;
  }
  size = MIN (size, room);
  r->total += size;
  if (r->kind == ELEMENT_SPECTROGRAM && s->unit > 0)
    r->work += (size / s->unit / (guint64) r->hop + 1)
        * (guint64) (r->n_fft + 8 * r->n_mels);
  buf = make_buffer (size, in);

  if (video_meta) {
    trace ("  GstVideoMeta %ux%u, %u planes, stride[0] %d, offset[0] %"
        G_GSIZE_FORMAT, layout.width, layout.height, layout.n_planes,
        layout.stride[0], layout.offset[0]);
    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (&s->vinfo), layout.width, layout.height,
        layout.n_planes, layout.offset, layout.stride);
  } else if (r->kind == ELEMENT_TENSORSINK) {
    gsize frames = s->unit > 0 ? size / s->unit : 0;
    gboolean had_meta = r->meta_size > 0;
    gboolean attached = meta % 4 != 0
        && add_attention_meta (r, buf, frames, in);
    /* frames without a meta after the first one get NaN maps */
    if (had_meta && !attached)
      r->work += (guint64) frames * r->meta_size;
    r->frames += frames;
  } else if (meta % 4 != 0 && s->klass == CLASS_TENSOR) {
    add_attention_meta (r, buf, s->unit > 0 ? size / s->unit : 1, in);
  }

  pts_mode = in_u8 (in);
  switch (pts_mode % 5) {
    case 0:
      pts = s->next_pts;
      break;
    case 1:
      pts = GST_CLOCK_TIME_NONE;
      break;
    case 2:
      pts = times[(pts_mode / 5) % G_N_ELEMENTS (times)];
      break;
    case 3:{                   /* a little off the expected time */
      gint64 jitter = (gint16) in_u16 (in) * (gint64) 1000;
      if (jitter < 0)
        pts = s->next_pts > (guint64) - jitter ? s->next_pts + jitter : 0;
      else
        pts = s->next_pts < G_MAXUINT64 - 1 - jitter ? s->next_pts + jitter
            : s->next_pts;
      break;
    }
    default:
      pts = in_u64 (in);
      break;
  }
  dur_mode = in_u8 (in);
  switch (dur_mode % 4) {
    case 0:
      dur = natural_duration (s, size);
      break;
    case 1:
      dur = GST_CLOCK_TIME_NONE;
      break;
    case 2:
      dur = times[(dur_mode / 4) % G_N_ELEMENTS (times)];
      break;
    default:
      dur = in_u32 (in);
      break;
  }
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = dur;
  flags = in_u8 (in);
  for (guint b = 0; b < G_N_ELEMENTS (flag_bits); b++)
    if (flags & (1 << b))
      GST_BUFFER_FLAG_SET (buf, flag_bits[b]);
  if (flags & 0x80)
    GST_BUFFER_DTS (buf) = pts;
  if (GST_CLOCK_TIME_IS_VALID (pts) && GST_CLOCK_TIME_IS_VALID (dur)
      && pts <= G_MAXUINT64 - 1 - dur)
    s->next_pts = pts + dur;

  trace ("  src %d: buffer of %" G_GSIZE_FORMAT " bytes, pts %" GST_TIME_FORMAT
      ", duration %" GST_TIME_FORMAT ", flags 0x%x%s", (gint) (s - r->srcs),
      size, GST_TIME_ARGS (pts), GST_TIME_ARGS (dur), GST_BUFFER_FLAGS (buf),
      s->have_segment ? ", with a new segment" : "");
  gst_buffer_replace (&s->last, buf);
  if (s->have_segment) {
    GstSample *sample = gst_sample_new (buf, s->caps, &s->segment, NULL);
    s->have_segment = FALSE;
    gst_app_src_push_sample (s->appsrc, sample);
    gst_sample_unref (sample);
    gst_buffer_unref (buf);
  } else {
    gst_app_src_push_buffer (s->appsrc, buf);
  }
}

static void
do_segment (Run * r, Input * in)
{
  Src *s = pick_src (r, in);
  GstSegment *seg = &s->segment;
  gdouble rate = 1.0, applied = 1.0;
  guint64 start = 0, stop, span = 0, t;
  guint8 flags;

  gst_segment_init (seg, GST_FORMAT_TIME);
  PICK_DOUBLE (in, rates, -1e9, 1e9, &rate);
  if (rate == 0.0)
    rate = 1.0;
  PICK_DOUBLE (in, rates, -1e9, 1e9, &applied);
  if (applied == 0.0)
    applied = 1.0;
  PICK_U64 (in, times, 0, G_MAXINT64, &start);
  stop = GST_CLOCK_TIME_NONE;
  if (PICK_U64 (in, times, 0, G_MAXINT64, &span))
    stop = start + span;
  /* reverse playback needs a stop (GStreamer asserts otherwise) */
  if (rate < 0.0 && !GST_CLOCK_TIME_IS_VALID (stop))
    stop = start + GST_SECOND;
  seg->rate = rate;
  seg->applied_rate = applied;
  seg->start = start;
  seg->stop = stop;
  seg->position = start;
  seg->time = start;
  if (PICK_U64 (in, times, 0, G_MAXINT64, &t))
    seg->time = t;
  if (PICK_U64 (in, times, 0, G_MAXINT64, &t))
    seg->base = t;
  flags = in_u8 (in);
  /* not GST_SEGMENT_FLAG_SEGMENT: with it the stream ends in a
   * SEGMENT_DONE instead of EOS */
  if (flags & 1)
    seg->flags |= GST_SEGMENT_FLAG_RESET;
  if (flags & 2)
    seg->flags |= GST_SEGMENT_FLAG_TRICKMODE;
  if (flags & 4)
    seg->flags |= GST_SEGMENT_FLAG_TRICKMODE_KEY_UNITS;
  s->have_segment = TRUE;
  trace ("  src %d: segment for the next buffer: %" GST_SEGMENT_FORMAT,
      (gint) (s - r->srcs), seg);
}

static void
do_gap (Run * r, Input * in)
{
  Src *s = pick_src (r, in);
  guint64 ts = s->next_pts, dur = GST_CLOCK_TIME_NONE, d;

  PICK_U64 (in, times, 0, G_MAXUINT64 - 2, &ts);
  if (PICK_U64 (in, times, 0, G_MAXUINT64 - 2, &d))
    dur = d;
  if (GST_CLOCK_TIME_IS_VALID (dur) && ts <= G_MAXUINT64 - 1 - dur)
    s->next_pts = ts + dur;
  trace ("  src %d: GAP event at %" GST_TIME_FORMAT ", duration %"
      GST_TIME_FORMAT, (gint) (s - r->srcs), GST_TIME_ARGS (ts),
      GST_TIME_ARGS (dur));
  gst_element_send_event (GST_ELEMENT (s->appsrc), gst_event_new_gap (ts,
          dur));
}

/* Waits until every appsrc has handed its queued buffers to the element,
 * or until the queues stop moving for DRAIN_IDLE_US (an aggregator waiting
 * for its other input), DRAIN_TIMEOUT_US at most. */
static void
drain (Run * r)
{
  gint64 now = g_get_monotonic_time (), end = now + DRAIN_TIMEOUT_US;
  gint64 moved = now;
  guint64 last = G_MAXUINT64;

  for (;;) {
    guint64 queued = 0;
    for (guint k = 0; k < r->n_srcs; k++)
      queued += gst_app_src_get_current_level_buffers (r->srcs[k].appsrc);
    now = g_get_monotonic_time ();
    if (queued != last) {
      last = queued;
      moved = now;
    }
    if (queued == 0 || now > end || now - moved > DRAIN_IDLE_US)
      return;
    g_usleep (100);
  }
}

static void
do_seek (Run * r, Input * in)
{
  guint8 target = in_u8 (in) % (r->n_srcs + 1), how = in_u8 (in);
  GstSeekFlags flags = GST_SEEK_FLAG_NONE;
  gdouble rate = 1.0;
  guint64 start = 0, span, stop = GST_CLOCK_TIME_NONE;
  GstElement *e;

  PICK_DOUBLE (in, rates, -1e9, 1e9, &rate);
  if (rate == 0.0)
    rate = 1.0;
  PICK_U64 (in, times, 0, G_MAXINT64, &start);
  if (PICK_U64 (in, times, 0, G_MAXINT64, &span))
    stop = start + MIN (span, G_MAXINT64 - start);
  if (rate < 0.0 && !GST_CLOCK_TIME_IS_VALID (stop))
    stop = start + MIN (GST_SECOND, G_MAXINT64 - start);
  /* Always flushing: a non-flushing seek waits for the streaming thread,
   * which may be blocked in an aggregator waiting for the other input (a
   * deadlock of the application, not of the element).  Never
   * GST_SEEK_FLAG_SEGMENT: the stream would end in SEGMENT_DONE. */
  flags |= GST_SEEK_FLAG_FLUSH;
  if (how & 2)
    flags |= GST_SEEK_FLAG_ACCURATE;
  if (how & 4)
    flags |= GST_SEEK_FLAG_KEY_UNIT;
  /* SNAP only goes with KEY_UNIT (else GStreamer warns) */
  if ((how & 5) == 5)
    flags |= GST_SEEK_FLAG_SNAP_NEAREST;
  if (how & 8)
    flags |= GST_SEEK_FLAG_TRICKMODE;
  e = target == 0 ? r->pipeline : GST_ELEMENT (r->srcs[target - 1].appsrc);
  if (target == 0 && r->n_srcs > 1) {
    /* GstAggregator (1.22) stops its source pad task for a flushing seek
     * and restarts it only when the flush comes back from every sink pad:
     * with an upstream that cannot seek (stream-type stream, or a TIME
     * seek on a BYTES source) it stays stopped and the pipeline never
     * ends.  audiomixer and compositor do the same, so such seeks go to
     * the seekable appsrcs only. */
    for (guint k = 0; k < r->n_srcs; k++) {
      if (!r->srcs[k].seekable) {
        trace ("  (a seek on the pipeline, skipped: not every appsrc can "
            "seek)");
        return;
      }
    }
  }
  trace ("  seek on %s: rate %g, flags 0x%x, start %" GST_TIME_FORMAT
      ", stop %" GST_TIME_FORMAT, target == 0 ? "the pipeline" : "an appsrc",
      rate, flags, GST_TIME_ARGS (start), GST_TIME_ARGS (stop));
  drain (r);
  /* the stop is always SET (-1 for none): GST_SEEK_TYPE_NONE would keep
   * the old stop, which an appsrc segment may have put before the new
   * start (basesrc asserts then) */
  gst_element_seek (e, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET,
      (gint64) start, GST_SEEK_TYPE_SET,
      GST_CLOCK_TIME_IS_VALID (stop) ? (gint64) stop : -1);
  for (guint k = 0; k < r->n_srcs; k++)
    if (target == 0 || target == k + 1)
      r->srcs[k].next_pts = start;
}

/* ---------------------------------------------------------------------- */
/* Properties: legal values only                                           */
/* ---------------------------------------------------------------------- */

static const gint64 nfft_values[] = {
  400, 2, 3, 4, 16, 256, 512, 1024, 4096, 65536, 401, 50
};
static const gint64 hop_values[] = {
  160, 1, 2, 400, 1000, 65536, 16777216, 25, 3
};
static const gint64 nmels_values[] = { 64, 1, 2, 4, 40, 128, 4096, 3 };
static const gdouble fmin_values[] = {
  0.0, 20.0, 300.0, 7999.0, 8000.0, 100000.0, 384000.0, 0.5
};
static const gdouble fmax_values[] = {
  0.0, 1.0, 4000.0, 8000.0, 8001.0, 384000.0, 50.0, 7999.5
};
static const guint64 seed_values[] = { 0, 1, 42, G_MAXUINT64 };
static const gint64 patch_values[] = { 16, 1, 2, 4, 8, 32, 224, 65536, 3 };
static const gint64 embed_values[] = { 256, 1, 8, 16, 64, 65536, 24, 3 };
static const guint64 window_values[] = {
  GST_SECOND, GST_MSECOND, 10 * GST_MSECOND, 20 * GST_MSECOND,
  40 * GST_MSECOND, 50 * GST_MSECOND, 100 * GST_MSECOND, 10 * GST_SECOND,
  1000 * GST_SECOND, 5 * GST_MSECOND
};
static const gint64 layer_values[] = { -1, 0, 1, 2, 63 };
static const gint64 head_values[] = { -1, 0, 1, 2, 7, 65535 };
static const gdouble opacity_values[] = { 0.5, 0.0, 1.0, 1e-6, 0.999 };

static const guint n_props[N_ELEMENTS] = { 5, 4, 1, 6, 6 };

static void
set_weights (GstElement * e, Input * in)
{
  guint8 c = in_u8 (in);

  if (c != 0) {
    const gchar *path = weights_paths[(c - 1) % G_N_ELEMENTS (weights_paths)];
    trace ("  weights=\"%s\"", path);
    g_object_set (e, "weights", path, NULL);
  }
}

static void
set_enum (GstElement * e, const gchar * name, guint n, Input * in)
{
  guint8 c = in_u8 (in);

  if (c != 0) {
    trace ("  %s=%d", name, (gint) ((c - 1) % n));
    g_object_set (e, name, (gint) ((c - 1) % n), NULL);
  }
}

static void
set_int (GstElement * e, const gchar * name, const gint64 * table, guint n,
    gint64 lo, gint64 hi, Input * in)
{
  gint64 v;

  if (pick_int (in, table, n, lo, hi, &v)) {
    trace ("  %s=%d", name, (gint) v);
    g_object_set (e, name, (gint) v, NULL);
  }
}

static void
set_double (GstElement * e, const gchar * name, const gdouble * table,
    guint n, gdouble lo, gdouble hi, Input * in)
{
  gdouble v;

  if (pick_double (in, table, n, lo, hi, &v)) {
    trace ("  %s=%g", name, v);
    g_object_set (e, name, v, NULL);
  }
}

static void
set_uint64 (GstElement * e, const gchar * name, const guint64 * table,
    guint n, guint64 lo, guint64 hi, Input * in)
{
  guint64 v;

  if (pick_uint64 (in, table, n, lo, hi, &v)) {
    trace ("  %s=%" G_GUINT64_FORMAT, name, v);
    g_object_set (e, name, v, NULL);
  }
}

#define SET_INT(e, name, table, lo, hi, in) \
  set_int ((e), (name), (table), G_N_ELEMENTS (table), (lo), (hi), (in))
#define SET_DOUBLE(e, name, table, lo, hi, in) \
  set_double ((e), (name), (table), G_N_ELEMENTS (table), (lo), (hi), (in))
#define SET_U64(e, name, table, lo, hi, in) \
  set_uint64 ((e), (name), (table), G_N_ELEMENTS (table), (lo), (hi), (in))

static void
set_location (GstElement * e, Input * in)
{
  const gchar *name = location_names[in_u8 (in) %
      G_N_ELEMENTS (location_names)];
  gchar *path = NULL;

  if (name != NULL && name[0] != '\0')
    path = g_build_filename (tmp_dir, name, NULL);
  trace ("  location=\"%s\"", name ? (name[0] ? path : "") : "(null)");
  g_object_set (e, "location", name && name[0] == '\0' ? "" : path, NULL);
  g_free (path);
}

/* Property k of the element, with a value read from the input (or left as
 * it is for a choice byte of 0). */
static void
set_property (Run * r, guint k, Input * in)
{
  GstElement *e = r->element;

  switch (r->kind) {
    case ELEMENT_SPECTROGRAM:
      switch (k) {
        case 0:
          SET_INT (e, "n-fft", nfft_values, 2, 65536, in);
          break;
        case 1:
          SET_INT (e, "hop-length", hop_values, 1, 16777216, in);
          break;
        case 2:
          SET_INT (e, "n-mels", nmels_values, 1, 4096, in);
          break;
        case 3:
          SET_DOUBLE (e, "f-min", fmin_values, 0.0, 384000.0, in);
          break;
        default:
          SET_DOUBLE (e, "f-max", fmax_values, 0.0, 384000.0, in);
          break;
      }
      break;
    case ELEMENT_PATCHEMBED:
      switch (k) {
        case 0:
          set_weights (e, in);
          break;
        case 1:
          SET_U64 (e, "seed", seed_values, 0, G_MAXUINT64, in);
          break;
        case 2:
        default:{
          /* The built-in weights hold 3 E P^2 floats of patch_embed.weight
           * (core refuses more than 1 GiB in all).  Legal sizes between
           * BUILTIN_PATCH_BYTES and that take seconds per start under
           * ASan (patch-size 534: 876 MB, 8 s), so they are left out. */
          const gboolean patch = k == 2;
          gint64 v;
          gint p, ed;
          if (!(patch ? PICK_INT (in, patch_values, 1, 65536, &v)
                  : PICK_INT (in, embed_values, 1, 65536, &v)))
            break;
          g_object_get (e, "patch-size", &p, "embed-dim", &ed, NULL);
          if (patch)
            p = (gint) v;
          else
            ed = (gint) v;
          if ((guint64) p * (guint64) p * 3 * (guint64) ed * sizeof (gfloat)
              > BUILTIN_PATCH_BYTES && (guint64) p * p * 3 * ed
              * sizeof (gfloat) <= ((guint64) 1 << 30)) {
            trace ("  (%s=%d left out: %d x %d patches of %d values are "
                "slow built-in weights)", patch ? "patch-size" : "embed-dim",
                (gint) v, p, p, ed);
            break;
          }
          trace ("  %s=%d", patch ? "patch-size" : "embed-dim", (gint) v);
          g_object_set (e, patch ? "patch-size" : "embed-dim", (gint) v, NULL);
          break;
        }
      }
      break;
    case ELEMENT_TENSORSINK:
      set_location (e, in);
      break;
    case ELEMENT_ATTENTION:
      switch (k) {
        case 0:
          set_weights (e, in);
          break;
        case 1:
          SET_U64 (e, "seed", seed_values, 0, G_MAXUINT64, in);
          break;
        case 2:
          SET_U64 (e, "window", window_values, GST_MSECOND,
              1000 * GST_SECOND, in);
          break;
        case 3:
          set_enum (e, "attention-weights", 3, in);
          break;
        case 4:
          set_enum (e, "post-messages", 2, in);
          break;
        default:{
          /* 0..256 are legal; more than 2 would grow OpenBLAS's
           * process-wide thread pool for every later input */
          static const gint64 threads[] = { 1, 0, 2 };
          SET_INT (e, "blas-threads", threads, 0, 256, in);
          break;
        }
      }
      break;
    default:
      switch (k) {
        case 0:
          SET_INT (e, "layer", layer_values, -1,
              GST_AV_ATTENTION_MAX_LAYERS - 1, in);
          break;
        case 1:
          set_enum (e, "module", 4, in);
          break;
        case 2:
          SET_INT (e, "head", head_values, -1, 65535, in);
          break;
        case 3:
          set_enum (e, "colormap", 3, in);
          break;
        case 4:
          SET_DOUBLE (e, "opacity", opacity_values, 0.0, 1.0, in);
          break;
        default:
          set_enum (e, "marker", 2, in);
          break;
      }
      break;
  }
}

/* ---------------------------------------------------------------------- */
/* One run                                                                 */
/* ---------------------------------------------------------------------- */

static gboolean
seek_data (GstAppSrc * src, guint64 offset, gpointer user_data)
{
  return TRUE;
}

static GstElement *
make (const gchar * factory)
{
  GstElement *e = gst_element_factory_make (factory, NULL);

  if (e == NULL) {
    fprintf (stderr, "fuzz_elements: no element \"%s\"\n", factory);
    harness_fail ("an element is missing");
  }
  return e;
}

static void
link_pads (GstElement * a, const gchar * pa, GstElement * b, const gchar * pb)
{
  if (!gst_element_link_pads (a, pa, b, pb))
    harness_fail ("cannot link the pipeline");
}

static void
add_src (Run * r, CapsClass klass, const gchar * pad, Input * in)
{
  static const GstFormat formats[] = {
    GST_FORMAT_TIME, GST_FORMAT_TIME, GST_FORMAT_BYTES, GST_FORMAT_DEFAULT
  };
  static GstAppSrcCallbacks callbacks = { NULL, NULL, seek_data, {NULL} };
  Src *s = &r->srcs[r->n_srcs++];
  guint8 config = in_u8 (in);
  GstElement *e = make ("appsrc");

  s->klass = klass;
  s->next_pts = 0;
  s->seekable = formats[config % 4] == GST_FORMAT_TIME && !(config & 4);
  trace ("  src %u -> %s: format %s, stream-type %s", r->n_srcs - 1, pad,
      gst_format_get_name (formats[config % 4]), (config & 4) ? "stream" :
      "seekable");
  g_object_set (e, "format", formats[config % 4], "stream-type",
      (config & 4) ? GST_APP_STREAM_TYPE_STREAM :
      GST_APP_STREAM_TYPE_SEEKABLE, "handle-segment-change", TRUE,
      "emit-signals", FALSE, NULL);
  s->appsrc = GST_APP_SRC (e);
  gst_app_src_set_callbacks (s->appsrc, &callbacks, NULL, NULL);
  gst_bin_add (GST_BIN (r->pipeline), e);
  link_pads (e, "src", r->element, pad);
}

static void
clear_tmp_dir (void)
{
  GDir *dir = g_dir_open (tmp_dir, 0, NULL);
  const gchar *name;

  if (dir == NULL)
    return;
  while ((name = g_dir_read_name (dir)) != NULL) {
    gchar *path = g_build_filename (tmp_dir, name, NULL);
    g_remove (path);
    g_free (path);
  }
  g_dir_close (dir);
}

/* For the report of a stall: the state of every element and of every
 * pad (flushing, EOS, sticky events). */
static void
dump_pipeline (Run * r)
{
  GstIterator *it = gst_bin_iterate_elements (GST_BIN (r->pipeline));
  GValue item = G_VALUE_INIT;
  GstState cur, pending;

  gst_element_get_state (r->pipeline, &cur, &pending, 0);
  fprintf (stderr, "fuzz_elements:   pipeline: %s (pending %s)\n",
      gst_element_state_get_name (cur), gst_element_state_get_name (pending));

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&item);
    GList *l;

    gst_element_get_state (e, &cur, &pending, 0);
    fprintf (stderr, "fuzz_elements:   %s: %s (pending %s)\n",
        GST_ELEMENT_NAME (e), gst_element_state_get_name (cur),
        gst_element_state_get_name (pending));
    GST_OBJECT_LOCK (e);
    for (l = e->pads; l; l = l->next) {
      GstPad *pad = l->data;
      GstEvent *seg = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
      GstEvent *eos = gst_pad_get_sticky_event (pad, GST_EVENT_EOS, 0);
      fprintf (stderr, "fuzz_elements:     pad %s: %s%s%s\n",
          GST_PAD_NAME (pad), GST_PAD_IS_FLUSHING (pad) ? "flushing " : "",
          eos ? "EOS " : "", seg ? "has a segment" : "no segment");
      if (seg)
        gst_event_unref (seg);
      if (eos)
        gst_event_unref (eos);
    }
    GST_OBJECT_UNLOCK (e);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
}

static gboolean
error_seen (Run * r)
{
  GstBus *bus;
  GstMessage *msg;

  if (r->failed)
    return TRUE;
  bus = gst_element_get_bus (r->pipeline);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  gst_object_unref (bus);
  if (msg) {
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    trace ("bus: ERROR from %s: %s", GST_MESSAGE_SRC_NAME (msg),
        err->message);
    g_clear_error (&err);
    r->failed = TRUE;
    gst_message_unref (msg);
  }
  return r->failed;
}

/* TRUE when the pipeline is PLAYING, nothing pending, but one of its
 * elements is not. */
static gboolean
child_left_behind (Run * r)
{
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  GstState cur, pending;
  gboolean behind = FALSE;

  gst_element_get_state (r->pipeline, &cur, &pending, 0);
  if (cur != GST_STATE_PLAYING || pending != GST_STATE_VOID_PENDING)
    return FALSE;
  it = gst_bin_iterate_elements (GST_BIN (r->pipeline));
  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    gst_element_get_state (g_value_get_object (&item), &cur, &pending, 0);
    behind |= cur != GST_STATE_PLAYING;
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return behind;
}

/* TRUE once the sink's pad has taken the EOS event. */
static gboolean
sink_has_eos (Run * r)
{
  GstEvent *eos = gst_pad_get_sticky_event (r->sink_pad, GST_EVENT_EOS, 0);

  if (eos == NULL)
    return FALSE;
  gst_event_unref (eos);
  return TRUE;
}

/* After every input ended: EOS or an ERROR must come within BUS_TIMEOUT.
 * EOS counts when the EOS message is on the bus, and also when the sink
 * has taken the EOS event: GstBin (1.22) now and then posts no EOS
 * message when EOS reaches the sink while the pipeline finishes its
 * asynchronous change to PLAYING (seen with appsrc ! identity ! fakesink
 * too), which is no fault of the elements. */
static void
wait_for_the_end (Run * r, GstBus * bus)
{
  gint64 start = g_get_monotonic_time ();
  gint64 end = start + BUS_TIMEOUT / GST_USECOND;
  gboolean kicked = FALSE;
  GstMessage *msg;

  do {
    if (!kicked && g_get_monotonic_time () > start + G_USEC_PER_SEC
        && child_left_behind (r)) {
      /* GstBin (1.22) now and then leaves the sink in PAUSED, holding the
       * stream, after a flushing seek while data flows (seen with
       * identity in place of our element too): the pipeline is PLAYING
       * but a child is not.  Asking for PLAYING again moves it on. */
      trace ("a child is behind the pipeline's PLAYING: PLAYING again");
      gst_element_set_state (r->pipeline, GST_STATE_PLAYING);
      kicked = TRUE;
    }
    msg = gst_bus_timed_pop_filtered (bus, 20 * GST_MSECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (msg) {
      if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
        r->failed = TRUE;
      trace ("bus: %s", GST_MESSAGE_TYPE_NAME (msg));
      gst_message_unref (msg);
      return;
    }
    if (sink_has_eos (r)) {
      /* a last look at the bus: the message may be on its way */
      msg = gst_bus_timed_pop_filtered (bus, 50 * GST_MSECOND,
          GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
      trace ("the sink took the EOS event; bus: %s", msg ?
          GST_MESSAGE_TYPE_NAME (msg) : "no EOS message (the GstBin race)");
      if (msg)
        gst_message_unref (msg);
      return;
    }
  } while (g_get_monotonic_time () < end);

  trace ("bus: nothing");
  dump_pipeline (r);
  harness_fail ("neither EOS nor an ERROR reached the bus within 5 s after "
      "every input ended, and the sink has no EOS (a swallowed EOS or a "
      "stall)");
}

static void
run (Input * in)
{
  static const gchar *factories[N_ELEMENTS] = {
    "avspectrogram", "avpatchembed", "avtensorsink", "avattention",
    "avattnoverlay"
  };
  Run r = { 0 };
  GstElement *sink = NULL;
  GstBus *bus;
  GstStateChangeReturn ret;
  guint n;

  trace_start = g_get_monotonic_time ();
  r.kind = in_u8 (in) % N_ELEMENTS;
  trace ("element %s", factories[r.kind]);
  r.pipeline = gst_pipeline_new (NULL);
  r.element = make (factories[r.kind]);
  gst_bin_add (GST_BIN (r.pipeline), r.element);
  /* the seeded built-in weights, as the corpus was written for (their
   * default was seeded until the shipped trained model became it): the
   * input's weights file still wins.  The trained model is a weights file
   * like the others, whose reader fuzz_weights covers. */
  if (r.kind == ELEMENT_PATCHEMBED || r.kind == ELEMENT_ATTENTION)
    gst_util_set_object_arg (G_OBJECT (r.element), "model", "seeded");
  for (guint k = 0; k < n_props[r.kind]; k++)
    set_property (&r, k, in);
  if (r.kind == ELEMENT_SPECTROGRAM) {
    /* these can only change in READY, so they hold for the whole run */
    gint n_fft, hop, n_mels;
    g_object_get (r.element, "n-fft", &n_fft, "hop-length", &hop, "n-mels",
        &n_mels, NULL);
    r.n_fft = n_fft;
    r.hop = hop;
    r.n_mels = n_mels;
  }

  if (r.kind != ELEMENT_TENSORSINK) {
    sink = make ("fakesink");
    g_object_set (sink, "sync", FALSE, "enable-last-sample", FALSE, NULL);
    gst_bin_add (GST_BIN (r.pipeline), sink);
    link_pads (r.element, "src", sink, "sink");
  }
  r.sink_pad = gst_element_get_static_pad (sink ? sink : r.element, "sink");
  switch (r.kind) {
    case ELEMENT_SPECTROGRAM:
      add_src (&r, CLASS_AUDIO, "sink", in);
      break;
    case ELEMENT_PATCHEMBED:
      add_src (&r, CLASS_VIDEO, "sink", in);
      break;
    case ELEMENT_TENSORSINK:
      add_src (&r, CLASS_TENSOR, "sink", in);
      break;
    case ELEMENT_ATTENTION:
      add_src (&r, CLASS_TENSOR, "audio_sink", in);
      add_src (&r, CLASS_TENSOR, "video_sink", in);
      break;
    default:
      add_src (&r, CLASS_VIDEO, "video_sink", in);
      add_src (&r, CLASS_TENSOR, "attention_sink", in);
      break;
  }
  for (guint k = 0; k < r.n_srcs; k++) {
    GstCaps *caps = make_caps (r.srcs[k].klass, in);
    src_set_caps (&r.srcs[k], caps);
    gst_caps_unref (caps);
  }

  ret = gst_element_set_state (r.pipeline, GST_STATE_PLAYING);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    /* a weights file that does not load, a location that is refused:
     * the element posted an error */
    r.failed = TRUE;
  }

  trace ("PLAYING: %s", gst_element_state_change_return_get_name (ret));
  for (n = 0; n < MAX_ACTIONS && !in_done (in) && !error_seen (&r); n++) {
    static const gchar *names[N_ACTIONS] = {
      "push", "caps", "gap", "segment", "seek", "eos", "property", "state",
      "wait", "repeat"
    };
    guint8 op = in_u8 (in) % N_ACTIONS;

    trace ("action %u: %s", n, names[op]);
    switch (op) {
      case ACT_PUSH:
        do_push (&r, in);
        break;
      case ACT_CAPS:{
        Src *s = pick_src (&r, in);
        GstCaps *caps = make_caps (s->klass, in);
        src_set_caps (s, caps);
        gst_caps_unref (caps);
        /* a repeated buffer must fit the caps: its GstVideoMeta was made
         * for the old ones (GStreamer asserts they agree) */
        gst_clear_buffer (&s->last);
        break;
      }
      case ACT_GAP:
        do_gap (&r, in);
        break;
      case ACT_SEGMENT:
        do_segment (&r, in);
        break;
      case ACT_SEEK:
        do_seek (&r, in);
        break;
      case ACT_EOS:{
        Src *s = pick_src (&r, in);
        trace ("  src %d", (gint) (s - r.srcs));
        gst_app_src_end_of_stream (s->appsrc);
        break;
      }
      case ACT_PROPERTY:
        set_property (&r, in_u8 (in) % n_props[r.kind], in);
        break;
      case ACT_STATE:
        /* to READY and back to PLAYING: the elements stop and start
         * again, appsrc drops its queue.  (Not through PAUSED: a quick
         * PLAYING -> PAUSED -> PLAYING can leave the sink in PAUSED
         * holding the stream, with identity in place of our element
         * too, a stall of GStreamer 1.22 and not of the elements.) */
        trace ("  READY, then PLAYING");
        in_u8 (in);             /* reserved for other state changes */
        gst_element_set_state (r.pipeline, GST_STATE_READY);
        gst_element_set_state (r.pipeline, GST_STATE_PLAYING);
        break;
      case ACT_WAIT:
        drain (&r);
        break;
      default:{
        Src *s = pick_src (&r, in);
        trace ("  src %d", (gint) (s - r.srcs));
        if (s->last && r.kind == ELEMENT_SPECTROGRAM && s->unit > 0) {
          gsize size = gst_buffer_get_size (s->last);
          guint64 work = (size / s->unit / (guint64) r.hop + 1)
              * (guint64) (r.n_fft + 8 * r.n_mels);
          if (r.work + work > SPECTROGRAM_WORK) {
            trace ("  (not repeated: over the work budget)");
            break;
          }
          r.work += work;
        }
        if (s->last && r.kind == ELEMENT_TENSORSINK && s->unit > 0) {
          guint64 frames = gst_buffer_get_size (s->last) / s->unit;
          if (r.work + frames * r.meta_size > TENSORSINK_WORK) {
            trace ("  (not repeated: over the work budget)");
            break;
          }
          r.work += frames * r.meta_size;
          r.frames += frames;
        }
        if (s->last)
          gst_app_src_push_buffer (s->appsrc, gst_buffer_ref (s->last));
        break;
      }
    }
  }

  /* every run ends with end-of-stream on every input, then EOS or an
   * ERROR must reach the bus */
  for (guint k = 0; k < r.n_srcs; k++)
    gst_app_src_end_of_stream (r.srcs[k].appsrc);
  bus = gst_element_get_bus (r.pipeline);
  if (!r.failed)
    wait_for_the_end (&r, bus);

  if (gst_element_set_state (r.pipeline, GST_STATE_NULL) !=
      GST_STATE_CHANGE_SUCCESS)
    harness_fail ("the pipeline did not go to NULL");
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  for (guint k = 0; k < r.n_srcs; k++) {
    gst_clear_caps (&r.srcs[k].caps);
    gst_clear_buffer (&r.srcs[k].last);
  }
  gst_object_unref (r.sink_pad);
  gst_object_unref (r.pipeline);
  clear_tmp_dir ();
}

/* ---------------------------------------------------------------------- */
/* libFuzzer entry points                                                  */
/* ---------------------------------------------------------------------- */

static void
remove_tmp_dir (void)
{
  if (tmp_dir) {
    clear_tmp_dir ();
    g_rmdir (tmp_dir);
  }
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  const gchar *plugins = FUZZ_BUILD_DIR "/fuzz_elements-plugins";
  const gchar *names[] = { "libgstcoreelements.so", "libgstapp.so" };
  const gchar *weights = FUZZ_SRC_DIR "/fuzz/corpus/weights";

  /* before anything logs: warnings and criticals abort (once set up) */
  g_log_set_writer_func (log_writer, NULL, NULL);
  g_log_set_default_handler (log_handler, NULL);
  tracing = g_getenv ("FUZZ_ELEMENTS_TRACE") != NULL;
  leak_check = g_getenv ("FUZZ_ELEMENTS_LEAK_CHECK") != NULL;

  /* Only appsrc and fakesink come from the system: a plugin folder with
   * just coreelements and app, a registry of its own in build-fuzz/ and no
   * GST_PLUGIN_PATH, so that an installed or built avattention plugin
   * never stands in for the instrumented elements compiled in here. */
  if (g_mkdir_with_parents (plugins, 0755) != 0)
    harness_fail ("cannot make the plugin folder in build-fuzz/");
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    gchar *from = g_build_filename (FUZZ_GST_PLUGINS_DIR, names[i], NULL);
    gchar *to = g_build_filename (plugins, names[i], NULL);
    if (symlink (from, to) != 0 && errno != EEXIST)
      harness_fail ("cannot link a GStreamer plugin into build-fuzz/");
    g_free (from);
    g_free (to);
  }
  g_setenv ("GST_PLUGIN_SYSTEM_PATH_1_0", plugins, TRUE);
  g_setenv ("GST_PLUGIN_SYSTEM_PATH", plugins, TRUE);
  g_setenv ("GST_PLUGIN_PATH_1_0", "", TRUE);
  g_setenv ("GST_PLUGIN_PATH", "", TRUE);
  g_setenv ("GST_REGISTRY_1_0", FUZZ_BUILD_DIR
      "/fuzz_elements-registry.bin", TRUE);
  g_setenv ("GST_REGISTRY_FORK", "no", TRUE);

  gst_init (NULL, NULL);
  gst_plugin_avattention_register ();

  /* in build-fuzz/ (a crash leaves it behind; fuzz/run-fuzzers.sh
   * empties the parent before it fuzzes) */
  if (g_mkdir_with_parents (FUZZ_BUILD_DIR "/fuzz_elements-tmp", 0755) != 0)
    harness_fail ("cannot make build-fuzz/fuzz_elements-tmp");
  tmp_dir = g_strdup (FUZZ_BUILD_DIR "/fuzz_elements-tmp/run-XXXXXX");
  if (g_mkdtemp (tmp_dir) == NULL)
    harness_fail ("cannot make a temporary folder");
  atexit (remove_tmp_dir);
  weights_paths[0] = g_strdup ("");
  weights_paths[1] = g_build_filename (weights,
      "avfusion-v1-tiny.safetensors", NULL);
  weights_paths[2] = g_build_filename (weights,
      "valid-all-metadata.safetensors", NULL);
  weights_paths[3] = g_build_filename (weights,
      "bad-heads-not-dividing.safetensors", NULL);
  weights_paths[4] = g_build_filename (tmp_dir, "missing.safetensors", NULL);
  weights_paths[5] = g_strdup (tmp_dir);
  if (!g_file_test (weights_paths[1], G_FILE_TEST_IS_REGULAR))
    harness_fail ("fuzz/corpus/weights/avfusion-v1-tiny.safetensors is "
        "missing");

  g_atomic_int_set (&fatal_logs, 1);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  Input in = { data, size, 0 };

  run (&in);
  /* libFuzzer looks for leaks only when an input mallocs more than it
   * frees, which GStreamer's caches blur; the regression replay
   * (fuzz/run-fuzzers.sh) asks for a full check after every input. */
  if (leak_check && __lsan_do_recoverable_leak_check () != 0)
    harness_fail ("memory leaked (LeakSanitizer's report is above)");
  return 0;
}
