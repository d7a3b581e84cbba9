/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* GstAvAttentionModule (the installed API) is core's AvfModule
 * (core/weights.h) value for value: every file that casts one to the other
 * includes this header, whose assertions stop the build when they part.
 * Internal, not installed. */
#ifndef __GST_AV_MODULE_CHECK_H__
#define __GST_AV_MODULE_CHECK_H__

#include <glib.h>

#include "gstavattentionmeta.h"
#include "weights.h"

G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_AUDIO_SELF ==
    (gint) AVF_MODULE_AUDIO_SELF);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_VIDEO_SELF ==
    (gint) AVF_MODULE_VIDEO_SELF);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_AUDIO_CROSS ==
    (gint) AVF_MODULE_AUDIO_CROSS);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_VIDEO_CROSS ==
    (gint) AVF_MODULE_VIDEO_CROSS);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_N_MODULES == (gint) AVF_N_MODULES);

#endif /* __GST_AV_MODULE_CHECK_H__ */
