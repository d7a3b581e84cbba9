/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avpatchembed: packed RGB video in, one patch-embedding tensor [N, E] per
 * frame out (avfusion-v1 spec §2).  A thin adapter over core/patch_embed.h.
 */
#ifndef __GST_AV_PATCH_EMBED_H__
#define __GST_AV_PATCH_EMBED_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_AV_PATCH_EMBED (gst_av_patch_embed_get_type ())
G_DECLARE_FINAL_TYPE (GstAvPatchEmbed, gst_av_patch_embed, GST,
    AV_PATCH_EMBED, GstBaseTransform);

G_END_DECLS

#endif /* __GST_AV_PATCH_EMBED_H__ */
