#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""model/lookalike_ceiling.py, the perfect rhythm feature's look-alike
pointing, on hand-made signals and on rendered world 2 scenes:

* the log energy per bin of a signal whose loudness is known, with and
  without a delay;
* the pick: a sound that is twin A's envelope picks A and not B; two flat
  envelopes are a coin toss (0.5);
* on a rendered scene, the frames it counts are exactly the truth's steady
  look-alike frames; with the sound in step it picks the source on every
  frame of a blue and a cyan pair (design seeds, 6 s), and with the sound
  300 ms late, which breaks the timing, it misses many of them.

No pipeline, no model: a few seconds.  Usage: test_lookalike_ceiling.py
[TEST-NAME ...]; exit 77 (skipped) where /usr/bin/python3 has no numpy.
"""

import os
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: no numpy")
    sys.exit(77)

MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model")
sys.path.insert(0, MODEL)
import lookalike_ceiling as L  # noqa: E402
import soworld  # noqa: E402
from py_test_runner import run_tests  # noqa: E402


def scene(seed):
    return soworld.Scene(seed, 320, 240, 25, 6.0, 16000, world=2)


def test_log_energy():
    sr = 1000
    x = np.zeros(200)
    x[40:80] = 2.0                       # bin 1 of 40 ms (40 samples) at amplitude 2
    le, hop = L.log_energy(x, sr, 40)
    assert hop == 40 and len(le) == 5, (hop, len(le))
    assert abs(le[1] - np.log(4.0 + 1e-10)) < 1e-9, le
    assert le[0] < -20 and le[2] < -20, le
    le, _ = L.log_energy(x, sr, 40, delay_ms=40)     # 40 ms late: now bin 2
    assert abs(le[2] - np.log(4.0 + 1e-10)) < 1e-9 and le[1] < -20, le


def test_pick():
    t = np.arange(25)
    a = (np.sin(t * 0.9) > 0).astype(float)
    b = (np.sin(t * 0.5 + 1.0) > 0).astype(float)
    energy = np.log(1e-3 + a)
    assert L.pick_score(energy, a, b) == 1.0
    assert L.pick_score(energy, b, a) == 0.0
    assert L.pick_score(energy, np.ones(25), np.zeros(25)) == 0.5
    assert L.pearson(energy, np.ones(25)) is None


def test_counts_match_truth():
    sc = scene(50004)
    r = L.scene_ceiling(sc)
    truth = [sc.truth(i) for i in range(sc.n_frames())]
    look = sum(1 for t in truth if t["steady"] and t["lookalike"])
    point = sum(1 for t in truth if t["steady"] and t["sources"])
    assert r["kind"] == "blue", r
    assert look > 50 and r["lookalike"] == look, (r, look)
    assert r["pointing"] == point, (r, point)
    assert abs(r["picked"] + r["wrong"] - r["lookalike"]) < 1e-9, r


def test_in_step_and_late():
    for seed in (50004, 50006):
        sc = scene(seed)
        r = L.scene_ceiling(sc)
        assert r["picked"] == r["lookalike"], (seed, r)
        late = L.scene_ceiling(sc, delay_ms=300)
        assert late["picked"] < 0.85 * late["lookalike"], (seed, late)


def test_frames_reading():
    # read as a video shows it (the frame that shows each bin centre): the
    # envelope is then a step function of 40 ms frames; still in step, so
    # most frames of the cyan pair are picked
    r = L.scene_ceiling(scene(50006), video="frames")
    assert r["picked"] >= 0.9 * r["lookalike"], r


def test_command_line():
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        rc = L.main(["--first-seed", "50004", "--scenes", "1", "--duration", "6",
                     "--configs", "webm-4:3", "--json", out])
        assert rc == 0
        j = json.load(open(out))
        assert j["lookalike_pointing"] == 1.0 and j["lookalike_frames"] == 83 and j["scenes"][0]["seed"] == 50004, j


if __name__ == "__main__":
    sys.exit(run_tests(globals(), sys.argv[1:]))
