/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-avattnoverlay
 * @title: avattnoverlay
 * @short_description: draws where the sound attends as a heat map over the video
 * @see_also: avattention
 *
 * avattnoverlay draws where the audio attends in the picture as a heat
 * map.  Pad video_sink takes raw video, pad attention_sink the output of
 * avattention (fused tensors carrying GstAvAttentionMeta), and pad src
 * pushes exactly one buffer per video frame, with the frame's own
 * timestamps.
 *
 * Matching: the attention output whose running time is within half a
 * frame duration of the frame's running time belongs to it.  Attention
 * outputs older than that are dropped; a newer one waits for its frame.  A
 * frame without attention output (none yet at the start, a window without
 * audio, the attention pad at end-of-stream or late in a live pipeline)
 * passes through untouched, byte for byte.  Not live, the element waits
 * until both pads have data or are at end-of-stream; live, it waits until
 * the frame's running time plus the latency, then passes the frame
 * through (raise the "latency" property when the attention branch is
 * slower than it reports).  An attention_sink that no source can feed
 * (unlinked, or a branch that ends unlinked) is ended by the element
 * itself and the video passes through.  A GAP event on video_sink produces
 * no output buffer but a GAP event on src (once the first frame went out).
 *
 * Drawing: the map of #GstAvAttnOverlay:layer and #GstAvAttnOverlay:module
 * is reduced to one value per patch (audio-cross: the mean over the audio
 * slots that hold audio and over the heads), normalised by its largest
 * value, upsampled bilinearly from the patch grid to the frame's own
 * resolution (the grid covers the whole picture), coloured with
 * #GstAvAttnOverlay:colormap and blended so that a pixel moves towards its
 * colour by opacity x value: where the map is 0 the picture stays as it
 * was.  #GstAvAttnOverlay:marker outlines the strongest patch.
 *
 * Nothing visible sounds: the maps of the sound (audio-cross, video-cross)
 * are not drawn on a frame whose meta says that no visible object sounds
 * (gst_av_attention_meta_get_sound_visible(): no audio in the window, or
 * the strongest patch below the model's visible_threshold; with the seeded
 * weights, whose threshold is unknown, every frame with audio is drawn)
 * unless #GstAvAttnOverlay:draw-when-not-visible is set.  video-self is
 * drawn either way.
 *
 * Formats: packed 8-bit RGB (RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA,
 * ARGB, ABGR: alpha and padding bytes are kept) and 8-bit 4:2:0 YUV (I420,
 * NV12: the colours are converted with the frame's colour matrix and
 * range, chroma takes the map at the first pixel of each 2x2 block).
 * Strides and plane offsets are respected.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=90 ! video/x-raw,width=640,height=480 ! tee name=t \
 *   t. ! queue ! videoconvert ! videoscale ! avpatchembed ! att.video_sink \
 *   audiotestsrc num-buffers=300 ! audioconvert ! audioresample ! avspectrogram ! att.audio_sink \
 *   avattention name=att ! ov.attention_sink \
 *   t. ! queue ! videoconvert ! ov.video_sink \
 *   avattnoverlay name=ov ! videoconvert ! autovideosink
 * ]| one video, two branches: the heat map over the full picture.
 */

/* A video-master GstAggregator (the pattern of gst-plugins-bad
 * cccombiner).  The math is in core/heatmap.h; the frame is changed in
 * place after gst_buffer_make_writable and mapped with
 * gst_video_frame_map. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattnoverlay.h"
#include "gstavelements.h"
#include "gstavtensor.h"
#include "gstavinputs.h"
#include "gstavproperty.h"
#include "gstavattentionmeta.h"
#include "gstavattention-enumtypes.h"

#include <gst/video/video.h>

#include "heatmap.h"

GST_DEBUG_CATEGORY_STATIC (gst_av_attn_overlay_debug);
#define GST_CAT_DEFAULT gst_av_attn_overlay_debug

#define DEFAULT_LAYER -1
#define DEFAULT_MODULE GST_AV_ATTENTION_MODULE_AUDIO_CROSS
#define DEFAULT_HEAD -1
#define DEFAULT_COLORMAP GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO
#define DEFAULT_OPACITY 0.5
#define DEFAULT_MARKER TRUE
#define DEFAULT_DRAW_WHEN_NOT_VISIBLE FALSE
#define MAX_HEADS 65536

enum
{
  PROP_0,
  PROP_LAYER,
  PROP_MODULE,
  PROP_HEAD,
  PROP_COLORMAP,
  PROP_OPACITY,
  PROP_MARKER,
  PROP_DRAW_WHEN_NOT_VISIBLE
};

/* the formats blend_frame() handles; sides up to AVF_HEATMAP_MAX_SIDE */
#define VIDEO_CAPS \
  "video/x-raw, format=(string){ RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, " \
  "BGRA, ARGB, ABGR, I420, NV12 }, width=(int)[1,65536], " \
  "height=(int)[1,65536], framerate=(fraction)[0/1,2147483647/1]"
G_STATIC_ASSERT (AVF_HEATMAP_MAX_SIDE == 65536);

typedef struct
{
  gint layer;
  GstAvAttentionModule module;
  gint head;
  GstAvAttnOverlayColormap colormap;
  gdouble opacity;
  gboolean marker;
  gboolean draw_when_not_visible;
} Settings;

struct _GstAvAttnOverlay
{
  GstAggregator parent;

  GstAggregatorPad *video_pad, *attention_pad;

  /* properties, under the object lock */
  Settings settings;

  /* stream state: the aggregator's streaming thread only (and start/stop
   * once it is stopped) */
  GstVideoInfo vinfo;
  AvfHeatmap *heatmap;          /* for the negotiated frame size */
  AvfHeatmapLut lut;
  gboolean lut_valid;
  GstAvAttnOverlayColormap lut_colormap;
  gdouble lut_opacity;
  gboolean warned_no_meta, warned_layer, warned_head;
};

static GstStaticPadTemplate video_sink_template =
GST_STATIC_PAD_TEMPLATE ("video_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (VIDEO_CAPS));

static GstStaticPadTemplate attention_sink_template =
GST_STATIC_PAD_TEMPLATE ("attention_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_FUSED));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (VIDEO_CAPS));

#define gst_av_attn_overlay_parent_class parent_class
G_DEFINE_TYPE (GstAvAttnOverlay, gst_av_attn_overlay, GST_TYPE_AGGREGATOR);
GST_ELEMENT_REGISTER_DEFINE (avattnoverlay, "avattnoverlay", GST_RANK_NONE,
    GST_TYPE_AV_ATTN_OVERLAY);

static void gst_av_attn_overlay_set_property (GObject * object,
    guint prop_id, const GValue * value, GParamSpec * pspec);
static void gst_av_attn_overlay_get_property (GObject * object,
    guint prop_id, GValue * value, GParamSpec * pspec);
static GstFlowReturn gst_av_attn_overlay_aggregate (GstAggregator * agg,
    gboolean timeout);
static gboolean gst_av_attn_overlay_src_event (GstAggregator * agg,
    GstEvent * event);
static gboolean gst_av_attn_overlay_sink_event (GstAggregator * agg,
    GstAggregatorPad * pad, GstEvent * event);
static gboolean gst_av_attn_overlay_sink_query (GstAggregator * agg,
    GstAggregatorPad * pad, GstQuery * query);
static gboolean gst_av_attn_overlay_src_query (GstAggregator * agg,
    GstQuery * query);
static GstClockTime gst_av_attn_overlay_get_next_time (GstAggregator * agg);
static gboolean gst_av_attn_overlay_start (GstAggregator * agg);
static gboolean gst_av_attn_overlay_stop (GstAggregator * agg);

/* The properties, each with its documentation: the blurbs are short (what
 * gst-inspect-1.0 shows), the gtk-doc comments say everything. */
static void
gst_av_attn_overlay_install_properties (GObjectClass * gobject_class)
{
  const GParamFlags flags = GST_AV_PARAM_PLAYING;

  /**
   * GstAvAttnOverlay:layer:
   *
   * Which layer's attention to draw, counted from 0; -1 (the default)
   * draws the last layer. A layer the model does not have draws the last
   * one, with a warning. Read at each frame.
   */
  g_object_class_install_property (gobject_class, PROP_LAYER,
      g_param_spec_int ("layer", "Layer",
          "Which layer's attention to draw, counted from 0; -1 draws the "
          "last layer", -1, GST_AV_ATTENTION_MAX_LAYERS - 1, DEFAULT_LAYER,
          flags));
  /**
   * GstAvAttnOverlay:module:
   *
   * Which attention map to draw: audio-cross (the default) shows the
   * patches the sound attends to, averaged over the audio moments that
   * hold audio; video-self how much attention each patch receives from the
   * others; video-cross how sharply each patch attends to one audio
   * moment. audio-self has no place in the picture and is refused with a
   * warning. Read at each frame.
   */
  g_object_class_install_property (gobject_class, PROP_MODULE,
      g_param_spec_enum ("module", "Attention module",
          "Which attention map to draw: audio-cross, video-self or "
          "video-cross", GST_TYPE_AV_ATTENTION_MODULE, DEFAULT_MODULE,
          flags));
  /**
   * GstAvAttnOverlay:head:
   *
   * Which attention head to draw, counted from 0; -1 (the default) draws
   * the mean of the heads. Single heads need avattention's
   * #GstAvAttention:attention-weights=per-head; otherwise, or for a head
   * the model does not have, the mean is drawn, with a warning. Read at
   * each frame.
   */
  g_object_class_install_property (gobject_class, PROP_HEAD,
      g_param_spec_int ("head", "Head",
          "Which attention head to draw, counted from 0; -1 draws the mean "
          "of the heads", -1, MAX_HEADS - 1, DEFAULT_HEAD, flags));
  /**
   * GstAvAttnOverlay:colormap:
   *
   * The colours of the heat map, from weak to strong attention. Read at
   * each frame.
   */
  g_object_class_install_property (gobject_class, PROP_COLORMAP,
      g_param_spec_enum ("colormap", "Colour map",
          "The colours of the heat map, from weak to strong attention",
          GST_TYPE_AV_ATTN_OVERLAY_COLORMAP, DEFAULT_COLORMAP, flags));
  /**
   * GstAvAttnOverlay:opacity:
   *
   * How strongly the heat map covers the picture where the attention is
   * strongest: 0 leaves the picture unchanged, 1 paints the colour map's
   * colour there; weaker attention covers proportionally less. Read at
   * each frame.
   */
  g_object_class_install_property (gobject_class, PROP_OPACITY,
      g_param_spec_double ("opacity", "Opacity",
          "How strongly the heat map covers the picture where the attention "
          "is strongest (0 to 1)", 0.0, 1.0, DEFAULT_OPACITY, flags));
  /**
   * GstAvAttnOverlay:marker:
   *
   * Outline a small square, in the colour map's strongest colour, on the
   * patch that gets the most attention (not at opacity 0, which draws
   * nothing). Read at each frame.
   */
  g_object_class_install_property (gobject_class, PROP_MARKER,
      g_param_spec_boolean ("marker", "Marker",
          "Outline the patch that gets the most attention",
          DEFAULT_MARKER, flags));
  /**
   * GstAvAttnOverlay:draw-when-not-visible:
   *
   * Also draw the sound's maps (modules audio-cross and video-cross) on
   * frames where, by the attention metadata, no visible object sounds: the
   * strongest patch is below the model's visible_threshold (an off-screen
   * sound, noise). By default such frames pass through unchanged, as
   * frames without audio do. With weights that name no threshold (the
   * seeded ones) every frame with audio is drawn anyway. Read at each
   * frame.
   */
  g_object_class_install_property (gobject_class,
      PROP_DRAW_WHEN_NOT_VISIBLE, g_param_spec_boolean
      ("draw-when-not-visible", "Draw when not visible",
          "Also draw the sound's map on frames where no visible object "
          "sounds", DEFAULT_DRAW_WHEN_NOT_VISIBLE, flags));
}

static void
gst_av_attn_overlay_class_init (GstAvAttnOverlayClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstAggregatorClass *agg_class = GST_AGGREGATOR_CLASS (klass);

  gobject_class->set_property = gst_av_attn_overlay_set_property;
  gobject_class->get_property = gst_av_attn_overlay_get_property;

  gst_av_attn_overlay_install_properties (gobject_class);

  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &video_sink_template, GST_TYPE_AGGREGATOR_PAD);
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &attention_sink_template, GST_TYPE_AGGREGATOR_PAD);
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &src_template, GST_TYPE_AGGREGATOR_PAD);
  gst_element_class_set_static_metadata (element_class,
      "Attention heat map overlay", "Filter/Editor/Video",
      "Draws where the audio attends in the picture as a heat map over the "
      "video",
      "The avattention authors");

  agg_class->aggregate = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_aggregate);
  agg_class->sink_event = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_sink_event);
  agg_class->src_event = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_src_event);
  agg_class->sink_query = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_sink_query);
  agg_class->src_query = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_src_query);
  agg_class->get_next_time =
      GST_DEBUG_FUNCPTR (gst_av_attn_overlay_get_next_time);
  agg_class->start = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_start);
  agg_class->stop = GST_DEBUG_FUNCPTR (gst_av_attn_overlay_stop);
  /* the output caps are those of video_sink, set when they arrive */
  agg_class->negotiate = NULL;

  gst_type_mark_as_plugin_api (GST_TYPE_AV_ATTN_OVERLAY_COLORMAP, 0);

  GST_DEBUG_CATEGORY_INIT (gst_av_attn_overlay_debug, "avattnoverlay", 0,
      "attention heat map overlay");
}

static GstAggregatorPad *
make_pad (GstAvAttnOverlay * self, GstStaticPadTemplate * st)
{
  GstPadTemplate *templ = gst_static_pad_template_get (st);
  GstAggregatorPad *pad = g_object_new (GST_TYPE_AGGREGATOR_PAD,
      "name", st->name_template, "direction", GST_PAD_SINK,
      "template", templ, NULL);

  gst_object_unref (templ);
  gst_element_add_pad (GST_ELEMENT (self), GST_PAD (pad));
  return pad;
}

static void
gst_av_attn_overlay_init (GstAvAttnOverlay * self)
{
  self->video_pad = make_pad (self, &video_sink_template);
  self->attention_pad = make_pad (self, &attention_sink_template);
  gst_av_aggregator_init_dead_inputs (GST_AGGREGATOR (self));

  self->settings.layer = DEFAULT_LAYER;
  self->settings.module = DEFAULT_MODULE;
  self->settings.head = DEFAULT_HEAD;
  self->settings.colormap = DEFAULT_COLORMAP;
  self->settings.opacity = DEFAULT_OPACITY;
  self->settings.marker = DEFAULT_MARKER;
  self->settings.draw_when_not_visible = DEFAULT_DRAW_WHEN_NOT_VISIBLE;
  gst_video_info_init (&self->vinfo);
}

static void
gst_av_attn_overlay_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (object);
  gboolean refused = FALSE;

  if (!gst_av_property_can_change (GST_ELEMENT (self), pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LAYER:
      self->settings.layer = g_value_get_int (value);
      break;
    case PROP_MODULE:
      if (g_value_get_enum (value) == GST_AV_ATTENTION_MODULE_AUDIO_SELF)
        refused = TRUE;
      else
        self->settings.module = g_value_get_enum (value);
      break;
    case PROP_HEAD:
      self->settings.head = g_value_get_int (value);
      break;
    case PROP_COLORMAP:
      self->settings.colormap = g_value_get_enum (value);
      break;
    case PROP_OPACITY:
      self->settings.opacity = g_value_get_double (value);
      break;
    case PROP_MARKER:
      self->settings.marker = g_value_get_boolean (value);
      break;
    case PROP_DRAW_WHEN_NOT_VISIBLE:
      self->settings.draw_when_not_visible = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);

  if (refused)
    gst_av_property_refuse (GST_ELEMENT (self), pspec, "the audio "
        "self-attention (module audio-self) relates audio moments to each "
        "other and has no place in the picture, so it cannot be drawn; the "
        "module was left unchanged.");
}

static void
gst_av_attn_overlay_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LAYER:
      g_value_set_int (value, self->settings.layer);
      break;
    case PROP_MODULE:
      g_value_set_enum (value, self->settings.module);
      break;
    case PROP_HEAD:
      g_value_set_int (value, self->settings.head);
      break;
    case PROP_COLORMAP:
      g_value_set_enum (value, self->settings.colormap);
      break;
    case PROP_OPACITY:
      g_value_set_double (value, self->settings.opacity);
      break;
    case PROP_MARKER:
      g_value_set_boolean (value, self->settings.marker);
      break;
    case PROP_DRAW_WHEN_NOT_VISIBLE:
      g_value_set_boolean (value, self->settings.draw_when_not_visible);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- state ----------------------------------------------------------- */

static void
reset_stream (GstAvAttnOverlay * self)
{
  avf_heatmap_free (self->heatmap);
  self->heatmap = NULL;
  gst_video_info_init (&self->vinfo);
  self->lut_valid = FALSE;
  self->warned_no_meta = self->warned_layer = self->warned_head = FALSE;
}

static gboolean
gst_av_attn_overlay_start (GstAggregator * agg)
{
  reset_stream (GST_AV_ATTN_OVERLAY (agg));
  return TRUE;
}

static gboolean
gst_av_attn_overlay_stop (GstAggregator * agg)
{
  reset_stream (GST_AV_ATTN_OVERLAY (agg));
  return TRUE;
}

/* ---- caps, events and queries ---------------------------------------- */

static gboolean
set_video_caps (GstAvAttnOverlay * self, GstCaps * caps)
{
  GstVideoInfo info;
  AvfHeatmap *hm = NULL;
  AvfError err;

  if (!gst_video_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("The video on pad video_sink has caps that do not describe raw "
            "video: %" GST_PTR_FORMAT ".", caps), (NULL));
    return FALSE;
  }
  if (self->heatmap == NULL || info.width != self->vinfo.width
      || info.height != self->vinfo.height) {
    if (avf_heatmap_new (&hm, info.width, info.height, &err) != AVF_OK) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Cannot draw a heat map over %dx%d video: %s.", info.width,
              info.height, err.message), ("caps %" GST_PTR_FORMAT, caps));
      return FALSE;
    }
    avf_heatmap_free (self->heatmap);
    self->heatmap = hm;
  }
  self->vinfo = info;
  self->lut_valid = FALSE;
  GST_INFO_OBJECT (self, "video %dx%d %s", info.width, info.height,
      gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&info)));
  gst_aggregator_set_src_caps (GST_AGGREGATOR (self), caps);
  return TRUE;
}

static gboolean
check_attention_caps (GstAvAttnOverlay * self, GstCaps * caps)
{
  GstAvTensorInfo info;
  gchar *why = NULL;

  if (!gst_av_tensor_info_from_caps (&info, caps, &why)
      || info.kind != GST_AV_TENSOR_FUSED) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Pad attention_sink takes the output of avattention (tensor kind "
            "\"" GST_AV_TENSOR_KIND_FUSED "\"), not %" GST_PTR_FORMAT "%s%s.",
            caps, why ? ": " : "", why ? why : ""), (NULL));
    g_free (why);
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_av_attn_overlay_sink_event (GstAggregator * agg, GstAggregatorPad * pad,
    GstEvent * event)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (agg);

  GST_LOG_OBJECT (pad, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;

      gst_event_parse_caps (event, &caps);
      if (pad == self->video_pad)
        ok = set_video_caps (self, caps);
      else
        ok = check_attention_caps (self, caps);
      if (!ok) {
        gst_event_unref (event);
        return FALSE;
      }
      break;
    }
    default:
      break;
  }
  /* the output keeps the video's timestamps, so its segment too; an
   * attention_sink that no source can feed would hold the video forever in
   * a pipeline that is not live: it is ended, the frames pass through
   * (checked again after each flush) */
  if (!gst_av_aggregator_input_event (agg, pad, self->video_pad,
          GST_PAD (self->attention_pad), event)) {
    gst_event_unref (event);
    return FALSE;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_event (agg, pad, event);
}

/* A seek cannot reach an attention_sink without a source: it goes to
 * video_sink only, and a flushing seek flushes attention_sink here so that
 * GstAggregator resumes (gst_av_seek_past_dead_pad). */
static gboolean
gst_av_attn_overlay_src_event (GstAggregator * agg, GstEvent * event)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (agg);

  if (GST_EVENT_TYPE (event) != GST_EVENT_SEEK)
    return GST_AGGREGATOR_CLASS (parent_class)->src_event (agg, event);
  return gst_av_seek_past_dead_pad (agg, event,
      GST_AGGREGATOR_CLASS (parent_class)->src_event,
      GST_PAD (self->attention_pad));
}

/* The video passes through, so a caps query on video_sink (src) is asked of
 * src's (video_sink's) peer, filter and all, as cccombiner does; the answer
 * is kept to the formats this element draws on (@pad's template).  Without
 * a peer: the template. */
static gboolean
proxy_caps_query (GstPad * pad, GstPad * other, GstQuery * query)
{
  GstCaps *templ = gst_pad_get_pad_template_caps (pad), *filter, *caps;

  if (gst_pad_peer_query (other, query)) {
    GstCaps *peer;

    gst_query_parse_caps_result (query, &peer);
    caps = gst_caps_intersect_full (peer, templ, GST_CAPS_INTERSECT_FIRST);
  } else {
    gst_query_parse_caps (query, &filter);
    caps = filter ? gst_caps_intersect_full (filter, templ,
        GST_CAPS_INTERSECT_FIRST) : gst_caps_ref (templ);
  }
  gst_query_set_caps_result (query, caps);
  gst_caps_unref (caps);
  gst_caps_unref (templ);
  return TRUE;
}

/* The video passes through: video_sink takes what downstream takes. */
static gboolean
gst_av_attn_overlay_sink_query (GstAggregator * agg, GstAggregatorPad * pad,
    GstQuery * query)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (agg);

  if (pad != self->video_pad)
    return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, pad, query);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return proxy_caps_query (GST_PAD (pad), agg->srcpad, query);
    case GST_QUERY_ACCEPT_CAPS:{
      GstCaps *caps, *templ;
      gboolean ok;

      gst_query_parse_accept_caps (query, &caps);
      templ = gst_pad_get_pad_template_caps (GST_PAD (pad));
      ok = gst_caps_is_subset (caps, templ)
          && gst_pad_peer_query_accept_caps (agg->srcpad, caps);
      gst_caps_unref (templ);
      gst_query_set_accept_caps_result (query, ok);
      return TRUE;
    }
    default:
      return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, pad,
          query);
  }
}

static gboolean
gst_av_attn_overlay_src_query (GstAggregator * agg, GstQuery * query)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (agg);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS)
    return proxy_caps_query (agg->srcpad, GST_PAD (self->video_pad), query);
  return GST_AGGREGATOR_CLASS (parent_class)->src_query (agg, query);
}

/* ---- time ------------------------------------------------------------ */

/* Half the frame's duration in running time: from its duration, else from
 * the frame rate; 0 (exact match) when neither is known. */
static GstClockTime
half_frame (GstAvAttnOverlay * self, GstBuffer * video, GstClockTime rt)
{
  const GstClockTime pts = GST_BUFFER_PTS (video);
  const GstClockTime dur = GST_BUFFER_DURATION (video);
  gdouble rate;

  if (GST_CLOCK_TIME_IS_VALID (dur) && dur > 0) {
    GstClockTime end = gst_av_pad_running_time (self->video_pad, pts + dur);
    if (GST_CLOCK_TIME_IS_VALID (end))
      return (end > rt ? end - rt : rt - end) / 2;
  }
  if (GST_VIDEO_INFO_FPS_N (&self->vinfo) > 0) {
    GST_OBJECT_LOCK (self->video_pad);
    rate = ABS (self->video_pad->segment.rate);
    GST_OBJECT_UNLOCK (self->video_pad);
    return (GstClockTime) (gst_util_uint64_scale (GST_SECOND,
            GST_VIDEO_INFO_FPS_D (&self->vinfo),
            2 * (guint64) GST_VIDEO_INFO_FPS_N (&self->vinfo))
        / (rate > 0.0 ? rate : 1.0));
  }
  return 0;
}

/* Live: wait for the attention output until the frame's running time
 * (plus the latency, which the aggregator adds). */
static GstClockTime
gst_av_attn_overlay_get_next_time (GstAggregator * agg)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (agg);
  GstBuffer *video = gst_aggregator_pad_peek_buffer (self->video_pad);
  GstClockTime rt;

  if (video == NULL)
    return GST_CLOCK_TIME_NONE;
  rt = gst_av_pad_running_time (self->video_pad, GST_BUFFER_PTS (video));
  gst_buffer_unref (video);
  return rt;
}

/* ---- drawing --------------------------------------------------------- */

/* update_lut hands the colormap property to core as AvfColormap
 * (core/heatmap.h): the values agree */
G_STATIC_ASSERT ((gint) GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO ==
    (gint) AVF_COLORMAP_INFERNO);
G_STATIC_ASSERT ((gint) GST_AV_ATTN_OVERLAY_COLORMAP_JET ==
    (gint) AVF_COLORMAP_JET);
G_STATIC_ASSERT ((gint) GST_AV_ATTN_OVERLAY_COLORMAP_GRAY ==
    (gint) AVF_COLORMAP_GRAY);

static void
update_lut (GstAvAttnOverlay * self, const Settings * s)
{
  const GstVideoInfo *vi = &self->vinfo;

  if (self->lut_valid && self->lut_colormap == s->colormap
      && self->lut_opacity == s->opacity)
    return;
  if (GST_VIDEO_INFO_IS_YUV (vi)) {
    gdouble kr, kb;
    if (!gst_video_color_matrix_get_Kr_Kb (vi->colorimetry.matrix, &kr, &kb)) {
      kr = 0.299;               /* BT.601 */
      kb = 0.114;
    }
    avf_heatmap_lut_yuv (&self->lut, (AvfColormap) s->colormap, s->opacity,
        kr, kb, vi->colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255);
  } else {
    avf_heatmap_lut_rgb (&self->lut, (AvfColormap) s->colormap, s->opacity);
  }
  self->lut_colormap = s->colormap;
  self->lut_opacity = s->opacity;
  self->lut_valid = TRUE;
}

/* Blends the normalised heat map (and the marker of patch (mc, mr)) over
 * every plane of the frame.  Alpha and padding bytes are not touched. */
static void
blend_frame (GstAvAttnOverlay * self, GstVideoFrame * frame,
    gboolean marker, gint mc, gint mr)
{
  const GstVideoFormatInfo *finfo = frame->info.finfo;

  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES (frame); p++) {
    AvfHeatmapPlane plane = { 0 };
    gint first = -1;

    for (guint c = 0; c < 3 && c < GST_VIDEO_FRAME_N_COMPONENTS (frame); c++) {
      if (GST_VIDEO_FORMAT_INFO_PLANE (finfo, c) != p)
        continue;
      if (first < 0)
        first = c;
      plane.offset[plane.n_components] = GST_VIDEO_FORMAT_INFO_POFFSET (finfo,
          c);
      plane.channel[plane.n_components] = c;
      plane.n_components++;
    }
    if (first < 0 || GST_VIDEO_FRAME_PLANE_STRIDE (frame, p) <= 0)
      continue;
    plane.data = GST_VIDEO_FRAME_PLANE_DATA (frame, p);
    plane.stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, p);
    plane.width = GST_VIDEO_FRAME_COMP_WIDTH (frame, first);
    plane.height = GST_VIDEO_FRAME_COMP_HEIGHT (frame, first);
    plane.pixel_stride = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, first);
    plane.x_shift = GST_VIDEO_FORMAT_INFO_W_SUB (finfo, first);
    plane.y_shift = GST_VIDEO_FORMAT_INFO_H_SUB (finfo, first);

    avf_heatmap_blend (self->heatmap, &plane, &self->lut);
    if (marker)
      avf_heatmap_draw_marker (self->heatmap, &plane,
          self->lut.colour[AVF_HEATMAP_LEVELS - 1], mc, mr);
  }
}

/* TRUE when every plane of a mapped frame, rows of stride bytes with the
 * last one pixel_stride * width wide, lies inside the memory mapped for
 * it (found by fuzz_elements: a 3-byte buffer with a 4x4 video meta). */
static gboolean
frame_planes_fit (const GstVideoFrame * frame)
{
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES (frame); p++) {
    const guint8 *data = GST_VIDEO_FRAME_PLANE_DATA (frame, p);
    /* with a video meta each plane has its own mapping, else all share
     * the buffer's */
    const GstMapInfo *map = &frame->map[frame->meta ? p : 0];
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, p);
    guint64 start, last_row, need;
    gint comp = -1;

    for (guint c = 0; c < GST_VIDEO_FRAME_N_COMPONENTS (frame); c++)
      if (GST_VIDEO_FRAME_COMP_PLANE (frame, c) == p) {
        comp = c;
        break;
      }
    if (comp < 0)
      continue;
    if (data < map->data || stride <= 0)
      return FALSE;
    start = (guint64) (data - map->data);
    last_row = (guint64) stride * (GST_VIDEO_FRAME_COMP_HEIGHT (frame,
            comp) - 1);
    need = start + last_row + (guint64) GST_VIDEO_FRAME_COMP_WIDTH (frame,
        comp) * GST_VIDEO_FRAME_COMP_PSTRIDE (frame, comp);
    if (need > map->size)
      return FALSE;
  }
  return TRUE;
}

/* The attention map draw paints: one layer and module of a meta. */
typedef struct
{
  const gfloat *w;
  const guint8 *mask;
  guint heads, tq, tk;
  gint head;                    /* -1: the mean of the heads */
} DrawnMap;

/* Checks the sizes of an attention meta; FALSE after an error (posted). */
static gboolean
draw_meta_is_consistent (GstAvAttnOverlay * self, GstAvAttentionMeta * meta)
{
  const guint n_patches = meta->grid_columns * meta->grid_rows;

  if (meta->n_layers == 0 || meta->grid_columns == 0 || meta->grid_rows == 0
      || (guint64) meta->grid_columns * meta->grid_rows
      > AVF_HEATMAP_MAX_PATCHES || n_patches != meta->n_patches
      || meta->n_heads == 0 || meta->n_heads > MAX_HEADS
      || meta->n_audio_slots > G_MAXINT) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The attention metadata on pad attention_sink is inconsistent: "
            "%u layers, %u heads, %u audio slots, a %u x %u patch grid of "
            "%u patches.", meta->n_layers, meta->n_heads,
            meta->n_audio_slots, meta->grid_columns, meta->grid_rows,
            meta->n_patches), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* The layer drawn for the "layer" property @want (-1: the last one); a
 * layer the model lacks is reported once and the last one drawn. */
static guint
draw_layer (GstAvAttnOverlay * self, GstAvAttentionMeta * meta, gint want)
{
  guint layer = want < 0 ? meta->n_layers - 1 : (guint) want;

  if (layer >= meta->n_layers) {
    if (!self->warned_layer) {
      self->warned_layer = TRUE;
      GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
          ("The model has %u layers, so layer %d does not exist; the last "
              "layer is drawn instead. This is reported once.",
              meta->n_layers, want), (NULL));
    }
    layer = meta->n_layers - 1;
  }
  return layer;
}

/* FALSE when the map of @module in @layer is not to be drawn: never for
 * audio-self, not for a window without audio (but video-self), not when
 * it was skipped, and not when no object sounds (unless
 * @draw_when_not_visible). */
static gboolean
draw_module_has_map (GstAvAttnOverlay * self, GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, gboolean draw_when_not_visible)
{
  if (module == GST_AV_ATTENTION_MODULE_AUDIO_SELF)
    return FALSE;               /* refused at set_property; never drawn */
  if (module != GST_AV_ATTENTION_MODULE_VIDEO_SELF && meta->audio_missing) {
    GST_LOG_OBJECT (self, "window without audio: nothing to draw");
    return FALSE;
  }
  if (gst_av_attention_meta_is_skipped (meta, layer, module))
    return FALSE;
  if (module != GST_AV_ATTENTION_MODULE_VIDEO_SELF
      && !draw_when_not_visible
      && !gst_av_attention_meta_get_sound_visible (meta, NULL, NULL)) {
    GST_LOG_OBJECT (self, "no visible object sounds (strongest patch below "
        "the threshold %g): nothing drawn", (gdouble) meta->visible_threshold);
    return FALSE;
  }
  return TRUE;
}

/* The head drawn for the "head" property @head (-1: the mean) out of the
 * @heads of the maps; a head that cannot be drawn is reported once and the
 * mean drawn. */
static gint
draw_head (GstAvAttnOverlay * self, gint head, guint heads)
{
  if (head >= 0 && heads == 1) {
    /* the maps are the head mean already */
    if (head > 0 && !self->warned_head) {
      self->warned_head = TRUE;
      GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
          ("Head %d cannot be drawn: the attention maps are averaged over "
              "the heads (set attention-weights=per-head on avattention to "
              "draw single heads); the mean is drawn instead. This is "
              "reported once.", head), (NULL));
    }
    head = -1;
  } else if (head >= (gint) heads) {
    if (!self->warned_head) {
      self->warned_head = TRUE;
      GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
          ("The model has %u heads, so head %d does not exist; the mean of "
              "the heads is drawn instead. This is reported once.", heads,
              head), (NULL));
    }
    head = -1;
  }
  return head;
}

/* Fills self->heatmap from @map and finds the patch (*mc, *mr) the marker
 * goes on.  *empty: nothing to draw. */
static GstFlowReturn
draw_heatmap (GstAvAttnOverlay * self, GstAvAttentionMeta * meta,
    GstAvAttentionModule module, const DrawnMap * map, gint * mc, gint * mr,
    gboolean * empty)
{
  AvfError err;
  gint used;

  *empty = FALSE;
  if (avf_heatmap_set_grid (self->heatmap, meta->grid_columns,
          meta->grid_rows, &err) != AVF_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot draw the %u x %u patch grid of the attention metadata: %s.",
            meta->grid_columns, meta->grid_rows, err.message), (NULL));
    return GST_FLOW_ERROR;
  }
  switch (module) {
    case GST_AV_ATTENTION_MODULE_VIDEO_SELF:
      used = avf_heatmap_mean_over_queries (avf_heatmap_grid (self->heatmap),
          map->w, NULL, map->heads, map->head, map->tq, map->tk);
      break;
    case GST_AV_ATTENTION_MODULE_VIDEO_CROSS:
      used = avf_heatmap_max_over_keys (avf_heatmap_grid (self->heatmap),
          map->w, map->mask, map->heads, map->head, map->tq, map->tk);
      break;
    case GST_AV_ATTENTION_MODULE_AUDIO_CROSS:
    default:
      used = avf_heatmap_mean_over_queries (avf_heatmap_grid (self->heatmap),
          map->w, map->mask, map->heads, map->head, map->tq, map->tk);
      break;
  }
  if (used == 0 || !avf_heatmap_normalise (self->heatmap, mc, mr)) {
    GST_LOG_OBJECT (self, "nothing to draw (every audio slot masked, or the "
        "map is zero or not finite)");
    *empty = TRUE;
    return GST_FLOW_OK;
  }
  if (module != GST_AV_ATTENTION_MODULE_VIDEO_CROSS) {
    /* the marker is on the strongest patch as the meta and the bus message
     * define it; video-cross, whose values are not patch means, marks the
     * largest value drawn */
    gint best;

    if (avf_heatmap_strongest (&best, NULL, map->w, module ==
            GST_AV_ATTENTION_MODULE_VIDEO_SELF ? NULL : map->mask,
            (gint) map->heads, map->head, (gint) map->tq,
            (gint) map->tk) > 0) {
      *mc = best % (gint) meta->grid_columns;
      *mr = best / (gint) meta->grid_columns;
    }
  }
  return GST_FLOW_OK;
}

/* Blends self->heatmap (and the marker on patch (mc, mr)) over *video,
 * made writable. */
static GstFlowReturn
draw_on_frame (GstAvAttnOverlay * self, GstBuffer ** video,
    const Settings * s, gint mc, gint mr)
{
  GstVideoFrame frame;

  update_lut (self, s);
  *video = gst_buffer_make_writable (*video);
  if (!gst_video_frame_map (&frame, &self->vinfo, *video, GST_MAP_READWRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Could not map a video frame of %" G_GSIZE_FORMAT " bytes on pad "
            "video_sink as %dx%d %s (%" G_GSIZE_FORMAT " bytes).",
            gst_buffer_get_size (*video), GST_VIDEO_INFO_WIDTH (&self->vinfo),
            GST_VIDEO_INFO_HEIGHT (&self->vinfo),
            gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&self->vinfo)),
            GST_VIDEO_INFO_SIZE (&self->vinfo)), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!frame_planes_fit (&frame)) {
    /* a GstVideoMeta can describe planes beyond the buffer's memory, and
     * gst_video_frame_map does not check their extent */
    gst_video_frame_unmap (&frame);
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("A video frame on pad video_sink is smaller than its planes: %"
            G_GSIZE_FORMAT " bytes for %dx%d %s with the strides of its "
            "video meta.", gst_buffer_get_size (*video),
            GST_VIDEO_INFO_WIDTH (&self->vinfo),
            GST_VIDEO_INFO_HEIGHT (&self->vinfo),
            gst_video_format_to_string (GST_VIDEO_INFO_FORMAT
                (&self->vinfo))), (NULL));
    return GST_FLOW_ERROR;
  }
  blend_frame (self, &frame, s->marker, mc, mr);
  gst_video_frame_unmap (&frame);
  return GST_FLOW_OK;
}

/* Draws the attention of `attention` over *video (made writable when
 * drawn on).  Frames without anything to draw stay as they are. */
static GstFlowReturn
draw (GstAvAttnOverlay * self, GstBuffer ** video, GstBuffer * attention)
{
  GstAvAttentionMeta *meta;
  GstAvAttentionModule module;
  Settings s;
  DrawnMap map;
  guint layer;
  gint mc, mr;
  gboolean empty;
  GstFlowReturn ret;

  GST_OBJECT_LOCK (self);
  s = self->settings;
  GST_OBJECT_UNLOCK (self);

  if (s.opacity <= 0.0)
    return GST_FLOW_OK;         /* the overlay is invisible, marker too */

  meta = gst_buffer_get_av_attention_meta (attention);
  if (meta == NULL) {
    if (!self->warned_no_meta) {
      self->warned_no_meta = TRUE;
      GST_ELEMENT_WARNING (self, STREAM, FORMAT,
          ("The attention output on pad attention_sink carries no attention "
              "maps, so nothing is drawn; set attention-weights=mean or "
              "per-head on avattention. This is reported once."), (NULL));
    }
    return GST_FLOW_OK;
  }
  if (!draw_meta_is_consistent (self, meta))
    return GST_FLOW_ERROR;
  layer = draw_layer (self, meta, s.layer);
  module = s.module;
  if (!draw_module_has_map (self, meta, layer, module,
          s.draw_when_not_visible))
    return GST_FLOW_OK;

  map.w = gst_av_attention_meta_get_weights (meta, layer, module, &map.heads,
      &map.tq, &map.tk);
  map.mask = gst_av_attention_meta_get_audio_mask (meta);
  if (map.w == NULL || map.mask == NULL)
    return GST_FLOW_OK;
  map.head = draw_head (self, s.head, map.heads);

  ret = draw_heatmap (self, meta, module, &map, &mc, &mr, &empty);
  if (ret != GST_FLOW_OK || empty)
    return ret;
  ret = draw_on_frame (self, video, &s, mc, mr);
  if (ret != GST_FLOW_OK)
    return ret;
  GST_LOG_OBJECT (self, "drew layer %u %s (%u of %u audio slots hold "
      "audio), strongest patch (%d, %d)", layer,
      gst_av_attention_module_name (module), meta->n_audio_present,
      meta->n_audio_slots, mc, mr);
  return GST_FLOW_OK;
}

/* ---- aggregation ----------------------------------------------------- */

static gboolean
is_gap (GstBuffer * buf)
{
  return GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_GAP)
      && gst_buffer_get_size (buf) == 0;
}

static GstFlowReturn
gst_av_attn_overlay_aggregate (GstAggregator * agg, gboolean timeout)
{
  GstAvAttnOverlay *self = GST_AV_ATTN_OVERLAY (agg);
  GstBuffer *video, *abuf, *attention = NULL;
  GstClockTime vrt, half, pts, dur;
  GstFlowReturn ret = GST_FLOW_OK;
  guint dropped = 0;

  video = gst_aggregator_pad_peek_buffer (self->video_pad);
  if (video == NULL) {
    if (gst_aggregator_pad_is_eos (self->video_pad)) {
      GST_DEBUG_OBJECT (self, "the video ended");
      return GST_FLOW_EOS;
    }
    return GST_FLOW_OK;         /* live timeout without a frame */
  }
  if (self->heatmap == NULL) {
    gst_buffer_unref (video);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Received video on pad video_sink before its format was "
            "negotiated."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  vrt = gst_av_pad_running_time (self->video_pad, GST_BUFFER_PTS (video));
  half = GST_CLOCK_TIME_IS_VALID (vrt) ? half_frame (self, video, vrt) : 0;

  while ((abuf = gst_aggregator_pad_peek_buffer (self->attention_pad))) {
    GstClockTime art = gst_av_pad_running_time (self->attention_pad,
        GST_BUFFER_PTS (abuf));

    if (!GST_CLOCK_TIME_IS_VALID (vrt)) {
      /* a frame without a time matches nothing; one attention output
       * goes with it so that both inputs keep moving */
      gst_aggregator_pad_drop_buffer (self->attention_pad);
      gst_buffer_unref (abuf);
      break;
    }
    if (!GST_CLOCK_TIME_IS_VALID (art) || art + half < vrt) {
      GST_LOG_OBJECT (self, "dropping attention output at %" GST_TIME_FORMAT
          " older than the frame at %" GST_TIME_FORMAT, GST_TIME_ARGS (art),
          GST_TIME_ARGS (vrt));
      gst_aggregator_pad_drop_buffer (self->attention_pad);
      gst_buffer_unref (abuf);
      dropped++;
      continue;
    }
    if (art <= vrt + half) {
      GST_LOG_OBJECT (self, "the frame at %" GST_TIME_FORMAT " takes the "
          "attention output at %" GST_TIME_FORMAT, GST_TIME_ARGS (vrt),
          GST_TIME_ARGS (art));
      gst_aggregator_pad_drop_buffer (self->attention_pad);
      if (is_gap (abuf))
        gst_buffer_unref (abuf);
      else
        attention = abuf;
    } else {
      gst_buffer_unref (abuf);  /* for a later frame */
    }
    break;
  }

  if (attention == NULL && dropped > 0 && !timeout
      && !gst_aggregator_pad_has_buffer (self->attention_pad)
      && !gst_aggregator_pad_is_eos (self->attention_pad)) {
    /* only stale outputs so far: the frame's own may still come */
    gst_buffer_unref (video);
    return GST_FLOW_OK;
  }

  gst_buffer_unref (video);
  video = gst_aggregator_pad_pop_buffer (self->video_pad);
  if (video == NULL) {
    /* flushed meanwhile */
    if (attention)
      gst_buffer_unref (attention);
    return GST_FLOW_OK;
  }
  pts = GST_BUFFER_PTS (video);
  dur = GST_BUFFER_DURATION (video);

  if (is_gap (video)) {
    /* a GAP event on video_sink: no frame to draw on; the gap goes on */
    if (attention)
      gst_buffer_unref (attention);
    gst_buffer_unref (video);
    gst_av_push_gap (agg->srcpad, pts, dur);
    return GST_FLOW_OK;
  }

  if (attention) {
    ret = draw (self, &video, attention);
    gst_buffer_unref (attention);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (video);
      return ret;
    }
  } else {
    GST_LOG_OBJECT (self, "no attention output for the frame at %"
        GST_TIME_FORMAT ", passing it through", GST_TIME_ARGS (pts));
  }

  gst_aggregator_selected_samples (agg, pts, GST_BUFFER_DTS (video), dur,
      NULL);
  if (GST_CLOCK_TIME_IS_VALID (pts)) {
    GST_OBJECT_LOCK (agg);
    GST_AGGREGATOR_PAD (agg->srcpad)->segment.position =
        GST_CLOCK_TIME_IS_VALID (dur) ? pts + dur : pts;
    GST_OBJECT_UNLOCK (agg);
  }
  return gst_aggregator_finish_buffer (agg, video);
}
