#!/usr/bin/python3
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch's time for the block avattention-bench times: one avfusion-v1
fusion forward (no patch embedding) at the default sizes, head-mean maps of
every module, one thread, float32, no autograd.

    pytorch-fusion.py [--seconds S]

Prints one JSON line {"pytorch_ms_per_frame": ..., "torch_version": ...};
avattention-bench runs it in the same run and reports the ratio.  Exits 77
when torch is not importable."""
import argparse
import json
import os
import sys
import time

# One thread everywhere, as avattention-bench's fusion: torch.set_num_threads
# covers PyTorch's own pool, but OpenBLAS (which PyTorch calls for its
# matrix products) reads its thread count when it is loaded.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

try:
    import torch
except ImportError:
    print("pytorch-fusion: torch is not importable", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
sys.path.insert(0, os.environ.get("AVF_TOOLS_DIR", ""))
from avfusion import AvFusion, default_state_dict  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    state = default_state_dict(seed=0)
    model = AvFusion.from_state_dict(state, 8).float().eval()
    T, M, N, E = 100, 64, 196, 256
    mel = torch.rand(T, M) * 8 - 4
    mask = torch.zeros(T, dtype=torch.bool)
    video = torch.rand(N, E) * 2 - 1
    best = float("inf")
    with torch.inference_mode():
        model.fuse(mel, mask, video)
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            for _ in range(3):
                model.fuse(mel, mask, video)
            t1 = time.perf_counter()
            best = min(best, (t1 - t0) / 3)
            if t1 - start >= args.seconds:
                break
    print(json.dumps({"pytorch_ms_per_frame": round(best * 1e3, 3),
                      "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
