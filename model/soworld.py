#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The sounding-objects world (shared spec sounding-objects.md, version 1,
and sounding-objects-2.md, version 2).

Coloured objects among grey clutter; one object (sometimes two) sounds at a
time and its kind fixes both its colour and its sound; between the segments
come silences and sounds of kinds that are not in the picture.  Everything is
drawn from a seed, so a scene is the same on every machine.

Version 2 (``world=2``) adds rhythm and look-alikes: every object pulses
with an envelope e(t) of its own (it swells and brightens with it), a source
sounds only while its envelope is up, and with probability 0.6 a scene holds
two objects of the same kind.  ``world=1`` (the default) renders exactly
what this module rendered before version 2 existed, byte for byte.

* ``Scene(seed, width, height, fps, duration, sample_rate, world=1)`` draws
  a scene; ``scene.frame(i)`` is frame i as uint8 [H, W, 3] RGB,
  ``scene.audio()`` the mono float32 samples, ``scene.truth(i)`` the truth
  of frame i, ``scene.world_name`` "sounding-objects-v1" or "-v2".
* World 2: ``scene.envelope(obj, t)`` is e(t) of an object (t a number or
  an array of times), ``scene.pair`` the ids of the look-alike pair (or
  None), ``scene.noise_rms()`` the background noise's RMS.
* ``encode(scene, path)`` writes the scene as a clip through GStreamer
  (``.mp4``: H.264 + AAC, ``.webm``: VP8 + Vorbis, ``.mkv``: H.264 + Vorbis)
  and the truth file beside it (``<clip without extension>.truth.tsv``).

Command line::

    soworld.py render --seed 7 --size 1280x720 --fps 30 --duration 20 --out scene.mp4
    soworld.py truth  --seed 7 --size 1280x720 --fps 30 --duration 20   # truth to stdout
    soworld.py render --world 2 --seed 7 --out scene.webm                # version 2

Where the page leaves a choice open (noise fresh each frame or fixed; noise
over the objects or only the background; the size of a diamond; a long gap
or a short one when both could fall), ``variant`` draws it from the seed too
when asked (``variants=True``), so that a model trained on these scenes does
not learn one renderer's habits.

Choices this module makes where version 2's page leaves them open:

* The first interval of an envelope is "cut to a uniform fraction of its
  drawn length (a random phase)": it is the tail of an interval that began
  before t = 0, so a first on interval starts ramped up already (its ramp
  lies before 0) and is never shorter than the page's 80 ms in its ramps.
* Each off-screen segment's sound is gated by an envelope of its own (drawn
  from the segment's own stream, over the whole clip like an object's, and
  read inside the segment); no object follows it.
* The background noise keeps version 1's level: its RMS is the mean of the
  sources' gains (their RMS while their envelope is 1) over 10^(SNR/20).
  Gating lowers the sources' long-run RMS (by about 3 dB at the envelopes'
  average duty), not the noise.
* The look-alike pair is objects 0 and 1 (their cells are drawn at random
  as for every object); a first segment, which has no previous source,
  picks one of the pair with probability 0.6 like the others.
* Envelopes come from streams of their own ([seed, 0x53, object] and
  [seed, 0x54, segment]), so they change nothing else that is drawn.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

WORLD = "sounding-objects-v1"          # the world of world=1 (the v1 model's)
WORLDS = {1: "sounding-objects-v1", 2: "sounding-objects-v2"}
KIND_NAMES = ("red", "yellow", "green", "cyan", "blue", "magenta")
KIND_HUES = (0.0, 60.0, 120.0, 180.0, 240.0, 300.0)
SHAPES = ("disk", "square", "triangle", "diamond")
RAMP_S = 0.010
# version 2, section 1: envelope intervals (s), ramps, swelling
ENV_ON_S = (0.08, 0.30)
ENV_OFF_S = (0.06, 0.25)
ENV_RAMP_S = 0.020
SWELL_SIZE = 0.3                       # drawn size = size * (1 + 0.3 e)
SWELL_DIM = 0.7                        # drawn RGB = colour * (0.7 + 0.3 e)
PAIR_P = 0.6                           # a scene holds a look-alike pair
PAIR_SOURCE_P = 0.6                    # a segment's source is one of the pair


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


class Envelope:
    """An envelope e(t) in [0, 1] (version 2, section 1), drawn from ``rng``
    for t in [0, duration]: alternating on intervals of 0.08-0.30 s and off
    intervals of 0.06-0.25 s, the state at 0 on or off with probability 0.5,
    the first interval cut to a uniform fraction of its drawn length (the
    tail of an interval that began before 0); raised-cosine 20 ms ramps at
    both ends of each on interval, 0 in the off intervals.  Kept as the on
    intervals' starts and ends, so e is evaluated for any array of times."""

    def __init__(self, rng, duration):
        on = bool(rng.random() < 0.5)
        length = rng.uniform(*(ENV_ON_S if on else ENV_OFF_S))
        t = rng.random() * length          # end of the first interval
        starts, ends = [], []
        if on:
            starts.append(t - length)
            ends.append(t)
        while t < duration:
            on = not on
            length = rng.uniform(*(ENV_ON_S if on else ENV_OFF_S))
            if on:
                starts.append(t)
                ends.append(t + length)
            t += length
        self.starts = np.array(starts, dtype=np.float64)
        self.ends = np.array(ends, dtype=np.float64)

    def __call__(self, t):
        """e at time(s) t (seconds): a float for a number, else an array."""
        tt = np.asarray(t, dtype=np.float64)
        if len(self.starts) == 0:
            e = np.zeros(tt.shape)
        else:
            i = np.searchsorted(self.starts, tt, side="right") - 1
            ic = np.maximum(i, 0)
            s, f = self.starts[ic], self.ends[ic]
            d = np.minimum(tt - s, f - tt)      # distance to the nearer end
            x = np.clip(d / ENV_RAMP_S, 0.0, 1.0)
            e = np.where((i >= 0) & (tt < f), 0.5 - 0.5 * np.cos(np.pi * x), 0.0)
        return float(e) if e.ndim == 0 else e

    def on_intervals(self):
        """[(start, end)] of the on intervals (the first may start before 0)."""
        return list(zip(self.starts.tolist(), self.ends.tolist()))


# --------------------------------------------------------------------------
# a scene (spec section 2)
# --------------------------------------------------------------------------

class Scene:
    """One scene of the world (version ``world``, 1 or 2), drawn from ``seed``."""

    def __init__(self, seed, width=1280, height=720, fps=30.0, duration=20.0,
                 sample_rate=48000, variants=True, channels=1, world=1):
        if world not in WORLDS:
            raise ValueError(f"world {world!r}: 1 or 2")
        self.world = int(world)
        self.world_name = WORLDS[self.world]
        self.seed = int(seed)
        self.W, self.H = int(width), int(height)
        self.fps = fps
        self.duration = float(duration)
        self.sr = int(sample_rate)
        self.channels = channels
        rng = np.random.default_rng([self.seed, 0x50])
        self.rng_audio_seed = [self.seed, 0x51]
        self.noise_seed = [self.seed, 0x52]
        # the draws of the page, in this order (worlds 1 and 2 reproduce
        # byte for byte from the seed)
        self._draw_variants(rng, variants)
        self._draw_background(rng)
        self._draw_objects(rng)
        self._draw_timeline(rng)
        self.snr_db = rng.uniform(0, 30)

    def _draw_variants(self, rng, variants):
        """The ambiguities of the page, drawn per scene (three draws)."""
        if variants:
            self.noise_fresh = rng.random() < 0.75
            self.noise_over_objects = rng.random() < 0.5
            self.diamond_diag = rng.random() < 0.7
        else:
            rng.random(); rng.random(); rng.random()
            self.noise_fresh, self.noise_over_objects, self.diamond_diag = True, False, True

    def _draw_background(self, rng):
        """self.base: a vertical gradient between two low-saturation colours
        with static unsaturated clutter on it."""
        W, H = self.W, self.H
        m = min(W, H)
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

    def _draw_objects(self, rng):
        """self.objects (and self.pair): K in 2..6 objects in K cells of the
        3 x 2 grid, of K kinds (world 2: maybe a pair of one kind)."""
        v2 = self.world == 2
        W, H = self.W, self.H
        m = min(W, H)
        K = int(rng.integers(2, 7))
        cells = rng.permutation(6)[:K]
        self.pair = None
        if not v2:
            kinds = rng.permutation(6)[:K]
        else:
            # version 2: with p 0.6 objects 0 and 1 are a pair of one kind,
            # the others of kinds different from it and from each other
            has_pair = rng.random() < PAIR_P
            perm = rng.permutation(6)
            if has_pair:
                kinds = [perm[0], perm[0]] + list(perm[1:K - 1])
                self.pair = (0, 1)
            else:
                kinds = perm[:K]
        grow = (1.0 + SWELL_SIZE) if v2 else 1.0    # the largest drawn size
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
                amax = max(0.0, (side - 2 * grow * half) / 2.0)
                motion.append((rng.uniform(0, amax), rng.uniform(0.1, 0.4),
                               rng.uniform(0, 2 * np.pi)))
            self.objects.append(dict(id=j, kind=kind, shape=shape, size=size,
                                     colour=colour, cx=(col_i + 0.5) * cw,
                                     cy=(row_i + 0.5) * ch, motion=motion,
                                     half=(hw, hh)))
            if v2:      # its own stream: nothing else drawn changes
                self.objects[-1]["envelope"] = Envelope(
                    np.random.default_rng([self.seed, 0x53, j]), self.duration)

    def _draw_timeline(self, rng):
        """self.timeline: the sound's segments, gaps, two at once,
        off-screen."""
        v2 = self.world == 2
        K = len(self.objects)
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
                if self.pair is not None and rng.random() < PAIR_SOURCE_P:
                    choices = [j for j in self.pair if j != prev]
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
            payload = dict(sources=src, kinds=kinds_s, gains=gains)
            if v2 and offscreen:    # the off-screen sound's own envelope
                payload["gate"] = Envelope(
                    np.random.default_rng([self.seed, 0x54, len(self.timeline)]),
                    self.duration)
            self.timeline.append((t, end, "offscreen" if offscreen else "onscreen",
                                  payload))
            t += seg_len
            first = False

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

    def envelope(self, obj, t):
        """e(t) of an object (its dict or id), version 2; 1 in version 1
        (objects do not pulse there).  t a number or an array of times."""
        if isinstance(obj, (int, np.integer)):
            obj = self.objects[int(obj)]
        env = obj.get("envelope")
        if env is None:
            return 1.0 if np.ndim(t) == 0 else np.ones(np.shape(t))
        return env(t)

    def drawn_scale(self, obj, t):
        """The object's drawn size over its size at t: 1 + 0.3 e(t) in
        version 2, 1 in version 1."""
        if self.world == 1:
            return 1.0
        return 1.0 + SWELL_SIZE * self.envelope(obj, t)

    def box(self, obj, t):
        """The object's bounding box at t (at the drawn size in version 2)."""
        cx, cy = self.centre(obj, t)
        hw, hh = obj["half"]
        if self.world != 1:
            g = self.drawn_scale(obj, t)
            hw, hh = hw * g, hh * g
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
            if self.world == 1:
                self._paint(img, o["shape"], cx, cy, o["size"], o["colour"])
            else:           # swelling: size and brightness follow e(t)
                e = self.envelope(o, t)
                self._paint(img, o["shape"], cx, cy, o["size"] * (1.0 + SWELL_SIZE * e),
                            o["colour"] * np.float32(SWELL_DIM + (1.0 - SWELL_DIM) * e))
        if self.noise_over_objects:
            img += noise
        return np.clip(np.rint(img), 0, 255).astype(np.uint8)

    # -- sound ----------------------------------------------------------

    def _sounding(self):
        """(start sample, end sample, payload) of each segment that sounds."""
        sr = self.sr
        for (t0, t1, what, p) in self.timeline:
            if what == "gap":
                continue
            a, b = int(round(t0 * sr)), int(round(t1 * sr))
            if b > a:
                yield a, b, what, p

    def noise_rms(self):
        """The background noise's RMS: the mean source gain (RMS while a
        source's envelope is 1) over 10^(SNR/20), as in version 1."""
        all_gains = [g for _a, _b, _w, p in self._sounding() for g in p["gains"]]
        mean_rms = float(np.mean(all_gains)) if all_gains else 0.1
        return mean_rms / (10 ** (self.snr_db / 20.0))

    def audio(self):
        """Mono float32 samples of the whole scene."""
        sr = self.sr
        n = int(round(self.duration * sr))
        rng = np.random.default_rng(self.rng_audio_seed)
        x = np.zeros(n)
        for a, b, what, p in self._sounding():
            env = ramp(b - a, sr)
            if self.world != 1:
                ts = np.arange(a, b, dtype=np.float64) / sr
            for j, (k, g) in enumerate(zip(p["kinds"], p["gains"])):
                if self.world == 1:
                    x[a:b] += g * env * kind_waveform(k, b - a, sr, rng)
                    continue
                # version 2: the source's own envelope (or the off-screen
                # sound's) gates it
                gate = p["gate"] if what == "offscreen" else \
                    self.objects[p["sources"][j]]["envelope"]
                x[a:b] += g * env * gate(ts) * kind_waveform(k, b - a, sr, rng)
        x += rng.standard_normal(n) * self.noise_rms()
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
        # version 2, section 3: one source, and another object of its kind
        lookalike = len(sources) == 1 and any(
            o["id"] != sources[0] and o["kind"] == kinds[0] for o in self.objects)
        return dict(frame=i, t=t, sources=sources, kinds=kinds, negative=not sources,
                    steady=steady, boxes=boxes, state=(iv[2] if iv else "end"),
                    segment_start=(iv[0] if iv else self.duration),
                    sound_kinds=sound_kinds, lookalike=lookalike)

    def truth_tsv(self):
        """The truth file's text.  Version 1: the columns frame .. boxes, as
        always; version 2: "world=2" on the first line and a last column
        lookalike (0 or 1)."""
        fr = self.fps
        v2 = self.world != 1
        num, den = (int(fr), 1) if float(fr).is_integer() else (int(round(fr * 1001)), 1001)
        lines = [f"# {self.world_name} truth  width={self.W} height={self.H} fps={num}/{den} "
                 f"seed={self.seed} duration={self.duration:g}"
                 + (f" world={self.world}" if v2 else ""),
                 "# objects " + " ".join(f"{o['id']}:{KIND_NAMES[o['kind']]}:{o['shape']}"
                                         for o in self.objects),
                 "frame\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes"
                 + ("\tlookalike" if v2 else "")]
        for i in range(self.n_frames()):
            tr = self.truth(i)
            pts = int(round(i * 1e9 / fr))
            src = ",".join(str(s) for s in tr["sources"]) or "-"
            kin = ",".join(str(k) for k in tr["kinds"]) or "-"
            box = ";".join(",".join(f"{v:.1f}" for v in b) for b in tr["boxes"]) or "-"
            lines.append(f"{i}\t{pts}\t{int(tr['steady'])}\t{int(tr['negative'])}\t{src}\t{kin}\t{box}"
                         + (f"\t{int(tr['lookalike'])}" if v2 else ""))
        return "\n".join(lines) + "\n"


def read_truth_tsv(path):
    """The truth file as (header dict, list of row dicts).  Reads both
    versions: the columns are found by the header line's names; a file
    without the version-2 column lookalike (version 1) reads it as False,
    which is its truth there (no two objects share a kind)."""
    head = {}
    rows = []
    col = None
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
            if not line.strip():
                continue
            if col is None and line.split("\t")[0] == "frame":
                col = {name: k for k, name in enumerate(line.split("\t"))}
                continue
            if col is None:     # no header line yet: version 1's order
                col = {name: k for k, name in enumerate(
                    ("frame", "pts_ns", "steady", "negative", "sources", "kinds", "boxes"))}
            c = line.split("\t")
            bx = c[col["boxes"]]
            boxes = [] if bx == "-" else [tuple(float(v) for v in b.split(",")) for b in bx.split(";")]
            src, kin = c[col["sources"]], c[col["kinds"]]
            rows.append(dict(frame=int(c[col["frame"]]), pts=int(c[col["pts_ns"]]),
                             steady=c[col["steady"]] == "1",
                             negative=c[col["negative"]] == "1",
                             sources=[] if src == "-" else [int(s) for s in src.split(",")],
                             kinds=[] if kin == "-" else [int(s) for s in kin.split(",")],
                             boxes=boxes,
                             lookalike=("lookalike" in col and c[col["lookalike"]] == "1")))
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
        p.add_argument("--world", type=int, choices=sorted(WORLDS), default=1,
                       help="1: sounding-objects.md (default), 2: sounding-objects-2.md "
                            "(rhythm and look-alikes)")
        if name == "render":
            p.add_argument("--out", required=True, help="clip path: .mp4, .webm or .mkv")
            p.add_argument("--kbps", type=int, default=None)
    a = ap.parse_args(argv)
    sc = Scene(a.seed, a.size[0], a.size[1], a.fps, a.duration, a.sample_rate,
               variants=not a.plain, channels=a.channels, world=a.world)
    if a.cmd == "truth":
        sys.stdout.write(sc.truth_tsv())
        return 0
    truth = encode(sc, a.out, quality=a.kbps)
    print(f"wrote {a.out} and {truth}: "
          + (f"{sc.world_name}, " if sc.world != 1 else "")
          + f"{len(sc.objects)} objects"
          + (", a look-alike pair" if sc.pair else "") + ", "
          f"{sum(1 for iv in sc.timeline if iv[2] != 'gap')} segments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
