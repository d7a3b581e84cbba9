#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""How well *any* model that reads one window of sound can tell two
look-alikes apart: the look-alike pointing of a perfect rhythm feature, on
the same scenes that model/evaluate.py renders (world 2, same seeds, sizes
and frame rates).

    model/lookalike_ceiling.py                          # evaluate.py's held-out scenes
    model/lookalike_ceiling.py --first-seed 50000 --scenes 200 --kinds yellow

For every steady frame whose one source has a look-alike (the frames
"look-alike pointing" counts), at time t: the sound's log energy in bins of
``--bin-ms`` over the window [t - window, t) (the scene's own audio, before
any encoder; ``--audio-delay-ms`` moves it late as an encoder would) is
correlated (Pearson) with each twin's true envelope e(t) at the bins'
centres, and the twin with the higher correlation is picked.  Nothing a
model sees is that clean: it reads the envelope off pixels, through noise
and motion.  With ``--video frames`` the envelope is read as a video shows
it, at the time of the frame that shows each bin centre (frame i shows
[i/fps, (i+1)/fps) and is drawn at e(i/fps)); ``continuous`` (the default)
reads it at the centre itself, which no video can.  A frame whose two
correlations are both undefined (flat envelopes) counts half, a coin toss.

Printed per configuration and scene (the pair's kind, the look-alike frames,
the share picked right), over all, and the bound this puts on pointing:
1 - (look-alike frames picked wrong) / (frames pointing counts), as if
every other frame were pointed at right.  ``--json FILE`` writes the same.

No pipeline, no model; renders the scenes' audio only (a few seconds a
scene).  Used for issue 18's question: is look-alike pointing >= 0.95 on the
held-out scenes within reach of a one-second window?
"""

import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import soworld  # noqa: E402
from evaluate import CONFIGS  # noqa: E402  (the same scenes as evaluate.py)


def log_energy(x, sr, bin_ms, delay_ms=0.0):
    """Log mean square of ``x`` in bins of ``bin_ms`` from t = 0, after
    moving it ``delay_ms`` late (zeros before it): [bins], and the bin
    length in samples (a float: bins need not hold whole samples)."""
    d = int(round(delay_ms * sr / 1000.0))
    if d > 0:
        x = np.concatenate([np.zeros(d, x.dtype), x])[:len(x)]
    elif d < 0:
        x = np.concatenate([x[-d:], np.zeros(-d, x.dtype)])
    hop = bin_ms * sr / 1000.0
    edges = np.floor(np.arange(int(len(x) // hop) + 1) * hop).astype(np.int64)
    c = np.concatenate([[0.0], np.cumsum(x.astype(np.float64) ** 2)])
    ms = (c[edges[1:]] - c[edges[:-1]]) / np.maximum(np.diff(edges), 1)
    return np.log(ms + 1e-10), hop


def pearson(a, b):
    """Pearson correlation of two vectors; None when either is constant."""
    a = a - a.mean()
    b = b - b.mean()
    d = math.sqrt(float((a * a).sum()) * float((b * b).sum()))
    return float((a * b).sum()) / d if d > 1e-12 else None


def pick_score(energy, env_source, env_twin):
    """1 when the source's envelope correlates better with the energy than
    its twin's, 0 when worse, 0.5 when neither can be told (both undefined
    or equal)."""
    cs, ct = pearson(energy, env_source), pearson(energy, env_twin)
    cs = -2.0 if cs is None else cs
    ct = -2.0 if ct is None else ct
    return 1.0 if cs > ct else 0.0 if cs < ct else 0.5


def scene_ceiling(sc, window=1.0, bin_ms=40.0, delay_ms=0.0, video="continuous"):
    """{"kind", "lookalike" (frames), "picked" (sum of pick scores),
    "pointing" (frames pointing counts), "wrong" (look-alike frames picked
    wrong, halves counted half)} for one world 2 scene."""
    out = dict(kind=None, lookalike=0, picked=0.0, pointing=0, wrong=0.0)
    if sc.pair is not None:
        out["kind"] = soworld.KIND_NAMES[sc.objects[sc.pair[0]]["kind"]]
    le, hop = log_energy(sc.audio().astype(np.float64), sc.sr, bin_ms, delay_ms)
    nb = int(round(window * 1000.0 / bin_ms))
    centres = (np.arange(len(le)) + 0.5) * hop / sc.sr
    if video == "frames":
        centres = np.floor(centres * sc.fps + 1e-9) / sc.fps
    envs = {}
    for i in range(sc.n_frames()):
        tr = sc.truth(i)
        if not tr["steady"] or not tr["sources"]:
            continue
        out["pointing"] += 1
        if not tr["lookalike"]:
            continue
        s = tr["sources"][0]
        twin = next(o["id"] for o in sc.objects
                    if o["id"] != s and o["kind"] == sc.objects[s]["kind"])
        for j in (s, twin):
            if j not in envs:
                envs[j] = sc.envelope(j, centres)
        # bins ending at t: the last bin is the one that ends at or before t
        kend = int(math.floor(tr["t"] * sc.sr / hop + 1e-9))
        k0 = max(0, kend - nb)
        if kend - k0 < 2:
            continue
        p = pick_score(le[k0:kend], envs[s][k0:kend], envs[twin][k0:kend])
        out["lookalike"] += 1
        out["picked"] += p
        out["wrong"] += 1.0 - p
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first-seed", type=int, default=1,
                    help="first seed (default 1: evaluate.py's held-out scenes)")
    ap.add_argument("--scenes", type=int, default=4)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--window", type=float, default=1.0, help="seconds of sound (default 1)")
    ap.add_argument("--bin-ms", type=float, default=40.0)
    ap.add_argument("--audio-delay-ms", type=float, default=0.0)
    ap.add_argument("--video", choices=("continuous", "frames"), default="continuous")
    ap.add_argument("--kinds", default=None,
                    help="only pairs of these kinds (comma list of names or numbers)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    want = None
    if a.kinds:
        names = list(soworld.KIND_NAMES)
        want = set()
        for k in a.kinds.split(","):
            k = k.strip().lower()
            if k.isdigit():
                want.add(int(k))
            elif k in names:
                want.add(names.index(k))
            else:
                raise SystemExit(f"lookalike_ceiling: unknown kind {k!r}")
    rows, tot = [], dict(lookalike=0, picked=0.0, pointing=0, wrong=0.0)
    print(f"perfect rhythm feature: window {a.window:g} s, bins {a.bin_ms:g} ms, audio "
          f"{a.audio_delay_ms:g} ms late, envelope {a.video}")
    print(f"{'config':10} {'seed':>6} {'pair':>8} {'lookN':>6} {'look':>6} {'pointN':>7}")
    for cname in a.configs.split(","):
        if cname not in CONFIGS:
            raise SystemExit(f"lookalike_ceiling: unknown configuration {cname!r}")
        _ext, W, H, fps, sr, _ch = CONFIGS[cname]
        for seed in range(a.first_seed, a.first_seed + a.scenes):
            sc = soworld.Scene(seed, W, H, fps, a.duration, sr, variants=True, world=2)
            kind = sc.objects[sc.pair[0]]["kind"] if sc.pair is not None else None
            if want is not None and kind not in want:
                continue
            r = scene_ceiling(sc, a.window, a.bin_ms, a.audio_delay_ms, a.video)
            r.update(config=cname, seed=seed)
            rows.append(r)
            for k in tot:
                tot[k] += r[k]
            look = f"{r['picked'] / r['lookalike']:.3f}" if r["lookalike"] else "-"
            print(f"{cname:10} {seed:6d} {str(r['kind'] if r['kind'] is not None else '-'):>8} "
                  f"{r['lookalike']:6d} {look:>6} {r['pointing']:7d}", flush=True)
    look = tot["picked"] / tot["lookalike"] if tot["lookalike"] else float("nan")
    bound = 1.0 - tot["wrong"] / tot["pointing"] if tot["pointing"] else float("nan")
    print(f"all: look-alike {look:.3f} ({tot['lookalike']} frames); pointing at most "
          f"{bound:.3f} ({tot['pointing']} frames)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(settings=vars(a), scenes=rows, lookalike_pointing=look,
                           lookalike_frames=tot["lookalike"], pointing_bound=bound,
                           pointing_frames=tot["pointing"]), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
