#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""model/train.py's init_from (``--init FILE``) into a model with more
rhythm features than the file (``--rhythm-dim``, ``--audio-rhythm-dim``):

* the wider model starts as the file's exactly: its rhythm term and patch
  embedding equal a model of the file's own sizes loaded from it (1e-5),
  with masked slots and missing bins;
* the file's features are the first ones, the projection's columns that
  read a new feature are zero and every other column is the file's;
* the new features are not dead: one gradient step on the rhythm term
  moves the new projection columns;
* into a split neighbourhood (``--rhythm-neighbourhood 5
  --rhythm-neighbourhood-from F`` with ``--rhythm-dim 2F``): the new
  features start as copies of the file's, averaged over the 5 x 5 block,
  the first F the patch's own, and the model starts as the file's;
* a file with *more* features than the model still falls back to fresh
  rhythm tensors (as before), and nothing else of the file is lost.

On the shipped unlabelled model.  No pipeline: a few seconds.  Usage:
test_train_init.py [TEST-NAME ...]; exit 77 (skipped) where
/usr/bin/python3 has no torch.
"""

import os
import sys

try:
    import numpy as np
    import torch
except ImportError:
    print("SKIP: no numpy or torch")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "model"))
import avfusion  # noqa: E402
import avfusion2  # noqa: E402
import train as T  # noqa: E402
from py_test_runner import run_tests  # noqa: E402

FILE = os.path.join(ROOT, "models", "sounding-objects-unlabeled.safetensors")


def model(C=8, D=8, k=1, f=0):
    torch.manual_seed(0)
    return avfusion2.AvFusionV2(embed_dim=64, num_heads=4, num_layers=2, ffn_dim=128,
                                rhythm_dim=D, audio_rhythm_dim=C, rhythm_pool=T.RHYTHM_POOL,
                                bin_slots=T.BIN_SLOTS, num_bins=T.N_BINS, num_lags=T.N_LAGS,
                                lag_min=T.LAG_MIN, neighbourhood=k, neighbourhood_from=f)


def inputs(D, seed=1):
    g = torch.Generator().manual_seed(seed)
    mel = torch.randn(3, T.N_BINS * T.BIN_SLOTS, 64, generator=g)
    mask = torch.zeros(3, mel.shape[1], dtype=torch.bool)
    mask[0, :7] = True                                  # the stream's first slots
    hist = torch.randn(3, T.N_LAGS, T.N_BINS, 196, D, generator=g)
    missing = torch.zeros(3, T.N_LAGS, T.N_BINS, dtype=torch.bool)
    missing[1, :, :3] = True                            # frames not seen
    rgb = torch.rand(2, 224, 224, 3, generator=g)
    return mel, mask, hist, missing, rgb


def test_wider_starts_as_the_file():
    base = model()
    T.init_from(base, FILE)
    for C, D in ((16, 8), (8, 16), (16, 16)):
        wide = model(C, D)
        T.init_from(wide, FILE)
        mel, mask, hist, missing, rgb = inputs(D)
        want = base.rhythm_term(mel, mask, hist[..., :8], missing)
        got = wide.rhythm_term(mel, mask, hist, missing)
        assert want.abs().max() > 0.1, "the file's rhythm term is not trivially zero"
        assert (want - got).abs().max() < 1e-5, (C, D, float((want - got).abs().max()))
        ev = (base.embed_video(rgb) - wide.embed_video(rgb)[..., :64 + 8]).abs().max()
        assert ev < 1e-6, (C, D, float(ev))


def test_wider_layout():
    tensors, _ = avfusion.read_safetensors(FILE)
    wide = model(16, 12)
    T.init_from(wide, FILE)
    p = wide.rhythm_proj.weight.detach().numpy().reshape(64, T.N_LAGS, 12, 16)
    pf = tensors["rhythm_proj.weight"].reshape(64, T.N_LAGS, 8, 8)
    assert np.array_equal(p[:, :, :8, :8], pf)
    assert not p[:, :, 8:, :].any() and not p[:, :, :, 8:].any()
    assert np.array_equal(wide.audio_rhythm.weight.detach().numpy()[:8],
                          tensors["audio_rhythm.weight"])
    assert np.array_equal(wide.rhythm_embed.weight.detach().numpy()[:8],
                          tensors["rhythm_embed.weight"])
    # the new features keep fresh (non-zero, not copied) values
    assert wide.audio_rhythm.weight[8:].abs().sum() > 0
    assert not torch.equal(wide.audio_rhythm.weight[8:16], wide.audio_rhythm.weight[:8])
    # and everything outside the rhythm is the file's
    assert np.array_equal(wide.patch_embed.weight.detach().numpy(), tensors["patch_embed.weight"])


def test_new_features_learn():
    wide = model(16, 8)
    T.init_from(wide, FILE)
    mel, mask, hist, missing, _ = inputs(8, seed=2)
    wide.rhythm_term(mel, mask, hist, missing).square().sum().backward()
    g = wide.rhythm_proj.weight.grad.reshape(64, T.N_LAGS, 8, 16)
    assert g[:, :, :, 8:].abs().max() > 1e-6, "the new columns get no gradient"


def test_split_neighbourhood_starts_as_the_file():
    base = model()
    T.init_from(base, FILE)
    split = model(8, 16, k=5, f=8)
    T.init_from(split, FILE)
    w = split.rhythm_embed.weight.detach()
    assert torch.equal(w[8:], w[:8]) and torch.equal(split.rhythm_embed.bias[8:],
                                                     split.rhythm_embed.bias[:8])
    mel, mask, hist, missing, rgb = inputs(16, seed=3)
    want = base.rhythm_term(mel, mask, hist[..., :8], missing)
    got = split.rhythm_term(mel, mask, hist, missing)
    assert (want - got).abs().max() < 1e-5, float((want - got).abs().max())
    rows = split.embed_video(rgb)[..., 64:]                        # [2, 196, 16]
    own = base.embed_video(rgb)[..., 64:]
    assert (rows[..., :8] - own).abs().max() < 1e-6, "the first 8: each patch's own"
    block = torch.nn.functional.avg_pool2d(own.transpose(1, 2).reshape(2, 8, 14, 14), 5,
                                           stride=1, padding=2, count_include_pad=False)
    assert (rows[..., 8:] - block.flatten(2).transpose(1, 2)).abs().max() < 1e-5, \
        "the new 8: the 5 x 5 mean of the file's"
    assert (rows[..., 8:] - own).abs().max() > 1e-3, "the mean is not the patch"
    # exported and read back with its split; refused at neighbourhood 1
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "split.safetensors")
        avfusion2.export_state_dict(split.state_dict(), 4, T.BIN_SLOTS, T.LAG_MIN, out,
                                    neighbourhood=5, neighbourhood_from=8)
        assert avfusion.read_safetensors(out)[1]["rhythm_neighbourhood_from"] == "8"
        back = avfusion2.AvFusionV2.from_safetensors(out)
        assert (back.neighbourhood, back.neighbourhood_from) == (5, 8)
        try:
            avfusion2.export_state_dict(split.state_dict(), 4, T.BIN_SLOTS, T.LAG_MIN, out,
                                        neighbourhood=1, neighbourhood_from=8)
        except ValueError as e:
            assert "rhythm_neighbourhood_from 8: expected 1 to 15" in str(e), e
        else:
            raise AssertionError("a split at neighbourhood 1 was written")
    # a wider model at neighbourhood 1 (no split) keeps fresh new features
    plain = model(8, 16)
    T.init_from(plain, FILE)
    assert not torch.equal(plain.rhythm_embed.weight[8:], plain.rhythm_embed.weight[:8])


def test_narrower_file_falls_back():
    narrow = model(4, 8)
    T.init_from(narrow, FILE)
    tensors, _ = avfusion.read_safetensors(FILE)
    assert np.array_equal(narrow.patch_embed.weight.detach().numpy(), tensors["patch_embed.weight"])
    assert tuple(narrow.audio_rhythm.weight.shape) == (4, 64)


if __name__ == "__main__":
    sys.exit(run_tests(globals(), sys.argv[1:]))
