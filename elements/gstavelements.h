/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_AV_ELEMENTS_H__
#define __GST_AV_ELEMENTS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

GST_ELEMENT_REGISTER_DECLARE (avspectrogram);
GST_ELEMENT_REGISTER_DECLARE (avpatchembed);
GST_ELEMENT_REGISTER_DECLARE (avattention);
GST_ELEMENT_REGISTER_DECLARE (avtensorsink);
GST_ELEMENT_REGISTER_DECLARE (avattnoverlay);

G_END_DECLS

#endif /* __GST_AV_ELEMENTS_H__ */
