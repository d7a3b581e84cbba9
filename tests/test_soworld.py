#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The sounding-objects renderer (model/soworld.py), both world versions.

* world 1 renders what it rendered before version 2 existed: frames, audio
  and truth of five scenes against hashes recorded from the renderer before
  the change;
* a scene is the same every time it is drawn from its seed;
* world 2 (sounding-objects-2.md): the envelopes (interval lengths, ramps),
  a source's sound is the noise alone in its off intervals and loud in its
  on intervals, an object swells and brightens with e(t) and stays in its
  cell, the lookalike truth, the share of scenes with a look-alike pair, the
  truth file of both versions read back, the command line's --world.

Runs in a few seconds.  Usage: test_soworld.py [TEST-NAME ...]; exit 77
(skipped) where /usr/bin/python3 has no numpy.
"""

import hashlib
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: no numpy")
    sys.exit(77)

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model")
sys.path.insert(0, TOOLS)
import soworld  # noqa: E402
from py_test_runner import run_tests  # noqa: E402

# World 1, recorded with model/soworld.py as it was before world 2 (commit
# 70bd4c3): (seed, W, H, fps, duration, rate, variants) -> sha256 of frames
# 0, n/3 and n-1 (their bytes one after the other), of audio() (float32
# bytes) and of truth_tsv(), and the sums of audio() over 8 equal blocks.
GOLDEN = [
    ((1, 320, 240, 15, 6.0, 16000, True),
     "74c1f847bf82319904ba4ab5136250cc408eb2a912425b166ca4e76b736ae080",
     "1c1af0436eea2aa92cac4331bbdb98a0c518f279b70b4a8e0e1d03ed3617f6c3",
     "5bfb9127afc6e209e6cf8cfcffb0c6e43b7df072ad26299a38b0be79cffd8f32",
     [-15.5313, 10.9153, -11.5725, -14.3713, 4.598, 36.9222, 55.325, 32.1803]),
    ((7, 256, 144, 25, 5.0, 48000, True),
     "806db10a5ccd3f93bc1938566c12b03b3cd92804b5eb1001ff237cb363d0e709",
     "1dd47f76c56f763fddb0198072a040ac335e6e3df0d274598af34cc4b9c0ebd8",
     "981c7d68eb377b23366838ff1ac6867afa8d24955ee1afc5835b1d415e85c6da",
     [-13.3071, -33.433, -34.4271, 19.1147, 52.5623, 33.3284, -22.2424, 26.5368]),
    ((11, 200, 200, 30000 / 1001, 4.0, 44100, False),
     "9aa9428ac5725a3da180b65141b028027a511c4730b57e43c50c1febab96208d",
     "d07016c98903bcf7067b97ef824b824b0a89ac08bb876f98a520a20624ae46e8",
     "36fadf46cb4973d6ca959ec453625fb10f1e6f722fb5ba879ab9b03d61132eab",
     [17.7374, -14.0159, 20.0651, 8.9812, 28.0705, 13.7389, -30.5446, 3.9293]),
    ((90008, 160, 90, 25, 8.0, 16000, True),
     "5aabaee11ebe2ec6520caf186daa5dc39d120080f62637b4c1cbb9e694da6d61",
     "a4a99f064d5b879380083b875b7d79b5d480716e1d740d0c256d6da55d2d8f87",
     "54605904cd4ef86121fcf389c1d76d249d868edc0d43f0b2b920403983ff244f",
     [0.4067, -6.6257, -15.7124, -11.4736, -5.9314, -12.1433, -3.6117, 0.9799]),
    ((42, 96, 64, 10, 10.0, 8000, True),
     "bd269e53e2fd82b5245da649b20aec0405f74179b8a97197b434a5dae8345624",
     "3908df388fdfd56db11404fa967e5725c4717ebcf2d33a3b46bfcbbb192655e1",
     "930c54e5cc7b32310764addccc91450ebf439cd41c734fcd45e0ebba6c28e3e7",
     [6.8187, 3.2916, 0.2874, -0.8028, -0.1505, -3.6913, 1.9161, -2.5647]),
]


def sha(b):
    return hashlib.sha256(b).hexdigest()


def frames_hash(sc, which):
    h = hashlib.sha256()
    for i in which:
        h.update(sc.frame(i).tobytes())
    return h.hexdigest()


def numpy_may_round_sin_differently():
    """NumPy's AVX-512 (SVML) sin and cos may differ from the scalar libm's
    in the last bit, which changes the audio's bytes (not the frames or the
    truth).  The hashes were recorded without AVX-512."""
    try:
        from numpy.core._multiarray_umath import __cpu_features__ as f
    except ImportError:
        return False
    return bool(f.get("AVX512F")) or bool(f.get("AVX512_SKX"))


# -- world 1 ----------------------------------------------------------------

def test_world1_unchanged():
    exact_audio = not numpy_may_round_sin_differently()
    for (case, h_frames, h_audio, h_truth, sums) in GOLDEN:
        seed, W, H, fps, d, sr, var = case
        for kw in ({}, dict(world=1)):
            sc = soworld.Scene(seed, W, H, fps, d, sr, variants=var, **kw)
            assert sc.world == 1 and sc.world_name == "sounding-objects-v1"
            n = sc.n_frames()
            assert frames_hash(sc, (0, n // 3, n - 1)) == h_frames, f"{case}: frames changed"
            assert sha(sc.truth_tsv().encode()) == h_truth, f"{case}: truth changed"
            a = sc.audio()
            got = [float(b.sum()) for b in np.array_split(a.astype(np.float64), 8)]
            assert np.allclose(got, sums, rtol=0, atol=2e-4), f"{case}: audio changed: {got}"
            if exact_audio:
                assert sha(a.tobytes()) == h_audio, f"{case}: audio bytes changed"
    if not exact_audio:
        print("  (AVX-512 NumPy: world 1 audio compared by its block sums only)")


def test_world1_truth_file_unchanged_format():
    sc = soworld.Scene(3, 160, 90, 10, 3.0, 8000)
    lines = sc.truth_tsv().splitlines()
    assert lines[0].startswith("# sounding-objects-v1 truth  width=160 height=90 fps=10/1 seed=3")
    assert "world=" not in lines[0]
    assert lines[2] == "frame\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes"
    assert all(len(l.split("\t")) == 7 for l in lines[3:])


# -- both -------------------------------------------------------------------

def test_deterministic():
    for world in (1, 2):
        for seed in (5, 321):
            a = soworld.Scene(seed, 192, 108, 12, 4.0, 8000, world=world)
            b = soworld.Scene(seed, 192, 108, 12, 4.0, 8000, world=world)
            n = a.n_frames()
            for i in (0, 7, n // 2, n - 1):
                assert np.array_equal(a.frame(i), b.frame(i)), (world, seed, i)
            assert np.array_equal(a.audio(), b.audio()), (world, seed)
            assert a.audio().tobytes() == a.audio().tobytes()     # no state kept
            assert a.truth_tsv() == b.truth_tsv(), (world, seed)
    # world 2 differs from world 1 for the same seed
    a = soworld.Scene(5, 192, 108, 12, 4.0, 8000, world=1)
    b = soworld.Scene(5, 192, 108, 12, 4.0, 8000, world=2)
    assert not np.array_equal(a.audio(), b.audio())


def test_world_argument():
    try:
        soworld.Scene(1, 64, 64, 10, 1.0, 8000, world=3)
    except ValueError:
        pass
    else:
        raise AssertionError("world=3 accepted")
    assert soworld.Scene(1, 64, 64, 10, 1.0, 8000, world=2).world_name == "sounding-objects-v2"


# -- world 2: rhythm ---------------------------------------------------------

def test_envelope():
    on_lo, on_hi = soworld.ENV_ON_S
    off_lo, off_hi = soworld.ENV_OFF_S
    starts_on = 0
    for s in range(40):
        env = soworld.Envelope(np.random.default_rng([s, 1]), 6.0)
        iv = env.on_intervals()
        assert iv and iv[-1][1] > 0
        starts_on += iv[0][0] <= 0.0 < iv[0][1]
        for k, (a, b) in enumerate(iv):
            assert on_lo - 1e-12 <= b - a <= on_hi + 1e-12, (s, k, a, b)
            if k:
                gap = a - iv[k - 1][1]
                assert off_lo - 1e-12 <= gap <= off_hi + 1e-12, (s, k, gap)
        assert iv[-1][1] >= 6.0 or 6.0 - iv[-1][1] <= off_hi
        t = np.linspace(0, 6.0, 6001)
        e = env(t)
        assert e.min() >= 0.0 and e.max() <= 1.0
        assert np.allclose(e[::500], [env(float(x)) for x in t[::500]])      # scalar = array
        inside = np.zeros(len(t), bool)
        for (a, b) in iv:
            inside |= (t >= a) & (t < b)
            mid = 0.5 * (a + b)
            if mid > 0:
                assert env(mid) == 1.0
            if a + 0.010 > 0:
                assert abs(env(a + 0.010) - 0.5) < 1e-9      # half-way up its 20 ms ramp
                assert abs(env(b - 0.010) - 0.5) < 1e-9
            if a + 0.025 > 0:
                assert env(a + 0.025) == 1.0 and env(b - 0.025) == 1.0
        assert np.all(e[~inside] == 0.0)
    assert 8 <= starts_on <= 32, starts_on          # on at 0 with p 0.5


def test_envelopes_change_nothing_else():
    """Envelopes come from their own streams: world 2's layout and timeline
    do not depend on the clip's envelopes; an object's envelope does not
    depend on the duration (a longer clip extends it)."""
    a = soworld.Scene(17, 320, 180, 10, 6.0, 8000, world=2)
    b = soworld.Scene(17, 320, 180, 10, 12.0, 8000, world=2)
    for oa, ob in zip(a.objects, b.objects):
        t = np.linspace(0, 5.9, 300)
        assert np.array_equal(oa["envelope"](t), ob["envelope"](t))
        assert oa["kind"] == ob["kind"] and oa["motion"] == ob["motion"]


def pick_pair_scene(min_snr_db=10.0):
    """A world-2 scene with a look-alike pair, a fair SNR and an on-screen
    one-source segment of a pair member at least 1.5 s long."""
    for seed in range(1, 500):
        sc = soworld.Scene(seed, 320, 180, 10, 12.0, 16000, world=2)
        if sc.pair is None or sc.snr_db < min_snr_db:
            continue
        for (t0, t1, what, p) in sc.timeline:
            if what == "onscreen" and len(p["sources"]) == 1 and p["sources"][0] in sc.pair \
                    and t1 - t0 >= 1.5:
                return sc, (t0, t1, p)
    raise AssertionError("no seed with a pair at a fair SNR")


def short_rms(x, sr, t, half=0.008):
    a, b = int(round((t - half) * sr)), int(round((t + half) * sr))
    return float(np.sqrt(np.mean(x[a:b].astype(np.float64) ** 2)))


def test_sound_follows_envelope():
    sc, (t0, t1, p) = pick_pair_scene()
    x = sc.audio()
    sr = sc.sr
    noise = sc.noise_rms()
    env = sc.objects[p["sources"][0]]["envelope"]
    off_rms, on_rms = [], []
    for (a, b), (c, _d) in zip(env.on_intervals(), env.on_intervals()[1:]):
        # the off interval (b, c) and the on interval (a, b), well inside the segment
        if b - 0.02 > t0 + 0.05 and c + 0.02 < t1 - 0.05 and c - b >= 0.05:
            off_rms.append(short_rms(x, sr, 0.5 * (b + c), min(0.008, 0.5 * (c - b) - 0.002)))
        if a > t0 + 0.05 and b < t1 - 0.05:
            on_rms.append(short_rms(x, sr, 0.5 * (a + b), 0.015))
    assert len(off_rms) >= 3 and len(on_rms) >= 3, (len(off_rms), len(on_rms))
    # off: the background noise alone (16 ms windows of Gaussian noise)
    assert 0.6 * noise < np.median(off_rms) < 1.4 * noise, (np.median(off_rms), noise)
    assert max(off_rms) < 2.0 * noise, (max(off_rms), noise)
    # on: the source at its gain, far above the noise
    g = p["gains"][0]
    assert np.median(on_rms) > 0.5 * g and np.median(on_rms) > 2.5 * noise, \
        (np.median(on_rms), g, noise)


def test_offscreen_sound_gated():
    for seed in range(1, 300):
        sc = soworld.Scene(seed, 160, 90, 10, 20.0, 16000, world=2)
        if sc.snr_db < 10:
            continue
        segs = [(t0, t1, p) for (t0, t1, w, p) in sc.timeline if w == "offscreen" and t1 - t0 > 1.0]
        if segs:
            break
    else:
        raise AssertionError("no off-screen segment found")
    t0, t1, p = segs[0]
    gate = p["gate"]
    assert all(gate is not o["envelope"] for o in sc.objects)
    x = sc.audio()
    noise = sc.noise_rms()
    ivs = gate.on_intervals()
    offs = [short_rms(x, sc.sr, 0.5 * (b + c), 0.008) for (a, b), (c, d) in zip(ivs, ivs[1:])
            if b > t0 + 0.05 and c < t1 - 0.05 and c - b >= 0.02]
    ons = [short_rms(x, sc.sr, 0.5 * (a + b), 0.015) for (a, b) in ivs
           if a > t0 + 0.05 and b < t1 - 0.05]
    assert offs and ons
    assert np.median(offs) < 1.4 * noise and np.median(ons) > 2.5 * noise, \
        (np.median(offs), np.median(ons), noise)


def test_swelling():
    """Box and drawn pixels grow with e, colour brightens with it (no pixel
    noise over the objects with variants=False), and the largest box stays in
    its cell."""
    sc = soworld.Scene(23, 480, 270, 25, 4.0, 8000, world=2, variants=False)
    assert not sc.noise_over_objects
    cw, ch = sc.W / 3.0, sc.H / 2.0
    n = sc.n_frames()
    checked_lo = checked_hi = 0
    for o in sc.objects:
        hw, hh = o["half"]
        for i in range(n):
            t = sc.frame_time(i)
            e = sc.envelope(o, t)
            x0, y0, x1, y1 = sc.box(o, t)
            assert abs((x1 - x0) - 2 * hw * (1 + 0.3 * e)) < 1e-9
            assert abs((y1 - y0) - 2 * hh * (1 + 0.3 * e)) < 1e-9
            col_i, row_i = int(o["cx"] // cw), int(o["cy"] // ch)
            assert x0 >= col_i * cw - 1e-6 and x1 <= (col_i + 1) * cw + 1e-6
            assert y0 >= row_i * ch - 1e-6 and y1 <= (row_i + 1) * ch + 1e-6
        # pixels: frames where e is 0 and 1
        es = sc.envelope(o, np.arange(n) / sc.fps)
        for want in (0.0, 1.0):
            idx = np.nonzero(es == want)[0]
            if not len(idx):
                continue
            i = int(idx[len(idx) // 2])
            img = sc.frame(i)
            colour = np.rint(o["colour"] * np.float32(0.7 + 0.3 * want)).astype(np.uint8)
            cx, cy = sc.centre(o, sc.frame_time(i))
            cyi, cxi = int(cy), int(cx)
            if o["shape"] == "triangle":
                cyi = int(cy + 0.25 * o["size"])    # inside, below the apex
            assert np.array_equal(img[cyi, cxi], colour), (o["id"], want, img[cyi, cxi], colour)
            cell = img[int(row_i_of(o, ch) * ch):int((row_i_of(o, ch) + 1) * ch),
                       int(col_i_of(o, cw) * cw):int((col_i_of(o, cw) + 1) * cw)]
            m = np.all(cell == colour, axis=2)
            ys, xs = np.nonzero(m)
            width = xs.max() - xs.min() + 1
            x0, _, x1, _ = sc.box(o, sc.frame_time(i))
            assert abs(width - (x1 - x0)) <= 2.5, (o["id"], want, width, x1 - x0)
            if want == 0.0:
                checked_lo += 1
            else:
                checked_hi += 1
    assert checked_lo and checked_hi


def col_i_of(o, cw):
    return int(o["cx"] // cw)


def row_i_of(o, ch):
    return int(o["cy"] // ch)


# -- world 2: look-alikes ----------------------------------------------------

def test_pair_share_and_rules():
    n_pair = 0
    n_seg = n_from_pair = 0
    for seed in range(1000, 1200):
        sc = soworld.Scene(seed, 160, 90, 5, 20.0, 8000, world=2)
        kinds = [o["kind"] for o in sc.objects]
        visible = set(kinds)
        if sc.pair is None:
            assert len(set(kinds)) == len(kinds)
        else:
            n_pair += 1
            a, b = sc.pair
            assert kinds[a] == kinds[b]
            assert len(set(kinds)) == len(kinds) - 1      # all others differ
            if len(kinds) == 2:
                assert set(sc.pair) == {0, 1}
        prev = None
        for (t0, t1, what, p) in sc.timeline:
            if what == "offscreen":
                assert p["kinds"][0] not in visible
            elif what == "onscreen":
                s0 = p["sources"][0]
                assert s0 != prev
                prev = s0
                if sc.pair is not None:
                    n_seg += 1
                    n_from_pair += s0 in sc.pair
    share = n_pair / 200
    assert 0.45 <= share <= 0.75, share
    # 0.6 by the pair rule plus the other rule's picks of a pair member
    assert 0.6 <= n_from_pair / n_seg <= 0.95, n_from_pair / n_seg


def test_lookalike_truth():
    seen_true = seen_false_pair = 0
    for seed in range(1, 40):
        sc = soworld.Scene(seed, 160, 90, 5, 12.0, 8000, world=2)
        for i in range(sc.n_frames()):
            tr = sc.truth(i)
            src = tr["sources"]
            twin = len(src) == 1 and any(o["id"] != src[0] and o["kind"] == tr["kinds"][0]
                                         for o in sc.objects)
            assert tr["lookalike"] == twin
            assert tr["lookalike"] == (sc.pair is not None and len(src) == 1 and src[0] in sc.pair)
            seen_true += tr["lookalike"]
            seen_false_pair += sc.pair is not None and not tr["lookalike"] and len(src) >= 1
        # the file: a last column, read back
        text = sc.truth_tsv()
        lines = text.splitlines()
        assert lines[0].startswith("# sounding-objects-v2 truth") and " world=2" in lines[0]
        assert lines[2].split("\t")[-1] == "lookalike"
        with tempfile.NamedTemporaryFile("w", suffix=".truth.tsv", delete=False) as f:
            f.write(text)
        try:
            head, rows = soworld.read_truth_tsv(f.name)
        finally:
            os.unlink(f.name)
        assert head["world"] == "2" and len(rows) == sc.n_frames()
        for i, r in enumerate(rows):
            tr = sc.truth(i)
            assert r["lookalike"] == tr["lookalike"] and r["sources"] == tr["sources"]
            assert r["steady"] == tr["steady"] and r["negative"] == tr["negative"]
    assert seen_true > 0 and seen_false_pair > 0
    # world 1 truth never has a look-alike
    sc = soworld.Scene(4, 160, 90, 5, 12.0, 8000)
    assert not any(sc.truth(i)["lookalike"] for i in range(sc.n_frames()))


def test_read_truth_v1_and_hand_written():
    sc = soworld.Scene(8, 160, 90, 10, 4.0, 8000)
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "a.truth.tsv")
        with open(p, "w") as f:
            f.write(sc.truth_tsv())
        head, rows = soworld.read_truth_tsv(p)
        assert "world" not in head and len(rows) == sc.n_frames()
        assert all(r["lookalike"] is False for r in rows)
        for i, r in enumerate(rows):
            tr = sc.truth(i)
            assert r["sources"] == tr["sources"] and r["kinds"] == tr["kinds"]
            assert len(r["boxes"]) == len(tr["boxes"])
        # columns in another order (the header line starts with frame, as
        # tools/truth.c wants), one more column: found by name
        with open(p, "w") as f:
            f.write("# w width=320 height=240\n"
                    "frame\tboxes\tpts_ns\tsteady\tnegative\tnote\tsources\tkinds\tlookalike\n"
                    "0\t1,2,3,4\t0\t1\t0\tx\t3\t5\t1\n")
        head, rows = soworld.read_truth_tsv(p)
    assert rows == [dict(frame=0, pts=0, steady=True, negative=False, sources=[3], kinds=[5],
                         boxes=[(1.0, 2.0, 3.0, 4.0)], lookalike=True)]


def test_command_line():
    cmd = [sys.executable, os.path.join(TOOLS, "soworld.py"), "truth", "--seed", "3",
           "--size", "160x90", "--fps", "5", "--duration", "2"]
    v1 = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    v1b = subprocess.run(cmd + ["--world", "1"], capture_output=True, text=True, check=True).stdout
    v2 = subprocess.run(cmd + ["--world", "2"], capture_output=True, text=True, check=True).stdout
    assert v1 == v1b == soworld.Scene(3, 160, 90, 5.0, 2.0, 48000).truth_tsv()
    assert v2 == soworld.Scene(3, 160, 90, 5.0, 2.0, 48000, world=2).truth_tsv()
    assert v2.startswith("# sounding-objects-v2 truth")
    r = subprocess.run(cmd + ["--world", "3"], capture_output=True, text=True)
    assert r.returncode == 2


def main(argv):
    return run_tests(globals(), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
