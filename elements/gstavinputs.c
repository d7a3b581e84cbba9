/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavinputs.h"

gboolean
gst_av_push_gap (GstPad * srcpad, GstClockTime pts, GstClockTime dur)
{
  GstEvent *segment;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return FALSE;
  segment = gst_pad_get_sticky_event (srcpad, GST_EVENT_SEGMENT, 0);
  if (segment == NULL)
    return FALSE;
  gst_event_unref (segment);
  return gst_pad_push_event (srcpad, gst_event_new_gap (pts, dur));
}

GstClockTime
gst_av_pad_running_time (GstAggregatorPad * pad, GstClockTime ts)
{
  GstClockTime rt = GST_CLOCK_TIME_NONE;

  if (!GST_CLOCK_TIME_IS_VALID (ts))
    return rt;
  GST_OBJECT_LOCK (pad);
  if (pad->segment.format == GST_FORMAT_TIME)
    rt = gst_segment_to_running_time (&pad->segment, GST_FORMAT_TIME, ts);
  GST_OBJECT_UNLOCK (pad);
  return rt;
}

gboolean
gst_av_aggregator_input_event (GstAggregator * agg, GstAggregatorPad * pad,
    GstAggregatorPad * lead, GstPad * follower, GstEvent * event)
{
  if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
    const GstSegment *segment;

    gst_event_parse_segment (event, &segment);
    if (segment->format != GST_FORMAT_TIME) {
      GST_ELEMENT_ERROR (agg, STREAM, FORMAT,
          ("Pad %s received a segment in %s format; %s needs time segments "
              "to place its inputs in time.", GST_PAD_NAME (pad),
              gst_format_get_name (segment->format), GST_OBJECT_NAME (agg)),
          (NULL));
      return FALSE;
    }
    if (pad == lead)
      gst_aggregator_update_segment (agg, segment);
  }
  if (pad == lead)
    gst_av_watch_lead_event (GST_ELEMENT_CAST (agg), event, follower);
  return TRUE;
}

/* ---- inputs without a source ------------------------------------------ */

static gboolean src_pad_has_no_source (GstPad * srcpad, guint depth);

static gboolean
sink_pad_has_no_source (GstPad * sinkpad, guint depth)
{
  GstPad *peer;
  gboolean dead;

  if (depth > 32)               /* a loop or a very long chain: do not guess */
    return FALSE;
  peer = gst_pad_get_peer (sinkpad);
  if (peer == NULL)
    return TRUE;
  dead = src_pad_has_no_source (peer, depth + 1);
  gst_object_unref (peer);
  return dead;
}

/* A source pad is dead when its element is not a source and every pad its
 * data can come from (the internal links: an element's sink pads, a ghost
 * pad's target) is dead. */
static gboolean
src_pad_has_no_source (GstPad * srcpad, guint depth)
{
  GstObject *parent = gst_pad_get_parent (srcpad);
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  gboolean done = FALSE, dead = TRUE;
  guint links = 0;

  if (parent != NULL) {
    gboolean source = GST_IS_ELEMENT (parent) &&
        GST_OBJECT_FLAG_IS_SET (parent, GST_ELEMENT_FLAG_SOURCE);
    gst_object_unref (parent);
    if (source)
      return FALSE;
  }
  it = gst_pad_iterate_internal_links (srcpad);
  if (it == NULL)
    return FALSE;
  while (!done && dead) {
    switch (gst_iterator_next (it, &item)) {
      case GST_ITERATOR_OK:
        links++;
        if (!sink_pad_has_no_source (g_value_get_object (&item), depth))
          dead = FALSE;
        g_value_reset (&item);
        break;
      case GST_ITERATOR_DONE:
        done = TRUE;
        break;
      default:                 /* resync or error: do not guess */
        dead = FALSE;
        break;
    }
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return dead && links > 0;
}

gboolean
gst_av_pad_has_no_source (GstPad * sinkpad)
{
  return sink_pad_has_no_source (sinkpad, 0);
}

gboolean
gst_av_end_dead_pad (GstElement * element, GstPad * sinkpad)
{
  GstEvent *ev;

  if (GST_PAD_IS_EOS (sinkpad) || !gst_av_pad_has_no_source (sinkpad))
    return FALSE;
  GST_INFO_OBJECT (sinkpad, "no source upstream (unlinked, or a branch that "
      "was never linked): treated as ended");
  ev = gst_pad_get_sticky_event (sinkpad, GST_EVENT_STREAM_START, 0);
  if (ev != NULL) {
    gst_event_unref (ev);
  } else {
    gchar *id = g_strdup_printf ("%s/%s/no-source", GST_OBJECT_NAME (element),
        GST_PAD_NAME (sinkpad));

    gst_pad_send_event (sinkpad, gst_event_new_stream_start (id));
    g_free (id);
  }
  return gst_pad_send_event (sinkpad, gst_event_new_eos ());
}

void
gst_av_watch_lead_event (GstElement * element, GstEvent * event,
    GstPad * follower)
{
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:
    case GST_EVENT_CAPS:
    case GST_EVENT_SEGMENT:
      gst_av_end_dead_pad (element, follower);
      break;
    default:
      break;
  }
}

/* Set on a sink pad (qdata) while a seek is forwarded past it. */
static GQuark
hidden_quark (void)
{
  return g_quark_from_static_string ("gst-av-input-hidden");
}

/* gst_iterator_filter keeps the items for which this gives 0. */
static gint
pad_is_hidden (const GValue * item, const GValue * unused)
{
  return g_object_get_qdata (g_value_get_object (item), hidden_quark ())
      != NULL;
}

static GstIterator *
iterate_shown_sink_pads (GstPad * pad, GstObject * parent)
{
  GstIterator *it;

  if (parent == NULL || !GST_IS_ELEMENT (parent))
    return NULL;
  it = gst_element_iterate_sink_pads (GST_ELEMENT_CAST (parent));
  return gst_iterator_filter (it, (GCompareFunc) pad_is_hidden, NULL);
}

void
gst_av_aggregator_init_dead_inputs (GstAggregator * agg)
{
  gst_pad_set_iterate_internal_links_function (GST_AGGREGATOR_SRC_PAD (agg),
      GST_DEBUG_FUNCPTR (iterate_shown_sink_pads));
}

gboolean
gst_av_seek_past_dead_pad (GstAggregator * agg, GstEvent * seek,
    gboolean (*parent_src_event) (GstAggregator *, GstEvent *), GstPad * pad)
{
  GstSeekFlags flags;
  guint32 seqnum;
  gboolean res;
  GstEvent *flush;

  if (!gst_av_pad_has_no_source (pad))
    return parent_src_event (agg, seek);

  gst_event_parse_seek (seek, NULL, NULL, &flags, NULL, NULL, NULL, NULL);
  seqnum = gst_event_get_seqnum (seek);
  GST_DEBUG_OBJECT (pad, "no source: seek %u goes to the other inputs only",
      seqnum);
  g_object_set_qdata (G_OBJECT (pad), hidden_quark (), GINT_TO_POINTER (1));
  res = parent_src_event (agg, seek);
  g_object_set_qdata (G_OBJECT (pad), hidden_quark (), NULL);
  if (!(flags & GST_SEEK_FLAG_FLUSH))
    return res;

  GST_DEBUG_OBJECT (pad, "no source: flushing it for seek %u", seqnum);
  flush = gst_event_new_flush_start ();
  gst_event_set_seqnum (flush, seqnum);
  gst_pad_send_event (pad, flush);
  flush = gst_event_new_flush_stop (TRUE);
  gst_event_set_seqnum (flush, seqnum);
  gst_pad_send_event (pad, flush);
  return res;
}
