#!/usr/bin/python3
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs the benchmarks and writes the README's speed tables from their output.

    bench/speed-report.py [--build build-ci] [--runs 3] [--readme README.md]
                          [--skip-pipeline]

avattention-bench --json runs --runs times (each run times sgemm, the
fusion, PyTorch's same block and the threads in the same run; the table
gives the median run and the range); bench/pipeline-bench.py runs once on
the 60 s 1080p30 clip.  The tables replace what lies between the markers
<!-- speed:begin --> and <!-- speed:end --> in the README; the JSON of every
run goes to BUILD/bench-results.json.
"""
import argparse
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def fmt_range(values, fmt):
    lo, hi = min(values), max(values)
    a, b = fmt.format(lo), fmt.format(hi)
    return a if a == b else f"{a}–{b}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-ci")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--readme", default=os.path.join(HERE, "..", "README.md"))
    ap.add_argument("--skip-pipeline", action="store_true")
    ap.add_argument("--from-json", metavar="FILE",
                    help="write the tables from an earlier run's bench-results.json "
                    "instead of measuring")
    args = ap.parse_args()

    results = os.path.join(args.build, "bench-results.json")
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        runs, pipe = saved["avattention_bench"], saved["pipeline_bench"]
        args.runs = len(runs)
    else:
        bench = os.path.join(args.build, "bench", "avattention-bench")
        runs = []
        for i in range(args.runs):
            out = subprocess.run([bench, "--json", "--seconds", "3"], check=True,
                                 capture_output=True, text=True).stdout
            runs.append(json.loads(out))
            print(f"avattention-bench run {i + 1}: {out.strip()}", flush=True)
        pipe = None
        if not args.skip_pipeline:
            path = os.path.join(args.build, "pipeline-bench.json")
            subprocess.run([sys.executable, os.path.join(HERE, "pipeline-bench.py"),
                            "--build", args.build, "--json", path], check=True)
            with open(path) as f:
                pipe = json.load(f)
        with open(results, "w") as f:
            json.dump({"avattention_bench": runs, "pipeline_bench": pipe}, f, indent=1)
    runs.sort(key=lambda r: r["fusion_ms_per_frame"])
    med = runs[len(runs) // 2]

    col = lambda k: [r[k] for r in runs]
    lines = [
        f"Measured by `bench/speed-report.py --build {args.build}` ({args.runs} runs of "
        "`avattention-bench --json`; the median run, and the range of all), on "
        f"{os.cpu_count()} cores of an {cpu_name()} with OpenBLAS "
        f"{med.get('openblas_core', '?')} kernels, default sizes (E 256, 8 heads, 1 layer, "
        "T 100, N 196):",
        "",
        "| figure | value |",
        "|---|---|",
        f"| `sgemm_gflops` (OpenBLAS on the model's GEMM shapes, one thread) | "
        f"{med['sgemm_gflops']:.1f} ({fmt_range(col('sgemm_gflops'), '{:.0f}')}) |",
        f"| `fusion_ms_per_frame` (one thread, head-mean maps) | "
        f"{med['fusion_ms_per_frame']:.2f} ms ({fmt_range(col('fusion_ms_per_frame'), '{:.2f}')}) |",
        f"| `fusion_gflops` / sgemm | {med['fusion_gflops']:.1f} = "
        f"{med['fusion_vs_sgemm']:.2f} × sgemm ({fmt_range(col('fusion_vs_sgemm'), '{:.2f}')}) |",
    ]
    if "pytorch_ms_per_frame" in med:
        lines.append(
            f"| `pytorch_ms_per_frame` (PyTorch {'1.13'}, the same block, one thread) | "
            f"{med['pytorch_ms_per_frame']:.2f} ms: the fusion is "
            f"{med['pytorch_vs_fusion']:.2f} × as fast "
            f"({fmt_range(col('pytorch_vs_fusion'), '{:.2f}')}) |")
    if "v2_over_v1" in med:
        # one frame of avfusion-v2 (avpatchembed's patch and rhythm maps,
        # avattention's history lookup, rhythm term and layers) against v1
        # at the shipped sizes, both in the same run
        lines.append(
            f"| `v2_over_v1` (one frame of avfusion-v2 against v1, shipped sizes "
            f"E 64, 4 heads, 2 layers, 5 lags; {med.get('v2_model', 'seeded')} weights) | "
            f"v1 {med['v1_frame_ms']:.2f} ms, v2 {med['v2_frame_ms']:.2f} ms "
            f"(rhythm term {med['v2_rhythm_term_ms']:.2f} ms): "
            f"{med['v2_over_v1']:.2f} × ({fmt_range(col('v2_over_v1'), '{:.2f}')}) |")
    lines += [
        f"| `fusion_frames_per_s_1_thread` | {med['fusion_frames_per_s_1_thread']:.0f} |",
        f"| `fusion_frames_per_s_all_threads` ({med['all_threads']} threads) | "
        f"{med['fusion_frames_per_s_all_threads']:.0f} = {med['threads_speedup']:.2f} × "
        f"({fmt_range(col('threads_speedup'), '{:.2f}')}) |",
        f"| `mel_realtime_factor` | {med['mel_realtime_factor']:,.0f} × real time |",
    ]
    if pipe:
        r = pipe["avattention_run"]
        lines += [
            "",
            "`avattention-run` on a 60 s 1080p30 H.264/AAC clip (8 Mbit/s, moving bars "
            "under noise, rendered by `bench/pipeline-bench.py` from GStreamer's test "
            "sources), with the shipped model:",
            "",
            "| run | wall time | real-time factor | CPU time |",
            "|---|---|---|---|",
        ]
        for key, label in [("features_1_thread", "features only, `--threads 1`"),
                           ("features", "features only"),
                           ("annotated_1_thread", "with the annotated video, `--threads 1`"),
                           ("annotated", "with the annotated video")]:
            x = r[key]
            lines.append(f"| {label} | {x['wall_s']:.1f} s | {x['realtime_factor']:.2f} × | "
                         f"{x['cpu_s']:.1f} s |")
        lines += [
            "",
            "Where the CPU time of the feature path goes (pipelines that stop after each "
            "stage; each row adds one stage):",
            "",
            "| stage | CPU time added | wall time up to here |",
            "|---|---|---|",
        ]
        for s in pipe["stages"]:
            added = s["added_cpu_s"]
            # a stage that costs less than the runs differ shows as noise
            shown = f"{added:.1f} s" if added >= 0.5 else "< 0.5 s (below run-to-run noise)"
            lines.append(f"| {s['stage']} | {shown} | {s['wall_s']:.1f} s |")
        lines.append(f"| overlay, audio re-encode, VP8 encode (annotated run − features run) | "
                     f"{pipe['overlay_and_encode_added_cpu_s']:.1f} s | |")
    table = "\n".join(lines) + "\n"
    print(table)

    with open(args.readme) as f:
        text = f.read()
    begin, end = "<!-- speed:begin -->\n", "<!-- speed:end -->"
    if begin in text and end in text:
        a = text.index(begin) + len(begin)
        b = text.index(end)
        text = text[:a] + table + text[b:]
        with open(args.readme, "w") as f:
            f.write(text)
        print(f"speed-report: {args.readme} updated")
    else:
        print(f"speed-report: no speed markers in {args.readme}; not written")


if __name__ == "__main__":
    main()
