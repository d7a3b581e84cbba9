/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The inputs of the two video-master aggregators (avattention,
 * avattnoverlay): running times, the segment of a sink event, gaps on the
 * output, and inputs that no source can feed.
 */
#ifndef __GST_AV_INPUTS_H__
#define __GST_AV_INPUTS_H__

#include <gst/gst.h>
#include <gst/base/gstaggregator.h>

G_BEGIN_DECLS

/* Forwards a gap [pts, pts + dur) of the input that leads the output
 * timeline out of @srcpad, so that downstream (a sink waiting to preroll,
 * a muxer) moves on.  Nothing is sent before the pad carries a segment
 * (the first output buffer sends caps and segment): a gap before the
 * first output cannot be forwarded.  Returns TRUE when sent. */
gboolean gst_av_push_gap (GstPad * srcpad, GstClockTime pts,
    GstClockTime dur);

/* The running time of @ts on an input, from its segment; NONE when @ts is
 * NONE or the segment is not in time format (a flush resets it until the
 * next segment). */
GstClockTime gst_av_pad_running_time (GstAggregatorPad * pad,
    GstClockTime ts);

/* What a video-master aggregator does with every event of an input, after
 * its own handling and before chaining up: a segment not in time format
 * gets a STREAM/FORMAT error naming the element and the pad (FALSE: refuse
 * the event); @lead's segment becomes the output's
 * (gst_aggregator_update_segment); and the events of @lead end @follower
 * when no source can feed it (gst_av_watch_lead_event). */
gboolean gst_av_aggregator_input_event (GstAggregator * agg,
    GstAggregatorPad * pad, GstAggregatorPad * lead, GstPad * follower,
    GstEvent * event);

/* Inputs that no source can feed (used by the aggregators, whose base
 * class waits for data on every sink pad in a pipeline that is not live).
 *
 * gst_av_pad_has_no_source: TRUE when nothing upstream of @sinkpad can ever
 * produce data -- the pad is unlinked, or every path upstream ends at an
 * unlinked sink pad (the branch of `decodebin ! ...` for a track the file
 * does not have, a ghost pad without target).  Anything unknown counts as
 * a source.
 *
 * gst_av_end_dead_pad: when @sinkpad has no source and is not at
 * end-of-stream yet, sends it stream-start (if it has none) and EOS, so the
 * aggregator stops waiting for it.  Returns TRUE when it did. */
gboolean gst_av_pad_has_no_source (GstPad * sinkpad);
gboolean gst_av_end_dead_pad (GstElement * element, GstPad * sinkpad);

/* For each event on the leading input of an aggregator: on stream-start,
 * caps and segment, ends @follower when no source can feed it. */
void gst_av_watch_lead_event (GstElement * element, GstEvent * event,
    GstPad * follower);

/* Seeks on an aggregator whose input @pad may have no source.
 *
 * gst_av_aggregator_init_dead_inputs (from the instance init): the source
 * pad's internal links become the sink pads that are not hidden, so that
 * GstAggregator forwards a seek only to the inputs that can take it.
 *
 * gst_av_seek_past_dead_pad: when no source can feed @pad, hides it while
 * @parent_src_event forwards @seek (a branch that ends unlinked would
 * refuse it and fail the whole seek) and, for a flushing seek, flushes it
 * with the seek's seqnum so that the aggregator resumes once every sink
 * pad saw the flush.  Returns the base class's answer: that of the inputs
 * that have a source. */
void gst_av_aggregator_init_dead_inputs (GstAggregator * agg);
gboolean gst_av_seek_past_dead_pad (GstAggregator * agg, GstEvent * seek,
    gboolean (*parent_src_event) (GstAggregator *, GstEvent *),
    GstPad * pad);

G_END_DECLS

#endif /* __GST_AV_INPUTS_H__ */
