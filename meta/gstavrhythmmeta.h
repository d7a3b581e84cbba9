/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GstAvRhythmMeta: avfusion-v2's rhythm features (docs/avfusion-v2.md §2)
 * riding on the patch-embedding buffers of avpatchembed.  The tensor of a
 * buffer stays [N, E] per frame, as with avfusion-v1 (the interface's
 * promise); the D rhythm features of each patch travel beside it in this
 * meta, [frames, N, D] float32 for the frames of the buffer, and the caps
 * say that they come (rhythm-dim=D).  avattention reads them from here.
 * Part of the public metadata library gstavattention-1.0, next to
 * GstAvAttentionMeta (gstavattentionmeta.h).
 */
#ifndef __GST_AV_RHYTHM_META_H__
#define __GST_AV_RHYTHM_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/**
 * GST_AV_RHYTHM_META_API_TYPE:
 *
 * The API type of #GstAvRhythmMeta (gst_av_rhythm_meta_api_get_type()),
 * for gst_buffer_get_meta().
 */
#define GST_AV_RHYTHM_META_API_TYPE (gst_av_rhythm_meta_api_get_type ())
/**
 * GST_AV_RHYTHM_META_INFO:
 *
 * The #GstMetaInfo of #GstAvRhythmMeta (gst_av_rhythm_meta_get_info()).
 */
#define GST_AV_RHYTHM_META_INFO (gst_av_rhythm_meta_get_info ())

typedef struct _GstAvRhythmMeta GstAvRhythmMeta;

/**
 * GstAvRhythmMeta:
 * @meta: parent
 * @n_frames: frames of the buffer the rows are for (a buffer holds one
 *   or more whole frames of its tensor; avpatchembed's hold one)
 * @n_patches: patches per frame (N, the rows of the buffer's tensor)
 * @rhythm_dim: rhythm features per patch (D, the caps' rhythm-dim)
 *
 * The rhythm rows of every frame of a patch-embedding buffer: float32,
 * row-major (@n_frames, @n_patches, @rhythm_dim); row n of frame f holds
 * the rhythm features r_n of patch n of the buffer's frame f.  One meta
 * per buffer.
 */
struct _GstAvRhythmMeta {
  GstMeta meta;

  guint n_frames;
  guint n_patches;
  guint rhythm_dim;

  /*< private >*/
  GstBuffer *data;
  GstMapInfo map;
  gpointer _gst_reserved[GST_PADDING];
};

GType gst_av_rhythm_meta_api_get_type (void);
const GstMetaInfo *gst_av_rhythm_meta_get_info (void);

gsize gst_av_rhythm_meta_data_size (guint n_frames, guint n_patches,
    guint rhythm_dim);

GstAvRhythmMeta *gst_buffer_add_av_rhythm_meta (GstBuffer * buffer,
    guint n_frames, guint n_patches, guint rhythm_dim, GstBuffer * data);
GstAvRhythmMeta *gst_buffer_get_av_rhythm_meta (GstBuffer * buffer);

/* (n_patches, rhythm_dim) float32 of one frame */
const gfloat *gst_av_rhythm_meta_get_rows (GstAvRhythmMeta * meta,
    guint frame);
gfloat *gst_av_rhythm_meta_get_rows_writable (GstAvRhythmMeta * meta,
    guint frame);
GBytes *gst_av_rhythm_meta_get_rows_bytes (GstAvRhythmMeta * meta,
    guint frame);

G_END_DECLS

#endif /* __GST_AV_RHYTHM_META_H__ */
