#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The side-by-side measures of model/evaluate.py (--compare) on hand-made
inputs whose answers are worked out by hand:

* cIoU of one frame: a map that is exactly the box gives 1, one that lights
  a region disjoint from it 0, a half overlap 56 / 140 = 0.4, the same on a
  16:9 frame (the squashed picture), a flat map nothing, a smaller share
  of the map on (--ciou-share);
* cIoU (AP50) and cIoU AUC of a list of IoUs;
* max-F1 (SLAVC): a perfect ranking 1, a ranking with a known answer 2/3,
  tied confidences, no positive, no correct one;
* the largest-object baseline on a tiny object list (clipped to the frame,
  ties), its records and the random-object ones; the field measures of a
  run's records; --compare's list; the shifted-audio scene.

No pipeline, no model: runs in a second.  Usage:
test_evaluate_measures.py [TEST-NAME ...]; exit 77 (skipped) where
/usr/bin/python3 has no numpy.
"""

import math
import os
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: no numpy")
    sys.exit(77)

MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model")
sys.path.insert(0, MODEL)
import evaluate  # noqa: E402
from py_test_runner import run_tests  # noqa: E402

G = 14  # the patch grid


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol


def patch_map(cells):
    """A per-patch map [196]: 1 at the (row, column) cells, 0 elsewhere."""
    q = np.zeros((G, G), np.float32)
    for r, c in cells:
        q[r, c] = 1.0
    return q.reshape(-1)


def patch_box(r0, c0, r1, c1, W, H):
    """The frame-pixel box of patches rows r0..r1-1, columns c0..c1-1."""
    return (c0 * W / G, r0 * H / G, c1 * W / G, r1 * H / G)


def block(r0, c0, r1, c1):
    return [(r, c) for r in range(r0, r1) for c in range(c0, c1)]


def test_ciou_exact_box():
    # 12 patches lit, 184 at 0: the median is 0, the 12 are on, and the box
    # is those patches' pixels, on a 1280x720 frame
    W, H = 1280, 720
    q = patch_map(block(2, 5, 5, 9))
    iou = evaluate.ciou(q, [patch_box(2, 5, 5, 9, W, H)], W, H)
    assert iou == 1.0, iou
    assert evaluate.ciou_figures([iou]) == (1.0, 1.0)


def test_ciou_disjoint():
    W, H = 1280, 720
    q = patch_map(block(10, 0, 13, 3))
    iou = evaluate.ciou(q, [patch_box(2, 5, 5, 9, W, H)], W, H)
    assert iou == 0.0, iou
    ap50, area = evaluate.ciou_figures([iou])
    # only the threshold 0 counts the frame: one trapezoid, 0.05 * 1 / 2
    assert ap50 == 0.0 and close(area, 0.025), (ap50, area)


def test_ciou_half_overlap():
    # the box is the left half (columns 0..6, 98 patches); the map lights
    # columns 3..9 (98 patches, the rest 0: the median is 0.5, the 98 are
    # on): 4 columns in common, 56 patches, union 98 + 98 - 56 = 140
    for W, H in ((224, 224), (1280, 720), (640, 480)):
        q = patch_map(block(0, 3, G, 10))
        iou = evaluate.ciou(q, [(0.0, 0.0, W / 2, float(H))], W, H)
        assert close(iou, 56 / 140), (W, H, iou)


def test_ciou_union_of_boxes():
    # two sources, each box 2x2 patches; the map lights both: IoU 1; it
    # lights one only: 4 of 8
    W, H = 640, 480
    boxes = [patch_box(0, 0, 2, 2, W, H), patch_box(8, 8, 10, 10, W, H)]
    both = patch_map(block(0, 0, 2, 2) + block(8, 8, 10, 10))
    one = patch_map(block(0, 0, 2, 2))
    assert evaluate.ciou(both, boxes, W, H) == 1.0
    assert close(evaluate.ciou(one, boxes, W, H), 0.5)


def test_ciou_median_and_normalisation():
    # a graded map: half its values above the median whatever the scale
    # (min-max normalisation changes nothing), the top half of rows on
    q = np.repeat(np.arange(G, 0, -1, dtype=np.float32), G)      # row r: 14 - r
    m = evaluate.map_mask(q * 1e-4 + 7.0)
    assert m.shape == (224, 224) and m.sum() == 224 * 112
    assert m[:112].all() and not m[112:].any()
    # a flat map lights nothing: IoU 0
    assert evaluate.ciou(np.ones(G * G), [(0, 0, 10, 10)], 100, 100) == 0.0


def test_ciou_share():
    # distinct values 0..195 in row-major order: the 0.98 quantile is
    # 0.98 * 195 = 191.1, so the last 4 patches (row 13, columns 10..13)
    # are on; the median puts the 98 of rows 7..13 on
    W, H = 1280, 720
    q = np.arange(G * G, dtype=np.float32)
    box = [patch_box(13, 10, 14, 14, W, H)]
    assert evaluate.map_mask(q, share=0.02).sum() == 4 * 256
    assert evaluate.ciou(q, box, W, H, share=0.02) == 1.0
    assert close(evaluate.ciou(q, box, W, H), 4 / 98)


def test_ciou_figures():
    # IoUs 0.4 and 1.0: share 1 at t = 0 .. 0.4 (9 points), 0.5 at 0.45 .. 1
    # (12 points); trapezoids: 0.05 * (9 + 6 - (1 + 0.5) / 2) = 0.7125
    ap50, area = evaluate.ciou_figures([0.4, 1.0])
    assert ap50 == 0.5 and close(area, 0.7125), (ap50, area)
    ap50, area = evaluate.ciou_figures([])
    assert math.isnan(ap50) and math.isnan(area)
    # IoU exactly 0.5 counts at 0.5
    assert evaluate.ciou_figures([0.5])[0] == 1.0


def test_max_f1_perfect():
    # every positive localised, all above every negative
    assert evaluate.max_f1([0.9, 0.8, 0.7], [1.0, 0.6, 0.5], [0.2, 0.1]) == 1.0


def test_max_f1_known():
    # by confidence: 0.9 positive right, 0.8 negative, 0.7 positive right,
    # 0.6 positive wrong (IoU 0.2); 3 positives.
    # tau 0.9: P 1, R 1/3, F1 0.5; tau 0.8: P 1/2, R 1/3, F1 0.4;
    # tau 0.7: P 2/3, R 2/3, F1 2/3; tau 0.6: P 1/2, R 2/3, F1 4/7
    f1 = evaluate.max_f1([0.9, 0.7, 0.6], [1.0, 0.5, 0.2], [0.8])
    assert close(f1, 2 / 3), f1
    # tied confidences count together: tau 0.5 takes all three frames,
    # P 2/3, R 1: F1 0.8 (not 1, which splitting the tie would give)
    f1 = evaluate.max_f1([0.5, 0.5], [1.0, 1.0], [0.5])
    assert close(f1, 0.8), f1
    # no positive localised: 0; no positive: NaN
    assert evaluate.max_f1([0.9], [0.1], [0.5]) == 0.0
    assert math.isnan(evaluate.max_f1([], [], [0.5]))


def test_field_measures():
    # two positives with audio (IoU 1.0 at weight 0.9, 0.2 at 0.3), one
    # without audio (left out), one negative at 0.5; a non-steady frame
    def rec(pointing, audio, steady, negative, weight, iou):
        return dict(pointing=pointing, audio=audio, steady=steady, negative=negative,
                    weight=weight, iou=iou)
    recs = [rec(True, True, True, False, 0.9, 1.0), rec(True, True, True, False, 0.3, 0.2),
            rec(True, False, True, False, float("nan"), float("nan")),
            rec(False, True, True, True, 0.5, float("nan")),
            rec(False, True, False, True, 0.99, float("nan"))]
    m = evaluate.field_measures(recs)
    assert m["ciou_ap50"] == 0.5
    # tau 0.9: P 1, R 1/2: F1 2/3; tau 0.5: P 1/2, R 1/2: 1/2; tau 0.3: 1/3, 1/2
    assert close(m["max_f1"], 2 / 3), m


def test_largest_object():
    boxes = [(0, (0, 0, 10, 10)), (1, (0, 0, 20, 5)), (2, (5, 5, 30, 30))]
    assert evaluate.largest_object(boxes) == 2                     # 625
    # clipped to a 12x12 frame: 100, 12 x 5 = 60, 7 x 7 = 49
    assert evaluate.largest_object(boxes, 12, 12) == 0
    # a tie: the first
    assert evaluate.largest_object([(3, (0, 0, 2, 2)), (4, (5, 5, 7, 7))]) == 3
    assert evaluate.largest_object([]) is None


class TinyScene:
    """Two objects at 10 fps: object 0 (10x10) still, object 1 growing by 2
    pixels a frame from 4x4 (larger than object 0 from frame 4 on)."""
    W, H = 100, 100
    objects = [dict(id=0), dict(id=1)]

    def frame_time(self, i):
        return i / 10

    def box(self, obj, t):
        if obj["id"] == 0:
            return (0, 0, 10, 10)
        s = 4 + 20 * t
        return (50, 50, 50 + s, 50 + s)


def test_largest_and_random_records():
    def rec(frame, sources, pointing=True):
        return dict(frame=frame, sources=sources, pointing=pointing, hit=True, both=True,
                    guess=len(sources) / 2, weight=0.7, iou=0.9, audio=True, steady=True,
                    negative=not sources, lookalike=False)
    recs = [rec(1, [1]), rec(6, [1]), rec(6, [0]), rec(2, [0, 1]), rec(3, [], pointing=False)]
    big = evaluate.largest_records(TinyScene(), recs)
    assert [r["hit"] for r in big] == [False, True, False, True], big
    assert all("both" not in r and math.isnan(r["weight"]) for r in big)
    s = evaluate.summary(big, 0.0)
    assert s["pointing"] == 0.5 and s["steady_pos"] == 4
    rnd = evaluate.random_records(recs)
    assert [r["hit"] for r in rnd] == [0.5, 0.5, 0.5, 1.0]
    assert evaluate.summary(rnd, 0.0)["pointing"] == 0.625


def test_parse_compare():
    got = evaluate.parse_compare("labelled=default, unlabelled=models/u.safetensors,"
                                 "silent=default:zeroed,odd=a:b.safetensors")
    assert got == [("labelled", None, "clip"), ("unlabelled", "models/u.safetensors", "clip"),
                   ("silent", None, "zeroed"), ("odd", "a:b.safetensors", "clip")], got
    for bad in ("labelled", "=x", "a=", "a=default,,"):
        try:
            evaluate.parse_compare(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} accepted")


def test_shifted_audio():
    class Sc:
        sr, W = 4, 320
        def audio(self):
            return np.arange(12, dtype=np.float32)
        def truth_tsv(self):
            return "truth"
    sh = evaluate.ShiftedAudio(Sc(), 0.5)        # 2 samples later
    assert sh.audio().tolist() == [10, 11] + list(range(10))
    assert sh.W == 320 and sh.truth_tsv() == "truth"


def test_held_out_seeds():
    assert evaluate.held_out_seeds(None, 5, 3) == [5, 6, 7]
    assert evaluate.held_out_seeds("50201,50207, 50218", 5, 3) == [50201, 50207, 50218]
    for bad in (("1,x", 1, 1), ("5,100000", 1, 1), ("-1", 1, 1), (None, 99999, 2),
                (None, 100000, 0)):
        try:
            evaluate.held_out_seeds(*bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} accepted")
    # the command refuses them before rendering anything
    assert evaluate.main(["--seeds", "50201,100001", "--world", "2"]) == 2
    assert evaluate.main(["--seeds", "7;8", "--world", "2"]) == 2


def test_entry_measures_without_model():
    recs = [dict(pointing=True, audio=True, steady=True, negative=False, hit=h, weight=0.5,
                 iou=0.5, lookalike=False, guess=0.5, both=True) for h in (True, False)]
    m = evaluate.entry_measures(dict(kind="largest"), recs, [])
    assert m["pointing"] == 0.5 and m["auc"] is None and m["ciou_ap50"] is None
    assert m["both_of_two"] is None and m["latency_median"] is None
    m = evaluate.entry_measures(dict(kind="model", threshold=0.4), recs, [0.2, 0.4, 1.0])
    assert m["both_of_two"] == 1.0 and m["ciou_ap50"] == 1.0 and m["latency_median"] == 0.4


def main(argv):
    return run_tests(globals(), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
