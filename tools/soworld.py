#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The sounding-objects world (shared spec sounding-objects.md, version 1).

Coloured objects among grey clutter; one object (sometimes two) sounds at a
time and its kind fixes both its colour and its sound; between the segments
come silences and sounds of kinds that are not in the picture.  Everything is
drawn from a seed, so a scene is the same on every machine.

* ``Scene(seed, width, height, fps, duration, sample_rate)`` draws a scene;
  ``scene.frame(i)`` is frame i as uint8 [H, W, 3] RGB, ``scene.audio()``
  the mono float32 samples, ``scene.truth(i)`` the truth of frame i.
* ``encode(scene, path)`` writes the scene as a clip through GStreamer
  (``.mp4``: H.264 + AAC, ``.webm``: VP8 + Vorbis, ``.mkv``: H.264 + Vorbis)
  and the truth file beside it (``<clip without extension>.truth.tsv``).

Command line::

    soworld.py render --seed 7 --size 1280x720 --fps 30 --duration 20 --out scene.mp4
    soworld.py truth  --seed 7 --size 1280x720 --fps 30 --duration 20   # truth to stdout

Where the page leaves a choice open (noise fresh each frame or fixed; noise
over the objects or only the background; the size of a diamond; a long gap
or a short one when both could fall), ``variant`` draws it from the seed too
when asked (``variants=True``), so that a model trained on these scenes does
not learn one renderer's habits.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

WORLD = "sounding-objects-v1"
KIND_NAMES = ("red", "yellow", "green", "cyan", "blue", "magenta")
KIND_HUES = (0.0, 60.0, 120.0, 180.0, 240.0, 300.0)
SHAPES = ("disk", "square", "triangle", "diamond")
RAMP_S = 0.010


# --------------------------------------------------------------------------
# colours and shapes
# --------------------------------------------------------------------------

def hsv_to_rgb(h_deg, s, v):
    """HSV (hue in degrees, s and v in [0, 1]) to RGB floats in [0, 255]."""
    h = (h_deg % 360.0) / 60.0
    i = int(math.floor(h)) % 6
    f = h - math.floor(h)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    r, g, b = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]
    return np.array([r, g, b], dtype=np.float32) * 255.0


def shape_mask(shape, cx, cy, size, x0, y0, x1, y1, diamond_diag=True):
    """Boolean mask over the pixel block [y0:y1, x0:x1] of a solid shape of
    ``size`` centred at (cx, cy); pixel (x, y) is covered when its centre
    (x + 0.5, y + 0.5) is inside."""
    ys = np.arange(y0, y1, dtype=np.float32)[:, None] + 0.5 - cy
    xs = np.arange(x0, x1, dtype=np.float32)[None, :] + 0.5 - cx
    r = size / 2.0
    if shape == "disk":
        return xs * xs + ys * ys <= r * r
    if shape == "square":
        return (np.abs(xs) <= r) & (np.abs(ys) <= r)
    if shape == "triangle":            # apex up, height = base = size
        # y from -r (apex) to +r (base); half width grows linearly
        t = (ys + r) / (2 * r)         # 0 at apex, 1 at base
        return (ys >= -r) & (ys <= r) & (np.abs(xs) <= t * r)
    if shape == "diamond":
        rr = r if diamond_diag else r * math.sqrt(2.0)
        return np.abs(xs) + np.abs(ys) <= rr
    raise ValueError(shape)


def shape_extent(shape, size, diamond_diag=True):
    """Half width and half height of a shape's bounding box."""
    if shape == "diamond" and not diamond_diag:
        return size / math.sqrt(2.0), size / math.sqrt(2.0)
    return size / 2.0, size / 2.0


# --------------------------------------------------------------------------
# sounds (spec section 1)
# --------------------------------------------------------------------------

def harmonics(f0, tau, sr, step):
    """Sum of sines at f0 * k for k = 1, 1 + step, ... below 4 kHz (and the
    Nyquist frequency), amplitude 1/k."""
    x = np.zeros(len(tau))
    k = 1
    while k * f0 < 4000 and k * f0 < sr / 2:
        x += np.sin(2 * np.pi * k * f0 * tau) / k
        k += step
    return x


def kind_waveform(kind, n, sr, rng):
    """n samples of a kind's sound, RMS 1, without ramps."""
    tau = np.arange(n, dtype=np.float64) / sr
    if kind == 0:                                   # sawtooth
        x = harmonics(rng.uniform(200, 240), tau, sr, 1)
    elif kind == 1:                                 # noise bursts
        x = rng.standard_normal(n) * (np.mod(tau, 0.25) < 0.06)
    elif kind == 2:                                 # square, 3 Hz tremolo
        x = harmonics(rng.uniform(420, 460), tau, sr, 2)
        x *= 0.5 * (1 + np.sin(2 * np.pi * 3 * tau))
    elif kind == 3:                                 # chirp 500 -> 2500 Hz every 0.5 s
        u = np.mod(tau, 0.5)
        x = np.sin(2 * np.pi * (500 * u + 0.5 * (2000 / 0.5) * u * u))
    elif kind == 4:                                 # sine with vibrato
        f0 = rng.uniform(1150, 1250)
        phase = 2 * np.pi * f0 * tau - (60.0 / 6.0) * np.cos(2 * np.pi * 6 * tau)
        x = np.sin(phase)
    elif kind == 5:                                 # 300 / 600 Hz alternating
        f = np.where(np.mod(tau, 0.25) < 0.125, 300.0, 600.0)
        x = np.sin(2 * np.pi * np.cumsum(f) / sr)
    else:
        raise ValueError(kind)
    rms = math.sqrt(float(np.mean(x * x))) if n else 0.0
    return (x / rms if rms > 0 else x).astype(np.float64)


def ramp(n, sr):
    """Raised-cosine 10 ms onset and offset envelope over n samples."""
    env = np.ones(n)
    m = min(int(round(RAMP_S * sr)), n // 2)
    if m > 0:
        r = 0.5 - 0.5 * np.cos(np.pi * (np.arange(m) + 0.5) / m)
        env[:m] = r
        env[n - m:] = r[::-1]
    return env


# --------------------------------------------------------------------------
# a scene (spec section 2)
# --------------------------------------------------------------------------

class Scene:
    """One scene of the world, drawn from ``seed``."""

    def __init__(self, seed, width=1280, height=720, fps=30.0, duration=20.0,
                 sample_rate=48000, variants=True, channels=1):
        self.seed = int(seed)
        self.W, self.H = int(width), int(height)
        self.fps = fps
        self.duration = float(duration)
        self.sr = int(sample_rate)
        self.channels = channels
        rng = np.random.default_rng([self.seed, 0x50])
        self.rng_audio_seed = [self.seed, 0x51]
        self.noise_seed = [self.seed, 0x52]
        W, H = self.W, self.H
        m = min(W, H)

        # ambiguities of the page, drawn per scene
        if variants:
            self.noise_fresh = rng.random() < 0.75
            self.noise_over_objects = rng.random() < 0.5
            self.diamond_diag = rng.random() < 0.7
        else:
            rng.random(); rng.random(); rng.random()
            self.noise_fresh, self.noise_over_objects, self.diamond_diag = True, False, True

        # background: vertical gradient between two low-saturation colours
        c_top = hsv_to_rgb(rng.uniform(0, 360), rng.uniform(0, 0.35), rng.uniform(0.2, 0.8))
        c_bot = hsv_to_rgb(rng.uniform(0, 360), rng.uniform(0, 0.35), rng.uniform(0.2, 0.8))
        a = (np.arange(H, dtype=np.float32) / max(H - 1, 1))[:, None, None]
        base = (1 - a) * c_top[None, None, :] + a * c_bot[None, None, :]
        base = np.broadcast_to(base, (H, W, 3)).copy()

        # clutter: static unsaturated shapes, under the objects
        for _ in range(int(rng.integers(0, 7))):
            shape = SHAPES[int(rng.integers(4))]
            size = rng.uniform(0.06, 0.2) * m
            cx, cy = rng.uniform(0, W), rng.uniform(0, H)
            col = hsv_to_rgb(rng.uniform(0, 360), rng.uniform(0, 0.25), rng.uniform(0.1, 1.0))
            self._paint(base, shape, cx, cy, size, col)
        self.base = base

        # objects: K in 2..6, K cells of the 3 x 2 grid, K kinds
        K = int(rng.integers(2, 7))
        cells = rng.permutation(6)[:K]
        kinds = rng.permutation(6)[:K]
        cw, ch = W / 3.0, H / 2.0
        self.objects = []
        for j in range(K):
            cell = int(cells[j])
            col_i, row_i = cell % 3, cell // 3
            shape = SHAPES[int(rng.integers(4))]
            size = rng.uniform(0.10, 0.22) * m
            kind = int(kinds[j])
            colour = hsv_to_rgb(KIND_HUES[kind] + rng.uniform(-12, 12),
                                rng.uniform(0.6, 1.0), rng.uniform(0.6, 1.0))
            hw, hh = shape_extent(shape, size, self.diamond_diag)
            motion = []
            for side, half in ((cw, hw), (ch, hh)):
                amax = max(0.0, (side - 2 * half) / 2.0)
                motion.append((rng.uniform(0, amax), rng.uniform(0.1, 0.4),
                               rng.uniform(0, 2 * np.pi)))
            self.objects.append(dict(id=j, kind=kind, shape=shape, size=size,
                                     colour=colour, cx=(col_i + 0.5) * cw,
                                     cy=(row_i + 0.5) * ch, motion=motion,
                                     half=(hw, hh)))

        # sound: segments, gaps, two at once, off-screen
        self.timeline = []      # (start, end, kind of interval, payload)
        t = 0.0
        prev = None
        first = True
        visible_kinds = {o["kind"] for o in self.objects}
        hidden_kinds = [k for k in range(6) if k not in visible_kinds]
        while t < self.duration:
            if not first:
                r = rng.random()
                gap = 0.0
                if r < 0.3:
                    gap = rng.uniform(0.1, 0.4)
                elif r < 0.4:
                    gap = rng.uniform(1.2, 2.0)
                if gap > 0:
                    self.timeline.append((t, min(t + gap, self.duration), "gap", None))
                    t += gap
                    if t >= self.duration:
                        break
            seg_len = rng.uniform(1.5, 3.0)
            offscreen = (not first) and rng.random() < 0.15 and hidden_kinds
            two = (not first) and K >= 3 and rng.random() < 0.2
            if offscreen:
                src = []
                kinds_s = [int(hidden_kinds[int(rng.integers(len(hidden_kinds)))])]
                gains = [rng.uniform(0.03, 0.5)]
            else:
                choices = [o["id"] for o in self.objects if o["id"] != prev]
                s0 = int(choices[int(rng.integers(len(choices)))])
                src = [s0]
                if two:
                    others = [o["id"] for o in self.objects if o["id"] != s0]
                    src.append(int(others[int(rng.integers(len(others)))]))
                kinds_s = [self.objects[s]["kind"] for s in src]
                gains = [rng.uniform(0.03, 0.5) for _ in src]
                prev = s0
            end = min(t + seg_len, self.duration)
            self.timeline.append((t, end, "offscreen" if offscreen else "onscreen",
                                  dict(sources=src, kinds=kinds_s, gains=gains)))
            t += seg_len
            first = False
        self.snr_db = rng.uniform(0, 30)

    # -- picture --------------------------------------------------------

    def _paint(self, img, shape, cx, cy, size, colour):
        H, W = img.shape[:2]
        hw, hh = shape_extent(shape, size, self.diamond_diag)
        x0, x1 = max(0, int(math.floor(cx - hw))), min(W, int(math.ceil(cx + hw)) + 1)
        y0, y1 = max(0, int(math.floor(cy - hh))), min(H, int(math.ceil(cy + hh)) + 1)
        if x0 >= x1 or y0 >= y1:
            return
        m = shape_mask(shape, cx, cy, size, x0, y0, x1, y1, self.diamond_diag)
        img[y0:y1, x0:x1][m] = colour

    def centre(self, obj, t):
        (ax, fx, px), (ay, fy, py) = obj["motion"]
        return (obj["cx"] + ax * math.sin(2 * math.pi * fx * t + px),
                obj["cy"] + ay * math.sin(2 * math.pi * fy * t + py))

    def box(self, obj, t):
        cx, cy = self.centre(obj, t)
        hw, hh = obj["half"]
        return (cx - hw, cy - hh, cx + hw, cy + hh)

    def n_frames(self):
        return int(math.floor(self.duration * self.fps + 1e-9))

    def frame_time(self, i):
        return i / self.fps

    def frame(self, i):
        """Frame i, uint8 [H, W, 3] RGB."""
        t = self.frame_time(i)
        img = self.base.copy()
        if self.noise_fresh:
            nrng = np.random.default_rng(self.noise_seed + [i])
        else:
            nrng = np.random.default_rng(self.noise_seed)
        noise = nrng.standard_normal((self.H, self.W, 3), dtype=np.float32) * 6.0
        if not self.noise_over_objects:
            img += noise
        for o in self.objects:
            cx, cy = self.centre(o, t)
            self._paint(img, o["shape"], cx, cy, o["size"], o["colour"])
        if self.noise_over_objects:
            img += noise
        return np.clip(np.rint(img), 0, 255).astype(np.uint8)

    # -- sound ----------------------------------------------------------

    def audio(self):
        """Mono float32 samples of the whole scene."""
        sr = self.sr
        n = int(round(self.duration * sr))
        rng = np.random.default_rng(self.rng_audio_seed)
        x = np.zeros(n)
        all_gains = []
        for (t0, t1, what, p) in self.timeline:
            if what == "gap":
                continue
            a, b = int(round(t0 * sr)), int(round(t1 * sr))
            if b <= a:
                continue
            env = ramp(b - a, sr)
            for k, g in zip(p["kinds"], p["gains"]):
                x[a:b] += g * env * kind_waveform(k, b - a, sr, rng)
                all_gains.append(g)
        mean_rms = float(np.mean(all_gains)) if all_gains else 0.1
        noise_rms = mean_rms / (10 ** (self.snr_db / 20.0))
        x += rng.standard_normal(n) * noise_rms
        return np.clip(x, -1.0, 1.0).astype(np.float32)

    # -- truth (spec section 2, last part) -------------------------------

    def state_at(self, t):
        for iv in self.timeline:
            if iv[0] <= t < iv[1]:
                return iv
        return None

    def truth(self, i):
        t = self.frame_time(i)
        iv = self.state_at(t)
        sources, kinds = [], []
        if iv is not None and iv[2] == "onscreen":
            sources = list(iv[3]["sources"])
            kinds = list(iv[3]["kinds"])
        steady = False
        if t - 1.0 >= 0:
            for (t0, t1, _w, _p) in self.timeline:
                if t0 <= t - 1.0 and t <= t1:
                    steady = True
                    break
        boxes = [self.box(self.objects[s], t) for s in sources]
        sound_kinds = list(iv[3]["kinds"]) if iv is not None and iv[2] != "gap" else []
        return dict(frame=i, t=t, sources=sources, kinds=kinds, negative=not sources,
                    steady=steady, boxes=boxes, state=(iv[2] if iv else "end"),
                    segment_start=(iv[0] if iv else self.duration),
                    sound_kinds=sound_kinds)

    def truth_tsv(self):
        fr = self.fps
        num, den = (int(fr), 1) if float(fr).is_integer() else (int(round(fr * 1001)), 1001)
        lines = [f"# {WORLD} truth  width={self.W} height={self.H} fps={num}/{den} "
                 f"seed={self.seed} duration={self.duration:g}",
                 "# objects " + " ".join(f"{o['id']}:{KIND_NAMES[o['kind']]}:{o['shape']}"
                                         for o in self.objects),
                 "frame\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes"]
        for i in range(self.n_frames()):
            tr = self.truth(i)
            pts = int(round(i * 1e9 / fr))
            src = ",".join(str(s) for s in tr["sources"]) or "-"
            kin = ",".join(str(k) for k in tr["kinds"]) or "-"
            box = ";".join(",".join(f"{v:.1f}" for v in b) for b in tr["boxes"]) or "-"
            lines.append(f"{i}\t{pts}\t{int(tr['steady'])}\t{int(tr['negative'])}\t{src}\t{kin}\t{box}")
        return "\n".join(lines) + "\n"


def read_truth_tsv(path):
    """The truth file as (header dict, list of row dicts)."""
    head = {}
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# objects "):
                head["objects"] = [tuple(o.split(":")) for o in line[len("# objects "):].split()]
                continue
            if line.startswith("#"):
                for tok in line[1:].split():
                    if "=" in tok:
                        k, v = tok.split("=", 1)
                        head[k] = v
                continue
            if line.startswith("frame") or not line.strip():
                continue
            c = line.split("\t")
            boxes = [] if c[6] == "-" else [tuple(float(v) for v in b.split(",")) for b in c[6].split(";")]
            rows.append(dict(frame=int(c[0]), pts=int(c[1]), steady=c[2] == "1",
                             negative=c[3] == "1",
                             sources=[] if c[4] == "-" else [int(s) for s in c[4].split(",")],
                             kinds=[] if c[5] == "-" else [int(s) for s in c[5].split(",")],
                             boxes=boxes))
    return head, rows


# --------------------------------------------------------------------------
# encoding through GStreamer
# --------------------------------------------------------------------------

def _fps_caps(fps):
    if float(fps).is_integer():
        return f"{int(fps)}/1"
    return f"{int(round(fps * 1001))}/1001"


def encode(scene, path, quality=None, channels=None, log=None):
    """Writes the scene as a clip (container and codecs from the suffix) and
    its truth file beside it.  ``quality``: encoder bitrate in kbit/s (None:
    a default for the frame size)."""
    W, H = scene.W, scene.H
    ext = os.path.splitext(path)[1].lower()
    ch = channels or scene.channels
    kbps = quality or max(300, int(W * H * scene.fps / 1e6 * 80))
    if ext == ".mp4":
        venc = f"x264enc bitrate={kbps} speed-preset=veryfast key-int-max=60 ! h264parse"
        aenc = "avenc_aac bitrate=96000 ! aacparse"
        mux = "mp4mux"
    elif ext == ".webm":
        venc = f"vp8enc target-bitrate={kbps * 1000} deadline=1 cpu-used=8 keyframe-max-dist=60"
        aenc = "vorbisenc quality=0.4"
        mux = "webmmux"
    elif ext == ".mkv":
        venc = f"x264enc bitrate={kbps} speed-preset=veryfast ! h264parse"
        aenc = "vorbisenc"
        mux = "matroskamux"
    else:
        raise ValueError(f"{path}: unknown container (use .mp4, .webm or .mkv)")
    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "a.raw")
        a = scene.audio()
        if ch > 1:
            a = np.repeat(a[:, None], ch, axis=1)
        a.astype("<f4").tofile(wav)
        cmd = ["gst-launch-1.0", "-q",
               "fdsrc", "fd=0", "!",
               "rawvideoparse", f"width={W}", f"height={H}", "format=rgb",
               f"framerate={_fps_caps(scene.fps)}", "!",
               "videoconvert", "!", "video/x-raw,format=I420", "!", *venc.split(), "!",
               "queue", "!", "mux.",
               "filesrc", f"location={wav}", "!",
               "rawaudioparse", "format=pcm", "pcm-format=f32le",
               f"sample-rate={scene.sr}", f"num-channels={ch}", "!",
               "audioconvert", "!", *aenc.split(), "!", "queue", "!", "mux.",
               mux, "name=mux", "!", "filesink", f"location={path}"]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log or subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        try:
            for i in range(scene.n_frames()):
                p.stdin.write(scene.frame(i).tobytes())
            p.stdin.close()
        except BrokenPipeError:
            pass
        err = p.stderr.read().decode(errors="replace")
        rc = p.wait()
        if rc != 0:
            raise RuntimeError(f"encoding {path} failed ({rc}): {err.strip()}")
    truth = os.path.splitext(path)[0] + ".truth.tsv"
    with open(truth, "w") as f:
        f.write(scene.truth_tsv())
    return truth


def parse_size(s):
    w, h = s.lower().split("x")
    return int(w), int(h)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("render", "truth"):
        p = sub.add_parser(name)
        p.add_argument("--seed", type=int, required=True)
        p.add_argument("--size", type=parse_size, default=(1280, 720))
        p.add_argument("--fps", type=float, default=30.0)
        p.add_argument("--duration", type=float, default=20.0)
        p.add_argument("--sample-rate", type=int, default=48000)
        p.add_argument("--channels", type=int, default=1)
        p.add_argument("--plain", action="store_true",
                       help="no drawn variants of the page's open choices")
        if name == "render":
            p.add_argument("--out", required=True, help="clip path: .mp4, .webm or .mkv")
            p.add_argument("--kbps", type=int, default=None)
    a = ap.parse_args(argv)
    sc = Scene(a.seed, a.size[0], a.size[1], a.fps, a.duration, a.sample_rate,
               variants=not a.plain, channels=a.channels)
    if a.cmd == "truth":
        sys.stdout.write(sc.truth_tsv())
        return 0
    truth = encode(sc, a.out, quality=a.kbps)
    print(f"wrote {a.out} and {truth}: {len(sc.objects)} objects, "
          f"{sum(1 for iv in sc.timeline if iv[2] != 'gap')} segments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
