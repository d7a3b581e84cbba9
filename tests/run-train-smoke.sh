#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Smoke run of the training script (model/train.py) so that it cannot rot:
# two tiny scenes of the version 2 world rendered, encoded and decoded
# through GStreamer, a few optimiser steps of avfusion-v2 (the default),
# a stop and a resume from the checkpoint, the threshold and the export,
# with --av-jitter (each sample's sound moved against its picture), whose
# shift of the audio window is checked on a prepared scene, and
# --twin-weight's loss on a hand-made map.
# The exported file must load in the real elements (a pipeline with
# weights=) and record how it was made in its metadata.
#   run-train-smoke.sh PLUGIN_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
plugin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
train=(/usr/bin/python3 "$src/model/train.py" --work "$tmp/work" --plugin-path "$plugin"
       --scenes 2 --val-scenes 1 --duration 4 --batch 4 --threads 1 --jobs 1
       --log-every 1 --checkpoint-every 2 --av-jitter 30 --out "$tmp/model.safetensors")
# first run: 2 of 4 steps (a smaller --steps changes the settings, so stop
# it by signal instead: run 4 steps once, then check the resume path with 6)
"${train[@]}" --steps 4 | tee "$tmp/run1.log"
grep -q "train: step 4/4" "$tmp/run1.log"
grep -q "export: wrote" "$tmp/run1.log"
test -s "$tmp/model.safetensors"
test -s "$tmp/work/checkpoint.pt"
# the same command again resumes: no scene is prepared again, no step redone
"${train[@]}" --steps 4 | tee "$tmp/run2.log"
grep -q "prepare: 3 of 3 scenes ready, making 0" "$tmp/run2.log"
grep -q "resuming from .* at step 4" "$tmp/run2.log"
if grep -q "train: step 1/4" "$tmp/run2.log"; then
  echo "run-train-smoke: the second run trained again instead of resuming"; exit 1
fi
# metadata: how it was made
/usr/bin/python3 - "$tmp/model.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
for key, want in (("format", "avfusion-v2"), ("trained_by", "model/train.py"),
                  ("training_seed", "1"), ("training_steps", "4"),
                  ("rhythm_bin_slots", "4"), ("rhythm_lag_min", "-1"),
                  ("rhythm_neighbourhood", "5"), ("training_av_jitter_ms", "30")):
    if meta.get(key) != want:
        sys.exit(f"metadata {key} is {meta.get(key)!r}, expected {want!r}")
if not meta.get("world", "").startswith("sounding-objects-v2"):
    sys.exit(f"metadata world is {meta.get('world')!r}, expected the version 2 world")
t = float(meta["visible_threshold"])
if not 0 < t <= 1:
    sys.exit(f"visible_threshold {t} out of (0, 1]")
print("metadata ok:", {k: meta[k] for k in ("trained_by", "training_seed", "training_steps", "visible_threshold")})
PY
# --av-jitter's offsets: the window's log-mel slots move by the offset
# (sound late: the window holds earlier slots), the picture does not
/usr/bin/python3 - "$src/model" "$tmp/work/data" <<'PY'
import glob, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import train
data = train.SceneSet(sorted(glob.glob(sys.argv[2] + "/scene*.npz"))[:1], 4.0, rhythm=True)
d = data.scenes[0]
# a frame whose window is full and has 3 slots of the clip on either side
s, f = next((s, f) for s, f in data.index
            if (d["widx"][f] >= 3).all() and d["widx"][f][-1] + 3 < len(d["mel"]))
base = data.batch([(s, f)])
for o in (3, -3):
    moved = data.batch([(s, f)], av_offset=[o])
    m0, m1 = base[1][0].numpy(), moved[1][0].numpy()
    same = np.array_equal(m1[o:], m0[:-o]) if o > 0 else np.array_equal(m1[:o], m0[-o:])
    assert same, f"offset {o}: the window's slots did not move by {o}"
    assert not np.array_equal(m1, m0), f"offset {o}: the window did not change"
    assert np.array_equal(moved[0].numpy(), base[0].numpy()), "the picture moved"
print("av-jitter moves the sound and not the picture")
# --twin-weight's loss: -log(m_s / (m_s + m_t)) on steady one-source
# look-alike frames only, the twin being the sounding kind outside the box
import math, torch
q = torch.full((2, 6), 0.05)
q[:, 0], q[:, 1], q[:, 2] = 0.45, 0.15, 0.2        # source 0.6, twin 0.2
tgt = torch.tensor([[1.0, 1, 0, 0, 0, 0]] * 2)
pk = torch.tensor([[2, 2, 2, 6, 4, 6]] * 2)        # kind 2 sounds; patch 2 is its twin
kinds = torch.zeros(2, 6); kinds[:, 2] = 1
info = torch.tensor([[1.0, 0, 1, 0, 0, 0, 1], [1.0, 0, 1, 0, 0, 0, 0]])   # look-alike, not
l = float(train.twin_loss(q, tgt, pk, kinds, info, torch.ones(2)))
assert abs(l - -math.log(0.6 / 0.8)) < 1e-5, l
assert float(train.twin_loss(q, tgt, pk, kinds, info[1:], torch.ones(1))) == 0.0
print("twin loss", round(l, 4))
PY
# the exported weights run in the plugin
GST_PLUGIN_PATH="$plugin" gst-launch-1.0 -q \
  audiotestsrc num-buffers=20 ! audioconvert ! audioresample ! avspectrogram ! queue ! att.audio_sink \
  videotestsrc num-buffers=5 ! videoconvert ! videoscale ! video/x-raw,width=224,height=224 ! avpatchembed weights="$tmp/model.safetensors" ! queue ! att.video_sink \
  avattention name=att weights="$tmp/model.safetensors" ! avtensorsink location="$tmp/out.npz"
/usr/bin/python3 -c "import numpy as np, sys; z = np.load(sys.argv[1]); assert z['data'].shape[0] == 5, z['data'].shape; print('plugin ran the exported weights:', z['data'].shape)" "$tmp/out.npz"
echo "run-train-smoke: ok"
