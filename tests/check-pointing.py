#!/usr/bin/env python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pointing measure has one implementation (tools/truth.c) and two
callers: avattention-run's summary, on the metas of its run, and
model/evaluate.py, through avattention-score on the features.npz.  On each
clip (its truth file beside it), run through avattention-run:

- avattention-score on the run's features.npz prints the same pointing
  (and look-alike pointing) lines as avattention-run's summary;
- evaluate.py's records (score_frames, scene_measures) have, frame for
  frame, the hits and the frames that count that avattention-score --frames
  gives, and its summary the same pointing figures;
- the hits are those of the strongest patch that avtensorsink wrote: an
  output whose strongest_column is -1 never hits;
- the features.npz's stream_time is its pts (these clips' segments start
  at 0).

Besides the clips named, a world 2 design scene encoded as evaluate.py
encodes its MP4 clips (H.264 with B-frames, AAC, mp4mux; skipped without
those encoders): mp4mux starts the video's segment and first PTS two frames
in, so its PTS are not the truth's times.  There also:

- instead of the last check, the features.npz's stream_time is its pts
  less the segment's start, and the PTS start later than the stream time;
- both tools match truth rows by stream time: every matched output's
  stream_time is within half a frame of the row's pts_ns (the checks above
  then say that avattention-run's summary matched the same outputs);
- the same file without stream_time (as written before avtensorsink had
  it) is matched by pts: each row then gets the output as many frames
  earlier as the segment starts late.

  check-pointing.py AVATTENTION_RUN AVATTENTION_SCORE CLIP...
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: no numpy for /usr/bin/python3")
    sys.exit(77)

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "model"))
import evaluate  # noqa: E402
import soworld  # noqa: E402

failed = False


def check(what, ok):
    global failed
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    failed |= not ok


def pointing_lines(text):
    return [line for line in text.splitlines()
            if line.startswith(("pointing accuracy:", "look-alike pointing:"))
            or "had no output within half a frame" in line]


MP4_SEED = 50022        # a design scene (never a held-out one), as train-timing's
MP4_ENCODERS = ("x264enc", "h264parse", "avenc_aac", "aacparse", "mp4mux")


def have_elements(names):
    inspect = shutil.which("gst-inspect-1.0")
    return inspect is not None and all(
        subprocess.run([inspect, "--exists", n]).returncode == 0 for n in names)


def check_stream_time(name, score, npz, truth, frames):
    """The checks of the MP4 scene (see the module's text)."""
    z = np.load(npz)
    pts, st = z["pts"], z["stream_time"]
    offset = int(pts[0] - st[0])
    check(f"{name}: stream_time is pts less the segment's start ({offset} ns later)",
          offset > 0 and (st >= 0).all() and (pts - st == offset).all())
    head, _ = soworld.read_truth_tsv(truth)
    num, den = (int(v) for v in head["fps"].split("/"))
    half = 1e9 * den / (2 * num)
    matched = [(int(f["pts_ns"]), int(f["output"])) for f in frames if int(f["output"]) >= 0]
    check(f"{name}: avattention-score matched {len(matched)} rows by stream time",
          len(matched) > len(frames) // 2
          and all(abs(int(st[i]) - t) <= half for t, i in matched))

    old = os.path.join(os.path.dirname(npz), "without-stream-time.npz")
    np.savez(old, **{k: z[k] for k in z.files if k != "stream_time"})
    by_pts = {int(f["pts_ns"]): int(f["output"])
              for f in evaluate.score_frames(score, old, truth)}
    late = round(offset / (2 * half))
    check(f"{name}: without stream_time, rows are matched by pts ({late} frames earlier)",
          late > 0 and all(by_pts[t] == i - late for t, i in matched if i >= late))


def check_clip(run, score, clip, segment_later):
    """The checks above on CLIP (its truth file beside it); SEGMENT_LATER:
    an MP4 whose video segment starts later than 0."""
    name = os.path.basename(clip)
    truth = os.path.splitext(clip)[0] + ".truth.tsv"
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([run, clip, "--truth", truth, "--out", tmp, "--no-video-out"],
                           capture_output=True, text=True)
        check(f"{name}: avattention-run exit 0", r.returncode == 0)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            return
        npz = os.path.join(tmp, "features.npz")
        lines_run = pointing_lines(r.stdout)
        s = subprocess.run([score, npz, truth], capture_output=True, text=True)
        lines_score = pointing_lines(s.stdout)
        print("\n".join(lines_run))
        check(f"{name}: avattention-score prints avattention-run's pointing lines",
              s.returncode == 0 and lines_score == lines_run and len(lines_run) >= 1)

        head, rows = soworld.read_truth_tsv(truth)
        frames = evaluate.score_frames(score, npz, truth)
        out = evaluate.read_outputs(npz)
        recs = evaluate.scene_measures(out, head, rows, frames)
        by_t = {round(rec["t"] * 1e9): rec for rec in recs}
        same = True
        for f in frames:
            rec = by_t.get(int(f["pts_ns"]))
            if int(f["output"]) < 0:
                same &= rec is None
                continue
            same &= (rec is not None and rec["hit"] == (f["hit"] == "1")
                     and rec["pointing"] == (f["pointing"] == "1"))
        check(f"{name}: evaluate.py's per-frame hits are avattention-score's "
              f"({len(recs)} frames)", same)

        m = re.search(r"pointing accuracy: \S+ \((\d+) of (\d+) ", r.stdout)
        summ = evaluate.summary(recs, 0.0)
        hits = sum(rec["hit"] for rec in recs if rec["pointing"])
        check(f"{name}: evaluate.py's pointing {summ['pointing']:.3f} is avattention-run's",
              m is not None and (hits, summ["steady_pos"]) == (int(m[1]), int(m[2]))
              and abs(summ["pointing"] - int(m[1]) / int(m[2])) < 1e-12)
        m = re.search(r"look-alike pointing: \S+ \((\d+) of (\d+) ", r.stdout)
        if m:
            look = [rec["hit"] for rec in recs if rec["pointing"] and rec["lookalike"]]
            check(f"{name}: evaluate.py's look-alike pointing is avattention-run's",
                  (sum(look), len(look)) == (int(m[1]), int(m[2])))

        z = np.load(npz)
        no_patch = z["strongest_column"] < 0
        check(f"{name}: outputs without a strongest patch do not hit",
              not any(f["hit"] == "1" and no_patch[int(f["output"])]
                      for f in frames if int(f["output"]) >= 0))
        if segment_later:
            check_stream_time(name, score, npz, truth, frames)
        else:
            check(f"{name}: stream_time is pts (a segment from 0)",
                  (z["stream_time"] == z["pts"]).all())


def main():
    run, score = sys.argv[1:3]
    clips = list(sys.argv[3:])
    with tempfile.TemporaryDirectory() as scenes:
        if have_elements(MP4_ENCODERS):
            mp4 = os.path.join(scenes, f"scene-{MP4_SEED}.mp4")
            sc = soworld.Scene(MP4_SEED, 640, 360, 30, 5.0, 48000, variants=True, channels=2,
                               world=2)
            soworld.encode(sc, mp4)
            clips.append(mp4)
        else:
            print("skipped the MP4 scene: needs " + ", ".join(MP4_ENCODERS), flush=True)
        for clip in clips:
            check_clip(run, score, clip, clip.endswith(".mp4"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
