/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavproperty.h"

gboolean
gst_av_property_can_change (GstElement * element, GParamSpec * pspec)
{
  GstState state, pending, highest;

  if (pspec->flags & GST_PARAM_MUTABLE_PLAYING)
    return TRUE;
  highest = (pspec->flags & GST_PARAM_MUTABLE_PAUSED) ? GST_STATE_PAUSED :
      GST_STATE_READY;
  GST_OBJECT_LOCK (element);
  state = GST_STATE (element);
  pending = GST_STATE_PENDING (element);
  GST_OBJECT_UNLOCK (element);
  if (state <= highest && pending <= highest)
    return TRUE;
  GST_ELEMENT_WARNING (element, LIBRARY, SETTINGS,
      ("The property \"%s\" can only change in the %s state; it keeps its "
          "value (set it before the pipeline starts, or after going to "
          "READY).", pspec->name, highest == GST_STATE_PAUSED ?
          "NULL, READY or PAUSED" : "NULL or READY"),
      ("state %s, pending %s", gst_element_state_get_name (state),
          gst_element_state_get_name (pending)));
  return FALSE;
}

void
gst_av_property_refuse (GstElement * element, GParamSpec * pspec,
    const gchar * why)
{
  GST_ELEMENT_WARNING (element, LIBRARY, SETTINGS,
      ("The property \"%s\" was not changed: %s", pspec->name, why), (NULL));
}
