#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A diagnosis of an avfusion-v2 model on look-alike frames: does its rhythm
term tell the source of a look-alike pair from its twin, and does the model
use it?

    model/probe_rhythm.py --weights models/sounding-objects-v2.safetensors --work build-train19

On the prepared scenes of a train.py --work folder (WORK/data: training seeds
below 150000, validation seeds from 150000), for each steady look-alike frame
with one source: the rhythm term before rhythm_proj (the Λ·D·C weighted
correlations of each patch) averaged over the source's patches minus the
same over its twin's (the patches of the source's kind outside its box).  A
logistic regression without bias (the difference and its negation, labels
1 and 0) is fitted on training frames and scored on validation frames,
beside how often the model's strongest patch is on the source, per kind of
the pair.  A probe far above the model means the read-out loses what the
features hold; a probe near the model means the features are the limit.
Reads truth (it is a diagnosis), never the held-out seeds of evaluate.py.
"""
import argparse
import glob
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

KIND_NAMES = ["red", "yellow", "green", "cyan", "blue", "magenta"]


def collect(model, train, paths, duration, max_frames, seed):
    """[n, Λ·D·C] source-minus-twin rhythm terms, the model's hits on the
    source and the pair's kind, on up to max_frames look-alike frames."""
    import torch
    cap = {}
    hook = model.rhythm_proj.register_forward_hook(
        lambda m, i, o: cap.__setitem__("S", i[0].detach()))
    ds = train.SceneSet(paths, duration, rhythm=True)
    items = []
    for s, f in ds.index:
        inf = ds.scenes[s]["info"][f]
        # steady, not negative, one source, with a look-alike
        if inf[0] > 0.5 and inf[1] < 0.5 and int(inf[2]) == 1 and inf[6] > 0.5:
            items.append((s, f))
    rng = np.random.default_rng(seed)
    if len(items) > max_frames:
        items = [items[i] for i in sorted(rng.choice(len(items), max_frames, replace=False))]
    X, hit, kind, on_pair = [], [], [], []
    with torch.no_grad():
        for k in range(0, len(items), 32):
            it = items[k:k + 32]
            bt = ds.batch(it)
            rgb, mel, mask, tgt = bt[:4]
            pk = bt[6]
            hist, hmiss = bt[8:]
            _, q = train.forward_with_map(model, rgb, mel, mask, hist=hist, hmiss=hmiss)
            S = cap["S"]                                         # [B, N, Λ·D·C]
            _, best = train.strongest(q)
            for b in range(len(it)):
                src = tgt[b] > 0
                kinds = pk[b][src]
                kinds = kinds[(kinds >= 0) & (kinds < len(KIND_NAMES))]
                if len(kinds) == 0:
                    continue
                kd = int(torch.mode(kinds).values)
                twin = (pk[b] == kd) & ~src
                if not twin.any():
                    continue
                X.append((S[b][src].mean(0) - S[b][twin].mean(0)).numpy())
                hit.append(bool(src[best[b]]))
                on_pair.append(bool(src[best[b]] or twin[best[b]]))
                kind.append(kd)
    hook.remove()
    return np.array(X), np.array(hit), np.array(kind), np.array(on_pair)


def fit(X, reg):
    """A bias-free logistic regression on X (label 1) and -X (label 0)."""
    import torch
    Xa = torch.tensor(np.concatenate([X, -X]), dtype=torch.float32)
    y = torch.cat([torch.ones(len(X)), torch.zeros(len(X))])
    w = torch.zeros(X.shape[1], requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=200)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(Xa @ w, y) + reg * (w * w).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return w.detach().numpy()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", required=True, help="an avfusion-v2 weights file")
    ap.add_argument("--work", required=True, help="a train.py --work folder (its data/ is read)")
    ap.add_argument("--duration", type=float, default=12.0, help="the scenes' seconds (train.py's --duration)")
    ap.add_argument("--train-scenes", type=int, default=100, help="training scenes read (memory: ~50 MB each)")
    ap.add_argument("--max-frames", type=int, default=8000)
    ap.add_argument("--reg", type=float, default=0.1, help="L2 weight of the probe")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import torch
    import avfusion2
    import train
    torch.set_num_threads(1)
    try:
        model = avfusion2.AvFusionV2.from_safetensors(args.weights)
    except (OSError, ValueError) as e:
        raise SystemExit(f"probe_rhythm: {e}")
    model.eval()
    train.set_bins(model.bin_slots, model.lag_min, model.num_lags)
    paths = sorted(glob.glob(os.path.join(args.work, "data", "scene*.npz")))
    seed_of = lambda p: int(os.path.basename(p).split("-")[1].split(".")[0])
    tr = [p for p in paths if seed_of(p) < 150000][:args.train_scenes]
    va = [p for p in paths if seed_of(p) >= 150000]
    if not tr or not va:
        raise SystemExit(f"probe_rhythm: {args.work}/data holds {len(tr)} training and "
                         f"{len(va)} validation scenes; run train.py --work {args.work} first")
    Xt, _, _, _ = collect(model, train, tr, args.duration, args.max_frames, args.seed)
    Xv, hv, kv, pv_pair = collect(model, train, va, args.duration, args.max_frames, args.seed)
    if len(Xt) == 0 or len(Xv) == 0:
        raise SystemExit("probe_rhythm: no look-alike frames with a twin found")
    w = fit(Xt, args.reg)
    pv = (Xv @ w) > 0
    print(f"look-alike frames: {len(Xt)} training ({len(tr)} scenes), {len(Xv)} validation ({len(va)} scenes)")
    print(f"probe: training {((Xt @ w) > 0).mean():.3f}, validation {pv.mean():.3f}")
    print(f"model: strongest patch on the source {hv.mean():.3f}, on the source or its twin {pv_pair.mean():.3f}")
    for k in sorted(set(kv.tolist())):
        m = kv == k
        print(f"  {KIND_NAMES[k]:8s} {int(m.sum()):5d} frames  probe {pv[m].mean():.3f}  model {hv[m].mean():.3f}")


if __name__ == "__main__":
    main()
