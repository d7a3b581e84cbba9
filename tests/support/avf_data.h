/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Data of the element tests (gst-check): buffers compared byte for byte,
 * elements of the fixtures' tensors.
 */
#ifndef AVF_DATA_H
#define AVF_DATA_H

#include <gst/gst.h>

#include "safetensors.h"

G_BEGIN_DECLS

/* TRUE when @a and @b hold the same bytes (the test fails when one cannot
 * be mapped). */
gboolean avf_buffers_equal (GstBuffer * a, GstBuffer * b);

/* Element @i of the F32 (I64) tensor @t, read unaligned. */
gfloat avf_tensor_f32 (const AvfTensorInfo * t, guint64 i);
gint64 avf_tensor_i64 (const AvfTensorInfo * t, guint64 i);

G_END_DECLS
#endif /* AVF_DATA_H */
