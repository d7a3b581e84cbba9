/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-avattention
 * @title: avattention
 * @short_description: audio-visual attention between a video and its sound
 * @see_also: avspectrogram, avpatchembed, avattnoverlay, avtensorsink
 *
 * avattention lets a video and its sound attend to each other with the
 * avfusion-v1 model: self- and cross-attention between spectrogram frames
 * and picture patches (spec §3); or with avfusion-v2, which adds a
 * one-second video history (below).  Pad audio_sink takes log-mel spectrogram
 * frames (from avspectrogram), pad video_sink the patch embeddings of each
 * picture (from avpatchembed); pad src gives one fused vector of 2E floats
 * per video frame, with the frame's timestamp and duration.
 *
 * Each video frame at running time t hears the spectrogram frames of
 * [t - #GstAvAttention:window, t); slots without audio (the start, gaps, the
 * end of the audio) are masked, and the video keeps flowing when the audio
 * stops.  A clip without sound needs no special pipeline: an audio_sink
 * that no source can feed (unlinked, or a branch that ends unlinked, as
 * decodebin leaves it for a file without an audio track) is treated as
 * ended.  An audio branch linked later, while playing, is heard from the
 * moment its stream-start reaches audio_sink: every frame the element
 * takes up after that waits for the audio of its window, as with a branch
 * there from the start (in a live pipeline, until the latency runs out),
 * however late the audio comes; the frames taken up before go out without
 * audio, with "audio-ended" set.  (For a given frame to hear such a
 * branch, hold the video, for instance with a blocking pad probe, until
 * the branch has started.)
 *
 * The attention maps of every layer ride on the output as
 * GstAvAttentionMeta (unless #GstAvAttention:attention-weights=none), with
 * the model's visible_threshold (gst_av_attention_meta_get_sound_visible()).
 *
 * Rate: audio_sink's caps query offers the sample rate the weights name
 * (16 kHz when they name none) first, so `audioconvert ! audioresample !
 * avspectrogram` in front resamples to it by itself.
 *
 * Weights: the #GstAvAttention:weights file when set; else the shipped
 * trained model (#GstAvAttention:model=trained, the default), a model of
 * the sounding-objects world installed with the plugin, which knows only
 * that world; else, with model=seeded (also selected by setting
 * #GstAvAttention:seed), the built-in seeded weights of spec §4.
 *
 * One model for both elements: set on avattention or on avpatchembed, the
 * choice holds for both.  An element with none of "weights", "model" and
 * "seed" set asks the other one when it starts (avattention upstream from
 * video_sink, avpatchembed downstream from its src) and uses the choice
 * set there; with none set anywhere both use the shipped model.  The patch
 * caps carry the fingerprint of avpatchembed's model (model-fingerprint:
 * SHA-256 of the format, the sizes and every tensor's numbers, so two files
 * of the same shape with other numbers differ and a copy of a file under
 * another name does not).  When the query could not reach avpatchembed (a
 * video branch linked after avattention started), an avattention without a
 * choice of its own adopts, at the caps, the weights file the patch caps
 * name, if it still has their fingerprint.  Otherwise embeddings of another
 * model (another format, width or number of rhythm features, or other
 * numbers) are refused at negotiation, before any frame, with an error that
 * names both weights.
 *
 * Why a query and not a GstContext, GStreamer's way of sharing a GL or VA
 * display: a context is pipeline-wide (a bin keeps the contexts its
 * children announce and gives them to any element that asks), but a model
 * belongs to one stream of patch embeddings, and one pipeline may hold two
 * analysis branches with different models.  The query goes only along the
 * link between the two elements, as the embeddings do.  Not the caps query
 * either: avpatchembed needs its model before it can answer caps (the
 * picture sizes come from the weights), and a model field in the caps
 * query would turn two different models into a bare not-negotiated instead
 * of the error naming both files.  The caps carry the fingerprint, so what
 * was loaded is checked where the data meets.
 *
 * With avfusion-v2 weights (docs/avfusion-v2.md §3) the element also keeps
 * a video history: the rhythm features avpatchembed attaches to each frame
 * (a #GstAvRhythmMeta of [frames, N, D] beside the [N, E] tensor, announced
 * by rhythm-dim in the caps), with the frame's time, for the last window
 * (one second by default).  A video buffer without that meta, or with one
 * of other sizes, stops the element with an error: the rows are never
 * made up.
 * Each patch token then gets, before the layers, a rhythm term: how well
 * the patch's changes over the window's K bins correlate with the sound's,
 * at each of the weights' lags (encoders shift video and sound).  The
 * history starts empty and is emptied on a flush, a new segment (a seek),
 * a GAP event on video_sink and a video buffer flagged DISCONT; bins that
 * no frame received since then shows are left out.  The window must then
 * hold exactly K x G spectrogram frames (the weights' rhythm bins).
 *
 * ## Bus messages
 *
 * With #GstAvAttention:post-messages=true every output posts an element
 * message named "avattention" with these fields:
 *
 * - "timestamp", "stream-time", "running-time", "duration": #guint64
 *   nanoseconds of the video frame;
 * - "audio-slots": #guint, spectrogram frames per window;
 * - "audio-present": #guint, the slots that hold audio;
 * - "audio-missing": #gboolean, no audio in the window;
 * - "audio-ended": #gboolean, the audio input has ended;
 * - "reused": #gboolean, the frame carries the last fused result
 *   (#GstAvAttention:interval); "window-end": #guint64, the running time
 *   the window of that result ends at;
 * - when the window holds audio and the maps are kept: "patch-column" and
 *   "patch-row" (#guint, the picture patch the sound attends to most in the
 *   last layer, counted from the top left, as
 *   gst_av_attention_meta_get_strongest_patch() gives it) and
 *   "patch-weight" (#gdouble, its attention weight, 0..1);
 * - always "sound-visible" (#gboolean: the window holds audio and
 *   patch-weight reaches visible-threshold, i.e. a visible object sounds;
 *   FALSE without audio or without maps) and "visible-threshold"
 *   (#gdouble, from the weights file's metadata; 0 = unknown, as for the
 *   seeded weights, when sound-visible only says that there is audio).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 -m filesrc location=clip.webm ! decodebin name=d \
 *   d. ! queue ! audioconvert ! audioresample ! avspectrogram ! queue ! att.audio_sink \
 *   d. ! queue ! videoconvert ! videoscale ! avpatchembed ! queue ! att.video_sink \
 *   avattention name=att post-messages=true ! fakesink
 * ]| prints, for every video frame, the patch the sound attends to most.
 */

/* A video-master GstAggregator (the pattern of gst-plugins-bad
 * cccombiner).  All numerics live in core/ (window.h, fusion.h).
 *
 * Scheduling (the aggregate vfunc):
 * - the video pad leads: one output per video frame, nothing else;
 * - spectrogram frames before t go into the history; the frame is fused once
 *   the audio is known up to t (a frame or a gap at or after t, or the end of
 *   the last frame reaching t), once the audio pad is at end-of-stream, or on
 *   the aggregator timeout of a live pipeline; missing slots are masked;
 * - an audio pad that no source can feed (unlinked, or a branch that ends
 *   unlinked) is ended by the element itself (gstavinputs.h), and seeks go
 *   to the video alone;
 * - an ended audio pad comes back with a new stream-start (a branch linked
 *   while playing): counted as it is queued on the pad, it stops the frames
 *   from going out as if the audio had ended until GstAggregator has handled
 *   it (gst_av_attention_audio_ended in gstavattentionaudio.c);
 * - end-of-stream on the video pad ends the output (GST_FLOW_EOS, one EOS).
 *
 * Threads: with threads > 1 the frames are fused on a pool of worker threads,
 * one workspace (fusion stack, window, scratch) per thread.  The aggregate
 * thread assembles each frame's window, hands the frame to a worker and
 * pushes the results strictly in input order (a FIFO of jobs), so the
 * output is the same to the byte as with one thread.  At most `threads`
 * frames are being fused at once; the FIFO is emptied (every result
 * pushed) before anything else leaves the element (a gap, a serialized
 * video event, end-of-stream) and whenever no further frame is ready, so
 * nothing waits on input that may never come.  So that upstream can queue
 * the next frames meanwhile, the aggregator's latency is raised to
 * (threads - 1) frames, which is also the delay a saturated pool adds in a
 * live pipeline.
 *
 * Interval: with interval = n > 1 only one frame in n is fused; the others
 * carry a copy of the last fused vector and of its maps (the meta shares
 * the data block) with GstAvAttentionMeta.reused set.
 *
 * While the audio pad has no caps (a clip without sound) the window
 * assumes the weights' rate and hop, or the spec's 16000 Hz and 160.
 *
 * avfusion-v2 (gstavhistory.h): each frame's rhythm rows join the video
 * history once its job is queued; the job holds references to the rows of
 * the frames that show its bins, looked up when it is queued, so a worker
 * sees exactly the frames received before its own. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include "gstavelements.h"
#include "gstavtensor.h"
#include "gstavinputs.h"
#include "gstavweights.h"
#include "gstavproperty.h"
#include "gstavattentionmeta.h"
#include "gstavrhythmmeta.h"
#include "gstavhistory.h"
#include "blas.h"
#include "fusion.h"
#include "rhythm.h"
#include "weights.h"
#include "window.h"

GST_DEBUG_CATEGORY (gst_av_attention_debug);
#define GST_CAT_DEFAULT gst_av_attention_debug

/* Defaults */
#define DEFAULT_WEIGHTS ""
#define DEFAULT_MODEL GST_AV_MODEL_TRAINED
#define DEFAULT_SEED 0
#define DEFAULT_WINDOW GST_SECOND
#define MIN_WINDOW GST_MSECOND
#define MAX_WINDOW (1000 * GST_SECOND)
#define DEFAULT_ATTENTION_WEIGHTS GST_AV_ATTENTION_WEIGHTS_MEAN
#define DEFAULT_POST_MESSAGES FALSE
#define DEFAULT_BLAS_THREADS 1
#define DEFAULT_QOS TRUE
#define DEFAULT_THREADS 0
#define MAX_THREADS 64
#define DEFAULT_INTERVAL 1

enum
{
  PROP_0,
  PROP_WEIGHTS,
  PROP_MODEL,
  PROP_SEED,
  PROP_WINDOW,
  PROP_ATTENTION_WEIGHTS,
  PROP_POST_MESSAGES,
  PROP_BLAS_THREADS,
  PROP_QOS,
  PROP_THREADS,
  PROP_INTERVAL,
};

static GstStaticPadTemplate audio_sink_template =
GST_STATIC_PAD_TEMPLATE ("audio_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_LOG_MEL));

static GstStaticPadTemplate video_sink_template =
GST_STATIC_PAD_TEMPLATE ("video_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_PATCHES));

static GstStaticPadTemplate src_template =
GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_FUSED));

#define gst_av_attention_parent_class parent_class
G_DEFINE_TYPE (GstAvAttention, gst_av_attention, GST_TYPE_AGGREGATOR);
GST_ELEMENT_REGISTER_DEFINE (avattention, "avattention", GST_RANK_NONE,
    GST_TYPE_AV_ATTENTION);

static gboolean
gst_av_attention_start (GstAggregator * agg)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);
  gchar *path, *used = NULL;
  GstAvModel model;
  guint64 seed, window;
  gint threads, workers;
  AvfWeights *w = NULL;
  AvfError err;
  GError *gerr = NULL;
  GstAvWeightsChoice choice;
  gint seeded_p = 0, seeded_e = 0;
  gchar *from = NULL;
  gboolean chosen;

  GST_OBJECT_LOCK (self);
  gst_av_weights_choice_copy (&choice, &self->choice);
  window = self->window;
  threads = self->blas_threads;
  workers = self->threads > 0 ? self->threads :
      (gint) MIN (g_get_num_processors (), MAX_THREADS);
  GST_OBJECT_UNLOCK (self);

  /* no model set here: the one set on avpatchembed upstream, if any (with
   * its seeded sizes) */
  if (gst_av_weights_choice_ask_peer (GST_ELEMENT (self),
          GST_PAD (self->video_pad), &choice, &seeded_p, &seeded_e, &from))
    GST_INFO_OBJECT (self, "no model set: uses the one set on %s", from);
  g_free (from);
  chosen = gst_av_weights_choice_is_set (&choice);
  path = choice.path;
  choice.path = NULL;
  model = choice.model;
  seed = choice.seed;
  gst_av_weights_choice_clear (&choice);

  gst_av_attention_free_all (self);
  if (threads > 0)
    avf_blas_set_threads (threads);

  avf_error_clear (&err);
  if ((path != NULL && path[0] != '\0') || gst_av_model_is_shipped (model)) {
    w = gst_av_load_weights (GST_ELEMENT (self), path, model, &used);
    g_free (path);
    path = used;
    if (w == NULL)
      return FALSE;             /* the error is posted */
  } else {
    AvfConfig cfg = avf_config_default ();

    if (seeded_p > 0)
      cfg.P = seeded_p;
    if (seeded_e > 0)
      cfg.E = seeded_e;
    g_clear_pointer (&path, g_free);
    if (avf_weights_new_default (&w, &cfg, seed, &err) != AVF_OK) {
      gst_av_post_weights_error (GST_ELEMENT (self), NULL, &err);
      return FALSE;
    }
  }
  self->window_ns = (gint64) window;
  self->model_chosen = chosen;
  if (!gst_av_attention_use_weights (self, w, path,
          gst_av_weights_fingerprint (w, path == NULL, seed), seed))
    return FALSE;
  self->n_workers = (guint) workers;
  if (workers > 1) {
    self->workers = g_thread_pool_new (gst_av_attention_work, self, workers,
        TRUE, &gerr);
    if (self->workers == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Cannot start %d worker threads: %s", workers, gerr->message),
          (NULL));
      g_clear_error (&gerr);
      gst_av_attention_free_all (self);
      return FALSE;
    }
  }
  GST_INFO_OBJECT (self, "fusing on %d thread%s", workers,
      workers > 1 ? "s" : "");
  gst_av_attention_reset_stream (self);
  gst_av_attention_audio_reset (self);
  self->need_setup = TRUE;
  return TRUE;
}

static gboolean
gst_av_attention_stop (GstAggregator * agg)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);

  GST_OBJECT_LOCK (self);
  self->q_mels = self->q_embed = self->q_patches = self->q_rate = 0;
  self->q_rhythm = FALSE;
  GST_OBJECT_UNLOCK (self);
  gst_av_attention_drain (self, FALSE);
  if (self->workers) {
    g_thread_pool_free (self->workers, FALSE, TRUE);
    self->workers = NULL;
  }
  gst_av_attention_free_all (self);
  return TRUE;
}

static GstFlowReturn
gst_av_attention_flush (GstAggregator * agg)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);

  GST_DEBUG_OBJECT (self, "flush: dropping the audio history and the "
      "frames being fused");
  gst_av_attention_drain (self, FALSE);
  gst_av_attention_reset_stream (self);
  if (self->audio_caps_pending) {
    self->ainfo = self->pending_ainfo;
    self->audio_caps_pending = FALSE;
    self->need_setup = TRUE;
  }
  gst_av_attention_reset_qos (self);
  GST_OBJECT_LOCK (self);
  GST_AGGREGATOR_PAD (agg->srcpad)->segment.position = GST_CLOCK_TIME_NONE;
  GST_OBJECT_UNLOCK (self);
  return GST_FLOW_OK;
}


static gboolean
gst_av_attention_sink_query (GstAggregator * agg, GstAggregatorPad * pad,
    GstQuery * query)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *filter;

    gst_query_parse_caps (query, &filter);
    return gst_av_attention_answer_caps_query (query,
        gst_av_attention_sink_caps (self, pad, filter));
  }
  /* avpatchembed upstream asks, when its own model is not set, for the one
   * set here (gstavweights.h): answered from the properties, in any
   * state, and never passed on downstream */
  if (pad == self->video_pad && GST_QUERY_TYPE (query) == GST_QUERY_CUSTOM) {
    gboolean ours;

    GST_OBJECT_LOCK (self);
    ours = gst_av_model_query_answer (query, GST_ELEMENT (self),
        &self->choice, 0, 0);
    GST_OBJECT_UNLOCK (self);
    if (ours)
      return TRUE;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, pad, query);
}

static gboolean
gst_av_attention_src_query (GstAggregator * agg, GstQuery * query)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *caps = gst_pad_get_pad_template_caps (agg->srcpad);
    gint embed;

    GST_OBJECT_LOCK (self);
    embed = self->q_embed;
    GST_OBJECT_UNLOCK (self);
    if (embed > 0) {
      caps = gst_caps_make_writable (caps);
      gst_caps_set_simple (caps, "width", G_TYPE_INT, 2 * embed, NULL);
    }
    return gst_av_attention_answer_caps_query (query, caps);
  }
  return GST_AGGREGATOR_CLASS (parent_class)->src_query (agg, query);
}

static gboolean
gst_av_attention_sink_event (GstAggregator * agg, GstAggregatorPad * pad,
    GstEvent * event)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);

  /* serialized events reach here in the aggregate thread, after the frames
   * before them: those go out first (a new segment applies after them) */
  if (pad == self->video_pad && GST_EVENT_IS_SERIALIZED (event)
      && GST_EVENT_TYPE (event) != GST_EVENT_FLUSH_STOP && self->w != NULL)
    gst_av_attention_drain (self, TRUE);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;

      gst_event_parse_caps (event, &caps);
      GST_DEBUG_OBJECT (pad, "caps %" GST_PTR_FORMAT, caps);
      if (self->w == NULL) {
        GST_ERROR_OBJECT (pad, "caps before the element started");
        ok = FALSE;
      }
      else if (pad == self->audio_pad)
        ok = gst_av_attention_set_audio_caps (self, caps);
      else
        ok = gst_av_attention_set_video_caps (self, caps);
      if (!ok) {
        self->failed = TRUE;
        gst_event_unref (event);
        return FALSE;
      }
      break;
    }
    case GST_EVENT_STREAM_START:
      /* a new audio stream: GstAggregator clears audio_sink's end below */
      if (pad == self->audio_pad)
        gst_av_attention_audio_start_handled (self);
      break;
    case GST_EVENT_SEGMENT:
      /* avfusion-v2: a new segment (a seek) empties the video history */
      if (pad == self->video_pad && self->vhist != NULL)
        gst_av_history_clear (self->vhist);
      break;
    default:
      break;
  }
  /* the output follows the video timeline; an audio_sink that no source
   * can feed would hold the video forever in a pipeline that is not live:
   * it is ended, the frames get masked windows (checked again after every
   * flush or restart; a source linked later sends stream-start, which
   * clears the end) */
  if (!gst_av_aggregator_input_event (agg, pad, self->video_pad,
          GST_PAD (self->audio_pad), event)) {
    self->failed = TRUE;
    gst_event_unref (event);
    return FALSE;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_event (agg, pad, event);
}

/* Serialized events wait in the pad's queue until the aggregate thread
 * handles them (sink_event); a stream-start on audio_sink is counted as it
 * is queued, before any frame can be taken up after it
 * (gst_av_attention_audio_ended). */
static GstFlowReturn
gst_av_attention_sink_event_pre_queue (GstAggregator * agg,
    GstAggregatorPad * pad, GstEvent * event)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);
  GstFlowReturn ret;

  if (pad != self->audio_pad
      || GST_EVENT_TYPE (event) != GST_EVENT_STREAM_START)
    return GST_AGGREGATOR_CLASS (parent_class)->sink_event_pre_queue (agg,
        pad, event);

  g_mutex_lock (&self->audio_start_lock);
  ret = GST_AGGREGATOR_CLASS (parent_class)->sink_event_pre_queue (agg, pad,
      event);
  if (ret == GST_FLOW_OK)
    gst_av_attention_audio_start_queued (self);
  g_mutex_unlock (&self->audio_start_lock);
  return ret;
}

/* A seek cannot reach an audio_sink without a source (a branch that ends
 * unlinked refuses it): it goes to video_sink only, and a flushing seek
 * flushes audio_sink here so that GstAggregator resumes; the next video
 * segment ends it again (gst_av_seek_past_dead_pad). */
static gboolean
gst_av_attention_src_event (GstAggregator * agg, GstEvent * event)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);
  GstPad *apad = GST_PAD (self->audio_pad);

  if (GST_EVENT_TYPE (event) == GST_EVENT_QOS) {
    gst_av_attention_update_qos (self, event);
    return GST_AGGREGATOR_CLASS (parent_class)->src_event (agg, event);
  }
  if (GST_EVENT_TYPE (event) != GST_EVENT_SEEK)
    return GST_AGGREGATOR_CLASS (parent_class)->src_event (agg, event);

  return gst_av_seek_past_dead_pad (agg, event,
      GST_AGGREGATOR_CLASS (parent_class)->src_event, apad);
}

/* ---- GObject ---------------------------------------------------------- */

static void
gst_av_attention_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstAvAttention *self = GST_AV_ATTENTION (object);

  if (!gst_av_property_can_change (GST_ELEMENT (self), pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
    case PROP_MODEL:
    case PROP_SEED:
      gst_av_weights_choice_set (&self->choice, pspec, value);
      break;
    case PROP_WINDOW:
      self->window = g_value_get_uint64 (value);
      break;
    case PROP_ATTENTION_WEIGHTS:
      self->attention_weights = g_value_get_enum (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    case PROP_BLAS_THREADS:
      self->blas_threads = g_value_get_int (value);
      break;
    case PROP_QOS:
      self->qos = g_value_get_boolean (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_int (value);
      break;
    case PROP_INTERVAL:
      self->interval = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_av_attention_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstAvAttention *self = GST_AV_ATTENTION (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
    case PROP_MODEL:
    case PROP_SEED:
      gst_av_weights_choice_get (&self->choice, pspec, value);
      break;
    case PROP_WINDOW:
      g_value_set_uint64 (value, self->window);
      break;
    case PROP_ATTENTION_WEIGHTS:
      g_value_set_enum (value, self->attention_weights);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    case PROP_BLAS_THREADS:
      g_value_set_int (value, self->blas_threads);
      break;
    case PROP_QOS:
      g_value_set_boolean (value, self->qos);
      break;
    case PROP_THREADS:
      g_value_set_int (value, self->threads);
      break;
    case PROP_INTERVAL:
      g_value_set_uint (value, self->interval);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_av_attention_finalize (GObject * object)
{
  GstAvAttention *self = GST_AV_ATTENTION (object);

  gst_av_attention_free_all (self);
  gst_av_weights_choice_clear (&self->choice);
  g_mutex_clear (&self->jobs_lock);
  g_cond_clear (&self->jobs_cond);
  g_mutex_clear (&self->audio_start_lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_av_attention_init (GstAvAttention * self)
{
  GstElementClass *klass = GST_ELEMENT_GET_CLASS (self);
  GstPadTemplate *templ;

  templ = gst_element_class_get_pad_template (klass, "audio_sink");
  self->audio_pad = g_object_new (GST_TYPE_AGGREGATOR_PAD, "name",
      "audio_sink", "direction", GST_PAD_SINK, "template", templ, NULL);
  /* accept anything of the template so that a mismatch reaches the caps
   * event, which names the values; caps queries are restricted */
  GST_PAD_SET_ACCEPT_TEMPLATE (self->audio_pad);
  gst_element_add_pad (GST_ELEMENT (self), GST_PAD (self->audio_pad));

  templ = gst_element_class_get_pad_template (klass, "video_sink");
  self->video_pad = g_object_new (GST_TYPE_AGGREGATOR_PAD, "name",
      "video_sink", "direction", GST_PAD_SINK, "template", templ, NULL);
  GST_PAD_SET_ACCEPT_TEMPLATE (self->video_pad);
  gst_element_add_pad (GST_ELEMENT (self), GST_PAD (self->video_pad));
  gst_av_aggregator_init_dead_inputs (GST_AGGREGATOR (self));

  gst_av_weights_choice_init (&self->choice);
  self->window = DEFAULT_WINDOW;
  self->attention_weights = DEFAULT_ATTENTION_WEIGHTS;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->blas_threads = DEFAULT_BLAS_THREADS;
  self->qos = DEFAULT_QOS;
  self->threads = DEFAULT_THREADS;
  self->interval = DEFAULT_INTERVAL;
  g_queue_init (&self->jobs);
  g_mutex_init (&self->jobs_lock);
  g_cond_init (&self->jobs_cond);
  g_mutex_init (&self->audio_start_lock);
  self->earliest_time = GST_CLOCK_TIME_NONE;
  self->qos_proportion = 1.0;
  self->need_setup = TRUE;
  self->audio_known = GST_CLOCK_TIME_NONE;
}

/* The properties, each with its documentation: the blurbs are short (what
 * gst-inspect-1.0 shows), the gtk-doc comments say everything.  First
 * those of the model and its window. */
static void
gst_av_attention_install_model_properties (GObjectClass * gobject_class)
{
  /**
   * GstAvAttention:weights:
   *
   * Path of an avfusion-v1 or avfusion-v2 safetensors file with the model
   * weights (exported from PyTorch).
   *
   * A v2 file adds a one-second video history: the rhythm features that
   * avpatchembed adds to each frame, kept for the recent frames, from which
   * each patch token gets how it changed together with the sound; the
   * window must then hold exactly the file's K x G spectrogram frames (its
   * rhythm bins).
   *
   * When set it wins over #GstAvAttention:model; empty (the default) means
   * the weights that model selects, or, when neither is set here, the
   * choice set on the avpatchembed upstream. An avpatchembed without a
   * choice of its own uses this file too. Read at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights file",
          "Path of an avfusion-v1 or avfusion-v2 safetensors weights file; "
          "empty: the weights \"model\" selects", DEFAULT_WEIGHTS,
          GST_AV_PARAM_READY));
  /**
   * GstAvAttention:model:
   *
   * Which weights to use when #GstAvAttention:weights is empty:
   *
   * - trained (the default): the shipped model, avfusion-v2 trained on the
   *   sounding-objects world, versions 1 and 2 (coloured objects whose
   *   colour tells their sound and that pulse with rhythms of their own, two
   *   of them sometimes alike; see the project's docs), the file
   *   sounding-objects-v2.safetensors installed in the avattention folder
   *   of the data directory (/usr/local/share/avattention by default; a
   *   plugin run from its build tree uses the copy beside it). It knows
   *   only that world: real-world footage needs weights trained on your
   *   data (#GstAvAttention:weights);
   * - trained-v1: the first shipped model, avfusion-v1 of the version 1
   *   world (sounding-objects-v1.safetensors beside the default), which
   *   tells objects apart by colour only;
   * - unlabeled: the avfusion-v2 model trained without truth, by
   *   synchrony (sounding-objects-unlabeled.safetensors beside the
   *   default; model/train.py --unlabeled), less accurate than the
   *   default;
   * - seeded: built-in weights that are not trained, made from
   *   #GstAvAttention:seed (E 256, 8 heads, 1 layer, F 1024, 64 mel bands,
   *   196 patches, 100 audio positions), for tests and experiments.
   *   Setting seed selects them too.
   *
   * Set here or on avpatchembed, it holds for both. Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_enum ("model", "Model",
          "Which weights to use when \"weights\" is empty: a shipped "
          "trained model or built-in seeded ones", GST_TYPE_AV_MODEL,
          DEFAULT_MODEL, GST_AV_PARAM_READY));
  /**
   * GstAvAttention:seed:
   *
   * Seed of the built-in seeded weights. Setting it selects model=seeded
   * (a #GstAvAttention:weights file still wins). An avpatchembed without a
   * choice of its own uses the same seeded weights. Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint64 ("seed", "Seed",
          "Seed of the built-in seeded weights; setting it selects "
          "model=seeded", 0, G_MAXUINT64, DEFAULT_SEED, GST_AV_PARAM_READY));
  /**
   * GstAvAttention:window:
   *
   * Length in nanoseconds of the audio each video frame listens to: the
   * spectrogram frames of [t - window, t), the last window before the
   * frame at running time t. It must hold at most as many spectrogram
   * frames as the weights have audio positions (T_max). Applied at the
   * next start.
   */
  g_object_class_install_property (gobject_class, PROP_WINDOW,
      g_param_spec_uint64 ("window", "Audio window",
          "Nanoseconds of audio each video frame listens to (the "
          "spectrogram frames just before it)", MIN_WINDOW, MAX_WINDOW,
          DEFAULT_WINDOW, GST_AV_PARAM_READY));
  /**
   * GstAvAttention:attention-weights:
   *
   * Which attention maps ride on each output buffer as GstAvAttentionMeta:
   * none (no meta, only the fused vector), mean (the default: the mean
   * over the heads) or per-head (one map per head). Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_ATTENTION_WEIGHTS,
      g_param_spec_enum ("attention-weights", "Attention weights",
          "Which attention maps ride on each output as GstAvAttentionMeta",
          GST_TYPE_AV_ATTENTION_WEIGHTS, DEFAULT_ATTENTION_WEIGHTS,
          GST_AV_PARAM_READY));
}

/* ... then those of the output and of the work's scheduling. */
static void
gst_av_attention_install_run_properties (GObjectClass * gobject_class)
{
  /**
   * GstAvAttention:post-messages:
   *
   * Post an element message named "avattention" on the bus for every
   * output, with the frame's timestamp and the picture patch the sound
   * attends to most (patch-column, patch-row); every field is listed in
   * the element's documentation. Read at each output.
   */
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post an element message \"avattention\" on the bus for every "
          "output", DEFAULT_POST_MESSAGES, GST_AV_PARAM_PLAYING));
  /**
   * GstAvAttention:blas-threads:
   *
   * Threads OpenBLAS may use for one matrix product. The setting is
   * process-wide (it applies to every OpenBLAS user) and is made when the
   * element starts; 0 leaves OpenBLAS as it is (OPENBLAS_NUM_THREADS).
   * With 1, the default, the output is the same to the bit whatever the
   * machine's thread settings; OpenBLAS rounds differently with more
   * threads (last bits only). Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_BLAS_THREADS,
      g_param_spec_int ("blas-threads", "BLAS threads",
          "Threads OpenBLAS may use for one matrix product, process-wide; "
          "0 leaves OpenBLAS as it is", 0, 256, DEFAULT_BLAS_THREADS,
          GST_AV_PARAM_READY));
  /**
   * GstAvAttention:qos:
   *
   * Skip the video frames that downstream's QoS events say would arrive
   * late: no output for them, a QoS message for each. Sinks send such
   * events only when they sync and have qos=true, as video sinks do; file
   * sinks never do. Read at each frame.
   */
  g_object_class_install_property (gobject_class, PROP_QOS,
      g_param_spec_boolean ("qos", "QoS",
          "Skip the video frames that downstream's QoS events say would "
          "arrive late", DEFAULT_QOS, GST_AV_PARAM_PLAYING));
  /**
   * GstAvAttention:threads:
   *
   * Threads that fuse video frames, several frames at once; 0 (the
   * default) uses one per processor core, 1 fuses each frame in the
   * streaming thread. The output is the same to the byte whatever the
   * number, and in the same order; with more than one the element's
   * latency grows by (threads - 1) frames so that upstream can queue the
   * next frames. Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_int ("threads", "Threads",
          "Threads that fuse video frames, several at once; 0: one per "
          "processor core", 0, MAX_THREADS, DEFAULT_THREADS,
          GST_AV_PARAM_READY));
  /**
   * GstAvAttention:interval:
   *
   * Fuse one video frame in this many (1, the default: every frame). The
   * frames in between carry a copy of the last fused vector and of its
   * attention maps, with GstAvAttentionMeta.reused set (and "reused" in
   * the bus message), so a 60 fps stream can be analysed at 10 Hz with
   * interval=6. Counting restarts at every flush. (Unlike nvinfer's
   * interval, this counts the fused frame too.) Read at each frame.
   */
  g_object_class_install_property (gobject_class, PROP_INTERVAL,
      g_param_spec_uint ("interval", "Interval",
          "Fuse one video frame in this many; the others carry a copy of "
          "the last result", 1, G_MAXINT, DEFAULT_INTERVAL,
          GST_AV_PARAM_PLAYING));
}

static void
gst_av_attention_class_init (GstAvAttentionClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstAggregatorClass *agg_class = GST_AGGREGATOR_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_av_attention_debug, "avattention", 0,
      "audio-visual attention (avfusion-v1)");

  gobject_class->set_property = gst_av_attention_set_property;
  gobject_class->get_property = gst_av_attention_get_property;
  gobject_class->finalize = gst_av_attention_finalize;

  gst_av_attention_install_model_properties (gobject_class);
  gst_av_attention_install_run_properties (gobject_class);

  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &audio_sink_template, GST_TYPE_AGGREGATOR_PAD);
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &video_sink_template, GST_TYPE_AGGREGATOR_PAD);
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &src_template, GST_TYPE_AGGREGATOR_PAD);

  gst_element_class_set_static_metadata (element_class,
      "Audio-visual attention",
      "Filter/Analyzer/Audio/Video",
      "Fuses a log-mel spectrogram stream and a patch-embedding stream with "
      "audio-visual self- and cross-attention (avfusion-v1), one fused "
      "vector per video frame; avfusion-v2 weights add a one-second video "
      "history, how each patch changed together with the sound",
      "The avattention authors");

  agg_class->start = GST_DEBUG_FUNCPTR (gst_av_attention_start);
  agg_class->stop = GST_DEBUG_FUNCPTR (gst_av_attention_stop);
  agg_class->flush = GST_DEBUG_FUNCPTR (gst_av_attention_flush);
  agg_class->aggregate = GST_DEBUG_FUNCPTR (gst_av_attention_aggregate);
  agg_class->get_next_time = GST_DEBUG_FUNCPTR (gst_av_attention_get_next_time);
  agg_class->sink_event = GST_DEBUG_FUNCPTR (gst_av_attention_sink_event);
  agg_class->sink_event_pre_queue =
      GST_DEBUG_FUNCPTR (gst_av_attention_sink_event_pre_queue);
  agg_class->sink_query = GST_DEBUG_FUNCPTR (gst_av_attention_sink_query);
  agg_class->src_query = GST_DEBUG_FUNCPTR (gst_av_attention_src_query);
  agg_class->src_event = GST_DEBUG_FUNCPTR (gst_av_attention_src_event);
  agg_class->update_src_caps =
      GST_DEBUG_FUNCPTR (gst_av_attention_update_src_caps);

  gst_type_mark_as_plugin_api (GST_TYPE_AV_ATTENTION_WEIGHTS, 0);
}
