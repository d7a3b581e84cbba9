/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-avspectrogram
 * @title: avspectrogram
 * @short_description: log-mel spectrogram frames from raw audio
 * @see_also: avattention, avtensorsink
 *
 * avspectrogram turns raw float audio into log-mel spectrogram frames, the
 * audio input of the avfusion-v1 model (spec §1): one frame of #GstAvSpectrogram:n-mels
 * values every #GstAvSpectrogram:hop-length samples, computed over a Hann window of
 * #GstAvSpectrogram:n-fft samples of the audio averaged over its channels; each
 * value is ln(mel power + 1e-6).  The output is a tensor stream
 * (`other/x-avtensor, kind=log-mel`) with one frame of n-mels float32 per
 * spectrogram frame, several frames per buffer.
 *
 * Framing: frame k of a run covers the mono samples [k*hop, k*hop + n_fft)
 * counted from the first sample of the run, and has the timestamp
 * `base + gst_util_uint64_scale (k * hop, GST_SECOND, rate)` where base is
 * the timestamp of that first sample.  A run starts at the first buffer
 * after start, a caps change, a new segment, a flush, a GAP event, a
 * DISCONT buffer, or a buffer whose timestamp is more than half a hop away
 * from where the counters expect it (GstAudioStreamAlign, counting whole
 * samples: floor(hop / 2) + 1 samples off or more).  Samples never mix
 * across runs, and
 * the trailing samples of a run that never fill a frame are dropped.
 *
 * Rate: any sample rate is accepted (the filterbank is built for it), and
 * the sink pad's caps query answers the rate the model wants first, so that
 * an audioresample in front converts to it by itself: the first fixed
 * log-mel "rate" in downstream's caps (a capsfilter on the tensors, or
 * avattention, whose caps query offers its weights' rate) when it names
 * one, else the spec's default, 16 kHz.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 audiotestsrc num-buffers=50 ! audioconvert ! audioresample ! avspectrogram ! avtensorsink location=mel.npy
 * ]| writes the log-mel frames of a sine to mel.npy.
 */

/* All the math is in core/mel.h; this element negotiates caps, keeps the
 * framing counters and stamps the frames. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavspectrogram.h"
#include "gstavelements.h"
#include "gstavtensor.h"
#include "gstavproperty.h"

#include <string.h>

#include <gst/audio/audio.h>

#include "mel.h"

#ifdef __SSE__
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

GST_DEBUG_CATEGORY_STATIC (gst_av_spectrogram_debug);
#define GST_CAT_DEFAULT gst_av_spectrogram_debug

#define DEFAULT_N_FFT 400
#define DEFAULT_HOP_LENGTH 160
#define DEFAULT_N_MELS 64
#define DEFAULT_F_MIN 0.0
#define DEFAULT_F_MAX 0.0
/* Highest f-min / f-max: half the highest sample rate. */
#define MAX_FREQUENCY 384000.0

/* At most this many frames go into one output buffer; a large input buffer
 * is pushed as several output buffers. */
#define FRAMES_PER_BUFFER 64
/* Input that is not aligned for float access is copied through a bounce
 * area of this many sample frames (made at caps time). */
#define BOUNCE_FRAMES 4096

enum
{
  PROP_0,
  PROP_N_FFT,
  PROP_HOP_LENGTH,
  PROP_N_MELS,
  PROP_F_MIN,
  PROP_F_MAX
};

struct _GstAvSpectrogram
{
  GstElement parent;

  GstPad *sinkpad, *srcpad;

  /* properties, under the object lock */
  gint n_fft, hop_length, n_mels;
  gdouble f_min, f_max;

  /* for the latency query (any thread), under the object lock; 0 = not
   * negotiated */
  gint latency_rate, latency_n_fft;

  /* stream state: streaming thread only (and state changes once the pads
   * are deactivated) */
  AvfMelConfig cfg;             /* that mel was built with */
  AvfMel *mel;
  GstAudioStreamAlign *align;   /* timestamp discontinuities of the run */
  gint channels;
  GstBufferPool *pool;          /* output buffers of FRAMES_PER_BUFFER frames */
  gfloat *bounce;               /* (BOUNCE_FRAMES, channels) */
  GstSegment segment;
  gboolean restart;             /* the next buffer starts a new run */
  GstClockTime restart_hint;    /* its time when it has no PTS, or NONE */
  GstClockTime base;            /* time of sample 0 of the run, or NONE */
  guint64 samples;              /* sample frames taken in this run */
  guint64 frames;               /* spectrogram frames pushed in this run */
  gboolean discont;             /* flag the next output buffer DISCONT */
  gboolean warned_partial;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("audio/x-raw, format=(string)" GST_AUDIO_NE (F32)
        ", layout=(string)interleaved, rate=(int)[1,768000], "
        "channels=(int)[1,64]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_LOG_MEL));

#define gst_av_spectrogram_parent_class parent_class
G_DEFINE_TYPE (GstAvSpectrogram, gst_av_spectrogram, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (avspectrogram, "avspectrogram", GST_RANK_NONE,
    GST_TYPE_AV_SPECTROGRAM);

static void gst_av_spectrogram_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_av_spectrogram_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_av_spectrogram_change_state (GstElement *
    element, GstStateChange transition);
static gboolean gst_av_spectrogram_sink_event (GstPad * pad,
    GstObject * parent, GstEvent * event);
static gboolean gst_av_spectrogram_sink_query (GstPad * pad,
    GstObject * parent, GstQuery * query);
static gboolean gst_av_spectrogram_src_query (GstPad * pad,
    GstObject * parent, GstQuery * query);
static GstFlowReturn gst_av_spectrogram_chain (GstPad * pad,
    GstObject * parent, GstBuffer * buffer);

static void
gst_av_spectrogram_class_init (GstAvSpectrogramClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags flags = GST_AV_PARAM_READY;

  gobject_class->set_property = gst_av_spectrogram_set_property;
  gobject_class->get_property = gst_av_spectrogram_get_property;

  /**
   * GstAvSpectrogram:n-fft:
   *
   * Length in samples of the Hann window each frame is computed over, and
   * of its FFT (spec §1: 400, 25 ms at 16 kHz).  Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_N_FFT,
      g_param_spec_int ("n-fft", "FFT length",
          "Length in samples of the Hann window that each frame is computed "
          "over (and of its FFT)", 2, 65536, DEFAULT_N_FFT, flags));
  /**
   * GstAvSpectrogram:hop-length:
   *
   * Samples from the start of one frame to the start of the next: frames
   * come at rate / hop-length per second (spec §1: 160, 100 frames/s at
   * 16 kHz).  Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_HOP_LENGTH,
      g_param_spec_int ("hop-length", "Hop length",
          "Samples from the start of one frame to the start of the next, so "
          "that frames come at rate / hop-length per second", 1, 16777216,
          DEFAULT_HOP_LENGTH, flags));
  /**
   * GstAvSpectrogram:n-mels:
   *
   * Number of mel bands, the values in one output frame (M); avattention
   * wants as many as its weights' audio_proj takes.  Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_N_MELS,
      g_param_spec_int ("n-mels", "Mel bands",
          "Number of mel bands, that is values in one output frame", 1,
          4096, DEFAULT_N_MELS, flags));
  /**
   * GstAvSpectrogram:f-min:
   *
   * Lowest frequency in Hz that the mel bands cover.  Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_F_MIN,
      g_param_spec_double ("f-min", "Lowest frequency",
          "Lowest frequency in Hz that the mel bands cover", 0.0,
          MAX_FREQUENCY, DEFAULT_F_MIN, flags));
  /**
   * GstAvSpectrogram:f-max:
   *
   * Highest frequency in Hz that the mel bands cover; 0 means half the
   * sample rate.  A value above half the sample rate is refused with an
   * error when the audio format is negotiated.  Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_F_MAX,
      g_param_spec_double ("f-max", "Highest frequency",
          "Highest frequency in Hz that the mel bands cover; 0 means half "
          "the sample rate", 0.0, MAX_FREQUENCY, DEFAULT_F_MAX, flags));

  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &sink_template, GST_TYPE_PAD);
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &src_template, GST_TYPE_PAD);
  gst_element_class_set_static_metadata (element_class,
      "Log-mel spectrogram", "Filter/Analyzer/Audio",
      "Turns raw float audio into log-mel spectrogram frames, the audio "
      "input of the avfusion-v1 model", "The avattention authors");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_av_spectrogram_change_state);

  GST_DEBUG_CATEGORY_INIT (gst_av_spectrogram_debug, "avspectrogram", 0,
      "log-mel spectrogram");
}

static void
gst_av_spectrogram_init (GstAvSpectrogram * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_av_spectrogram_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_av_spectrogram_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_av_spectrogram_sink_query));
  GST_PAD_SET_ACCEPT_TEMPLATE (self->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_av_spectrogram_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->n_fft = DEFAULT_N_FFT;
  self->hop_length = DEFAULT_HOP_LENGTH;
  self->n_mels = DEFAULT_N_MELS;
  self->f_min = DEFAULT_F_MIN;
  self->f_max = DEFAULT_F_MAX;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  self->restart = TRUE;
  self->restart_hint = GST_CLOCK_TIME_NONE;
  self->base = GST_CLOCK_TIME_NONE;
}

static void
gst_av_spectrogram_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (object);

  if (!gst_av_property_can_change (GST_ELEMENT (self), pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_N_FFT:
      self->n_fft = g_value_get_int (value);
      break;
    case PROP_HOP_LENGTH:
      self->hop_length = g_value_get_int (value);
      break;
    case PROP_N_MELS:
      self->n_mels = g_value_get_int (value);
      break;
    case PROP_F_MIN:
      self->f_min = g_value_get_double (value);
      break;
    case PROP_F_MAX:
      self->f_max = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_av_spectrogram_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_N_FFT:
      g_value_set_int (value, self->n_fft);
      break;
    case PROP_HOP_LENGTH:
      g_value_set_int (value, self->hop_length);
      break;
    case PROP_N_MELS:
      g_value_set_int (value, self->n_mels);
      break;
    case PROP_F_MIN:
      g_value_set_double (value, self->f_min);
      break;
    case PROP_F_MAX:
      g_value_set_double (value, self->f_max);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- framing counters ------------------------------------------------ */

/* The time of frame (or sample) boundary k*hop of the current run. */
static GstClockTime
frame_time (GstAvSpectrogram * self, guint64 k)
{
  return self->base + gst_util_uint64_scale (k * (guint64) self->cfg.hop,
      GST_SECOND, (guint64) self->cfg.sample_rate);
}

/* Where the counters expect the next sample, or NONE. */
static GstClockTime
expected_time (GstAvSpectrogram * self)
{
  if (self->restart)
    return self->restart_hint;
  if (self->mel == NULL || !GST_CLOCK_TIME_IS_VALID (self->base))
    return GST_CLOCK_TIME_NONE;
  return self->base + gst_util_uint64_scale (self->samples, GST_SECOND,
      (guint64) self->cfg.sample_rate);
}

/* Forgets the buffered samples; the next buffer starts a new run at its
 * PTS, or at hint when it has none. */
static void
schedule_restart (GstAvSpectrogram * self, GstClockTime hint)
{
  if (self->mel)
    avf_mel_reset (self->mel);
  self->restart = TRUE;
  self->restart_hint = hint;
}

static void
start_run (GstAvSpectrogram * self, GstClockTime pts)
{
  if (GST_CLOCK_TIME_IS_VALID (pts))
    self->base = pts;
  else if (GST_CLOCK_TIME_IS_VALID (self->restart_hint))
    self->base = self->restart_hint;
  else if (self->segment.format == GST_FORMAT_TIME)
    self->base = self->segment.start;
  else
    self->base = GST_CLOCK_TIME_NONE;
  self->samples = 0;
  self->frames = 0;
  self->restart = FALSE;
  self->restart_hint = GST_CLOCK_TIME_NONE;
  self->discont = TRUE;
  GST_DEBUG_OBJECT (self, "new run at %" GST_TIME_FORMAT,
      GST_TIME_ARGS (self->base));
}

static void
reset_stream (GstAvSpectrogram * self)
{
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  schedule_restart (self, GST_CLOCK_TIME_NONE);
  self->base = GST_CLOCK_TIME_NONE;
  self->samples = 0;
  self->frames = 0;
  self->discont = TRUE;
  self->warned_partial = FALSE;
}

static void
free_format (GstAvSpectrogram * self)
{
  avf_mel_free (self->mel);
  self->mel = NULL;
  g_clear_pointer (&self->align, gst_audio_stream_align_free);
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_object_unref (self->pool);
    self->pool = NULL;
  }
  g_free (self->bounce);
  self->bounce = NULL;
  self->channels = 0;
  GST_OBJECT_LOCK (self);
  self->latency_rate = 0;
  self->latency_n_fft = 0;
  GST_OBJECT_UNLOCK (self);
}

/* ---- caps ------------------------------------------------------------ */

static gboolean
same_config (const AvfMelConfig * a, const AvfMelConfig * b)
{
  return a->sample_rate == b->sample_rate && a->n_fft == b->n_fft
      && a->hop == b->hop && a->n_mels == b->n_mels && a->f_min == b->f_min
      && a->f_max == b->f_max;
}

/* Out of memory setting up for @caps: posted, and the format is freed. */
static gboolean
set_caps_no_memory (GstAvSpectrogram * self, GstCaps * caps)
{
  GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
      ("Out of memory setting up for %" GST_PTR_FORMAT ".", caps), (NULL));
  free_format (self);
  return FALSE;
}

/* *info of @caps (interleaved native-endian float audio) and the mel
 * configuration *cfg of its rate and the properties; FALSE after an error
 * (posted). */
static gboolean
caps_mel_config (GstAvSpectrogram * self, GstCaps * caps, GstAudioInfo * info,
    AvfMelConfig * cfg)
{
  if (!gst_audio_info_from_caps (info, caps)
      || GST_AUDIO_INFO_FORMAT (info) != GST_AUDIO_FORMAT_F32
      || GST_AUDIO_INFO_LAYOUT (info) != GST_AUDIO_LAYOUT_INTERLEAVED) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avspectrogram takes interleaved native-endian 32-bit float audio "
            "(put audioconvert in front), not %" GST_PTR_FORMAT ".", caps),
        (NULL));
    return FALSE;
  }

  GST_OBJECT_LOCK (self);
  cfg->sample_rate = GST_AUDIO_INFO_RATE (info);
  cfg->n_fft = self->n_fft;
  cfg->hop = self->hop_length;
  cfg->n_mels = self->n_mels;
  cfg->f_min = self->f_min;
  cfg->f_max = self->f_max;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* The same mel format with @channels channels now: a bounce buffer for
 * them, and the framing restarts at @hint. */
static gboolean
set_channels (GstAvSpectrogram * self, GstCaps * caps, gint channels,
    GstClockTime hint)
{
  gfloat *bounce;

  GST_INFO_OBJECT (self, "channels %d -> %d, restarting the framing",
      self->channels, channels);
  bounce = g_try_new (gfloat, (gsize) BOUNCE_FRAMES * channels);
  if (bounce == NULL)
    return set_caps_no_memory (self, caps);
  g_free (self->bounce);
  self->bounce = bounce;
  self->channels = channels;
  schedule_restart (self, hint);
  return TRUE;
}

/* A new mel format @cfg for @channels channels: the mel bank, the output
 * pool and caps (pushed downstream), the stream align and the latency;
 * the framing restarts at @hint.  FALSE after an error. */
static gboolean
set_mel_format (GstAvSpectrogram * self, GstCaps * caps,
    const AvfMelConfig * cfg, gint channels, GstClockTime hint)
{
  AvfMel *mel = NULL;
  AvfError err;
  GstCaps *outcaps;
  GstBufferPool *pool;
  gfloat *bounce;

  if (avf_mel_new (&mel, cfg, &err) != AVF_OK) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Cannot make log-mel frames of %d Hz audio with n-fft %d, "
            "hop-length %d, n-mels %d, f-min %g Hz and f-max %g Hz: %s.",
            cfg->sample_rate, cfg->n_fft, cfg->hop, cfg->n_mels, cfg->f_min,
            cfg->f_max, err.message), ("input caps %" GST_PTR_FORMAT, caps));
    free_format (self);
    return FALSE;
  }

  outcaps = gst_av_tensor_caps_log_mel (cfg->n_mels, cfg->sample_rate,
      cfg->hop, cfg->n_fft);
  /* n_mels <= 4096: at most 1 MiB per buffer */
  pool = gst_av_buffer_pool_new (outcaps, FRAMES_PER_BUFFER
      * (guint) cfg->n_mels * sizeof (gfloat));
  bounce = g_try_new (gfloat, (gsize) BOUNCE_FRAMES * channels);
  if (pool == NULL || bounce == NULL) {
    gst_caps_unref (outcaps);
    avf_mel_free (mel);
    if (pool)
      gst_object_unref (pool);
    g_free (bounce);
    return set_caps_no_memory (self, caps);
  }

  free_format (self);
  self->mel = mel;
  self->cfg = *cfg;
  /* a buffer is discontinuous when its timestamp is more than half a hop
   * off: floor(hop / 2) + 1 samples or more (in samples, as the align
   * counts; the threshold in time is rounded up so that it converts back
   * to that count) */
  self->align = gst_audio_stream_align_new (cfg->sample_rate,
      gst_util_uint64_scale_ceil ((guint64) cfg->hop / 2 + 1, GST_SECOND,
          (guint64) cfg->sample_rate), 0);
  self->pool = pool;
  self->bounce = bounce;
  self->channels = channels;
  GST_OBJECT_LOCK (self);
  self->latency_rate = cfg->sample_rate;
  self->latency_n_fft = cfg->n_fft;
  GST_OBJECT_UNLOCK (self);
  schedule_restart (self, hint);

  GST_INFO_OBJECT (self, "output caps %" GST_PTR_FORMAT, outcaps);
  if (!gst_pad_push_event (self->srcpad, gst_event_new_caps (outcaps))) {
    GST_WARNING_OBJECT (self, "downstream refused %" GST_PTR_FORMAT, outcaps);
    gst_caps_unref (outcaps);
    free_format (self);
    return FALSE;
  }
  gst_caps_unref (outcaps);
  return TRUE;
}

static gboolean
gst_av_spectrogram_set_caps (GstAvSpectrogram * self, GstCaps * caps)
{
  GstAudioInfo info;
  AvfMelConfig cfg = avf_mel_config_default ();
  GstClockTime hint;

  if (!caps_mel_config (self, caps, &info, &cfg))
    return FALSE;
  if (self->mel && same_config (&cfg, &self->cfg)
      && self->channels == GST_AUDIO_INFO_CHANNELS (&info)) {
    GST_DEBUG_OBJECT (self, "same format again, framing goes on");
    return TRUE;
  }

  /* the new run starts where the old one would have gone on */
  hint = expected_time (self);
  if (self->mel && same_config (&cfg, &self->cfg))
    return set_channels (self, caps, GST_AUDIO_INFO_CHANNELS (&info), hint);
  return set_mel_format (self, caps, &cfg, GST_AUDIO_INFO_CHANNELS (&info),
      hint);
}

/* ---- events and queries ---------------------------------------------- */

static gboolean
gst_av_spectrogram_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (parent);
  gboolean ret;

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      ret = gst_av_spectrogram_set_caps (self, caps);
      gst_event_unref (event);
      return ret;
    }
    case GST_EVENT_SEGMENT:
      gst_event_copy_segment (event, &self->segment);
      schedule_restart (self, GST_CLOCK_TIME_NONE);
      break;
    case GST_EVENT_GAP:{
      GstClockTime ts, duration, next = GST_CLOCK_TIME_NONE;

      gst_event_parse_gap (event, &ts, &duration);
      if (GST_CLOCK_TIME_IS_VALID (ts))
        next = GST_CLOCK_TIME_IS_VALID (duration) ? ts + duration : ts;
      ret = gst_pad_event_default (pad, parent, event);
      /* no frame spans a gap */
      schedule_restart (self, next);
      return ret;
    }
    case GST_EVENT_FLUSH_STOP:
      gst_segment_init (&self->segment, GST_FORMAT_TIME);
      schedule_restart (self, GST_CLOCK_TIME_NONE);
      break;
    case GST_EVENT_EOS:
      /* trailing samples that never fill a frame are dropped (spec §1,
       * center=False) */
      schedule_restart (self, expected_time (self));
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* The rate downstream wants the log-mel frames at: the first fixed "rate"
 * of its caps, in its order of preference; 0 when it names none. */
static gint
downstream_rate (GstAvSpectrogram * self)
{
  GstCaps *templ = gst_pad_get_pad_template_caps (self->srcpad);
  GstCaps *peer = gst_pad_peer_query_caps (self->srcpad, templ);
  gint rate = 0;

  for (guint i = 0; i < gst_caps_get_size (peer) && rate == 0; i++) {
    const GValue *v = gst_structure_get_value (gst_caps_get_structure (peer,
            i), "rate");

    if (v != NULL && G_VALUE_HOLDS_INT (v))
      rate = g_value_get_int (v);
    else if (v != NULL && GST_VALUE_HOLDS_LIST (v)
        && gst_value_list_get_size (v) > 0
        && G_VALUE_HOLDS_INT (gst_value_list_get_value (v, 0)))
      rate = g_value_get_int (gst_value_list_get_value (v, 0));
  }
  gst_caps_unref (peer);
  gst_caps_unref (templ);
  return rate;
}

/* Any rate the template takes, the one wanted first: an audioresample
 * upstream picks the first structure it can make.  Our order goes before
 * the filter's, which lists upstream's own rate first (passthrough). */
static GstCaps *
gst_av_spectrogram_sink_caps (GstAvSpectrogram * self, GstCaps * filter)
{
  GstCaps *any = gst_pad_get_pad_template_caps (self->sinkpad);
  GstCaps *caps = gst_caps_copy (any);
  gint rate = downstream_rate (self);

  if (rate <= 0)
    rate = avf_mel_config_default ().sample_rate;
  gst_caps_set_simple (caps, "rate", G_TYPE_INT, rate, NULL);
  caps = gst_caps_merge (caps, any);
  if (filter != NULL) {
    GstCaps *tmp = gst_caps_intersect_full (caps, filter,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = tmp;
  }
  GST_LOG_OBJECT (self, "sink caps %" GST_PTR_FORMAT, caps);
  return caps;
}

static gboolean
gst_av_spectrogram_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (parent);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *filter, *caps;

    gst_query_parse_caps (query, &filter);
    caps = gst_av_spectrogram_sink_caps (self, filter);
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

static gboolean
gst_av_spectrogram_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_LATENCY:{
      gboolean live;
      GstClockTime min, max, own = 0;
      gint rate, n_fft;

      if (!gst_pad_peer_query (self->sinkpad, query))
        return FALSE;
      gst_query_parse_latency (query, &live, &min, &max);
      GST_OBJECT_LOCK (self);
      rate = self->latency_rate;
      n_fft = self->latency_n_fft;
      GST_OBJECT_UNLOCK (self);
      /* a frame is complete n_fft samples after its timestamp */
      if (rate > 0)
        own = gst_util_uint64_scale_int (n_fft, GST_SECOND, rate);
      min += own;
      if (GST_CLOCK_TIME_IS_VALID (max))
        max += own;
      GST_DEBUG_OBJECT (self, "latency min %" GST_TIME_FORMAT " max %"
          GST_TIME_FORMAT " (own %" GST_TIME_FORMAT ")", GST_TIME_ARGS (min),
          GST_TIME_ARGS (max), GST_TIME_ARGS (own));
      gst_query_set_latency (query, live, min, max);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ---- data ------------------------------------------------------------ */

/* Denormal floats (samples below FLT_MIN, and what quiet audio makes of
 * them in the FFT and the filterbank) take a slow path in x86 arithmetic:
 * 7 to 16 times slower here.  They cannot change a frame: every band is
 * ln(mel + 1e-6) (spec §1), and anything below FLT_MIN vanishes next to
 * 1e-6.  So the spectrogram runs with denormals flushed to zero (MXCSR DAZ
 * for operands, FTZ for results), and the thread's mode is put back
 * before anything else runs in it: downstream elements and the
 * application see their own mode (the exception flags raised stay). */
#ifdef HAVE_MXCSR
#define MXCSR_DAZ 0x0040
#define MXCSR_FTZ 0x8000

static inline guint
denormals_off (void)
{
  const guint csr = _mm_getcsr ();

  _mm_setcsr (csr | MXCSR_DAZ | MXCSR_FTZ);
  return csr;
}

static inline void
denormals_restore (guint csr)
{
  const guint mode = MXCSR_DAZ | MXCSR_FTZ;

  _mm_setcsr ((_mm_getcsr () & ~mode) | (csr & mode));
}
#else
static inline guint
denormals_off (void)
{
  return 0;
}

static inline void
denormals_restore (guint csr)
{
  (void) csr;
}
#endif

/* avf_mel_push with denormals flushed to zero. */
static gsize
mel_push (AvfMel * mel, gfloat * out, gsize max_frames,
    const gfloat * samples, gsize n, gint channels, gsize * consumed)
{
  const guint csr = denormals_off ();
  const gsize got = avf_mel_push (mel, out, max_frames, samples, n,
      channels, consumed);

  denormals_restore (csr);
  return got;
}

/* Pushes n interleaved sample frames through the spectrogram and every
 * frame they complete downstream. */
static GstFlowReturn
push_samples (GstAvSpectrogram * self, const gfloat * samples, gsize n)
{
  const gint ch = self->channels;
  const gsize frame_bytes = (gsize) self->cfg.n_mels * sizeof (gfloat);
  const guint64 ready = avf_mel_frames_after (self->mel, n);
  guint64 done = 0;
  gsize used = 0, consumed;

  while (done < ready) {
    GstBuffer *out = NULL;
    GstMapInfo map;
    GstFlowReturn ret;
    gsize got;

    ret = gst_buffer_pool_acquire_buffer (self->pool, &out, NULL);
    if (ret != GST_FLOW_OK) {
      GST_DEBUG_OBJECT (self, "no output buffer: %s", gst_flow_get_name (ret));
      return ret;
    }
    if (!gst_buffer_map (out, &map, GST_MAP_WRITE)) {
      gst_buffer_unref (out);
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not map an output buffer for writing."), (NULL));
      return GST_FLOW_ERROR;
    }
    got = mel_push (self->mel, (gfloat *) map.data,
        MIN (ready - done, FRAMES_PER_BUFFER), samples + used * ch,
        n - used, ch, &consumed);
    gst_buffer_unmap (out, &map);
    used += consumed;
    self->samples += consumed;
    if (got == 0) {
      /* cannot happen: frames_after counted them */
      gst_buffer_unref (out);
      break;
    }
    gst_buffer_set_size (out, got * frame_bytes);

    if (GST_CLOCK_TIME_IS_VALID (self->base)) {
      GstClockTime start = frame_time (self, self->frames);
      GST_BUFFER_PTS (out) = start;
      GST_BUFFER_DURATION (out) = frame_time (self, self->frames + got)
          - start;
    }
    GST_BUFFER_OFFSET (out) = self->frames;
    GST_BUFFER_OFFSET_END (out) = self->frames + got;
    if (self->discont) {
      GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
      self->discont = FALSE;
    }
    self->frames += got;
    done += got;

    GST_LOG_OBJECT (self, "pushing %" G_GSIZE_FORMAT " frames at %"
        GST_TIME_FORMAT, got, GST_TIME_ARGS (GST_BUFFER_PTS (out)));
    ret = gst_pad_push (self->srcpad, out);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (used < n) {
    /* the rest completes no frame: it waits in the spectrogram */
    mel_push (self->mel, NULL, 0, samples + used * ch, n - used, ch,
        &consumed);
    self->samples += consumed;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_av_spectrogram_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (parent);
  const GstClockTime pts = GST_BUFFER_PTS (buf);
  GstFlowReturn ret = GST_FLOW_OK;
  GstMapInfo map;
  gsize bpf, n;

  if (G_UNLIKELY (self->mel == NULL)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Received audio on pad %s:%s before its format was negotiated.",
            GST_DEBUG_PAD_NAME (pad)), (NULL));
    gst_buffer_unref (buf);
    return GST_FLOW_NOT_NEGOTIATED;
  }

  bpf = (gsize) self->channels * sizeof (gfloat);
  /* a buffer holds less than 2^32 sample frames (GstAudioStreamAlign) */
  n = MIN (gst_buffer_get_size (buf) / bpf, G_MAXUINT);
  if (!self->restart) {
    if (GST_BUFFER_IS_DISCONT (buf)) {
      GST_DEBUG_OBJECT (self, "DISCONT buffer at %" GST_TIME_FORMAT,
          GST_TIME_ARGS (pts));
      schedule_restart (self, expected_time (self));
    } else if (GST_CLOCK_TIME_IS_VALID (pts)
        && GST_CLOCK_TIME_IS_VALID (self->base)) {
      if (gst_audio_stream_align_process (self->align, FALSE, pts, (guint) n,
              NULL, NULL, NULL)) {
        GST_DEBUG_OBJECT (self, "buffer at %" GST_TIME_FORMAT " but %"
            GST_TIME_FORMAT " expected, restarting the framing",
            GST_TIME_ARGS (pts), GST_TIME_ARGS (expected_time (self)));
        schedule_restart (self, GST_CLOCK_TIME_NONE);
      }
    } else if (GST_CLOCK_TIME_IS_VALID (self->base)) {
      /* no timestamp: the run goes on from the counters, and so does the
       * align */
      gst_audio_stream_align_mark_discont (self->align);
      gst_audio_stream_align_process (self->align, TRUE, expected_time (self),
          (guint) n, NULL, NULL, NULL);
    }
  }
  if (self->restart) {
    start_run (self, pts);
    gst_audio_stream_align_mark_discont (self->align);
    if (GST_CLOCK_TIME_IS_VALID (self->base))
      gst_audio_stream_align_process (self->align, TRUE, self->base,
          (guint) n, NULL, NULL, NULL);
  }

  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not map an input buffer of %" G_GSIZE_FORMAT " bytes for "
            "reading.", gst_buffer_get_size (buf)), (NULL));
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }

  n = map.size / bpf;
  if (map.size % bpf != 0 && !self->warned_partial) {
    self->warned_partial = TRUE;
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("An input buffer of %" G_GSIZE_FORMAT " bytes does not hold a whole "
            "number of %" G_GSIZE_FORMAT "-byte sample frames (%d channels "
            "of 32-bit float); its last %" G_GSIZE_FORMAT " bytes were "
            "ignored. This is reported once.", map.size, bpf,
            self->channels, map.size % bpf), (NULL));
  }

  if (((guintptr) map.data) % G_ALIGNOF (gfloat) == 0) {
    ret = push_samples (self, (const gfloat *) map.data, n);
  } else {
    /* unaligned memory: copy through the bounce area */
    gsize done = 0;
    while (done < n && ret == GST_FLOW_OK) {
      gsize chunk = MIN (n - done, BOUNCE_FRAMES);
      memcpy (self->bounce, map.data + done * bpf, chunk * bpf);
      ret = push_samples (self, self->bounce, chunk);
      done += chunk;
    }
  }

  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  return ret;
}

/* ---- state ----------------------------------------------------------- */

static GstStateChangeReturn
gst_av_spectrogram_change_state (GstElement * element,
    GstStateChange transition)
{
  GstAvSpectrogram *self = GST_AV_SPECTROGRAM (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    reset_stream (self);

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    free_format (self);
    reset_stream (self);
  }
  return ret;
}
