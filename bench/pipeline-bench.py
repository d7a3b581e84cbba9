#!/usr/bin/python3
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Whole-pipeline speed: avattention-run on a 60 s 1080p30 H.264/AAC clip,
and where the time goes.

    bench/pipeline-bench.py [--build build] [--clip FILE] [--json FILE]

Without --clip it renders the clip once with GStreamer's own test sources
(moving SMPTE bars under camera-like noise, pink noise for sound, 8 Mbit/s
H.264 and AAC in MP4) into BUILD/bench-media/ and reuses it after.

Then it runs, one after the other:
  * pipelines that stop after each stage of avattention-run's feature path
    (decode; + convert and scale; + spectrogram; + patch embedding;
    + fusion; + the .npz), whose differences give each stage's share of the
    CPU time and of the wall time;
  * avattention-run itself, features only and with the annotated video,
    with --threads 1 and with every core.
It prints a table and writes the figures as JSON (--json).  Wall time,
real-time factor (media seconds per wall second) and CPU seconds are
measured with os.wait4 on the child process.  About 8 minutes on the
2-core development machine.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

DURATION = 60


def render_clip(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".part.mp4"
    n_video = DURATION * 30
    n_audio = DURATION * 48000 // 1024 + 1
    desc = (
        "compositor name=c sink_1::alpha=0.12 ! "
        "video/x-raw,width=1920,height=1080,framerate=30/1,format=I420 ! "
        "x264enc speed-preset=veryfast bitrate=8000 key-int-max=60 ! h264parse ! "
        "queue ! mp4mux name=m ! filesink location=" + shlex.quote(tmp) + " "
        f"videotestsrc num-buffers={n_video} pattern=smpte horizontal-speed=3 ! "
        "video/x-raw,width=1920,height=1080,framerate=30/1 ! c.sink_0 "
        f"videotestsrc num-buffers={n_video} pattern=snow ! "
        "video/x-raw,width=1920,height=1080,framerate=30/1 ! c.sink_1 "
        f"audiotestsrc num-buffers={n_audio} samplesperbuffer=1024 wave=pink-noise "
        "volume=0.3 ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! "
        "avenc_aac ! aacparse ! queue ! m.")
    print(f"rendering {path} (60 s of 1080p30 H.264/AAC, about a minute) ...",
          flush=True)
    subprocess.run(["gst-launch-1.0", "-q"] + shlex.split(desc), check=True)
    os.replace(tmp, path)


def clip_seconds(path):
    """The clip's duration, from GStreamer's discoverer."""
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstPbutils", "1.0")
    from gi.repository import Gst, GstPbutils
    Gst.init(None)
    info = GstPbutils.Discoverer.new(60 * Gst.SECOND).discover_uri(
        Gst.filename_to_uri(os.path.abspath(path)))
    return info.get_duration() / Gst.SECOND


def run(argv, env):
    """Runs argv; returns (wall seconds, cpu seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} ... exited {code}: {err[-800:]}")
    return wall, ru.ru_utime + ru.ru_stime


def stage_pipelines(clip, npz):
    """gst-launch descriptions that stop after each stage of the feature
    path, in the order and with the elements avattention-run uses."""
    src = f"filesrc location={shlex.quote(clip)} ! decodebin name=d "
    audio = "d. ! queue ! audioconvert ! audioresample "
    video = "d. ! queue ! videoconvert ! videoscale "
    return [
        ("decode", src + "d. ! queue ! fakesink d. ! queue ! fakesink"),
        ("convert and scale", src + audio + "! fakesink " + video +
         "! video/x-raw,width=224,height=224,format=RGB ! fakesink"),
        ("spectrogram", src + audio + "! avspectrogram ! fakesink " + video +
         "! video/x-raw,width=224,height=224,format=RGB ! fakesink"),
        ("patch embedding", src + audio + "! avspectrogram ! fakesink " + video +
         "! avpatchembed ! fakesink"),
        ("fusion", src + audio + "! avspectrogram ! queue ! att.audio_sink " +
         video + "! avpatchembed ! queue ! att.video_sink avattention name=att ! "
         "fakesink"),
        ("features file", src + audio + "! avspectrogram ! queue ! att.audio_sink " +
         video + "! avpatchembed ! queue ! att.video_sink avattention name=att ! "
         f"avtensorsink location={shlex.quote(npz)}"),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--clip")
    ap.add_argument("--json")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    tool = os.path.join(build, "tools", "avattention-run")
    if not os.access(tool, os.X_OK):
        sys.exit(f"pipeline-bench: {tool} not found; build first (ninja -C {args.build})")
    env = dict(os.environ)
    env["GST_PLUGIN_PATH"] = os.path.join(build, "elements")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")

    clip = args.clip
    media_s = DURATION
    if clip is not None:
        media_s = clip_seconds(clip)
    else:
        clip = os.path.join(build, "bench-media", "smpte-noise-1080p30-60s.mp4")
        if not os.path.exists(clip):
            render_clip(clip)
    clip = os.path.abspath(clip)

    out = tempfile.mkdtemp(prefix="avattention-bench-")
    npz = os.path.join(out, "stage.npz")
    results = {"clip": clip, "media_seconds": media_s, "cores": os.cpu_count()}

    print(f"clip: {clip} ({media_s} s)")
    stages = []
    prev_wall = prev_cpu = 0.0
    for name, desc in stage_pipelines(clip, npz):
        wall, cpu = run(["gst-launch-1.0", "-q"] + shlex.split(desc), env)
        stages.append({"stage": name, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                       "added_wall_s": round(wall - prev_wall, 2),
                       "added_cpu_s": round(cpu - prev_cpu, 2)})
        print(f"  up to {name:<18} wall {wall:6.1f} s  cpu {cpu:6.1f} s  "
              f"(this stage: cpu {cpu - prev_cpu:+6.1f} s)", flush=True)
        prev_wall, prev_cpu = wall, cpu
    results["stages"] = stages

    runs = {}
    for label, extra in [("features_1_thread", ["--no-video-out", "--threads", "1"]),
                         ("features", ["--no-video-out"]),
                         ("annotated_1_thread", ["--threads", "1"]),
                         ("annotated", [])]:
        wall, cpu = run([tool, clip, "--out", out] + extra, env)
        runs[label] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                       "realtime_factor": round(media_s / wall, 3),
                       "frames_per_s": round(media_s * 30 / wall, 1)}
        print(f"  avattention-run {' '.join(extra) or '(defaults)':<28} wall "
              f"{wall:6.1f} s  {media_s / wall:5.2f}x real time  cpu {cpu:6.1f} s",
              flush=True)
    results["avattention_run"] = runs
    for kind in ("features", "annotated"):
        results[f"{kind}_threads_speedup"] = round(
            runs[f"{kind}_1_thread"]["wall_s"] / runs[kind]["wall_s"], 3)
    annotated_extra = runs["annotated"]["cpu_s"] - runs["features"]["cpu_s"]
    results["overlay_and_encode_added_cpu_s"] = round(annotated_extra, 2)
    print(f"  overlay, audio and video encode add {annotated_extra:.1f} cpu s")
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    os.rmdir(out)
    text = json.dumps(results, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
