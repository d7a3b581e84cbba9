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


def scene_measures(out, head, rows, scores):
    """One record per truth row that has an output (``scores``:
    score_frames()'s rows, which say which output and whether it hits);
    "audio" says whether the output's window held audio (the measures other
    than pointing look at those only)."""
    K = len(head.get("objects", [])) or 1
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
                   guess=len(r["sources"]) / K)
        if s["both"] != "-":
            rec["both"] = s["both"] == "1"
        recs.append(rec)
    return recs


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


def evaluate_world(world, a, plugin, weights, threshold, tmp, score):
    """Renders, runs and measures the held-out scenes of one world version;
    prints its table and returns its figures (per scene, per configuration
    and "overall")."""
    results = {}
    all_recs = []
    all_lat = []
    t_start = time.time()
    wname = soworld.WORLDS[world]
    tag = "" if world == 1 else f"-w{world}"
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
        for k in range(a.scenes):
            seed = a.first_seed + k
            sc = soworld.Scene(seed, W, H, fps, a.duration, sr, variants=True, channels=ch,
                               world=world)
            clip = os.path.join(tmp, f"scene-{seed}{tag}-{cname.replace(':', 'x')}{ext}")
            truth = soworld.encode(sc, clip)
            npz = os.path.splitext(clip)[0] + ".npz"
            run_pipeline(clip, npz, plugin, weights, a.audio)
            head, rows = soworld.read_truth_tsv(truth)
            recs = scene_measures(read_outputs(npz), head, rows, score_frames(score, npz, truth))
            if not a.keep:
                os.remove(npz)
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
        all_recs.append((cname, [(a.first_seed + k, recs) for k, recs in enumerate(per_scene)]))
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
    a = ap.parse_args(argv)
    if a.first_seed < 0 or a.first_seed + max(a.scenes, 1) - 1 >= 100000:
        print("evaluate: seeds >= 100000 are training seeds (held-out seeds are 0 to 99999)",
              file=sys.stderr)
        return 2
    for cname in a.configs.split(","):
        if cname not in CONFIGS:
            print(f"evaluate: unknown configuration {cname!r} (known: {', '.join(CONFIGS)})",
                  file=sys.stderr)
            return 2
    worlds = [1, 2] if a.world == "both" else [int(a.world)]
    plugin = find_plugin_path(a.plugin_path)
    score = find_score(a.score, plugin)
    weights = os.path.abspath(a.weights) if a.weights else None
    # the elements' default: the copy beside a build-tree plugin, else the source's
    beside = os.path.join(plugin, DEFAULT_MODEL)
    wfile = weights or (beside if os.path.exists(beside) else
                        os.path.join(ROOT, "models", DEFAULT_MODEL))
    meta = weights_metadata(wfile)
    threshold = float(meta.get("visible_threshold", 0) or 0)
    print(f"evaluate: model {wfile}" + ("" if weights else " (the elements' default)")
          + f", visible_threshold {threshold:g}"
          + (f", trained on {meta['world']}" if meta.get("world") else ""), flush=True)
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
