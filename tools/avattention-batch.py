#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""avattention-batch: avattention-run over a collection of clips, on Dask.

    avattention-batch INPUTS... --out DIR [--weights F] [--video]
        [--scheduler tcp://HOST:PORT | --workers N] [--retry-failed]

INPUTS are clips, folders (searched recursively for the containers decodebin
reads, by extension) and list files: an argument "@FILE", or a file whose
name ends in ".txt", holds one path per line, taken as written, spaces
included (blank lines and lines whose first non-space character is "#" are
skipped; spaces around a path are dropped only when the path as written does
not exist and the path without them does; relative paths are relative to the
current folder, as for the command line).  The output folder DIR is never searched.

Each clip is one Dask task that runs avattention-run as a subprocess (one
OpenBLAS thread) into a temporary folder DIR/<name>/.partial-*, checks the
result and moves it into place with os.replace: DIR/<name>/features.npz, and
DIR/<name>/annotated.webm with --video.  <name> is the clip's file name
without its extension; when clips of different folders share it, each gets
"-" and the first 8 hex digits of the SHA-1 of its absolute path
(clips/a/x.webm -> x-1b2c3d4e), and a clip keeps the name the manifest gave
it on earlier runs.

DIR/manifest.jsonl gets one JSON line per finished clip, written by this
process only: path, name, status (done/failed), frames, media_seconds,
wall_seconds (the task), run_seconds (avattention-run in it), worker, host,
error, finished.  The last line of a path wins.  A rerun
skips the clips that are done and whose outputs are still valid, and the
failed ones unless --retry-failed.

Without --scheduler, a local Dask cluster of --workers workers (default:
the number of cores) runs the clips and is stopped at the end; the workers
live in this process, and each runs one avattention-run process at a time,
with --threads fusion threads (default: the cores divided among the
workers).  With --scheduler, an existing cluster (dask-scheduler,
dask-worker) does, one avattention-run --threads 1 per worker thread; the
workers must reach the clips, DIR, avattention-run and the plugin by the
same paths (a shared file system).

Exit status: the number of clips of INPUTS whose latest status is failed
(at most 125), 0 when none; 2 for bad arguments; 130 when interrupted
(SIGINT/SIGTERM: the manifest holds what finished; run again to go on).
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

# Filled in by meson (tools/meson.build); left as they are in the source tree.
BINDIR = "@BINDIR@"
BUILD_TOOLS_DIR = "@BUILD_TOOLS_DIR@"
PLUGIN_BUILD_DIR = "@PLUGIN_BUILD_DIR@"

# The containers decodebin reads, by extension (case does not matter).
CLIP_EXTENSIONS = {
    ".webm", ".mkv", ".mk3d", ".mp4", ".m4v", ".mov", ".qt", ".3gp", ".3g2",
    ".ogg", ".ogv", ".ogx", ".avi", ".flv", ".ts", ".mts", ".m2ts", ".mpg",
    ".mpeg", ".vob", ".wmv", ".asf", ".dv", ".mxf", ".nut", ".y4m",
}
LIST_EXTENSIONS = {".txt"}
MANIFEST = "manifest.jsonl"
NPZ = "features.npz"
WEBM = "annotated.webm"
# keys avattention-run's avtensorsink always writes, one row per frame
NPZ_FRAME_KEYS = ("data", "pts", "duration", "audio_mask", "sound_visible")
# avattention-run killed by one of these: the machine or the user stopped
# it, not the clip; the task raises and Dask retries it (--retries)
RETRY_SIGNALS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def configured(value):
    return value if value and not value.startswith("@") else None


# ---------------------------------------------------------------------------
# The task: runs on a Dask worker.  Pickled by value (this file is __main__),
# so a worker needs Debian's python3-distributed but not this script.

def npy_header(f):
    """(shape, item size, header length) of the .npy file open as F."""
    import ast
    import struct

    magic = f.read(8)
    if magic[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy member")
    if magic[6] == 1:
        n = struct.unpack("<H", f.read(2))[0]
        start = 10
    else:
        n = struct.unpack("<I", f.read(4))[0]
        start = 12
    h = ast.literal_eval(f.read(n).decode("latin1"))
    if h.get("fortran_order") or not isinstance(h.get("shape"), tuple):
        raise ValueError("unexpected .npy header %r" % (h,))
    # "<f4", "<i8", "|b1": the kind, then the item size in bytes
    item = int(h["descr"][2:]) if h["descr"][1:2] in ("f", "i", "u", "b") else 0
    return h["shape"], item, start + n


def check_npz(path, frames=None):
    """None when PATH is a complete features.npz (of FRAMES frames when
    given), else what is wrong with it.  Reads the zip's directory and the
    header of each per-frame array: every one must have the same number of
    rows and exactly the bytes its header announces (no numpy needed)."""
    import math
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            infos = {i.filename: i for i in z.infolist()}
            missing = [k for k in NPZ_FRAME_KEYS if k + ".npy" not in infos]
            if missing:
                return "no %s in %s" % (", ".join(missing), path)
            rows = set()
            for k in NPZ_FRAME_KEYS:
                with z.open(k + ".npy") as f:
                    shape, item, head = npy_header(f)
                size = item * math.prod(shape)
                if item == 0 or not shape or infos[k + ".npy"].file_size != head + size:
                    return "%s: %s.npy is not a complete array" % (path, k)
                rows.add(shape[0])
        if len(rows) != 1:
            return "%s: the arrays have different frame counts %s" % (path, sorted(rows))
        n = rows.pop()
        if frames is not None and n != frames:
            return "%s has %d frames, %d expected" % (path, n, frames)
        if n == 0:
            return "%s has no frames" % path
    except (OSError, ValueError, KeyError, SyntaxError, zipfile.BadZipFile) as e:
        return "%s: %s" % (path, e)
    return None


def check_webm(path):
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x1a\x45\xdf\xa3":
                return "%s is not a WebM file" % path
    except OSError as e:
        return "%s: %s" % (path, e.strerror)
    return None


class ClipAttempt:
    """One attempt of process_clip at a spec: where it runs, its trace
    events and its result records."""

    def __init__(self, spec):
        import os
        import socket
        import time

        self.t0 = time.monotonic()
        self.spec = spec
        self.clip, self.name = spec["clip"], spec["name"]
        self.cdir, self.token = spec["dir"], spec["token"]
        self.host, self.pid = socket.gethostname(), os.getpid()
        try:
            from distributed import get_worker
            self.worker = get_worker().address
        except (ImportError, ValueError):
            self.worker = "local"
        self.run_seconds = None

    def trace(self, event, **kw):
        import json
        import time

        if self.spec.get("trace"):
            rec = dict(event=event, name=self.name, token=self.token,
                       host=self.host, pid=self.pid, worker=self.worker,
                       time=time.time(), **kw)
            with open(self.spec["trace"], "a") as f:
                f.write(json.dumps(rec) + "\n")

    def result(self, status, error=None, frames=None, media=None):
        import time

        return dict(path=self.clip, name=self.name, status=status,
                    frames=frames, media_seconds=media,
                    wall_seconds=round(time.monotonic() - self.t0, 3),
                    run_seconds=self.run_seconds,
                    worker=self.worker, host=self.host, error=error)

    def finish(self, commit):
        """The outcome of the attempt that committed first."""
        import json
        import os
        import shutil

        with open(commit) as f:
            rec = json.load(f)
        for src, dst in rec["moves"]:
            try:
                os.replace(src, dst)
                self.trace("commit", file=os.path.basename(dst))
            except FileNotFoundError:
                pass                  # moved already
        shutil.rmtree(rec["partial"], ignore_errors=True)
        self.trace("recovered", by=rec["result"]["worker"])
        return rec["result"]


def remove_leftovers(cdir, token, host, pid):
    """Removes from CDIR the leftovers of earlier batch runs, and of
    attempts of this one (TOKEN) whose worker died on this host."""
    import os
    import shutil

    for entry in os.listdir(cdir):
        path = os.path.join(cdir, entry)
        if entry.startswith(".commit-") and token not in entry:
            os.unlink(path)
        elif entry.startswith(".partial-"):
            parts = entry[len(".partial-"):].rsplit("-", 1)
            if len(parts) != 2 or not parts[1].isdigit():
                continue
            stale = not parts[0].startswith(token + "-")
            if not stale and parts[0] == "%s-%s" % (token, host) and \
                    int(parts[1]) != pid:
                try:
                    os.kill(int(parts[1]), 0)
                except ProcessLookupError:
                    stale = True
                except PermissionError:
                    pass
            if stale:
                shutil.rmtree(path, ignore_errors=True)


def run_command(spec, partial):
    """(run, the command line, its environment) of avattention-run on the
    clip of SPEC, into the folder PARTIAL."""
    import os
    import shutil

    run = spec["run"]
    if not os.access(run, os.X_OK):
        run = shutil.which("avattention-run") or run
    cmd = [run, spec["clip"], "--out", partial] + spec["run_args"]
    if not spec["video"]:
        cmd.append("--no-video-out")
    setpriv = shutil.which("setpriv")
    if setpriv:
        # avattention-run dies with this worker instead of running on
        cmd = [setpriv, "--pdeathsig", "KILL", "--"] + cmd
    env = dict(os.environ)
    for k, v in spec["env_fallback"].items():
        env.setdefault(k, v)
    env.update(spec["env"])
    return run, cmd, env


def run_failure(att, p, err, frames, media):
    """The failed result of the finished avattention-run P (ERR: its
    standard error), None when it succeeded; raises when it was killed by
    one of RETRY_SIGNALS."""
    import os
    import signal

    if p.returncode < 0:
        sig = -p.returncode
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = "signal %d" % sig
        if sig in RETRY_SIGNALS:
            raise RuntimeError("avattention-run killed by %s on %s" % (signame, att.host))
        return att.result("failed", "avattention-run crashed (%s)%s" % (
            signame, ": " + err.strip().splitlines()[-1] if err.strip() else ""))
    if p.returncode != 0:
        reason = None
        lines = [l.strip() for l in err.splitlines() if l.strip()]
        for l in lines:
            head, sep, rest = l.partition(": ")
            if sep and os.path.basename(head) == "avattention-run" and \
                    not rest.startswith("warning from"):
                reason = rest
                break
        if reason is None and frames == 0:
            reason = "no frame came out of the pipeline"
        if reason is None:
            reason = lines[0] if lines else "no message"
        return att.result("failed", "avattention-run exit %d: %s" % (p.returncode, reason),
                          frames=frames, media=media)
    return None


def run_clip(att, partial):
    """Runs avattention-run on the clip into PARTIAL: (the failed result or
    None, frames, media seconds)."""
    import subprocess
    import time

    spec = att.spec
    run, cmd, env = run_command(spec, partial)
    t_run = time.monotonic()
    try:
        # a session of its own: a Ctrl-C at the terminal reaches the
        # batch, which stops its runs in order, not avattention-run
        p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=spec["timeout"] or None,
                           start_new_session=True)
        att.run_seconds = round(time.monotonic() - t_run, 3)
    except subprocess.TimeoutExpired:
        return att.result("failed", "timed out after %g s" % spec["timeout"]), None, None
    except OSError as e:
        raise RuntimeError("cannot start %s on %s: %s" % (run, att.host, e.strerror))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    frames = media = None
    for line in out.splitlines():
        if line.startswith("frames:"):
            frames = int(line.split()[1])
        elif line.startswith("duration:"):
            media = float(line.split()[1])
    return run_failure(att, p, err, frames, media), frames, media


def commit_outputs(att, partial, commit, frames, media):
    """Checks the outputs in PARTIAL, writes the commit record COMMIT (or
    finds another attempt's) and moves the outputs to their final names."""
    import json
    import os

    spec, cdir, host, pid = att.spec, att.cdir, att.host, att.pid
    npz = os.path.join(partial, NPZ)
    bad = check_npz(npz, frames)
    if bad is None and spec["video"]:
        bad = check_webm(os.path.join(partial, WEBM))
    if bad is not None:
        return att.result("failed", "bad output: " + bad, frames=frames, media=media)
    moves = [(npz, os.path.join(cdir, NPZ))]
    if spec["video"]:
        moves.append((os.path.join(partial, WEBM), os.path.join(cdir, WEBM)))
    if spec["fsync"]:
        for src, _ in moves:
            fd = os.open(src, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    res = att.result("done", frames=frames, media=media)
    # the commit record: from here on, any other attempt of this task
    # finishes these moves instead of running again
    tmp = "%s.%s-%d.tmp" % (commit, host, pid)
    with open(tmp, "w") as f:
        json.dump(dict(moves=moves, partial=partial, result=res), f)
        f.flush()
        if spec["fsync"]:
            os.fsync(f.fileno())
    try:
        os.link(tmp, commit)
    except FileExistsError:       # another attempt committed first
        os.unlink(tmp)
        return att.finish(commit)
    os.unlink(tmp)
    for src, dst in moves:
        os.replace(src, dst)
        att.trace("commit", file=os.path.basename(dst))
    return res


def process_clip(spec):
    """Runs avattention-run on one clip and moves its outputs into place.

    Idempotent for a given spec["token"] (one per batch run): the first
    attempt to finish creates the commit record DIR/<name>/.commit-TOKEN.json
    (os.link, which fails when it exists) and only then moves its outputs to
    their final names.  Any other attempt of the same task -- Dask runs a
    task again when its worker dies, even after its result was delivered --
    finds the record, finishes the moves the first one may have left undone
    (each os.replace of a temporary file succeeds once) and returns the
    recorded result; so no final file is written twice in a run, and none
    is ever partial.  The client removes the records at the end of the run.
    Clip problems come back as status "failed"; problems of the machine
    (avattention-run cannot start or is killed) raise, and Dask retries."""
    import os
    import shutil

    att = ClipAttempt(spec)
    clip, cdir, token = att.clip, att.cdir, att.token
    commit = os.path.join(cdir, ".commit-%s.json" % token)
    if os.path.exists(commit):
        return att.finish(commit)
    if spec.get("stop") and os.path.exists(spec["stop"]):
        # the batch was interrupted: start no clip (nor a retry of one)
        raise RuntimeError("the batch is stopping")
    os.makedirs(cdir, exist_ok=True)
    remove_leftovers(cdir, token, att.host, att.pid)

    partial = os.path.join(cdir, ".partial-%s-%s-%d" % (token, att.host, att.pid))
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    att.trace("start")
    try:
        try:
            with open(clip, "rb") as f:
                f.read(1)
        except OSError as e:
            return att.result("failed", "cannot read %s: %s" % (clip, e.strerror))
        failed, frames, media = run_clip(att, partial)
        if failed is not None:
            return failed
        return commit_outputs(att, partial, commit, frames, media)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        try:
            os.rmdir(cdir)       # a failed clip leaves no empty folder
        except OSError:
            pass


# ---------------------------------------------------------------------------
# The client

class Usage(Exception):
    pass


def find_run(explicit):
    """avattention-run: --run, else beside this script (the build tree or
    the installed bindir), else the configured bindir, else PATH."""
    if explicit:
        return os.path.abspath(explicit)
    here = os.path.dirname(os.path.realpath(__file__))
    for d in (here, configured(BINDIR)):
        if d and os.access(os.path.join(d, "avattention-run"), os.X_OK):
            return os.path.join(d, "avattention-run")
    found = shutil.which("avattention-run")
    if found:
        return found
    raise Usage("cannot find avattention-run (give --run PATH)")


def in_build_tree():
    here = os.path.dirname(os.path.realpath(__file__))
    b = configured(BUILD_TOOLS_DIR)
    return b is not None and os.path.realpath(b) == here


def is_list(arg):
    return arg.startswith("@") or (
        os.path.splitext(arg)[1].lower() in LIST_EXTENSIONS and os.path.isfile(arg))


def collect(inputs, out):
    """The clips of INPUTS, as absolute paths in the order met, each once."""
    clips, seen = [], set()
    out = os.path.realpath(out)

    def add(p):
        p = os.path.abspath(p)
        if p not in seen:
            seen.add(p)
            clips.append(p)

    def walk(folder):
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and os.path.realpath(os.path.join(root, d)) != out)
            for f in sorted(files):
                if not f.startswith(".") and \
                        os.path.splitext(f)[1].lower() in CLIP_EXTENSIONS:
                    add(os.path.join(root, f))

    def one(arg, from_list):
        if not from_list and is_list(arg):
            lst = arg[1:] if arg.startswith("@") else arg
            try:
                with open(lst, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except OSError as e:
                raise Usage("list file %s: %s" % (lst, e.strerror))
            for line in lines:
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                # the path as written (a file name may begin or end with a
                # space); the line without its outer spaces only when that
                # names a file and the line as written does not
                if not os.path.lexists(line) and os.path.lexists(line.strip()):
                    line = line.strip()
                one(line, True)
        elif os.path.isdir(arg):
            if os.path.realpath(arg) == out:
                return
            walk(arg)
        else:
            add(arg)     # a clip, or a path that is not there: a failed line

    for arg in inputs:
        one(arg, False)
    return clips


def short_hash(path, n=8):
    return hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:n]


def assign_names(clips, manifest):
    """Output folder names: the manifest's for clips it knows; else the file
    name without extension, with "-" + 8 hex digits of the SHA-1 of the path
    when another clip (of INPUTS or of the manifest) has the same."""
    taken = {}
    for path, rec in manifest.items():
        if rec.get("name"):
            taken.setdefault(rec["name"], path)
    stems = {}
    for c in clips:
        stems.setdefault(stem(c), set()).add(c)
    names = {}
    for c in clips:
        if c in manifest and manifest[c].get("name"):
            names[c] = manifest[c]["name"]
            continue
        s = stem(c)
        name = s
        if len(stems[s]) > 1 or taken.get(s, c) != c or s in (MANIFEST,) \
                or s.startswith("."):
            name = "%s-%s" % (s.lstrip(".") or "clip", short_hash(c))
            if taken.get(name, c) != c:
                name = "%s-%s" % (s.lstrip(".") or "clip", short_hash(c, 16))
        taken[name] = c
        names[c] = name
    return names


def stem(path):
    base = os.path.basename(path)
    s, ext = os.path.splitext(base)
    return s if s else base


def load_manifest(path):
    recs = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                    recs[rec["path"]] = rec
                except (ValueError, KeyError, TypeError):
                    print("avattention-batch: %s:%d: not a manifest line, ignored"
                          % (path, n), file=sys.stderr)
    except FileNotFoundError:
        pass
    return recs


class Manifest:
    """DIR/manifest.jsonl, appended by this process only (one writer: a lock
    on DIR/.lock keeps a second avattention-batch off the same DIR)."""

    def __init__(self, out):
        import fcntl
        self.path = os.path.join(out, MANIFEST)
        self.lock = open(os.path.join(out, ".lock"), "w")
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise Usage("another avattention-batch is writing %s" % out)
        self.records = load_manifest(self.path)
        self.f = open(self.path, "a", encoding="utf-8")
        if self.f.tell() > 0:
            with open(self.path, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":
                    self.f.write("\n")   # a torn last line stays alone

    def append(self, rec):
        self.f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())
        self.records[rec["path"]] = rec

    def close(self):
        self.f.close()
        self.lock.close()


def adopt(clip, cdir):
    """The result of a task that moved its outputs into place (or got as far
    as its commit record) but whose result never reached a manifest line:
    the batch was interrupted, or the client died.  The moves left undone
    are finished; None when there is nothing valid to adopt."""
    try:
        entries = os.listdir(cdir)
    except OSError:
        return None
    found = None
    for e in sorted(entries):
        if not (e.startswith(".commit-") and e.endswith(".json")):
            continue
        path = os.path.join(cdir, e)
        try:
            with open(path) as f:
                rec = json.load(f)
            res = rec["result"]
            if res["path"] != clip:
                raise ValueError
            for src, dst in rec["moves"]:
                try:
                    os.replace(src, dst)
                except FileNotFoundError:
                    pass
            shutil.rmtree(rec["partial"], ignore_errors=True)
            ok = all(os.path.exists(dst) for _, dst in rec["moves"]) and \
                check_npz(os.path.join(cdir, NPZ), res["frames"]) is None
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        if ok and found is None:
            found = dict(res, adopted=True)
        try:
            os.unlink(path)
        except OSError:
            pass
    return found


def outputs_valid(cdir, rec, video):
    if check_npz(os.path.join(cdir, NPZ), rec.get("frames")) is not None:
        return False
    return not video or check_webm(os.path.join(cdir, WEBM)) is None


def fmt_time(s):
    s = int(round(s))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 \
        else "%d:%02d" % (s // 60, s % 60)


class Progress:
    """Clips done of total, frames/s and ETA.  On a terminal: a status line
    redrawn every second, with a line of its own for each failed clip; else
    one line per finished clip."""

    def __init__(self, total, sizes, stream=sys.stdout):
        import threading
        self.total, self.sizes, self.stream = total, sizes, stream
        self.done = self.failed = self.frames = 0
        self.media = 0.0
        self.bytes_done = 0
        self.bytes_total = sum(sizes.values())
        self.t0 = time.monotonic()
        self.tty = stream.isatty()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ticker = None

    def start(self):
        import threading
        self.t0 = time.monotonic()
        if self.tty:
            self.ticker = threading.Thread(target=self.tick, daemon=True)
            self.ticker.start()

    def tick(self):
        while not self.stop.wait(1.0):
            with self.lock:
                self.stream.write("\r\033[K" + self.status())
                self.stream.flush()

    def eta(self):
        el = time.monotonic() - self.t0
        n = self.done + self.failed
        if n == 0 or el <= 0:
            return "?"
        if self.bytes_total > 0 and self.bytes_done > 0:
            left = (self.bytes_total - self.bytes_done) * el / self.bytes_done
        else:
            left = (self.total - n) * el / n
        return fmt_time(left)

    def status(self):
        el = time.monotonic() - self.t0
        return "%d/%d clips, %d frames, %.1f frames/s, ETA %s%s" % (
            self.done + self.failed, self.total, self.frames,
            self.frames / el if el > 0 else 0.0, self.eta(),
            ", %d failed" % self.failed if self.failed else "")

    def update(self, rec):
        with self.lock:
            if rec["status"] == "done":
                self.done += 1
                self.frames += rec.get("frames") or 0
                self.media += rec.get("media_seconds") or 0.0
            else:
                self.failed += 1
            self.bytes_done += self.sizes.get(rec["path"], 0)
            w = len(str(self.total))
            n = self.done + self.failed
            if rec["status"] == "done":
                line = "[%*d/%d] done   %s: %d frames in %.1f s" % (
                    w, n, self.total, rec["name"], rec.get("frames") or 0,
                    rec.get("wall_seconds") or 0)
            else:
                line = "[%*d/%d] FAILED %s: %s" % (w, n, self.total, rec["path"],
                                                   rec["error"])
            if not self.tty:
                self.stream.write(line + " | " + self.status() + "\n")
            elif rec["status"] == "done":
                self.stream.write("\r\033[K" + self.status())
            else:
                self.stream.write("\r\033[K" + line + "\n" + self.status())
            self.stream.flush()

    def end(self):
        self.stop.set()
        if self.ticker is not None:
            self.ticker.join()
            self.ticker = None
        if self.tty:
            with self.lock:
                self.stream.write("\r\033[K")
                self.stream.flush()


def start_cluster(args):
    """A Client on --scheduler, or on a local cluster of --workers workers
    with one thread each (returned too, to be closed).

    The local workers live in this process: each task's work is an
    avattention-run process of its own, so worker processes would only add
    their start and stop (about a second, 5% of a batch of 24 short clips)
    and a second event loop per clip to the CPU the clips need."""
    import logging
    import dask
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    # Dask reads the source around each submit for its dashboard; this
    # script's frames are not worth the 0.1 s that costs
    ignored = dask.config.get("distributed.diagnostics.computations.ignore-modules", [])
    dask.config.set({"distributed.diagnostics.computations.ignore-modules":
                     list(ignored) + ["__main__"]})
    if args.scheduler:
        return Client(args.scheduler, timeout=args.connect_timeout), None
    # The scheduler and workers share this process with the clips'
    # avattention-run: their housekeeping took 7% of a core.  Tasks here
    # wait on a subprocess, so sampling their stacks (the profiler), stealing
    # queued ones (queuing keeps them on the scheduler anyway) and checking
    # the loop, memory and system every few milliseconds buy nothing: 1%.
    dask.config.set({
        "distributed.worker.profile.enabled": False,
        "distributed.scheduler.work-stealing": False,
        "distributed.admin.tick.interval": "1s",
        "distributed.admin.system-monitor.interval": "5s",
        "distributed.worker.memory.monitor-interval": "1s",
    })
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                           processes=False, dashboard_address=None,
                           silence_logs=logging.ERROR,
                           local_directory=args.local_directory)
    return Client(cluster), cluster


def kill_children():
    """Kills the avattention-run processes this process started (the local
    workers' tasks); their tasks then fail, and nothing retries them once
    the stop file is there."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            child.kill()
        except psutil.Error:
            pass


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="avattention-batch",
        description="Runs avattention-run on many clips, on this machine or "
        "on a Dask cluster, resumably.  INPUTS: clips, folders (searched "
        "recursively), list files (@FILE, or a .txt file: one path a line).",
        epilog="Exit status: number of failed clips (at most 125), 130 when "
        "interrupted, 2 for bad arguments.")
    ap.add_argument("inputs", nargs="+", metavar="INPUT")
    ap.add_argument("--out", required=True, metavar="DIR",
                    help="DIR/<name>/features.npz per clip, DIR/manifest.jsonl")
    ap.add_argument("--weights", metavar="FILE", help="passed to avattention-run")
    ap.add_argument("--maps", choices=("summary", "all", "none"),
                    help="avattention-run --maps: what features.npz keeps of "
                    "the attention maps (default: summary)")
    ap.add_argument("--video", action="store_true",
                    help="also write DIR/<name>/annotated.webm")
    ap.add_argument("--scheduler", metavar="ADDRESS",
                    help="an existing Dask scheduler, tcp://HOST:PORT "
                    "(default: a local cluster)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    metavar="N", help="workers of the local cluster, clips "
                    "at a time (default: the number of cores, %(default)s here)")
    ap.add_argument("--threads", type=int, metavar="N",
                    help="avattention-run --threads for each clip (default: "
                    "the cores shared among the local workers, 1 on a "
                    "--scheduler cluster)")
    ap.add_argument("--retry-failed", action="store_true",
                    help="run the clips the manifest has as failed again")
    ap.add_argument("--retries", type=int, default=2, metavar="N",
                    help="Dask retries of a task whose avattention-run was "
                    "killed or could not start (default %(default)s)")
    ap.add_argument("--clip-timeout", type=float, default=0, metavar="S",
                    help="a clip taking longer fails (default: no limit)")
    ap.add_argument("--run", metavar="PATH", help="the avattention-run to use")
    ap.add_argument("--no-fsync", dest="fsync", action="store_false",
                    help="do not flush outputs to disk before renaming them")
    ap.add_argument("--trace", metavar="FILE",
                    help="append a JSON line per task event (start, commit, "
                    "recovered) to FILE, which the workers must reach")
    ap.add_argument("--connect-timeout", type=float, default=30, metavar="S",
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error("--workers must be at least 1")
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be at least 1")
    return args


def open_batch(args, out):
    """(avattention-run, the clips, the manifest) of the command line;
    raises Usage or OSError for bad arguments."""
    os.makedirs(out, exist_ok=True)
    run = find_run(args.run)
    if args.weights and not os.path.isfile(args.weights):
        raise Usage("weights file %s: no such file" % args.weights)
    clips = collect(args.inputs, out)
    if not clips:
        raise Usage("no clips in %s" % " ".join(args.inputs))
    return run, clips, Manifest(out)


def sort_clips(clips, names, manifest, out, args):
    """(to run, done before, failed before, adopted): the clips by their
    manifest records, after adopting the results an interrupted run left."""
    todo, done_before, failed_before, adopted = [], [], [], 0
    for c in clips:
        rec = manifest.records.get(c)
        if not (rec and rec["status"] == "done"):
            got = adopt(c, os.path.join(out, names[c]))
            if got is not None:
                got["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
                manifest.append(got)
                rec = got
                adopted += 1
        if rec and rec["status"] == "done" and rec.get("name") == names[c] and \
                outputs_valid(os.path.join(out, names[c]), rec, args.video):
            done_before.append(c)
        elif rec and rec["status"] == "failed" and not args.retry_failed:
            failed_before.append(c)
        else:
            todo.append(c)
    return todo, done_before, failed_before, adopted


def run_arguments(args):
    """The arguments of avattention-run for each clip."""
    run_args = []
    if args.weights:
        run_args += ["--weights", os.path.abspath(args.weights)]
    if args.maps:
        run_args += ["--maps", args.maps]
    # avattention's fusion threads per clip: the local workers share the
    # cores (one worker alone gets them all); a cluster's worker is a core
    threads = args.threads
    if threads is None:
        threads = 1 if args.scheduler else max(1, (os.cpu_count() or 1) // args.workers)
    run_args += ["--threads", str(threads)]
    return run_args


def env_fallback():
    """The plugin's environment for avattention-run, where a worker's own
    does not set it: the build tree's plugin, and this process's."""
    env = {}
    if in_build_tree() and configured(PLUGIN_BUILD_DIR):
        env["GST_PLUGIN_PATH"] = configured(PLUGIN_BUILD_DIR)
    for k in ("GST_PLUGIN_PATH", "GST_PLUGIN_SYSTEM_PATH", "GST_REGISTRY"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def clip_sizes(clips):
    sizes = {}
    for c in clips:
        try:
            sizes[c] = os.path.getsize(c)
        except OSError:
            sizes[c] = 0
    return sizes


def task_specs(order, names, out, token, stop, run, run_args, fallback, args,
               commits):
    """The process_clip spec of each clip of ORDER; COMMITS gets the path of
    each one's commit record."""
    specs = []
    for c in order:
        cdir = os.path.join(out, names[c])
        specs.append(dict(clip=c, name=names[c], dir=cdir, token=token,
                          run=run, run_args=run_args, video=args.video,
                          env={"OPENBLAS_NUM_THREADS": "1"},
                          env_fallback=fallback,
                          timeout=args.clip_timeout,
                          trace=os.path.abspath(args.trace) if args.trace
                          else None, fsync=args.fsync, stop=stop))
        commits[c] = os.path.join(cdir, ".commit-%s.json" % token)
    return specs


def run_tasks(client, args, specs, order, names, token, futures, manifest,
              progress, recorded):
    """Runs process_clip on SPECS (of the clips ORDER) and records each
    clip as its task ends (FUTURES: those still running; RECORDED: the
    clips recorded)."""
    from distributed import as_completed

    # one graph for all clips: a submit per clip costs the client a
    # look at its caller's source each time (Dask's dashboard code)
    fs = client.map(process_clip, specs, pure=False, retries=args.retries,
                    key=["avattention-%s-%s" % (names[c], token) for c in order])
    futures.update(zip(fs, order))
    for f in as_completed(futures):
        c = futures[f]
        try:
            rec = f.result()
        except Exception as e:   # the task raised, after its retries
            rec = dict(path=c, name=names[c], status="failed",
                       frames=None, media_seconds=None,
                       wall_seconds=None, run_seconds=None,
                       worker=None, host=None,
                       error="%s: %s" % (type(e).__name__, e))
        rec["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        manifest.append(rec)
        progress.update(rec)
        recorded.add(c)
        # forget it: the scheduler would otherwise run it again to
        # keep its result if the worker holding that died
        del futures[f]
        f.release()


def stop_cluster(client, cluster, futures, stop, interrupted, args):
    """Closes the client and the local cluster; when INTERRUPTED, first
    makes the stop file and kills the local workers' avattention-run until
    the cluster is closed.  Removes the stop file and the workers' scratch
    folders."""
    killer = None
    if interrupted:
        try:
            open(stop, "w").close()
        except OSError:
            pass
        if cluster is not None:
            # the local workers' avattention-run, until the cluster is
            # closed (a task may be between its stop check and its start)
            import threading
            closed = threading.Event()

            def keep_killing():
                kill_children()
                while not closed.wait(0.05):
                    kill_children()
                kill_children()

            killer = threading.Thread(target=keep_killing, daemon=True)
            killer.start()
    if client is not None:
        try:
            if interrupted:
                client.cancel(list(futures), force=True)
            client.close(timeout=10)
        except Exception:
            pass
    if cluster is not None:
        try:
            cluster.close(timeout=20)
        except Exception:
            pass
    if killer is not None:
        closed.set()
        killer.join()
    try:
        os.unlink(stop)
    except OSError:
        pass
    if getattr(args, "local_directory", None):
        shutil.rmtree(args.local_directory, ignore_errors=True)


def adopt_unrecorded(todo, commits, recorded, out, names, manifest, progress):
    """After an interruption: the tasks that moved their outputs into place
    while we stopped (the local workers are gone now; remote ones may still
    finish a clip, which the next run adopts)."""
    for c in todo:
        if c in commits and c not in recorded:
            got = adopt(c, os.path.join(out, names[c]))
            if got is not None:
                got["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
                manifest.append(got)
                progress.update(got)


def remove_run_leftovers(todo, out, names):
    """What attempts of this run left when their worker died."""
    for c in todo:
        cdir = os.path.join(out, names[c])
        try:
            for e in os.listdir(cdir):
                if e.startswith(".partial-"):
                    shutil.rmtree(os.path.join(cdir, e), ignore_errors=True)
                elif e.startswith(".commit-") and e.endswith(".tmp"):
                    os.unlink(os.path.join(cdir, e))
        except OSError:
            pass


def print_summary(clips, manifest, progress, out, wall, interrupted):
    """Prints the summary of the batch; returns the failed clips."""
    recs = manifest.records
    failed = [c for c in clips if recs.get(c, {}).get("status") == "failed"]
    n_done = sum(1 for c in clips if recs.get(c, {}).get("status") == "done")
    el = max(wall, 1e-9)
    print("avattention-batch: %s %d of %d clips done (%d in this run), %d failed, "
          "%d not run; %d frames, %.1f s of media in %s (%.1f frames/s, %.1f clips/min)"
          % ("interrupted:" if interrupted else "summary:", n_done, len(clips),
             progress.done, len(failed), len(clips) - n_done - len(failed),
             progress.frames, progress.media, fmt_time(wall),
             progress.frames / el, 60.0 * (progress.done + progress.failed) / el))
    for c in failed[:20]:
        print("  failed: %s: %s" % (c, recs[c].get("error")))
    if len(failed) > 20:
        print("  ... and %d more (%s)" % (len(failed) - 20, manifest.path))
    print("avattention-batch: outputs in %s/<name>/, manifest %s" % (out, manifest.path))
    return failed


def main(argv):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"   # this process and the local workers
    args = parse_args(argv)
    try:
        import distributed  # noqa: F401
    except ImportError as e:
        print("avattention-batch: %s; it needs Debian's python3-distributed "
              "(tools/install-deps installs it)" % e, file=sys.stderr)
        return 2
    out = os.path.abspath(args.out)
    try:
        run, clips, manifest = open_batch(args, out)
    except (Usage, OSError) as e:
        print("avattention-batch: %s" % (e if isinstance(e, Usage) else
              "%s: %s" % (getattr(e, "filename", out), e.strerror)), file=sys.stderr)
        return 2

    names = assign_names(clips, manifest.records)
    todo, done_before, failed_before, adopted = sort_clips(clips, names, manifest,
                                                           out, args)
    run_args = run_arguments(args)
    fallback = env_fallback()
    print("avattention-batch: %d clip%s: %d to run, %d done before%s, %d failed before%s"
          % (len(clips), "" if len(clips) == 1 else "s", len(todo),
             len(done_before), " (%d finished after an interruption)" % adopted
             if adopted else "", len(failed_before),
             " (--retry-failed runs them again)" if failed_before else ""))
    sizes = clip_sizes(todo)
    progress = Progress(len(todo), sizes)
    interrupted = False
    t0 = time.monotonic()
    client = cluster = None
    commits, futures, recorded = {}, {}, set()
    token = uuid.uuid4().hex[:12]
    # made when the batch is interrupted: tasks that have not started yet,
    # here or on a cluster's workers, do not start avattention-run
    stop = os.path.join(out, ".stop-%s" % token)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_term)
    try:
        if todo:
            if not args.scheduler:
                # the workers' scratch folders, removed at the end
                args.local_directory = tempfile.mkdtemp(prefix="avattention-batch-")
            client, cluster = start_cluster(args)
            where = args.scheduler or "a local cluster of %d worker%s" % (
                args.workers, "s" if args.workers > 1 else "")
            print("avattention-batch: running on %s; manifest %s" % (
                where, manifest.path), flush=True)
            progress.start()
            # the biggest clips first: fewer workers left idle at the end
            order = sorted(todo, key=lambda c: -sizes[c])
            specs = task_specs(order, names, out, token, stop, run, run_args,
                               fallback, args, commits)
            run_tasks(client, args, specs, order, names, token, futures,
                      manifest, progress, recorded)
    except KeyboardInterrupt:
        interrupted = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C: no traceback
        progress.end()
        print("\navattention-batch: interrupted; stopping (the manifest has "
              "every clip that finished)", flush=True)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        stop_cluster(client, cluster, futures, stop, interrupted, args)
    if interrupted:
        adopt_unrecorded(todo, commits, recorded, out, names, manifest, progress)
    progress.end()
    for c in recorded:
        try:
            os.unlink(commits[c])
        except OSError:
            pass
    if not interrupted:
        remove_run_leftovers(todo, out, names)

    wall = time.monotonic() - t0
    failed = print_summary(clips, manifest, progress, out, wall, interrupted)
    manifest.close()
    if interrupted:
        return 130
    return min(len(failed), 125)


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # Everything is written, closed and flushed by now: skip the interpreter's
    # teardown of Dask's modules and threads, a quarter of a second.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
