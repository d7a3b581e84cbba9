/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One pattern for the properties of every element (that of gst-plugins-bad
 * cccombiner): set_property stores the value under the object lock; the
 * element applies it at its next state change (start, or the caps that
 * follow it), except the properties declared GST_PARAM_MUTABLE_PLAYING,
 * which it reads each time it uses them.  Each property declares its
 * mutability with GST_PARAM_MUTABLE_*, which gst-inspect-1.0 shows.
 *
 * A property that cannot change now (GST_PARAM_MUTABLE_READY while the
 * element is beyond READY or on its way there, GST_PARAM_MUTABLE_PAUSED
 * while PLAYING) keeps its value, and the element posts one warning,
 * LIBRARY/SETTINGS, naming the property.  A value an element can never
 * take (avattnoverlay's module=audio-self) gets the same warning code.
 */
#ifndef __GST_AV_PROPERTY_H__
#define __GST_AV_PROPERTY_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* Flags of a property applied at the next start, and of one read at each
 * use. */
#define GST_AV_PARAM_READY \
  (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)
#define GST_AV_PARAM_PLAYING \
  (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)

/* TRUE when @pspec may change in @element's current state; otherwise posts
 * the warning and returns FALSE (the caller keeps the old value).  Call it
 * first in set_property, without the object lock. */
gboolean gst_av_property_can_change (GstElement * element,
    GParamSpec * pspec);

/* Posts the warning for a value of @pspec that @element refuses: @why says
 * what is kept (a sentence). */
void gst_av_property_refuse (GstElement * element, GParamSpec * pspec,
    const gchar * why);

G_END_DECLS

#endif /* __GST_AV_PROPERTY_H__ */
