/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's QoS: the QoS events from downstream and the skipping of
 * the video frames they say would be late.  The state and its locking
 * rules: gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#define GST_CAT_DEFAULT gst_av_attention_debug

/* A QoS event from downstream: a frame that ends before timestamp + diff
 * (timestamp + 2 diff when late, to catch up, as GstVideoDecoder does)
 * would be late; with qos=true it is skipped.  The event also travels on
 * upstream. */
void
gst_av_attention_update_qos (GstAvAttention * self, GstEvent * event)
{
  GstQOSType type;
  gdouble proportion;
  GstClockTimeDiff diff;
  GstClockTime timestamp;

  gst_event_parse_qos (event, &type, &proportion, &diff, &timestamp);
  GST_OBJECT_LOCK (self);
  self->qos_proportion = proportion;
  if (!GST_CLOCK_TIME_IS_VALID (timestamp))
    self->earliest_time = GST_CLOCK_TIME_NONE;
  else if (diff > 0)           /* saturating: diff comes from outside */
    self->earliest_time = (GstClockTime) diff >= (G_MAXUINT64 - 1 -
        timestamp) / 2 ? G_MAXUINT64 - 1 : timestamp + 2 * (GstClockTime) diff;
  else if (diff > G_MININT64 && (GstClockTime) (-diff) <= timestamp)
    self->earliest_time = timestamp - (GstClockTime) (-diff);
  else
    self->earliest_time = 0;
  GST_OBJECT_UNLOCK (self);
  GST_LOG_OBJECT (self, "QoS: proportion %g, diff %" GST_STIME_FORMAT
      ", earliest %" GST_TIME_FORMAT, proportion, GST_STIME_ARGS (diff),
      GST_TIME_ARGS (self->earliest_time));
}

/* TRUE when the frame at running time t ending at t + dur would reach the
 * sink late: it is skipped and a QoS message tells the application. */
gboolean
gst_av_attention_skip_late (GstAvAttention * self, GstClockTime pts,
    GstClockTime dur, GstClockTime t)
{
  GstClockTime earliest, end;
  gdouble proportion;
  gboolean qos;
  GstMessage *msg;

  GST_OBJECT_LOCK (self);
  qos = self->qos;
  earliest = self->earliest_time;
  proportion = self->qos_proportion;
  GST_OBJECT_UNLOCK (self);
  end = t + (GST_CLOCK_TIME_IS_VALID (dur) ? dur : 0);
  if (!qos || !GST_CLOCK_TIME_IS_VALID (earliest) || end > earliest)
    return FALSE;
  self->qos_dropped++;
  GST_DEBUG_OBJECT (self, "frame at running time %" GST_TIME_FORMAT
      " would be late (earliest %" GST_TIME_FORMAT "): skipped",
      GST_TIME_ARGS (t), GST_TIME_ARGS (earliest));
  msg = gst_message_new_qos (GST_OBJECT_CAST (self),
      gst_aggregator_get_latency (GST_AGGREGATOR (self)) !=
      GST_CLOCK_TIME_NONE, t, GST_CLOCK_TIME_NONE, pts, dur);
  gst_message_set_qos_values (msg, (gint64) earliest - (gint64) t,
      proportion, 1000000);
  gst_message_set_qos_stats (msg, GST_FORMAT_BUFFERS, self->qos_processed,
      self->qos_dropped);
  gst_element_post_message (GST_ELEMENT_CAST (self), msg);
  return TRUE;
}
