/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The avattention plugin: registers every element.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstavelements.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (avspectrogram, plugin);
  ret |= GST_ELEMENT_REGISTER (avpatchembed, plugin);
  ret |= GST_ELEMENT_REGISTER (avattention, plugin);
  ret |= GST_ELEMENT_REGISTER (avtensorsink, plugin);
  ret |= GST_ELEMENT_REGISTER (avattnoverlay, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, avattention,
    "Attention for media pipelines: log-mel spectrograms, patch embeddings "
    "and audio-visual self- and cross-attention (avfusion-v1, and "
    "avfusion-v2 with its one-second video history)",
    plugin_init, PACKAGE_VERSION, "LGPL", PACKAGE_NAME, PACKAGE_ORIGIN)
