#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Evaluates a model on held-out scenes of the sounding-objects world,
through real GStreamer pipelines (spec sounding-objects.md section 3, and
sounding-objects-2.md section 4 for world version 2).

    model/evaluate.py                    # the shipped model, the full table
    model/evaluate.py --scenes 1 --duration 8 --min-pointing 0.9   # the test's small run
    model/evaluate.py --world 2          # version 2's scenes (rhythm, look-alikes)
    model/evaluate.py --world both       # both, one table each

Each scene is rendered from a seed never used in training (training uses
seeds from 100000 on), encoded twice (H.264/AAC in MP4 at 16:9, VP8/Vorbis in
WebM at 4:3) and played through

    filesrc ! decodebin ! audioconvert ! audioresample ! avspectrogram ! avattention.audio_sink
              decodebin ! videoconvert ! videoscale ! avpatchembed ! avattention.video_sink
    avattention ! avtensorsink location=X.npz

with gst-launch-1.0.  The measures are read off the .npz that avtensorsink
wrote: the strongest patch of the last layer's audio-cross map summed over
heads and unmasked slots (the meta's ``get_strongest_patch``), its weight
(divided by heads x unmasked slots, as the meta reports it), and the fused
vectors.  Which truth frame each output is, and whether its strongest
patch hits a source, come from ``avattention-score --frames`` (the C
implementation in tools/truth.c that avattention-run's summary uses too;
found beside the plugin's build tree, in build*/tools/, else on PATH, or
given with --score).  Printed per scene and overall:

* pointing: steady frames with a visible source whose strongest patch centre,
  mapped back to frame pixels, lies in a source's box grown by max(W,H)/28
  (a frame without audio misses);
* look-alike pointing (column "look", with its frame count "lookN"): the
  same over steady frames whose one source has a look-alike, an object of
  the same kind (world 2 only; a model that sees only colour scores about
  0.5 there);
* audio-blind: what a guess among the scene's objects would score there;
* both-of-two: steady two-source frames that hit one source and whose
  strongest patch outside that source's grown box hits the other
  (avattention-score, from the per-patch map);
* nothing-visible AUC: the strongest-patch weight, steady frames with a
  visible source against steady silence or off-screen sound;
* visible flag: share of steady frames where weight >= the model's
  ``visible_threshold`` agrees with the truth;
* kind: a least-squares linear classifier on the fused vectors of steady
  one-source frames, fitted on the other scenes (leave one scene out);
* switch latency: from a segment's start until the strongest patch lands on
  the new source and stays there for the rest of the segment (median).

``--world 1|2|both`` chooses which world's scenes are rendered (default 1,
the world of the shipped model); with both, each world gets its table, its
kind classifier (fitted on its own scenes) and its overall line, and the
JSON has one object per world ("sounding-objects-v1", "sounding-objects-v2").
Held-out seeds are below 100000 in either world.

Several entries side by side (``--compare``)::

    model/evaluate.py --world both --compare labelled=default,unlabelled=models/sounding-objects-unlabeled.safetensors --baselines

``--compare NAME=WEIGHTS[:AUDIO],...`` names the entries: WEIGHTS a weights
file or ``default`` (the elements' default model), AUDIO ``clip`` (the
default), ``zeroed`` or ``shifted``.  Each scene is rendered and encoded once
(twice when an entry hears shifted audio) and played through every entry;
each entry's visible flag uses its own file's ``visible_threshold``.
``--baselines`` adds, for every entry that hears the clip, the same network
with the sound silenced ("NAME, audio zeroed": volume 0 before
avspectrogram) and with the same clip's sound circularly shifted by
``--shift`` seconds (default 3; "NAME, audio shifted": a second encoding of
the scene whose audio is np.roll of its own, pictures and truth unchanged),
and two rows without a model, on the frames pointing counts: "random object"
(the audio-blind figure, sources/K) and "largest object" (at each frame the
object whose box, clipped to the frame, is the largest; a hit when it is one
of the frame's sources).  ``--baselines`` without ``--compare`` compares
``--weights`` (or the default model), named "model".  Printed per world: a
table per configuration and one over both, one row per entry; "-" where a
measure does not apply (the rows without a model have pointing and
look-alike pointing only).  The JSON has a "compare" object, world ->
entry -> measures (over both configurations, with "configs" holding each
configuration's and "scenes" each scene's pointing and look-alike pointing,
which the progress line prints too), and "entries", entry -> its file,
audio and threshold.
The kind classifier and the --min-* floors belong to the single-model run.

The field's measures (compare mode), from the per-patch map q [F, N] (the
14x14 grid of the 224x224 model picture, which is the frame squashed to
224x224: patch (r, c) covers frame pixels x in [c W/14, (c+1) W/14), y in
[r H/14, (r+1) H/14)) and the truth boxes of the frame's sources:

* cIoU (Senocak et al. 2018, as LVS and EZ-VSL compute it): the map
  up-sampled to the model picture's 224x224 pixels by nearest patch (each
  patch a 16x16 block), min-max normalised and binarised at its median
  (pixels above it are on: half the picture when the values differ); its
  IoU with the union of the sources' boxes rasterised on the same 224x224
  grid (a pixel is in a box when its centre, mapped to frame pixels, is).
  IoU is invariant to scaling both masks the same way, so this is the
  frame-pixel IoU up to the boxes' edges rounded to 1/224 of the frame.
  Over the frames pointing counts that have audio (pointing counts a frame
  without audio as a miss; these leave it out, as the AUC does, for it has
  no map): cIoU (AP50) is the share with IoU >= 0.5; cIoU AUC the area
  under the share of frames with IoU >= t for t = 0, 0.05, ..., 1 (21
  points, trapezoids: sklearn's auc over those points, as LVS computes it);
* max-F1 (SLAVC, Mo & Morgado 2022, "A Closer Look at Weakly-Supervised
  Audio-Visual Source Localization"): positives are the frames pointing
  counts that have audio, negatives the steady frames of silence or
  off-screen sound with audio (the AUC's two sets); a frame's confidence is
  its strongest-patch weight.  A positive is correctly localised when its
  IoU (above) is >= 0.5.  For each threshold tau among the confidences:
  TP = correctly localised positives with confidence >= tau, FP = the other
  frames (either kind) with confidence >= tau, precision = TP / (TP + FP),
  recall = TP / #positives; max-F1 is the largest 2PR / (P + R) over tau
  (0 where TP = 0).

The world's objects are small: a box is 0.6 to 7 % of the frame (about 2 %
typically), so against the median's half picture a frame's IoU is at most
0.14 (mostly below 0.05), and cIoU (AP50) and max-F1 are 0 for any map
(cIoU AUC a few hundredths).
``--ciou-share S`` puts the top S of the map on instead (pixels above the
(1 - S) quantile of the patch values; 0.5, the default, is the median): at
0.02, about four patches, an object's size, they tell maps apart.  A
figure at another share is not the field's; say which share when quoting.

Exit status 1 when ``--min-pointing`` (or another --min-*) is not met.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# the elements' default model (meson.build model_name)
DEFAULT_MODEL = "sounding-objects-v2.safetensors"
sys.path.insert(0, HERE)

import soworld  # noqa: E402
from train import auc, find_plugin_path  # noqa: E402

CONFIGS = {
    # name: (container, width, height, fps, sample rate, channels)
    "mp4-16:9": (".mp4", 1280, 720, 30, 48000, 2),
    "webm-4:3": (".webm", 640, 480, 25, 44100, 1),
}
TARGETS = dict(pointing=0.98, both_of_two=0.90, auc=0.95, kind=0.95, latency=0.6)
# the field's measures: the model picture's raster (cIoU) and IoU thresholds
FIELD_GRID = 224
CIOU_THRESHOLDS = np.linspace(0.0, 1.0, 21)
AUDIO_MODES = ("clip", "zeroed", "shifted")


def weights_metadata(path):
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)).get("__metadata__", {})


def run_pipeline(clip, npz, plugin_path, weights=None, audio="clip"):
    """The clip through the elements; audio "zeroed" (a baseline) silences
    the sound (volume 0) before avspectrogram."""
    w = f" weights={weights}" if weights else ""
    zero = "volume volume=0 ! " if audio == "zeroed" else ""
    desc = (f"filesrc location={clip} ! decodebin name=d "
            f"d. ! queue ! audioconvert ! {zero}audioresample ! avspectrogram ! "
            f"queue ! att.audio_sink "
            f"d. ! queue ! videoconvert ! videoscale ! avpatchembed{w} ! queue ! att.video_sink "
            f"avattention name=att{w} ! avtensorsink location={npz}")
    env = dict(os.environ, GST_PLUGIN_PATH=plugin_path)
    r = subprocess.run(["gst-launch-1.0", "-q"] + desc.split(), env=env,
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0 or not os.path.exists(npz):
        raise RuntimeError(f"pipeline on {clip} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


def read_outputs(npz):
    z = np.load(npz)
    if "patch_weights" in z.files:
        # avtensorsink maps=summary (its default): the same per-patch mean
        # over heads and the slots with audio, NaN without audio
        q = z["patch_weights"].astype(np.float32)                 # [F, N]
        has_audio = ~z["audio_mask"].all(axis=1)
        q[~has_audio] = np.nan
        return dict(pts=z["pts"], fused=z["data"], q=q, has_audio=has_audio)
    names = [k for k in z.files if k.startswith("layers.") and k.endswith(".audio_cross")]
    last = max(names, key=lambda k: int(k.split(".")[1]))
    cross = z[last]                                     # [F, T, N] head mean
    mask = z["audio_mask"]                              # [F, T] True = missing
    keep = (~mask).astype(np.float32)[:, :, None]
    cnt = keep.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.nansum(cross * keep, axis=1) / np.maximum(cnt, 1)   # [F, N]
    q[cnt[:, 0] == 0] = np.nan
    return dict(pts=z["pts"], fused=z["data"], q=q, has_audio=cnt[:, 0] > 0)


def find_score(given, plugin_path):
    """avattention-score: GIVEN, else the one of the plugin's build tree
    (build*/tools/ beside build*/elements/), else the one on PATH."""
    if given:
        return os.path.abspath(given)
    beside = os.path.join(os.path.dirname(plugin_path), "tools", "avattention-score")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("avattention-score")
    if found:
        return found
    raise SystemExit(f"evaluate: no avattention-score in {os.path.dirname(beside)} or on "
                     f"PATH; build it (ninja -C build) or name it with --score")


def score_frames(score, npz, truth):
    """``avattention-score --frames NPZ TRUTH``: one dict per truth row (in
    the file's order) with its frame, pts_ns, output (the matched row of the
    .npz, -1 none), pointing, hit, both and lookalike (strings)."""
    r = subprocess.run([score, "--frames", npz, truth], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{score} --frames {npz} {truth} failed ({r.returncode}):\n"
                           f"{r.stderr}")
    lines = r.stdout.splitlines()
    cols = lines[0].split("\t")
    return [dict(zip(cols, line.split("\t"))) for line in lines[1:]]


def scene_measures(out, head, rows, scores, ciou_share=0.5):
    """One record per truth row that has an output (``scores``:
    score_frames()'s rows, which say which output and whether it hits);
    "audio" says whether the output's window held audio (the measures other
    than pointing look at those only); "iou" is the frame's cIoU (NaN
    without audio or source; ``ciou_share`` of the map on)."""
    K = len(head.get("objects", [])) or 1
    W, H = float(head.get("width", 0)), float(head.get("height", 0))
    if len(scores) != len(rows):
        raise RuntimeError(f"avattention-score gave {len(scores)} rows for {len(rows)} truth rows")
    recs = []
    for r, s in zip(rows, scores):
        if int(s["frame"]) != r["frame"] or int(s["pts_ns"]) != r["pts"]:
            raise RuntimeError(f"avattention-score's row {s} is not truth frame {r['frame']}")
        i = int(s["output"])
        if i < 0:
            continue
        audio = bool(out["has_audio"][i])
        rec = dict(t=r["pts"] / 1e9, steady=r["steady"], negative=r["negative"], audio=audio,
                   pointing=s["pointing"] == "1", hit=s["hit"] == "1",
                   weight=float(np.max(out["q"][i])) if audio else float("nan"),
                   sources=r["sources"], kinds=r["kinds"], fused=out["fused"][i],
                   n_src=len(r["sources"]), lookalike=s["lookalike"] == "1",
                   guess=len(r["sources"]) / K, frame=r["frame"],
                   iou=(ciou(out["q"][i], r["boxes"], W, H, share=ciou_share)
                        if audio and r["boxes"] and W > 0 else float("nan")))
        if s["both"] != "-":
            rec["both"] = s["both"] == "1"
        recs.append(rec)
    return recs


def map_mask(q, grid=FIELD_GRID, share=0.5):
    """cIoU's mask of one frame's per-patch map ``q`` [n*n], row-major: on
    the grid x grid pixels of the model picture, each pixel the value of its
    patch (nearest patch), min-max normalised, on where above the patches'
    (1 - share) quantile (share 0.5: the median, the field's)."""
    n = int(round(math.sqrt(q.size)))
    m = np.asarray(q, np.float64).reshape(n, n)
    lo, hi = m.min(), m.max()
    m = (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)
    patch = np.arange(grid) * n // grid         # the patch row/column of each pixel
    return (m > np.quantile(m, 1.0 - share))[np.ix_(patch, patch)]


def box_mask(boxes, W, H, grid=FIELD_GRID):
    """The union of ``boxes`` (x0, y0, x1, y1 in pixels of a W x H frame) on
    the grid x grid raster of the frame squashed to the model picture: a
    pixel is on when its centre, mapped to frame pixels, lies in a box."""
    xs = (np.arange(grid) + 0.5) * W / grid
    ys = (np.arange(grid) + 0.5) * H / grid
    m = np.zeros((grid, grid), bool)
    for x0, y0, x1, y1 in boxes:
        m |= ((ys >= y0) & (ys < y1))[:, None] & ((xs >= x0) & (xs < x1))[None, :]
    return m


def ciou(q, boxes, W, H, grid=FIELD_GRID, share=0.5):
    """The IoU of map_mask(q, share) with box_mask(boxes): one frame's cIoU."""
    a, b = map_mask(q, grid, share), box_mask(boxes, W, H, grid)
    union = np.count_nonzero(a | b)
    return np.count_nonzero(a & b) / union if union else float("nan")


def ciou_figures(ious):
    """(cIoU AP50, cIoU AUC) of the frames' IoUs: the share >= 0.5, and the
    area (trapezoids) under the share >= t for t in CIOU_THRESHOLDS."""
    ious = np.asarray(ious, np.float64)
    if not ious.size:
        return float("nan"), float("nan")
    share = np.array([np.mean(ious >= t) for t in CIOU_THRESHOLDS])
    step = CIOU_THRESHOLDS[1] - CIOU_THRESHOLDS[0]
    return float(np.mean(ious >= 0.5)), float(step * (share.sum() - (share[0] + share[-1]) / 2))


def max_f1(pos_conf, pos_iou, neg_conf):
    """SLAVC's max-F1: positives (their confidences and IoUs) and negatives
    (confidences); see the module's docstring.  NaN without positives."""
    if not len(pos_conf):
        return float("nan")
    conf = np.concatenate([np.asarray(pos_conf, np.float64), np.asarray(neg_conf, np.float64)])
    right = np.concatenate([np.asarray(pos_iou, np.float64) >= 0.5, np.zeros(len(neg_conf), bool)])
    order = np.argsort(-conf, kind="stable")
    conf, tp = conf[order], np.cumsum(right[order])
    taken = np.arange(1, len(conf) + 1)
    # tau = each distinct confidence: the last frame of each run of equal ones
    last = np.r_[conf[1:] != conf[:-1], True]
    tp, taken = tp[last], taken[last]
    p, r = tp / taken, tp / len(pos_conf)
    f1 = np.where(tp > 0, 2 * p * r / np.maximum(p + r, 1e-300), 0.0)
    return float(f1.max())


def field_measures(recs):
    """cIoU (AP50), cIoU AUC and max-F1 of a run's records: positives the
    frames pointing counts that have audio, negatives the steady silence
    or off-screen frames with audio (summary()'s AUC sets)."""
    pos = [r for r in recs if r["pointing"] and r["audio"]]
    neg = [r for r in recs if r["audio"] and r["steady"] and r["negative"]]
    ious = [r["iou"] for r in pos]
    ap50, area = ciou_figures(ious)
    return dict(ciou_ap50=ap50, ciou_auc=area,
                max_f1=max_f1([r["weight"] for r in pos], ious, [r["weight"] for r in neg]))


def largest_object(boxes, W=None, H=None):
    """The id of the largest of ``boxes`` ((id, (x0, y0, x1, y1)) pairs),
    by area within the W x H frame when given; the first on a tie."""
    def area(b):
        x0, y0, x1, y1 = b
        if W is not None:
            x0, x1 = max(x0, 0.0), min(x1, W)
            y0, y1 = max(y0, 0.0), min(y1, H)
        return max(x1 - x0, 0.0) * max(y1 - y0, 0.0)
    return max(boxes, key=lambda ib: area(ib[1]))[0] if boxes else None


def largest_records(sc, recs):
    """The frames pointing counts, each hitting when the scene's largest
    object at its time is one of its sources (no model, no sound)."""
    out = []
    for r in recs:
        if r["pointing"]:
            t = sc.frame_time(r["frame"])
            big = largest_object([(o["id"], sc.box(o, t)) for o in sc.objects], sc.W, sc.H)
            out.append(free_record(r, big in r["sources"]))
    return out


def random_records(recs):
    """The frames pointing counts, each hitting with the chance of a random
    object (sources/K: the audio-blind figure)."""
    return [free_record(r, r["guess"]) for r in recs if r["pointing"]]


def free_record(r, hit):
    """A model's record of a frame as a baseline without a model has it:
    its truth, ``hit``, and none of the model's map (weight, IoU, both)."""
    rec = {k: v for k, v in r.items() if k != "both"}
    rec.update(hit=hit, weight=float("nan"), iou=float("nan"))
    return rec


def latencies(recs, rows):
    """Per switch to a visible source: seconds until the strongest patch
    lands on the new source and stays there to the segment's end (frames
    with audio)."""
    by_t = {round(r["t"], 6): r for r in recs if r["audio"]}
    out = []
    # segments from the truth rows: runs of the same sources set
    seg = []
    prev_key = None
    for r in rows:
        key = tuple(r["sources"]) if r["sources"] else ("neg",)
        if key != prev_key:
            seg.append([key, r["pts"] / 1e9, r["pts"] / 1e9])
            prev_key = key
        seg[-1][2] = r["pts"] / 1e9
    for s, (key, t0, t1) in enumerate(seg):
        if key == ("neg",) or s == 0 or t1 - t0 < 1.0:
            continue
        frames = [by_t[k] for k in sorted(by_t) if t0 <= k <= t1]
        if not frames:
            continue
        hits = [f["hit"] for f in frames]
        lat = None
        for k in range(len(hits)):
            if all(hits[k:]):
                lat = frames[k]["t"] - t0
                break
        out.append(lat if lat is not None else float("inf"))
    return out


def kind_counts(scenes):
    """Leave one scene out: for each (seed, recs) a ridge least-squares
    linear classifier on the fused vectors of steady frames with one visible
    source, fitted on the scenes of every other seed (the same seed in the
    other configuration is the same scene, so it is left out too).
    Returns (right, total) per scene."""
    data = []
    for seed, recs in scenes:
        one = [r for r in recs if r["audio"] and r["steady"] and r["n_src"] == 1]
        X = np.array([r["fused"] for r in one])
        y = np.array([r["kinds"][0] for r in one], int)
        data.append((seed, X, y))
    out = []
    for seed, Xt, yt in data:
        train = [(X, y) for s2, X, y in data if s2 != seed and len(X)]
        if not len(Xt) or not train:
            out.append((0, 0))
            continue
        Xs = np.concatenate([X for X, _ in train])
        ys = np.concatenate([y for _, y in train])
        mu, sd = Xs.mean(0), Xs.std(0) + 1e-6
        A = np.hstack([(Xs - mu) / sd, np.ones((len(Xs), 1))])
        Wt = np.linalg.solve(A.T @ A + 1e-2 * np.eye(A.shape[1]), A.T @ np.eye(6)[ys])
        At = np.hstack([(Xt - mu) / sd, np.ones((len(Xt), 1))])
        out.append((int((np.argmax(At @ Wt, axis=1) == yt).sum()), len(yt)))
    return out


def summary(recs, threshold):
    """Pointing, look-alike pointing, audio-blind and both-of-two over the
    frames that count in pointing (avattention-score's); the AUC and the
    visible flag over steady frames with audio."""
    heard = [r for r in recs if r["audio"]]
    st = [r for r in heard if r["steady"]]
    neg = [r for r in st if r["negative"]]
    pos = [r for r in recs if r["pointing"]]
    two = [r for r in pos if "both" in r]
    look = [r for r in pos if r["lookalike"]]
    s = dict(frames=len(heard), steady_pos=len(pos), steady_neg=len(neg),
             pointing=float(np.mean([r["hit"] for r in pos])) if pos else float("nan"),
             lookalike_pointing=float(np.mean([r["hit"] for r in look])) if look else float("nan"),
             steady_lookalike=len(look),
             audio_blind=float(np.mean([r["guess"] for r in pos])) if pos else float("nan"),
             both_of_two=float(np.mean([r["both"] for r in two])) if two else float("nan"),
             n_two=len(two),
             auc=auc([r["weight"] for r in pos if r["audio"]], [r["weight"] for r in neg]))
    if threshold > 0 and st:
        s["visible_flag"] = float(np.mean([(r["weight"] >= threshold) == (not r["negative"])
                                           for r in st]))
    return s


def fmt(v, nd=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "  -  "
    if isinstance(v, float) and math.isinf(v):
        return " inf "
    return f"{v:.{nd}f}"


def render_scene(world, cname, seed, duration, tmp):
    """Held-out scene ``seed`` of ``world`` in configuration ``cname``,
    encoded into ``tmp``: (scene, clip, truth file)."""
    ext, W, H, fps, sr, ch = CONFIGS[cname]
    sc = soworld.Scene(seed, W, H, fps, duration, sr, variants=True, channels=ch, world=world)
    tag = "" if world == 1 else f"-w{world}"
    clip = os.path.join(tmp, f"scene-{seed}{tag}-{cname.replace(':', 'x')}{ext}")
    return sc, clip, soworld.encode(sc, clip)


def run_and_measure(clip, truth, plugin, weights, audio, score, keep, npz=None,
                    ciou_share=0.5):
    """The clip through the elements (run_pipeline) into ``npz`` (default:
    beside the clip, removed unless ``keep``): (its records, the truth
    rows)."""
    npz = npz or os.path.splitext(clip)[0] + ".npz"
    run_pipeline(clip, npz, plugin, weights, audio)
    head, rows = soworld.read_truth_tsv(truth)
    recs = scene_measures(read_outputs(npz), head, rows, score_frames(score, npz, truth),
                          ciou_share)
    if not keep:
        os.remove(npz)
    return recs, rows


def evaluate_world(world, a, plugin, weights, threshold, tmp, score):
    """Renders, runs and measures the held-out scenes of one world version;
    prints its table and returns its figures (per scene, per configuration
    and "overall")."""
    results = {}
    all_recs = []
    all_lat = []
    t_start = time.time()
    wname = soworld.WORLDS[world]
    hdr = (f"{'scene':<22} {'steady':>6} {'point':>6} {'look':>6} {'lookN':>6} {'blind':>6} "
           f"{'both2':>6} {'AUC':>6} {'flag':>6} {'kind':>6} {'lat50':>6}")

    def line(name, s, lat):
        return (f"{name:<22} {s['steady_pos']:>6} {fmt(s['pointing']):>6} "
                f"{fmt(s['lookalike_pointing']):>6} {s['steady_lookalike']:>6} "
                f"{fmt(s['audio_blind']):>6} {fmt(s['both_of_two']):>6} {fmt(s['auc']):>6} "
                f"{fmt(s.get('visible_flag')):>6} {'':>6} {fmt(lat, 2):>6}")

    print(f"\n=== world {world}: {wname} ===", flush=True)
    for cname in a.configs.split(","):
        ext, W, H, fps, sr, ch = CONFIGS[cname]
        per_scene, lat_c, recs_c = [], [], []
        print(f"\n{wname} {cname}: {W}x{H} {fps} fps, "
              f"{'H.264/AAC MP4' if ext == '.mp4' else 'VP8/Vorbis WebM'}, "
              f"{a.scenes} scene(s) of {a.duration:g} s", flush=True)
        print(hdr)
        for seed in a.seed_list:
            sc, clip, truth = render_scene(world, cname, seed, a.duration, tmp)
            recs, rows = run_and_measure(clip, truth, plugin, weights, a.audio, score, a.keep)
            lat = latencies(recs, rows)
            s = summary(recs, threshold)
            per_scene.append(recs)
            lat_c += lat
            recs_c += recs
            results[f"{cname} seed {seed}"] = dict(s, latency_median=float(np.median(lat)) if lat else None)
            name = f"seed {seed} (K={len(sc.objects)}{', pair' if sc.pair else ''})"
            print(line(name, s, float(np.median(lat)) if lat else None), flush=True)
        s = summary(recs_c, threshold)
        s["latency_median"] = float(np.median(lat_c)) if lat_c else float("nan")
        s["switches"] = len(lat_c)
        results[cname] = s
        print(line("all " + cname, s, s["latency_median"]), flush=True)
        all_recs.append((cname, list(zip(a.seed_list, per_scene))))
        all_lat += lat_c
    # kind: fitted on the other seeds of every configuration
    scenes = [(seed, recs) for _, ps in all_recs for seed, recs in ps]
    counts = kind_counts(scenes)
    k = 0
    print("\nkind from the fused vector (a linear classifier fitted on the other seeds):")
    for cname, ps in all_recs:
        c = counts[k:k + len(ps)]
        k += len(ps)
        acc = sum(r for r, _ in c) / max(1, sum(n for _, n in c))
        results[cname]["kind"] = acc
        print(f"  {cname:<12} {fmt(acc)} ({sum(n for _, n in c)} frames)")
    flat = [r for _, recs in scenes for r in recs]
    s = summary(flat, threshold)
    s["kind"] = sum(r for r, _ in counts) / max(1, sum(n for _, n in counts))
    s["latency_median"] = float(np.median(all_lat)) if all_lat else float("nan")
    s["switches"] = len(all_lat)
    results["overall"] = s
    print(f"\n{wname} overall ({time.time() - t_start:.0f} s): pointing {fmt(s['pointing'])} "
          f"(audio-blind {fmt(s['audio_blind'])}), look-alike pointing "
          f"{fmt(s['lookalike_pointing'])} ({s['steady_lookalike']} frames), both-of-two "
          f"{fmt(s['both_of_two'])} ({s['n_two']} frames), nothing-visible AUC {fmt(s['auc'])}, "
          f"visible flag {fmt(s.get('visible_flag'))}, kind {fmt(s['kind'])}, median switch "
          f"latency {fmt(s['latency_median'], 2)} s ({s['switches']} switches)")
    print("targets: pointing >= 0.98, both-of-two >= 0.90, AUC >= 0.95, kind >= 0.95, "
          "latency <= 0.6 s" + ("; look-alike pointing: about 0.5 for a model that sees "
                                "only colour" if world != 1 else ""))
    return results


def model_file(plugin, weights):
    """The file a model entry runs: ``weights``, else the elements' default
    (the copy beside a build-tree plugin, else the source's), with its
    metadata and visible_threshold: (file, metadata, threshold)."""
    beside = os.path.join(plugin, DEFAULT_MODEL)
    wfile = weights or (beside if os.path.exists(beside) else
                        os.path.join(ROOT, "models", DEFAULT_MODEL))
    meta = weights_metadata(wfile)
    return wfile, meta, float(meta.get("visible_threshold", 0) or 0)


def describe_model(wfile, weights, threshold, meta):
    """The file, whether it is the default, its threshold and world."""
    return (f"{wfile}" + ("" if weights else " (the elements' default)")
            + f", visible_threshold {threshold:g}"
            + (f", trained on {meta['world']}" if meta.get("world") else ""))


# ---- several entries side by side (--compare, --baselines) ----------------

# (measure, column header, decimals) of the side-by-side table
COMPARE_COLUMNS = (("pointing", "point", 3), ("lookalike_pointing", "look", 3),
                   ("both_of_two", "both2", 3), ("auc", "AUC", 3),
                   ("visible_flag", "flag", 3), ("ciou_ap50", "cIoU50", 3),
                   ("ciou_auc", "cIoUAUC", 3), ("max_f1", "maxF1", 3),
                   ("latency_median", "lat50", 2))
# the frame counts that go with them, in the JSON
COMPARE_COUNTS = ("steady_pos", "steady_lookalike", "n_two", "steady_neg")


class ShiftedAudio:
    """A scene whose sound is its own circularly shifted by ``shift``
    seconds (np.roll: what sounded at t sounds at t + shift); its pictures
    and truth are the scene's.  What soworld.encode reads of a Scene."""

    def __init__(self, scene, shift):
        self.scene, self.shift = scene, shift

    def __getattr__(self, name):
        return getattr(self.scene, name)

    def audio(self):
        return np.roll(self.scene.audio(), int(round(self.shift * self.scene.sr)))


def parse_compare(spec):
    """--compare's comma list of NAME=WEIGHTS[:AUDIO] (WEIGHTS a file or
    "default", AUDIO one of AUDIO_MODES, default clip): (name, weights or
    None, audio) tuples."""
    out = []
    for item in spec.split(","):
        name, sep, what = (x.strip() for x in item.partition("="))
        if not sep or not name or not what:
            raise ValueError(f"{item!r}: NAME=WEIGHTSFILE or NAME=default, "
                             f"optionally :{'|'.join(AUDIO_MODES)}")
        audio = "clip"
        rest, colon, mode = what.rpartition(":")
        if colon and mode in AUDIO_MODES:
            what, audio = rest, mode
        out.append((name, None if what == "default" else what, audio))
    return out


def compare_entries(a, plugin):
    """The entries compared: --compare's (else --weights as "model"), each
    followed, with --baselines, by its zeroed and shifted runs, then (with
    --baselines) the rows without a model.  Dicts with name and kind
    ("model", "random" or "largest"), a model's with weights (None: the
    default), file, meta, threshold and audio."""
    specs = parse_compare(a.compare) if a.compare else [("model", a.weights, a.audio)]
    entries = []
    for name, weights, audio in specs:
        weights = os.path.abspath(weights) if weights else None
        if weights and not os.path.exists(weights):
            raise ValueError(f"{name}: no weights file {weights}")
        wfile, meta, threshold = model_file(plugin, weights)
        entry = dict(name=name, kind="model", weights=weights, file=wfile, meta=meta,
                     threshold=threshold, audio=audio)
        entries.append(entry)
        if a.baselines and audio == "clip":
            entries += [dict(entry, name=f"{name}, audio {mode}", audio=mode)
                        for mode in ("zeroed", "shifted")]
    if a.baselines:
        entries += [dict(name="random object", kind="random"),
                    dict(name="largest object", kind="largest")]
    names = [e["name"] for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"entry names given twice: {', '.join(twice)}")
    return entries


def scene_runs(world, cname, seed, a, plugin, entries, tmp, score):
    """One held-out scene through every entry: {name: (records, switch
    latencies)}.  Rendered and encoded once, and once more with its sound
    shifted (ShiftedAudio) when an entry hears that; the rows without a
    model are on the frames of the first model entry's run."""
    sc, clip, truth = render_scene(world, cname, seed, a.duration, tmp)
    base, ext = os.path.splitext(clip)
    clips = dict(clip=(clip, truth), zeroed=(clip, truth))
    if any(e.get("audio") == "shifted" for e in entries):
        clips["shifted"] = (base + "-shifted" + ext,
                            soworld.encode(ShiftedAudio(sc, a.shift), base + "-shifted" + ext))
    out, first = {}, None
    for n, e in enumerate(entries):
        if e["kind"] == "model":
            c, t = clips[e["audio"]]
            recs, rows = run_and_measure(c, t, plugin, e["weights"],
                                         "zeroed" if e["audio"] == "zeroed" else "clip",
                                         score, a.keep, npz=f"{base}-entry{n}.npz",
                                         ciou_share=a.ciou_share)
            out[e["name"]] = (recs, latencies(recs, rows))
            first = recs if first is None else first
    for e in entries:
        if e["kind"] == "random":
            out[e["name"]] = (random_records(first), [])
        elif e["kind"] == "largest":
            out[e["name"]] = (largest_records(sc, first), [])
    return out


def entry_measures(entry, recs, lat):
    """The side-by-side measures (COMPARE_COLUMNS, COMPARE_COUNTS) of one
    entry's records and switch latencies: summary()'s, field_measures()'
    and the median latency; a row without a model has pointing and
    look-alike pointing only (None for the rest)."""
    s = summary(recs, entry.get("threshold", 0.0))
    m = {k: s.get(k) for k, _, _ in COMPARE_COLUMNS}
    m.update({k: s[k] for k in COMPARE_COUNTS})
    if entry["kind"] != "model":
        return {k: (v if k in ("pointing", "lookalike_pointing") else None)
                for k, v in m.items()}
    m.update(field_measures(recs))
    m["latency_median"] = float(np.median(lat)) if lat else float("nan")
    m["switches"] = len(lat)
    return m


def print_compare(title, entries, measures):
    """One side-by-side table: a row per entry."""
    w = max(len(e["name"]) for e in entries) + 1
    print(f"\n{title}")
    print(f"{'entry':<{w}}" + "".join(f" {h:>7}" for _, h, _ in COMPARE_COLUMNS))
    for e in entries:
        m = measures[e["name"]]
        print(f"{e['name']:<{w}}" + "".join(f" {fmt(m[k], nd):>7}" for k, _, nd in COMPARE_COLUMNS))


def compare_world(world, a, plugin, entries, tmp, score):
    """The held-out scenes of one world through every entry: prints a table
    per configuration and one over both; returns {entry: measures over
    both configurations, with "configs": {configuration: measures}}."""
    wname = soworld.WORLDS[world]
    configs = a.configs.split(",")
    runs = {c: {e["name"]: ([], []) for e in entries} for c in configs}
    scenes = {e["name"]: {} for e in entries}
    print(f"\n=== world {world}: {wname} ===", flush=True)
    for cname in configs:
        for seed in a.seed_list:
            t0 = time.time()
            per = []
            for name, (recs, lat) in scene_runs(world, cname, seed, a, plugin, entries,
                                                tmp, score).items():
                runs[cname][name][0].extend(recs)
                runs[cname][name][1].extend(lat)
                s = summary(recs, 0.0)
                scenes[name][f"{cname} seed {seed}"] = {
                    m: s[m] for m in ("pointing", "lookalike_pointing", "steady_pos",
                                      "steady_lookalike")}
                per.append(f"{name} {fmt(s['pointing'])}/{fmt(s['lookalike_pointing'])}")
            print(f"{wname} {cname} seed {seed}: {len(entries)} entries "
                  f"({time.time() - t0:.0f} s); pointing/look-alike: {', '.join(per)}",
                  flush=True)
    results = {}
    for e in entries:
        per = {c: entry_measures(e, *runs[c][e["name"]]) for c in configs}
        both = entry_measures(e, [r for c in configs for r in runs[c][e["name"]][0]],
                              [x for c in configs for x in runs[c][e["name"]][1]])
        results[e["name"]] = dict(both, configs=per, scenes=scenes[e["name"]])
    for cname in configs:
        print_compare(f"{wname} {cname} ({a.scenes} scene(s) of {a.duration:g} s)", entries,
                      {n: m["configs"][cname] for n, m in results.items()})
    print_compare(f"{wname} over {' and '.join(configs)}", entries, results)
    m = results[entries[0]["name"]]
    print(f"frames: {m['steady_pos']} steady with a visible source ({m['steady_lookalike']} "
          f"with a look-alike, {m['n_two']} with two sources), {m['steady_neg']} steady "
          f"silence or off-screen sound", flush=True)
    return results


def main_compare(a, worlds, plugin, score):
    """--compare / --baselines: the side-by-side tables and their JSON."""
    try:
        entries = compare_entries(a, plugin)
    except ValueError as e:
        print(f"evaluate: --compare: {e}", file=sys.stderr)
        return 2
    off = a.shift % a.duration
    if any(e.get("audio") == "shifted" for e in entries) and min(off, a.duration - off) < 1.0:
        print(f"evaluate: --shift {a.shift:g} s is within 1 s of a whole {a.duration:g} s "
              f"clip: the shifted sound would be nearly in sync", file=sys.stderr)
        return 2
    for e in entries:
        what = (describe_model(e["file"], e["weights"], e["threshold"], e["meta"])
                + ("" if e["audio"] == "clip" else f", audio {e['audio']}")
                + (f" by {a.shift:g} s" if e["audio"] == "shifted" else "")
                if e["kind"] == "model" else "no model (from the truth)")
        print(f"evaluate: {e['name']}: {what}", flush=True)
    print(f"evaluate: cIoU's mask: the map's top {a.ciou_share:g} of the picture"
          + (" (its median, the field's)" if a.ciou_share == 0.5 else " (not the field's median)"),
          flush=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="avf-eval-")
    os.makedirs(tmp, exist_ok=True)
    try:
        compare = {soworld.WORLDS[w]: compare_world(w, a, plugin, entries, tmp, score)
                   for w in worlds}
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        about = {e["name"]: (dict(file=e["file"], audio=e["audio"], threshold=e["threshold"],
                                  shift=a.shift if e["audio"] == "shifted" else None)
                             if e["kind"] == "model" else dict(model=None))
                 for e in entries}
        with open(a.json, "w") as f:
            json.dump(dict(compare=compare, entries=about, ciou_share=a.ciou_share), f, indent=1,
                      default=lambda o: None)
    return 0


def held_out_seeds(seeds, first_seed, scenes):
    """The scenes' seeds: the comma list ``seeds`` (--seeds) if given, else
    ``scenes`` from ``first_seed`` on.  ValueError for anything that is not a
    whole number or not a held-out seed (0 to 99999; training uses 100000 on)."""
    if seeds:
        try:
            out = [int(x) for x in seeds.split(",")]
        except ValueError:
            raise ValueError(f"--seeds {seeds!r}: expected a comma list of whole numbers") from None
    else:
        out = list(range(first_seed, first_seed + scenes))
    if any(not 0 <= s < 100000 for s in out or [first_seed]):
        raise ValueError("seeds >= 100000 are training seeds (held-out seeds are 0 to 99999)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="pointing, look-alike pointing, both-of-two, "
                                 "nothing-visible AUC, kind and switch latency on held-out "
                                 "scenes, through GStreamer")
    ap.add_argument("--weights", help="a weights file (default: the elements' default model)")
    ap.add_argument("--world", choices=("1", "2", "both"), default="1",
                    help="which world's scenes: 1 (sounding-objects.md, default), "
                         "2 (sounding-objects-2.md: rhythm and look-alikes) or both")
    ap.add_argument("--audio", choices=("clip", "zeroed"), default="clip",
                    help="zeroed: the baseline of the same network with the sound silenced "
                         "(volume 0) before avspectrogram")
    ap.add_argument("--scenes", type=int, default=10, help="scenes per configuration")
    ap.add_argument("--first-seed", type=int, default=1, help="held-out seeds (training uses >= 100000)")
    ap.add_argument("--seeds", metavar="S,S,...",
                    help="these held-out seeds instead of --first-seed and --scenes (for "
                         "example the design scenes of one pair kind)")
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma list of " + ", ".join(CONFIGS))
    ap.add_argument("--plugin-path", default=None)
    ap.add_argument("--score", help="the avattention-score program (default: the one in the "
                    "plugin's build tree, build*/tools/, else the one on PATH)")
    ap.add_argument("--keep", help="keep the clips, truth files and .npz here")
    ap.add_argument("--json", help="write the figures as JSON here")
    ap.add_argument("--min-pointing", type=float, default=None,
                    help="exit 1 when the pointing accuracy of a configuration is below this")
    ap.add_argument("--min-lookalike", type=float, default=None,
                    help="exit 1 when the look-alike pointing of a configuration (world 2) "
                         "is below this")
    ap.add_argument("--compare", metavar="NAME=WEIGHTS[:AUDIO],...",
                    help="several entries side by side: WEIGHTS a weights file or 'default' "
                         "(the elements' default model), AUDIO clip (default), zeroed or "
                         "shifted; one table per world")
    ap.add_argument("--baselines", action="store_true",
                    help="with each compared model its audio-zeroed and audio-shifted runs, "
                         "and the rows 'random object' and 'largest object'")
    ap.add_argument("--shift", type=float, default=3.0,
                    help="seconds the sound is circularly shifted by for 'audio shifted' "
                         "(default 3)")
    ap.add_argument("--ciou-share", type=float, default=0.5,
                    help="cIoU's mask: the share of the map that is on (default 0.5: the "
                         "median, as the field computes it)")
    a = ap.parse_args(argv)
    if not 0.0 < a.ciou_share < 1.0:
        print("evaluate: --ciou-share is a share of the picture, between 0 and 1",
              file=sys.stderr)
        return 2
    try:
        a.seed_list = held_out_seeds(a.seeds, a.first_seed, a.scenes)
    except ValueError as e:
        print(f"evaluate: {e}", file=sys.stderr)
        return 2
    a.scenes = len(a.seed_list)
    for cname in a.configs.split(","):
        if cname not in CONFIGS:
            print(f"evaluate: unknown configuration {cname!r} (known: {', '.join(CONFIGS)})",
                  file=sys.stderr)
            return 2
    if (a.compare or a.baselines) and (a.min_pointing is not None or a.min_lookalike is not None):
        print("evaluate: the --min-* floors belong to the single-model run, not --compare",
              file=sys.stderr)
        return 2
    worlds = [1, 2] if a.world == "both" else [int(a.world)]
    plugin = find_plugin_path(a.plugin_path)
    score = find_score(a.score, plugin)
    if a.compare or a.baselines:
        return main_compare(a, worlds, plugin, score)
    weights = os.path.abspath(a.weights) if a.weights else None
    wfile, meta, threshold = model_file(plugin, weights)
    print(f"evaluate: model {describe_model(wfile, weights, threshold, meta)}", flush=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="avf-eval-")
    os.makedirs(tmp, exist_ok=True)
    per_world = {}
    try:
        for world in worlds:
            per_world[world] = evaluate_world(world, a, plugin, weights, threshold, tmp, score)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if len(worlds) == 1:
        results = dict(per_world[worlds[0]], world=soworld.WORLDS[worlds[0]])
    else:
        results = {soworld.WORLDS[w]: r for w, r in per_world.items()}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, default=lambda o: None)
    rc = 0
    for key, name, floor, in_worlds in (("pointing", "pointing", a.min_pointing, (1, 2)),
                                        ("lookalike_pointing", "look-alike pointing",
                                         a.min_lookalike, (2,))):
        if floor is None:
            continue
        figures = [(r[c][key], f"{soworld.WORLDS[w]} {c}")
                   for w, r in per_world.items() if w in in_worlds for c in a.configs.split(",")]
        if not figures:
            print(f"evaluate: FAIL: no {name} measured (--world {a.world})")
            rc = 1
            continue
        failed = [(v, where) for v, where in figures if not v >= floor]   # NaN fails
        for v, where in failed:
            print(f"evaluate: FAIL: {name} {v:.3f} ({where}) below {floor}")
        if failed:
            rc = 1
        else:
            print(f"evaluate: {name} {min(v for v, _ in figures):.3f} >= {floor} in every "
                  f"configuration")
    return rc


if __name__ == "__main__":
    sys.exit(main())
