#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The unlabelled trainer (model/train.py --unlabeled, issue 19) reads no
# truth: three short version 2 clips are rendered and encoded, their truth
# files deleted, the clips renamed so that no seed can be read off a name;
# training runs under a Python audit hook that fails on any opened file
# whose name says truth (and on soworld.Scene, which could draw the truth
# again from a seed). A few steps, a stop and a resume, the truth-free
# threshold and the export; the exported weights play a clip in the plugin.
#   run-train-unlabeled.sh PLUGIN_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
plugin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 GST_PLUGIN_PATH="$plugin"
mkdir "$tmp/render" "$tmp/clips"
i=0
for spec in "31 .mp4 640x360" "32 .webm 480x360" "33 .mp4 320x240"; do
  set -- $spec
  /usr/bin/python3 "$src/model/soworld.py" render --world 2 --seed "$1" --size "$3" --fps 25 \
    --duration 4 --sample-rate 32000 --out "$tmp/render/s$1$2" >/dev/null
  i=$((i + 1))
  mv "$tmp/render/s$1$2" "$tmp/clips/holiday-$i$2"
done
rm -rf "$tmp/render"
if ls "$tmp/clips" | grep -q truth; then echo "run-train-unlabeled: a truth file is left"; exit 1; fi
cat > "$tmp/audited.py" <<'PY'
import runpy, sys
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        name = args[0].decode() if isinstance(args[0], bytes) else args[0]
        if "truth" in name.rsplit("/", 1)[-1]:
            raise SystemExit(f"run-train-unlabeled: the trainer opened {name}")
sys.addaudithook(hook)
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
import soworld
def no_scene(*a, **k):
    raise SystemExit("run-train-unlabeled: the trainer drew a scene (its truth) from a seed")
soworld.Scene.__init__ = no_scene
runpy.run_path(sys.argv[0], run_name="__main__")
PY
train=(/usr/bin/python3 "$tmp/audited.py" "$src/model/train.py" --unlabeled "$tmp/clips"
       --work "$tmp/work" --plugin-path "$plugin" --out "$tmp/model.safetensors"
       --batch 3 --shifts 2 --threads 1 --jobs 1 --log-every 1 --val-every 2
       --val-frames 12 --checkpoint-every 2 --av-jitter 30 --follow-weight 1 --follow-from 2
       --early-neighbourhood 5)
"${train[@]}" --steps 4 | tee "$tmp/run1.log"
grep -q "no truth read" "$tmp/run1.log"
grep -q "train: step 4/4" "$tmp/run1.log"
grep -q "val sync accuracy .* map on read-out [01]\.[0-9]*" "$tmp/run1.log"
grep -q "export: wrote .* trained without truth" "$tmp/run1.log"
test -s "$tmp/work/checkpoint-unlabeled.pt"
# --av-jitter moves every candidate window of a frame by the same slots,
# silence where a slot falls outside the clip
/usr/bin/python3 - "$src/model" "$tmp/work/data" <<'PY'
import glob, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import train_unlabeled as U
cs = U.ClipSet(sorted(glob.glob(sys.argv[2] + "/unl-*.npz")), 1.0)
items = cs.index[:2]
plain = cs.batch(items, 2, np.random.default_rng(5))[3].numpy()
moved = cs.batch(items, 2, np.random.default_rng(5), av_offset=[3, -2])[3].numpy()
for b, o in enumerate((3, -2)):
    c, f = items[b]
    w = cs.clips[c]["widx"][f]
    want = cs.clips[c]["mel"][np.clip(w - o, 0, len(cs.clips[c]["mel"]) - 1)]
    inside = (w - o >= 0) & (w - o < len(cs.clips[c]["mel"]))
    assert np.array_equal(moved[b, 0][inside], want[inside]), "in-sync window not moved"
    assert np.allclose(moved[b, 0][~inside], cs.silence), "outside the clip is not silence"
    assert not np.array_equal(moved[b, 0], plain[b, 0]), "the offset changed nothing"
    assert np.array_equal(moved[b, 4], plain[b, 4]), "the silence window moved"
print("av-jitter windows ok")
PY
# --early-neighbourhood: the rhythm neighbourhood before --follow-from, the
# exported one after it; --unlabeled trains each patch's own (1) by default
/usr/bin/python3 - "$src/model" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import train_unlabeled as U
a = U.parse(["--unlabeled", "-", "--follow-from", "3", "--early-neighbourhood", "5"])
assert [U.neighbourhood_at(a, s) for s in (0, 2, 3, 9)] == [5, 5, 1, 1], a
# the defaults are the best from-scratch run's recipe: synchrony at 5 for
# 4/7 of the steps, then follow (weight 1) at 1; a fine-tune follows at once;
# --early-null-weight sets the null loss before --follow-from
a = U.parse(["--unlabeled", "-"])
assert (a.steps, a.follow_from, a.follow_weight, a.null_weight, a.av_jitter) == \
    (700, 400, 1.0, 2.0, 30.0), a
assert [U.follow_weight_at(a, s) for s in (0, 399, 400)] == [0.5, 0.5, 1.0], a
assert [U.neighbourhood_at(a, s) for s in (0, 399, 400)] == [5, 5, 1], a
a = U.parse(["--unlabeled", "-", "--steps", "140"])
assert a.follow_from == 80, a
a = U.parse(["--unlabeled", "-", "--init", "x.safetensors"])
assert a.follow_from == 0 and U.neighbourhood_at(a, 0) == 1, a
a = U.parse(["--unlabeled", "-", "--early-null-weight", "0.5"])
assert [U.null_weight_at(a, s) for s in (0, 399, 400)] == [0.5, 0.5, 2.0], a
assert U.null_weight_at(U.parse(["--unlabeled", "-"]), 0) == 2.0
a = U.parse(["--unlabeled", "-", "--early-follow-weight", "0"])
assert [U.follow_weight_at(a, s) for s in (0, 399, 400)] == [0.0, 0.0, 1.0], a
a = U.parse(["--unlabeled", "-", "--init", "x.safetensors"])
assert [U.follow_weight_at(a, s) for s in (0, 9)] == [1.0, 1.0], a
print("neighbourhood schedule and defaults ok")
PY
# --follow-future: the teacher's second window is the frame about a second
# later in the same clip (the frame itself where the clip ends first), and
# the follow loss is the plain one exactly where there is no later frame;
# then --focal and --follow-confidence on the same model and batch
/usr/bin/python3 - "$src/model" "$tmp/work/data" <<'PY'
import glob, sys
import numpy as np
import torch
import torch.nn.functional as Fn
sys.path.insert(0, sys.argv[1])
import train_unlabeled as U
cs = U.ClipSet(sorted(glob.glob(sys.argv[2] + "/unl-*.npz")), 1.0)
c, f = cs.index[0]
t = cs.clips[c]["fpts"]
g = cs.later(c, f, 1.0)
assert g > f and abs(int(t[g]) - int(t[f]) - 1e9) <= 20e6, (f, g, t[f], t[g])
assert cs.later(c, len(t) - 1, 1.0) == len(t) - 1
a = U.parse(["--unlabeled", "-", "--steps", "10"])
a.n_clips = 2
model, head = U.make_model(a)
items = [cs.index[0], cs.index[-1]]
rng = np.random.default_rng(3)
batch = cs.batch(items, 2, np.random.default_rng(3))
lhf, lhidx, lmel, has = cs.later_batch(items, 1.0, rng)
assert has.tolist() == [True, False], has
with torch.no_grad():
    plain = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0)[1]["follow"]
    none = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0,
                    (lhf, lhidx, lmel, torch.zeros(2, dtype=torch.bool)))[1]["follow"]
    both = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, (lhf, lhidx, lmel, has))[1]["follow"]
    # --follow-future-power 0.5: the geometric mean of the two read-outs
    geo = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, (lhf, lhidx, lmel, has),
                   0.5)[1]["follow"]
    none_geo = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0,
                        (lhf, lhidx, lmel, torch.zeros(2, dtype=torch.bool)), 0.5)[1]["follow"]
assert abs(plain - none) < 1e-6 and abs(both - plain) > 1e-4, (plain, none, both)
assert abs(geo - both) > 1e-5 and abs(geo - plain) > 1e-5, (plain, both, geo)
# without a later frame the teacher is the frame's own read-out to that power
assert abs(none_geo - plain) > 1e-5, (plain, none_geo)


def refused(extra):
    """The command line is refused with a usage error."""
    try:
        U.parse(["--unlabeled", "-"] + extra)
    except SystemExit as e:
        return e.code == 2
    return False


for bad in (["--follow-future", "-1"], ["--follow-future", "1", "--follow-future-power", "0"]):
    assert refused(bad), bad
print(f"follow-future teacher ok (follow {plain:.4f} plain, {both:.4f} with the later window)")
# --focal: gamma 0 is the plain cross-entropy; gamma > 0 leaves hard frames
# (in-sync window unlikely) nearly their whole loss and easy ones almost none;
# in losses() it changes the sync and rhythm terms only (the same model and
# batch as above)
x = torch.tensor([[5.0, 0.0, 0.0, 0.0], [0.0, 2.0, 2.0, 2.0]])
ce = Fn.cross_entropy(x, torch.zeros(2, dtype=torch.long), reduction="none")
assert abs(float(U.first_ce(x)) - float(ce.mean())) < 1e-7
p = torch.softmax(x, -1)[:, 0]
for g in (1.0, 2.0):
    want = float(((1 - p) ** g * ce).mean())
    assert abs(float(U.first_ce(x, g)) - want) < 1e-6, (g, want)
    easy, hard = float(U.first_ce(x[:1], g)), float(U.first_ce(x[1:], g))
    assert easy < 0.05 * float(ce[0]) and hard > 0.8 * float(ce[1]), (g, easy, hard)
with torch.no_grad():
    parts = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0)[1]
    foc = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, focal=2.0)[1]
for k in ("sync", "rhythm"):
    assert 0 < foc[k] < parts[k], (k, parts, foc)
for k in ("null", "follow", "acc"):
    assert foc[k] == parts[k], (k, parts, foc)
a = U.parse(["--unlabeled", "-", "--focal", "2"])
a.n_clips = 2
b = U.parse(["--unlabeled", "-"])
b.n_clips = 2
assert U.config_of(a)["focal"] == 2.0 and "focal" not in U.config_of(b)
assert refused(["--focal", "-1"])
print(f"focal ok (sync {parts['sync']:.4f} -> {foc['sync']:.4f}, rhythm {parts['rhythm']:.4f} -> {foc['rhythm']:.4f})")
# --follow-confidence K: each frame's follow loss weighed by its teacher's
# sharpness to the power K, normalised over the batch: frames whose
# teachers are alike weigh alike (the plain mean), others do not
with torch.no_grad():
    same = cs.batch([cs.index[0], cs.index[0]], 2, np.random.default_rng(3))
    for k in (1.0, 2.0):
        conf = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, confidence=k)[1]
        assert abs(conf["follow"] - parts["follow"]) > 1e-5, (k, parts, conf)
        assert all(conf[x] == parts[x] for x in ("sync", "null", "rhythm")), (k, parts, conf)
        f0 = U.losses(model, head, same, a.tau, 2.0, 1.0, 1.0)[1]["follow"]
        fk = U.losses(model, head, same, a.tau, 2.0, 1.0, 1.0, confidence=k)[1]["follow"]
        assert abs(f0 - fk) < 1e-5, (k, f0, fk)
    assert U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, confidence=0.0)[1] == parts
a = U.parse(["--unlabeled", "-", "--follow-confidence", "1"])
a.n_clips = 2
assert U.config_of(a)["follow_confidence"] == 1.0 and "follow_confidence" not in U.config_of(b)
assert refused(["--follow-confidence", "-1"])
print(f"follow-confidence ok (follow {parts['follow']:.4f} plain, {conf['follow']:.4f} weighed)")
# --readout-hidden H: the rhythm read-out as a hidden layer of H units; the
# map's model is the same, so null and sync do not change, rhythm and follow
# (the read-out's loss and teacher) do
a = U.parse(["--unlabeled", "-", "--steps", "10", "--readout-hidden", "8"])
a.n_clips = 2
mlp_model, mlp = U.make_model(a)
assert isinstance(mlp, torch.nn.Sequential) and mlp[0].out_features == 8 and mlp[2].out_features == 1
assert all(torch.equal(x, y) for x, y in zip(mlp_model.state_dict().values(),
                                              model.state_dict().values()))
with torch.no_grad():
    hid = U.losses(mlp_model, mlp, batch, a.tau, 2.0, 1.0, 1.0)[1]
for k in ("sync", "null", "acc"):
    assert hid[k] == parts[k], (k, parts, hid)
for k in ("rhythm", "follow"):
    assert np.isfinite(hid[k]) and abs(hid[k] - parts[k]) > 1e-5, (k, parts, hid)
assert U.config_of(a)["readout_hidden"] == 8 and "readout_hidden" not in U.config_of(b)
assert refused(["--readout-hidden", "-1"])
print(f"readout-hidden ok (rhythm {parts['rhythm']:.4f} linear, {hid['rhythm']:.4f} hidden)")
# --near-shifts K: K more windows from 0.3 to 1 s away, after the others
# (which are drawn as without them); negatives of sync and rhythm only
cs.near_min_ns = int(0.3e9)
fpts = cs.clips[c]["fpts"]
for g in cs.near_shifted(c, f, 40, np.random.default_rng(5)):
    assert 0.3e9 <= abs(int(fpts[g]) - int(fpts[f])) < 1e9, (f, g)
nb = cs.batch(items, 2, np.random.default_rng(3), near=2)
assert nb[3].shape[1] == batch[3].shape[1] + 2, (nb[3].shape, batch[3].shape)
assert all(torch.equal(x, y) for x, y in zip(nb[:3], batch[:3]))
assert torch.equal(nb[3][:, :batch[3].shape[1]], batch[3])
with torch.no_grad():
    nl = U.losses(model, head, nb, a.tau, 2.0, 1.0, 1.0, near=2)[1]
for k in ("null", "follow"):
    assert abs(nl[k] - parts[k]) < 1e-6, (k, parts, nl)
for k in ("sync", "rhythm"):
    assert nl[k] > parts[k], (k, parts, nl)
a = U.parse(["--unlabeled", "-", "--near-shifts", "3"])
a.n_clips = 2
assert U.config_of(a)["near_shifts"] == 3 and "near_shifts" not in U.config_of(b)
for bad in (["--near-shifts", "-1"], ["--near-shifts", "1", "--near-min-shift", "0"],
            ["--near-shifts", "1", "--near-min-shift", "1.5"]):
    assert refused(bad), bad
assert U.parse(["--unlabeled", "-", "--min-shift", "0.3"]).min_shift == 0.3   # no near ones: no check
print(f"near-shifts ok (sync {parts['sync']:.4f} -> {nl['sync']:.4f} with 2 nearer windows)")
# --located-weight W: hand-made read-outs of one frame, 3 windows (0 in
# sync), 2 patches: a "twin" that matches every window alike and a "source"
# that matches the in-sync window only.  The located loss is low when the
# in-sync read-out looks at the source, high when it looks at the twin, and
# its gradient moves it to the source.
twin_look = torch.tensor([[[6.0, 4.0], [6.0, 0.0], [6.0, 0.0]]], requires_grad=True)
src_look = torch.tensor([[[4.0, 6.0], [4.0, 0.0], [4.0, 0.0]]])
lt, ls = float(U.located_ce(twin_look)), float(U.located_ce(src_look))
assert ls < 0.05 and lt > 0.7, (ls, lt)                               # 0.010 and 0.806 by hand
U.located_ce(twin_look).backward()
gr = twin_look.grad[0, 0]
assert gr[1] < gr[0], gr         # descent raises the source more: the softmax moves to it
with torch.no_grad():
    lo = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, located=0.5)[1]
for k in ("sync", "null", "rhythm", "follow", "acc"):
    assert lo[k] == parts[k], (k, parts, lo)
assert np.isfinite(lo["located"]) and lo["located"] > 0 and "located" not in parts
a = U.parse(["--unlabeled", "-", "--located-weight", "0.5"])
a.n_clips = 2
assert U.config_of(a)["located_weight"] == 0.5 and "located_weight" not in U.config_of(b)
assert refused(["--located-weight", "-1"])
print(f"located ok (twin {lt:.3f}, source {ls:.3f}; on the clips {lo['located']:.4f})")
# --teacher-neighbourhood K: a second read-out of the rhythm term at
# neighbourhood K; head(term) is still the first, the map's losses do not
# change, the wide read-out gets its own rhythm loss and joins follow's
# teacher (to the power --teacher-weight: 0 leaves the teacher as it was)
wh = U.wide_readout(head, 64, 5)
assert wh.near is head and wh.neighbourhood == 5
term = torch.randn(2, 196, 64)
assert torch.equal(wh(term), head(term))
with torch.no_grad():
    wp = U.losses(model, wh, batch, a.tau, 2.0, 1.0, 1.0)[1]
    w0 = U.losses(model, wh, batch, a.tau, 2.0, 1.0, 1.0, teacher_weight=0.0)[1]
    wl = U.losses(model, wh, batch, a.tau, 2.0, 1.0, 1.0, (lhf, lhidx, lmel, has),
                  teacher_weight=1.0)[1]
assert model.neighbourhood == 1, "the wide read-out left the model at its neighbourhood"
for k in ("sync", "null", "rhythm", "acc"):
    assert wp[k] == parts[k], (k, parts, wp)
assert abs(w0["follow"] - parts["follow"]) < 1e-5, (parts, w0)
assert abs(wp["follow"] - parts["follow"]) > 1e-4, (parts, wp)
assert np.isfinite(wp["rhythm_wide"]) and wp["rhythm_wide"] > 0 and "rhythm_wide" not in parts
assert abs(wl["follow"] - both) > 1e-4 and np.isfinite(wl["follow"]), (both, wl)
# the teacher multiplies the two read-outs: where they disagree it lies
# between them, and the wide one decides between two patches the near one
# finds alike
with torch.no_grad():
    wh.wide.weight.copy_(head.weight)
    wh.wide.bias.copy_(head.bias)
    mask = torch.zeros((2, 100), dtype=torch.bool)
    near_p = U.readout(model, head, batch[1], batch[2], batch[3])
    prod = U.readout(model, wh, batch[1], batch[2], batch[3], teacher_weight=1.0)
    with U.at_neighbourhood(model, 5):
        hist5 = U.T.history_rows(model, batch[1], batch[2], torch.float32)
    assert model.neighbourhood == 1
    wide_p = torch.softmax(head(model.rhythm_term(batch[3][:, 0], mask, hist5, batch[2] < 0))[..., 0], -1)
    want = near_p * wide_p
    want = want / want.sum(-1, keepdim=True)
    assert torch.allclose(prod, want, atol=1e-6), float((prod - want).abs().max())
    assert torch.allclose(U.readout(model, wh, batch[1], batch[2], batch[3], teacher_weight=0.0),
                          near_p, atol=1e-6)
# a checkpoint's read-out without the wide one loads into .near
wt = U.make_model(U.parse(["--unlabeled", "-", "--teacher-neighbourhood", "5"]))[1]
wt.load_state_dict(head.state_dict())
assert torch.equal(wt.near.weight, head.weight) and wt.wide.weight.shape == head.weight.shape
a = U.parse(["--unlabeled", "-", "--teacher-neighbourhood", "5", "--teacher-weight", "2", "--steps", "100"])
a.n_clips = 2
assert U.config_of(a)["teacher_neighbourhood"] == 5 and U.config_of(a)["teacher_weight"] == 2.0
assert "teacher_neighbourhood" not in U.config_of(b)
assert [U.teacher_weight_at(a, s) for s in (0, 5, 25, 99)] == [0.0, 0.4, 2.0, 2.0]
for bad in (["--teacher-neighbourhood", "4"], ["--teacher-neighbourhood", "-3"],
            ["--teacher-neighbourhood", "5", "--teacher-weight", "-1"]):
    assert refused(bad), bad
print(f"teacher-neighbourhood ok (follow {parts['follow']:.4f} -> {wp['follow']:.4f}, "
      f"wide rhythm {wp['rhythm_wide']:.4f})")
# --teacher-peaks K: the teacher kept at its local maxima over K x K patches
# (1e-3 of it elsewhere), renormalised.  A hand-made teacher on a 4 x 4 grid:
# a source spread over a ring (0.20 at its patch, 0.05 on each neighbour)
# and a second source (0.10) three patches away; at K 3 the ring goes, the
# two peaks keep their ratio, and the map's follow loss changes
t = torch.full((1, 16), 1e-4)
t[0, 5] = 0.20
for i in (0, 1, 2, 4, 6, 8, 9, 10):
    t[0, i] = 0.05
t[0, 15] = 0.10
t = t / t.sum()
pk = U.local_peaks(t, 3)
assert abs(float(pk.sum()) - 1.0) < 1e-6
assert float(pk[0, 5] + pk[0, 15]) > 0.995, pk
assert abs(float(pk[0, 5] / pk[0, 15]) - float(t[0, 5] / t[0, 15])) < 1e-4
assert abs(float(pk[0, 1] / pk[0, 5]) - 1e-3 * float(t[0, 1] / t[0, 5])) < 1e-6
assert torch.allclose(U.local_peaks(torch.full((2, 16), 1 / 16), 3), torch.full((2, 16), 1 / 16))
half = U.local_peaks(t, 3, 0.5)
assert torch.allclose(half, 0.5 * pk + 0.5 * t) and abs(float(half.sum()) - 1.0) < 1e-6
with torch.no_grad():
    pp = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, peaks=3)[1]
for k in ("sync", "null", "rhythm", "acc"):
    assert pp[k] == parts[k], (k, parts, pp)
assert np.isfinite(pp["follow"]) and abs(pp["follow"] - parts["follow"]) > 1e-4, (parts, pp)
a = U.parse(["--unlabeled", "-", "--teacher-peaks", "3"])
a.n_clips = 2
assert U.config_of(a)["teacher_peaks"] == 3 and "teacher_peaks" not in U.config_of(b)
assert "teacher_peaks_share" not in U.config_of(a)
a = U.parse(["--unlabeled", "-", "--teacher-peaks", "3", "--teacher-peaks-share", "0.5"])
a.n_clips = 2
assert U.config_of(a)["teacher_peaks_share"] == 0.5
with torch.no_grad():
    ph = U.losses(model, head, batch, a.tau, 2.0, 1.0, 1.0, peaks=3, peaks_share=0.5)[1]
assert np.isfinite(ph["follow"]) and min(abs(ph["follow"] - parts["follow"]),
                                          abs(ph["follow"] - pp["follow"])) > 1e-4, (parts, ph, pp)
for bad in (["--teacher-peaks", "1"], ["--teacher-peaks", "4"], ["--teacher-peaks", "-3"],
            ["--teacher-peaks", "3", "--teacher-peaks-share", "0"],
            ["--teacher-peaks", "3", "--teacher-peaks-share", "1.5"]):
    assert refused(bad), bad
# refused values of --head-warmup and --export-neighbourhood (their runs below)
for bad in (["--head-warmup", "-1"], ["--head-warmup", "700"],
            ["--export-neighbourhood", "2"], ["--export-neighbourhood", "0"],
            ["--rhythm-neighbourhood", "5", "--rhythm-dim", "16", "--rhythm-neighbourhood-from", "8",
             "--export-neighbourhood", "1"]):
    assert refused(bad), bad
print(f"teacher-peaks ok (follow {parts['follow']:.4f} -> {pp['follow']:.4f})")
PY
# --head-warmup N: from a weights file (no read-out in it) the first N steps
# train the read-out only (the model's tensors as loaded, follow off); the
# model trains from step N + 1, the teacher then at its full weight
/usr/bin/python3 - "$src/model" "$tmp/work/data" "$src/models/sounding-objects-unlabeled.safetensors" "$tmp/warm" <<'PY'
import glob, os, sys
import torch
sys.path.insert(0, sys.argv[1])
import train_unlabeled as U
cs = U.ClipSet(sorted(glob.glob(sys.argv[2] + "/unl-*.npz")), 1.0)
os.makedirs(sys.argv[4])
argv = ["--unlabeled", "-", "--init", sys.argv[3], "--work", sys.argv[4], "--steps", "3",
        "--head-warmup", "2", "--batch", "2", "--shifts", "2", "--threads", "1",
        "--teacher-neighbourhood", "5", "--follow-future", "1", "--log-every", "1"]
a = U.parse(argv)
a.n_clips = 2
nw = U.parse(argv[:8] + argv[10:])
nw.n_clips = 2
assert U.config_of(a)["head_warmup"] == 2 and "head_warmup" not in U.config_of(nw)
assert [U.warming_up(a, s) for s in (0, 1, 2)] == [True, True, False]
a40 = U.parse(argv[:7] + ["40", "--head-warmup", "4"] + argv[10:])
assert [U.teacher_weight_at(a40, s) for s in (2, 4)] == [0.2, 1.0], a40   # 0.4 at 4 without
init = [p.detach().clone() for p in U.make_model(a)[0].parameters()]
snaps, orig = [], torch.optim.AdamW.step
def step(self, *args, **kw):
    out = orig(self, *args, **kw)
    snaps.append([p.detach().clone() for p in self.param_groups[0]["params"]])
    return out
torch.optim.AdamW.step = step
model, head, n = U.train(a, cs, None, [])
nm = len(init)
assert n == 3 and len(snaps) == 3, (n, len(snaps))
for k in (0, 1):
    assert all(torch.equal(x, y) for x, y in zip(snaps[k][:nm], init)), f"the model moved at step {k + 1}"
    assert any(not torch.equal(x, y) for x, y in zip(snaps[k][nm:], (snaps[k - 1][nm:] if k else
               [p.detach() for p in U.make_model(a)[1].parameters()]))), f"the read-out did not train at step {k + 1}"
assert any(not torch.equal(x, y) for x, y in zip(snaps[2][:nm], init)), "the model did not train after the warm-up"
print("head-warmup ok")
PY
# --export-neighbourhood K: trained and validated (which picks the
# checkpoint) at --rhythm-neighbourhood, exported at K; not a training
# setting, so the command of a finished run with another K resumes at its
# end and only exports again
/usr/bin/python3 - "$src/model" "$tmp/work/data" "$tmp/exnb" <<'PY'
import glob, json, os, struct, sys
import torch
sys.path.insert(0, sys.argv[1])
import train_unlabeled as U
cs = U.ClipSet(sorted(glob.glob(sys.argv[2] + "/unl-*.npz")), 1.0)
os.makedirs(sys.argv[3])
argv = ["--unlabeled", "-", "--work", sys.argv[3], "--steps", "2", "--batch", "2",
        "--shifts", "2", "--threads", "1", "--log-every", "1", "--val-every", "1",
        "--rhythm-neighbourhood", "5", "--export-neighbourhood", "1",
        "--out", os.path.join(sys.argv[3], "m.safetensors")]
a = U.parse(argv)
a.n_clips, a.n_val = 2, 2
plain = U.parse(argv[:-4] + argv[-2:])
plain.n_clips, plain.n_val = 2, 2
assert plain.export_neighbourhood == 5 and U.config_of(plain) == U.config_of(a)
seen, orig_validate, orig_losses = [], U.validate, U.losses
def validate(model, *args, **kw):
    seen.append(("val", model.neighbourhood))
    return orig_validate(model, *args, **kw)
def losses(model, *args, **kw):
    seen.append(("train", model.neighbourhood))
    return orig_losses(model, *args, **kw)
U.validate, U.losses = validate, losses
model, head, n = U.train(a, cs, cs, cs.index[:4])
assert ("train", 5) in seen and ("val", 5) in seen and ("train", 1) not in seen \
    and ("val", 1) not in seen, seen
assert model.neighbourhood == 1, model.neighbourhood
# the finished run's command at the trained neighbourhood: no step trained again
seen.clear()
again, _, n2 = U.train(plain, cs, cs, cs.index[:4])
assert n2 == n and not any(k == "train" for k, _ in seen) and again.neighbourhood == 5, seen
assert all(torch.equal(x, y) for x, y in zip(again.state_dict().values(),
                                             model.state_dict().values()))
U.export(a, model, n, 0.05, 0.6, dict(sync_accuracy=0.5, sync_auc=0.5, map_on_readout=0.5))
with open(a.out, "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert meta.get("rhythm_neighbourhood", "1") == "1", meta
assert "trained at rhythm neighbourhood 5, exported (and its threshold picked) at 1" in meta["training_losses"], meta
print("export-neighbourhood ok")
PY
# the same command again resumes from the checkpoint: no step redone
"${train[@]}" --steps 4 | tee "$tmp/run2.log"
grep -q "resuming from .* at step 4" "$tmp/run2.log"
if grep -q "train: step 1/4" "$tmp/run2.log"; then
  echo "run-train-unlabeled: the second run trained again instead of resuming"; exit 1
fi
/usr/bin/python3 - "$tmp/model.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
for key, want in (("format", "avfusion-v2"), ("training_truth", "none"),
                  ("trained_by", "model/train.py --unlabeled"), ("training_clips", "2"),
                  ("training_av_jitter_ms", "30"),
                  ("training_losses", "sync (tau 0.2), null 2, rhythm 0.5, follow 0.5 then 1 from step 2")):
    if meta.get(key) != want:
        sys.exit(f"metadata {key} is {meta.get(key)!r}, expected {want!r}")
if meta.get("rhythm_neighbourhood", "1") != "1":
    sys.exit(f"rhythm_neighbourhood {meta['rhythm_neighbourhood']}: --unlabeled trains each patch's own (1)")
if not meta.get("visible_threshold_method", "").startswith("truth-free"):
    sys.exit(f"visible_threshold_method is {meta.get('visible_threshold_method')!r}")
t = float(meta["visible_threshold"])
if not 0 < t <= 1:
    sys.exit(f"visible_threshold {t} out of (0, 1]")
# the truth-free validation, with how often the map rests on the read-out's patch
val = json.loads(meta["validation"])
if set(val) != {"sync_accuracy", "sync_auc", "map_on_readout"} or not 0 <= val["map_on_readout"] <= 1:
    sys.exit(f"validation metadata {val}")
print("metadata ok:", {k: meta[k] for k in ("training_truth", "visible_threshold")})
PY
# the exported weights play one of the clips through the elements
gst-launch-1.0 -q filesrc location="$tmp/clips/holiday-2.webm" ! decodebin name=d \
  d. ! queue ! audioconvert ! audioresample ! avspectrogram ! att.audio_sink \
  d. ! queue ! videoconvert ! videoscale ! avpatchembed weights="$tmp/model.safetensors" ! att.video_sink \
  avattention name=att ! avtensorsink location="$tmp/out.npz"
/usr/bin/python3 -c "import numpy as np, sys; z = np.load(sys.argv[1]); assert z['data'].shape[0] == 100, z['data'].shape; print('plugin ran the exported weights:', z['data'].shape)" "$tmp/out.npz"
# the shipped model trained without truth plays the same clip, and says so
shipped="$src/models/sounding-objects-unlabeled.safetensors"
/usr/bin/python3 -c "
import json, struct, sys
f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]
m = json.loads(f.read(n))['__metadata__']
assert m.get('training_truth') == 'none' and m.get('format') == 'avfusion-v2', m
assert m.get('visible_threshold_method', '').startswith('truth-free'), m" "$shipped"
gst-launch-1.0 -q filesrc location="$tmp/clips/holiday-1.mp4" ! decodebin name=d \
  d. ! queue ! audioconvert ! audioresample ! avspectrogram ! att.audio_sink \
  d. ! queue ! videoconvert ! videoscale ! avpatchembed weights="$shipped" ! att.video_sink \
  avattention name=att ! avtensorsink location="$tmp/shipped.npz"
/usr/bin/python3 -c "import numpy as np, sys; z = np.load(sys.argv[1]); assert z['data'].shape[0] >= 98, z['data'].shape; print('the shipped unlabelled model ran:', z['data'].shape)" "$tmp/shipped.npz"
echo "run-train-unlabeled: ok"
