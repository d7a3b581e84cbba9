/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GstAvAttentionMeta: the attention weights that ride on every buffer that
 * the avattention element pushes.  Applications link against
 * gstavattention-1.0 (pkg-config) and read, for each layer and module, the
 * weights, their shape, the heads, the audio mask, the patch grid and the
 * time span of the audio window.  Other languages read it through GObject
 * introspection (GstAvAttention-1.0.typelib; in Python
 * gi.repository.GstAvAttention): the gtk-doc comments in
 * gstavattentionmeta.c carry the annotations.
 */
#ifndef __GST_AV_ATTENTION_META_H__
#define __GST_AV_ATTENTION_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/**
 * GstAvAttentionModule:
 * @GST_AV_ATTENTION_MODULE_AUDIO_SELF: audio queries, audio keys (T x T)
 * @GST_AV_ATTENTION_MODULE_VIDEO_SELF: video queries, video keys (N x N)
 * @GST_AV_ATTENTION_MODULE_AUDIO_CROSS: audio queries, video keys (T x N):
 *   where in the picture the sound is
 * @GST_AV_ATTENTION_MODULE_VIDEO_CROSS: video queries, audio keys (N x T)
 *
 * The four attention modules of every layer (core's AvfModule, to which
 * gstavattentionmeta.c asserts the values are equal).  Its GType,
 * GST_TYPE_AV_ATTENTION_MODULE, is in gstavattention-enumtypes.h
 * (generated); the nicks are "audio-self", "video-self", "audio-cross",
 * "video-cross".
 */
typedef enum /*< prefix=GST_AV_ATTENTION_MODULE >*/ {
  GST_AV_ATTENTION_MODULE_AUDIO_SELF = 0,
  GST_AV_ATTENTION_MODULE_VIDEO_SELF,
  GST_AV_ATTENTION_MODULE_AUDIO_CROSS,
  GST_AV_ATTENTION_MODULE_VIDEO_CROSS
} GstAvAttentionModule;

/**
 * GST_AV_ATTENTION_N_MODULES:
 *
 * The number of #GstAvAttentionModule values.  (A macro rather than a last
 * enum value, so that bindings name the modules AUDIO_SELF ... VIDEO_CROSS.)
 */
#define GST_AV_ATTENTION_N_MODULES 4

/**
 * GST_AV_ATTENTION_MAX_LAYERS:
 *
 * The most layers a #GstAvAttentionMeta holds.
 */
#define GST_AV_ATTENTION_MAX_LAYERS 64

/**
 * GST_AV_ATTENTION_META_API_TYPE:
 *
 * The API type of #GstAvAttentionMeta (gst_av_attention_meta_api_get_type()),
 * for gst_buffer_get_meta() and allocation queries.
 */
#define GST_AV_ATTENTION_META_API_TYPE (gst_av_attention_meta_api_get_type ())
/**
 * GST_AV_ATTENTION_META_INFO:
 *
 * The #GstMetaInfo of #GstAvAttentionMeta (gst_av_attention_meta_get_info()).
 */
#define GST_AV_ATTENTION_META_INFO (gst_av_attention_meta_get_info ())

typedef struct _GstAvAttentionMeta GstAvAttentionMeta;

/**
 * GstAvAttentionMeta:
 * @meta: parent
 * @n_layers: layers of the model (L)
 * @n_heads: heads stored per map: 1 for the head mean, H for per-head maps
 * @model_heads: heads of the model (H)
 * @n_audio_slots: audio slots of the window (T)
 * @n_patches: video patches (N = grid_columns * grid_rows)
 * @grid_columns: patch grid columns (picture width / patch size)
 * @grid_rows: patch grid rows
 * @window_start: running time of the start of the audio window (t - window)
 * @window_end: running time of the end of the window (the video frame, t)
 * @n_audio_present: slots that hold a spectrogram frame
 * @audio_missing: TRUE when no slot holds audio; the audio modules and the
 *   video cross-attention were skipped and their maps are NaN
 * @audio_ended: TRUE once the audio input reached end-of-stream
 * @visible_threshold: the strongest-patch weight from which the model takes
 *   a visible object to sound (the weights file's "visible_threshold"
 *   metadata, in (0, 1]); 0 when the weights do not say (the seeded
 *   weights): unknown.  See gst_av_attention_meta_get_sound_visible().
 * @reused: TRUE when the maps are not this frame's own but those of an
 *   earlier frame, whose window window_start..window_end still gives
 *   (avattention's "interval" property: one frame in n is fused)
 *
 * Maps are float32, row-major (heads, queries, keys).
 */
struct _GstAvAttentionMeta {
  GstMeta meta;

  guint n_layers;
  guint n_heads;
  guint model_heads;
  guint n_audio_slots;
  guint n_patches;
  guint grid_columns;
  guint grid_rows;
  GstClockTime window_start;
  GstClockTime window_end;
  guint n_audio_present;
  gboolean audio_missing;
  gboolean audio_ended;
  gfloat visible_threshold;
  gboolean reused;

  /*< private >*/
  GstBuffer *data;
  GstMapInfo map;
  guint8 skipped[GST_AV_ATTENTION_MAX_LAYERS * GST_AV_ATTENTION_N_MODULES];
  gpointer _gst_reserved[GST_PADDING];
};

GType gst_av_attention_meta_api_get_type (void);
const GstMetaInfo *gst_av_attention_meta_get_info (void);

/* The meta on @buffer, NULL when there is none.  A function (it was a
 * macro) so that bindings find it: GstAvAttention.buffer_get_av_attention_meta
 * in Python. */
GstAvAttentionMeta *gst_buffer_get_av_attention_meta (GstBuffer * buffer);

/* Bytes of the data block for these sizes: the audio mask (T bytes,
 * rounded up to 16) followed by every map.  G_MAXSIZE when that does not
 * fit in memory. */
gsize gst_av_attention_meta_data_size (guint n_layers, guint n_heads,
    guint n_audio_slots, guint n_patches);

/* Adds the meta.  @data (transfer full) is a buffer of at least
 * gst_av_attention_meta_data_size() bytes, typically from a pool, or NULL
 * for a new zeroed block; it is mapped for the meta's life.  There is at
 * least one audio slot and one patch (n_audio_slots, grid_columns,
 * grid_rows >= 1); otherwise a critical and NULL. */
GstAvAttentionMeta *gst_buffer_add_av_attention_meta (GstBuffer * buffer,
    guint n_layers, guint n_heads, guint model_heads, guint n_audio_slots,
    guint grid_columns, guint grid_rows, GstBuffer * data);

const gchar *gst_av_attention_module_name (GstAvAttentionModule module);

/* (T) bytes, 1 = slot without audio. */
const guint8 *gst_av_attention_meta_get_audio_mask (GstAvAttentionMeta * meta);
guint8 *gst_av_attention_meta_get_audio_mask_writable (GstAvAttentionMeta *
    meta);

/* The map of one layer and module: (heads, queries, keys). */
const gfloat *gst_av_attention_meta_get_weights (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, guint * heads,
    guint * n_queries, guint * n_keys);
gfloat *gst_av_attention_meta_get_weights_writable (GstAvAttentionMeta *
    meta, guint layer, GstAvAttentionModule module);

/* The same as bytes that share the meta's memory, for bindings (Python:
 * numpy.frombuffer); see the gtk-doc comments in gstavattentionmeta.c. */
GBytes *gst_av_attention_meta_get_audio_mask_bytes (GstAvAttentionMeta *
    meta);
GBytes *gst_av_attention_meta_get_weights_bytes (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, guint * heads,
    guint * n_queries, guint * n_keys);
GstBuffer *gst_av_attention_meta_get_weights_buffer (GstAvAttentionMeta *
    meta, guint layer, GstAvAttentionModule module, guint * heads,
    guint * n_queries, guint * n_keys);
gboolean gst_av_attention_meta_set_audio_mask (GstAvAttentionMeta * meta,
    GBytes * mask);
gboolean gst_av_attention_meta_set_weights (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, GBytes * weights);

gboolean gst_av_attention_meta_is_skipped (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module);
void gst_av_attention_meta_set_skipped (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, gboolean skipped);

/* Where the sound is: the patch that the audio->video cross-attention of
 * @layer weights most, averaged over heads and over the audio slots that
 * hold audio.  FALSE when the window had no audio. */
gboolean gst_av_attention_meta_get_strongest_patch (GstAvAttentionMeta *
    meta, guint layer, guint * column, guint * row, gfloat * weight);

/* Does a visible object sound?  TRUE when the window holds audio and the
 * last layer's strongest-patch weight is >= @meta's visible_threshold
 * (always, given audio, when the threshold is 0 = unknown).  See the
 * gtk-doc comment in gstavattentionmeta.c. */
gboolean gst_av_attention_meta_get_sound_visible (GstAvAttentionMeta * meta,
    gfloat * weight, gfloat * threshold);

G_END_DECLS

#endif /* __GST_AV_ATTENTION_META_H__ */
