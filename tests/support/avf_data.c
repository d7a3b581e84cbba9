/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Data of the element tests (avf_data.h).
 */
#include "avf_data.h"

#include <gst/check/gstcheck.h>
#include <string.h>

gboolean
avf_buffers_equal (GstBuffer * a, GstBuffer * b)
{
  GstMapInfo ma, mb;
  gboolean eq;

  fail_unless (gst_buffer_map (a, &ma, GST_MAP_READ));
  fail_unless (gst_buffer_map (b, &mb, GST_MAP_READ));
  eq = ma.size == mb.size && memcmp (ma.data, mb.data, ma.size) == 0;
  gst_buffer_unmap (a, &ma);
  gst_buffer_unmap (b, &mb);
  return eq;
}

gfloat
avf_tensor_f32 (const AvfTensorInfo * t, guint64 i)
{
  gfloat v;

  memcpy (&v, t->data + 4 * i, 4);
  return v;
}

gint64
avf_tensor_i64 (const AvfTensorInfo * t, guint64 i)
{
  gint64 v;

  memcpy (&v, t->data + 8 * i, 8);
  return v;
}
