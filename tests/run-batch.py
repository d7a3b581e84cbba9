#!/usr/bin/python3
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
"""avattention-batch with real processes on 127.0.0.1.

    run-batch.py CASE AVATTENTION_BATCH AVATTENTION_RUN [WEIGHTS]

CASE:
  cluster      a dask scheduler and two workers started here (random free
               ports): 12 clips (a folder, and a list file naming two clips
               of the same file name in different folders) all done exactly
               once, features.npz byte-identical to avattention-run run on
               the same clip; a rerun runs nothing
  worker-killed  the same with one worker SIGKILLed while its avattention-run
               runs a clip:
               every clip done, each final file written once (the --trace
               log of the tasks), nothing partial or temporary left, the
               killed worker's avattention-run gone with it
  interrupted  the embedded local cluster; SIGINT to the batch's process
               group (a Ctrl-C) mid-run: exit 130, no process left, the
               manifest has every clip whose output is in place; the rerun
               runs exactly the others
  bad-input    a corrupt clip, a clip without audio, one without video and a
               path that does not exist among good clips (--video): failed
               lines with the reasons, the rest done, exit status 4; rerun
               and --retry-failed
  idempotent   the task function called twice with the same token (as Dask
               does when a worker dies after finishing): the second returns
               the first's result without running or writing anything
  odd-paths    a space, double and single quotes and a non-ASCII letter in
               the paths of two clips (one in a folder, one in a list file
               of such a name, whose file name ends with a space, on a CRLF
               line after a blank and a comment line), of a copy of WEIGHTS and of the output
               folder (--video): both done, named after their files, the
               features avattention-run's on the same clip, the .npz's
               "model" the copy's name

Needs Debian's python3-distributed (exit 77 without it).  Clips are made
with gst-launch-1.0: 2 s, 160x120 at 10 fps, VP8/Vorbis WebM.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import distributed  # noqa: F401
    import numpy  # noqa: F401
except ImportError as e:
    print("SKIP: %s (Debian: apt-get install python3-distributed)" % e)
    sys.exit(77)

CASE, BATCH, RUN = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
WEIGHTS = sys.argv[4] if len(sys.argv) > 4 else None
TMP = tempfile.mkdtemp(prefix="avattention-batch-test-")
FAILS = []
PROCS = []


def check(what, ok, detail=""):
    print("%s: %s%s" % ("ok" if ok else "FAIL", what, "" if ok or not detail else " (%s)" % (detail,)),
          flush=True)
    if not ok:
        FAILS.append(what)


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


PATTERNS = ["ball", "smpte", "snow", "checkers-4", "circular", "gradient",
            "zone-plate", "bar", "pinwheel", "spokes", "colors", "blink"]


def make_clip(path, i, audio=True, video=True):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    parts = ["gst-launch-1.0", "-q"]
    mux = "webmmux name=m ! filesink location=%s" % path
    if video:
        parts += ("videotestsrc num-buffers=20 pattern=%s ! "
                  "video/x-raw,width=160,height=120,framerate=10/1 ! "
                  "vp8enc deadline=1 ! queue ! m." % PATTERNS[i % len(PATTERNS)]).split()
    if audio:
        parts += ("audiotestsrc num-buffers=50 samplesperbuffer=882 freq=%d wave=%d ! "
                  "audio/x-raw,rate=22050 ! vorbisenc ! queue ! m."
                  % (220 + 60 * i, i % 4)).split()
    parts += mux.split()
    sh(*parts)


def make_good_clips(n=12):
    """n clips: n-2 in clips/set/, two called same.webm in clips/a and
    clips/b.  Returns (absolute paths, the batch's INPUTS)."""
    clips = []
    for i in range(n - 2):
        clips.append(os.path.join(TMP, "clips", "set", "sub" if i % 3 == 0 else "",
                                  "clip%02d.webm" % i))
    clips.append(os.path.join(TMP, "clips", "a", "same.webm"))
    clips.append(os.path.join(TMP, "clips", "b", "same.webm"))
    clips = [os.path.normpath(c) for c in clips]
    for i, c in enumerate(clips):
        make_clip(c, i)
    with open(os.path.join(TMP, "clips", "list.txt"), "w") as f:
        f.write("# two clips of the same name\n%s\n\n%s\n" % (clips[-2], clips[-1]))
    inputs = [os.path.join(TMP, "clips", "set"), "@" + os.path.join(TMP, "clips", "list.txt")]
    return clips, inputs


def reference(clips, video=False):
    """avattention-run run directly on each clip: {clip: folder}.  With
    --threads 1, as the batch runs each clip: the features are the same
    with any thread count, but libvpx encodes differently on two threads."""
    ref = {}
    for i, c in enumerate(clips):
        d = os.path.join(TMP, "ref", "%02d" % i)
        cmd = [RUN, c, "--out", d, "--threads", "1"] + ([] if video else ["--no-video-out"])
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        ref[c] = d
    return ref


def same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def manifest(out):
    recs = {}
    with open(os.path.join(out, "manifest.jsonl")) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    for r in lines:
        recs[r["path"]] = r
    return lines, recs


def trace(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def batch(*args, **kw):
    return subprocess.run([BATCH] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)


def slow_run(seconds, name="slow-avattention-run"):
    """An avattention-run that starts after SECONDS: a task long enough to be
    caught in the middle."""
    p = os.path.join(TMP, name)
    with open(p, "w") as f:
        f.write("#!/bin/sh\nsleep %s\nexec '%s' \"$@\"\n" % (seconds, RUN))
    os.chmod(p, 0o755)
    return p


def check_outputs(out, clips, ref, names_by_clip, files=("features.npz",)):
    for c in clips:
        d = os.path.join(out, names_by_clip[c])
        entries = sorted(os.listdir(d)) if os.path.isdir(d) else []
        if entries != sorted(files):
            check("%s holds exactly %s" % (d, ", ".join(files)), False, entries)
            continue
        if not same_file(os.path.join(d, "features.npz"),
                         os.path.join(ref[c], "features.npz")):
            check("%s/features.npz byte-identical to avattention-run's" % d, False)
            return
    check("every clip's folder holds just %s, features.npz byte-identical to "
          "avattention-run's on the same clip" % ", ".join(files), True)


def processes():
    """(pid, argv) of every process; a zombie's argv is empty."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                found.append((int(d), f.read().decode(errors="replace").split("\0")))
        except OSError:
            continue
    return found


def running_avattention_runs():
    """(pid, argv) of every avattention-run process (after the wrapper's exec)."""
    return [(pid, argv) for pid, argv in processes()
            if os.path.basename(argv[0]) == "avattention-run"]


def processes_naming(folder):
    """argv of every live process with an argument inside FOLDER (an
    avattention-run writing there, or the wrapper about to exec one)."""
    return [argv for _, argv in processes()
            if any(a.startswith(folder + os.sep) for a in argv)]


def start_cluster(n_workers=2):
    sf = os.path.join(TMP, "scheduler.json")
    log = open(os.path.join(TMP, "scheduler.log"), "w")
    p = subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                          "--dashboard-address", "127.0.0.1:0", "--scheduler-file", sf],
                         stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(p)
    t = time.monotonic()
    while not os.path.exists(sf) and time.monotonic() - t < 60:
        time.sleep(0.1)
    time.sleep(0.2)
    with open(sf) as f:
        addr = json.load(f)["address"]
    workers = []
    for i in range(n_workers):
        # --no-nanny: the process that runs the tasks is the one started
        # here, and a SIGKILL to it is final (a nanny would restart it)
        log = open(os.path.join(TMP, "worker%d.log" % i), "w")
        w = subprocess.Popen(["dask", "worker", addr, "--no-nanny", "--nthreads", "1",
                              "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0",
                              "--local-directory", os.path.join(TMP, "w%d" % i)],
                             stdout=log, stderr=subprocess.STDOUT)
        PROCS.append(w)
        workers.append(w)
    from distributed import Client
    with Client(addr, timeout=60) as c:
        c.wait_for_workers(n_workers, timeout=120)
    print("cluster: scheduler %s, workers pid %s" % (addr, [w.pid for w in workers]),
          flush=True)
    return addr, workers


def stop_all():
    for p in reversed(PROCS):
        if p.poll() is None:
            p.terminate()
    for p in reversed(PROCS):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def names_from_manifest(out):
    return {p: r["name"] for p, r in manifest(out)[1].items()}


def case_cluster():
    clips, inputs = make_good_clips()
    ref = reference(clips)
    # avattention-run's .npz is deterministic: a second run, same bytes
    again = os.path.join(TMP, "ref-again")
    subprocess.run([RUN, clips[0], "--out", again, "--no-video-out"], check=True,
                   stdout=subprocess.DEVNULL)
    check("avattention-run writes the same features.npz twice",
          same_file(os.path.join(again, "features.npz"),
                    os.path.join(ref[clips[0]], "features.npz")))
    addr, workers = start_cluster()
    out, tr = os.path.join(TMP, "out"), os.path.join(TMP, "trace.jsonl")
    r = batch(*inputs, "--out", out, "--scheduler", addr, "--trace", tr)
    print(r.stdout)
    check("batch on the cluster: exit 0", r.returncode == 0, r.returncode)
    lines, recs = manifest(out)
    check("manifest: 12 lines, all done, one per clip",
          len(lines) == 12 and set(recs) == set(clips) and
          all(l["status"] == "done" and l["frames"] == 20 and l["error"] is None
              for l in lines), lines)
    check("manifest: media seconds, wall seconds, worker given",
          all(abs(l["media_seconds"] - 2.0) < 0.05 and l["wall_seconds"] > 0 and
              l["worker"].startswith("tcp://127.0.0.1:") for l in lines))
    names = names_from_manifest(out)
    a, b = names[clips[-2]], names[clips[-1]]
    check("two clips named same.webm: same-<hash> and same-<other hash>",
          a != b and a.startswith("same-") and b.startswith("same-") and len(a) == 13, (a, b))
    check("clips of unique names keep them", names[clips[0]] == "clip00")
    check_outputs(out, clips, ref, names)
    ev = trace(tr)
    starts = [e["name"] for e in ev if e["event"] == "start"]
    commits = [e["name"] for e in ev if e["event"] == "commit"]
    check("each clip ran once and was moved into place once (trace)",
          sorted(starts) == sorted(names.values()) and sorted(commits) == sorted(starts),
          ev)
    check("both workers ran clips", len({e["pid"] for e in ev}) == 2,
          {e["pid"] for e in ev})
    r = batch(*inputs, "--out", out, "--scheduler", addr, "--trace", tr)
    check("rerun: nothing to run, exit 0",
          r.returncode == 0 and "0 to run, 12 done before" in r.stdout, r.stdout)
    check("rerun: no task ran", len(trace(tr)) == len(ev))
    # outputs damaged after the fact: cut short, one array a row short, one
    # array's data cut inside an intact zip; the rerun redoes exactly those
    npz = lambda c: os.path.join(out, names[c], "features.npz")
    with open(npz(clips[1]), "r+b") as f:
        f.truncate(os.path.getsize(npz(clips[1])) // 2)
    import numpy as np
    with np.load(npz(clips[2])) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["sound_visible"] = arrays["sound_visible"][:-1]
    np.savez(npz(clips[2]), **arrays)
    import zipfile
    with zipfile.ZipFile(npz(clips[3])) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["data.npy"] = members["data.npy"][:-4]
    with zipfile.ZipFile(npz(clips[3]), "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    n0 = len(trace(tr))
    r = batch(*inputs, "--out", out, "--scheduler", addr, "--trace", tr)
    ran = sorted(e["name"] for e in trace(tr)[n0:] if e["event"] == "start")
    check("damaged outputs: the rerun runs exactly those 3 clips, exit 0",
          r.returncode == 0 and "3 to run, 9 done before" in r.stdout and
          ran == sorted(names[c] for c in clips[1:4]), (r.stdout, ran))
    check_outputs(out, clips, ref, names)


def case_worker_killed():
    clips, inputs = make_good_clips()
    ref = reference(clips)
    addr, workers = start_cluster()
    out, tr = os.path.join(TMP, "out"), os.path.join(TMP, "trace.jsonl")
    pids = {w.pid: w for w in workers}
    p = subprocess.Popen([BATCH] + inputs + ["--out", out, "--scheduler", addr,
                                             "--trace", tr, "--run", slow_run(0.2)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # once two clips are in place, the first avattention-run seen running
    # for a worker (its --out is that worker's .partial-TOKEN-HOST-PID):
    # that worker gets SIGKILL while the clip is half done
    victim = run_pid = killed_at = None
    t = time.monotonic()
    while victim is None and p.poll() is None and time.monotonic() - t < 120:
        ev = trace(tr)
        if sum(1 for e in ev if e["event"] == "commit") >= 2:
            for pid, args in running_avattention_runs():
                for wpid in pids:
                    if any(a.endswith("-%d" % wpid) and "/.partial-" in a for a in args):
                        victim, run_pid = wpid, pid
                        # frozen, it cannot finish the clip by itself: if
                        # it is gone below, its worker's death killed it
                        os.kill(run_pid, signal.SIGSTOP)
                        pids[wpid].send_signal(signal.SIGKILL)
                        break
                if victim:
                    break
        time.sleep(0.003)
    if victim is not None:
        pids[victim].wait()
        killed_at = [e for e in trace(tr) if e["pid"] == victim and e["event"] == "start"][-1]
        print("killed worker pid %d while its avattention-run (pid %d) ran %s"
              % (victim, run_pid, killed_at["name"]), flush=True)
    check("a worker was killed while its avattention-run ran a clip", victim is not None)
    t = time.monotonic()
    while victim and os.path.exists("/proc/%d" % run_pid) and time.monotonic() - t < 5:
        time.sleep(0.05)
    gone = victim is not None and not os.path.exists("/proc/%d" % run_pid)
    check("the killed worker's avattention-run died with it (setpriv --pdeathsig)", gone)
    if victim is not None and not gone:
        os.kill(run_pid, signal.SIGKILL)
    stdout, _ = p.communicate(timeout=240)
    print(stdout)
    check("batch: exit 0 after losing a worker", p.returncode == 0, p.returncode)
    lines, recs = manifest(out)
    check("manifest: 12 lines, all done",
          len(lines) == 12 and set(recs) == set(clips) and
          all(l["status"] == "done" for l in lines), lines)
    names = names_from_manifest(out)
    check_outputs(out, clips, ref, names)
    ev = trace(tr)
    commits = [e["name"] for e in ev if e["event"] == "commit"]
    check("each final features.npz was written once in the run (one commit per clip)",
          sorted(commits) == sorted(names.values()), sorted(commits))
    if victim:
        hit = killed_at["name"]
        check("the clip the killed worker was running had not been committed by it",
              not any(e["event"] == "commit" and e["pid"] == victim and e["name"] == hit
                      for e in ev))
        check("that clip was run again on the other worker and committed there",
              any(e["event"] == "commit" and e["pid"] != victim and e["name"] == hit
                  for e in ev))
    left = glob.glob(os.path.join(out, "*", ".*"))
    check("no temporary file or folder left", not left, left)


def case_interrupted():
    clips, inputs = make_good_clips()
    ref = reference(clips)
    out, tr = os.path.join(TMP, "out"), os.path.join(TMP, "trace.jsonl")
    # a new session: SIGINT to its process group is what a Ctrl-C does
    p = subprocess.Popen([BATCH] + inputs + ["--out", out, "--workers", "2",
                                             "--trace", tr, "--run", slow_run(0.4)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    mf = os.path.join(out, "manifest.jsonl")
    t = time.monotonic()
    while p.poll() is None and time.monotonic() - t < 120:
        if os.path.exists(mf) and sum(1 for _ in open(mf)) >= 4:
            break
        time.sleep(0.02)
    time.sleep(0.3)
    os.killpg(p.pid, signal.SIGINT)
    t = time.monotonic()
    stdout, _ = p.communicate(timeout=60)
    print(stdout)
    check("SIGINT: exit 130 within 30 s", p.returncode == 130 and time.monotonic() - t < 30,
          (p.returncode, time.monotonic() - t))
    check("SIGINT: says so, no traceback",
          "interrupted" in stdout and "Traceback" not in stdout)
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], stdout=subprocess.PIPE,
                        text=True).stdout.splitlines()
    alive = [l for l in ps if l.split()[0] == str(p.pid) and not l.split()[1].startswith("Z")]
    # avattention-run runs in a session of its own (a Ctrl-C is the batch's
    # to handle), so look for it by its output folder too
    alive += processes_naming(out)
    check("SIGINT: no worker or avattention-run left running", not alive, alive)
    lines, recs = manifest(out)
    names = {c: recs[c]["name"] for c in recs}
    placed = set(recs)
    finals = {os.path.dirname(f) for f in glob.glob(os.path.join(out, "*", "features.npz"))}
    check("SIGINT: the manifest has every clip whose features.npz is in place, all done",
          all(l["status"] == "done" for l in lines) and
          {os.path.join(out, n) for n in names.values()} == finals, (lines, finals))
    check("SIGINT: some clips done, some not", 0 < len(placed) < 12, len(placed))
    n0 = len(trace(tr))
    r = batch(*inputs, "--out", out, "--workers", "2", "--trace", tr)
    print(r.stdout)
    check("rerun: exit 0", r.returncode == 0, r.returncode)
    ran = {e["name"] for e in trace(tr)[n0:] if e["event"] == "start"}
    lines2, recs2 = manifest(out)
    names2 = {c: recs2[c]["name"] for c in recs2}
    missing = {names2[c] for c in clips if c not in placed}
    check("rerun: ran exactly the %d clips not done before" % (12 - len(placed)),
          ran == missing, (ran, missing))
    check("rerun: manifest has all 12 done",
          set(recs2) == set(clips) and all(r["status"] == "done" for r in recs2.values()))
    check_outputs(out, clips, ref, names2)

    # clips that take long: a Ctrl-C stops their avattention-run (and what
    # it started) instead of waiting for them
    out, tr = os.path.join(TMP, "out-long"), os.path.join(TMP, "trace-long.jsonl")
    p = subprocess.Popen([BATCH] + clips[:4] + [
        "--out", out, "--workers", "2", "--trace", tr,
        "--run", slow_run(120, "very-slow-avattention-run")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    t = time.monotonic()
    while p.poll() is None and time.monotonic() - t < 60 and \
            sum(1 for l in open(tr) if '"start"' in l) < 2 if os.path.exists(tr) else True:
        time.sleep(0.05)
    time.sleep(0.5)
    running = processes_naming(out)
    os.killpg(p.pid, signal.SIGINT)
    t = time.monotonic()
    stdout, _ = p.communicate(timeout=150)
    took = time.monotonic() - t
    print(stdout)
    check("SIGINT during two 120 s clips: both were running", len(running) == 2, running)
    check("SIGINT during two 120 s clips: exit 130 within 10 s",
          p.returncode == 130 and took < 10, (p.returncode, took))
    time.sleep(0.5)
    alive = processes_naming(out)
    check("SIGINT during two 120 s clips: their runs stopped", not alive, alive)
    check("SIGINT during two 120 s clips: nothing done, no output left",
          not manifest(out)[0] and not glob.glob(os.path.join(out, "*", "*")) and
          not glob.glob(os.path.join(out, "*", ".partial-*")),
          glob.glob(os.path.join(out, "**"), recursive=True))


def case_bad_input():
    good = [os.path.join(TMP, "clips", "good%d.webm" % i) for i in range(2)]
    for i, c in enumerate(good):
        make_clip(c, i)
    corrupt = os.path.join(TMP, "clips", "corrupt.webm")
    with open(corrupt, "wb") as f:
        f.write(os.urandom(5000))
    noaudio = os.path.join(TMP, "clips", "no-audio.webm")
    make_clip(noaudio, 3, audio=False)
    novideo = os.path.join(TMP, "clips", "no-video.webm")
    make_clip(novideo, 4, video=False)
    missing = os.path.join(TMP, "clips", "not-there.mp4")
    lst = os.path.join(TMP, "more.txt")          # a .txt argument is a list too
    with open(lst, "w") as f:
        f.write(missing + "\n")
    ref = reference(good, video=True)
    out = os.path.join(TMP, "out")
    r = batch(os.path.join(TMP, "clips"), lst, "--out", out, "--workers", "2", "--video")
    print(r.stdout)
    check("exit status 4: four clips failed", r.returncode == 4, r.returncode)
    lines, recs = manifest(out)
    check("manifest: 6 lines", len(lines) == 6, len(lines))
    want = {corrupt: "Could not determine type of stream",
            noaudio: "has no audio track", novideo: "has no video track",
            missing: "cannot read %s: No such file or directory" % missing}
    for c, reason in want.items():
        rec = recs.get(c, {})
        check("failed line for %s with the reason (%s)" % (os.path.basename(c), reason),
              rec.get("status") == "failed" and reason in (rec.get("error") or ""),
              rec.get("error"))
    check("the good clips done", all(recs[c]["status"] == "done" for c in good))
    check("the reasons in the summary", "has no audio track" in r.stdout and
          "failed: %s" % corrupt in r.stdout)
    names = {c: recs[c]["name"] for c in recs}
    check_outputs(out, good, ref, names, files=("annotated.webm", "features.npz"))
    # webmmux writes random segment and track UIDs: compare the decoded frames
    for c in good:
        frames = []
        for w in (os.path.join(out, names[c], "annotated.webm"),
                  os.path.join(ref[c], "annotated.webm")):
            raw = w + ".i420"
            sh("gst-launch-1.0", "-q", "filesrc", "location=" + w, "!", "matroskademux", "!",
               "vp8dec", "!", "videoconvert", "!", "video/x-raw,format=I420", "!",
               "filesink", "location=" + raw)
            with open(raw, "rb") as f:
                frames.append(f.read())
            os.unlink(raw)
        check("%s: annotated.webm decodes to avattention-run's frames" % names[c],
              len(frames[0]) > 0 and frames[0] == frames[1])
    check("no folder for the failed clips",
          sorted(os.listdir(out)) == sorted([".lock", "manifest.jsonl"] +
                                            [names[c] for c in good]), os.listdir(out))
    r = batch(os.path.join(TMP, "clips"), lst, "--out", out, "--workers", "2", "--video")
    check("rerun: runs nothing, still exit 4",
          r.returncode == 4 and "0 to run, 2 done before, 4 failed before" in r.stdout, r.stdout)
    r = batch(os.path.join(TMP, "clips"), lst, "--out", out, "--workers", "2", "--video",
              "--retry-failed")
    check("--retry-failed: runs the 4 again, exit 4",
          r.returncode == 4 and "4 to run, 2 done before" in r.stdout, r.stdout)
    check("--retry-failed: 4 more failed lines", len(manifest(out)[0]) == 10)
    r = batch(good[0], "--out", out, "--workers", "1")
    check("without --video the done clip is not run again",
          r.returncode == 0 and "0 to run, 1 done before" in r.stdout, r.stdout)


def case_idempotent():
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("avattention_batch", BATCH)
    spec_ = importlib.util.spec_from_loader("avattention_batch", loader)
    mod = importlib.util.module_from_spec(spec_)
    loader.exec_module(mod)
    clip = os.path.join(TMP, "clips", "one.webm")
    make_clip(clip, 5)
    out, tr = os.path.join(TMP, "out"), os.path.join(TMP, "trace.jsonl")
    spec = dict(clip=clip, name="one", dir=os.path.join(out, "one"), token="t0k3n",
                run=RUN, run_args=[], video=False, env={"OPENBLAS_NUM_THREADS": "1"},
                env_fallback={}, timeout=0, trace=tr, fsync=False)
    r1 = mod.process_clip(spec)
    st = os.stat(os.path.join(out, "one", "features.npz"))
    r2 = mod.process_clip(spec)
    st2 = os.stat(os.path.join(out, "one", "features.npz"))
    check("first call: done, 20 frames", r1["status"] == "done" and r1["frames"] == 20, r1)
    check("second call, same token: the first's result", r2 == r1, (r1, r2))
    check("second call: the final file untouched (same inode, same mtime)",
          (st.st_ino, st.st_mtime_ns) == (st2.st_ino, st2.st_mtime_ns))
    ev = [e["event"] for e in trace(tr)]
    check("trace: start, commit, recovered", ev == ["start", "commit", "recovered"], ev)
    # an attempt that loses the race to commit (another committed while it
    # ran) takes the other's result and moves nothing
    spec3 = dict(spec, token="r4c3")
    commit = os.path.join(out, "one", ".commit-r4c3.json")
    real_link = os.link

    def link_after_rival(src, dst):
        with open(dst, "w") as f:
            json.dump(dict(moves=[], partial="/nonexistent", result=dict(r1, worker="rival")), f)
        return real_link(src, dst)
    mod.os.link = link_after_rival
    try:
        r3 = mod.process_clip(spec3)
    finally:
        mod.os.link = real_link
    st3 = os.stat(os.path.join(out, "one", "features.npz"))
    check("losing the commit race: the winner's result, final file untouched",
          r3["worker"] == "rival" and (st3.st_ino, st3.st_mtime_ns) == (st.st_ino, st.st_mtime_ns),
          r3)
    os.unlink(commit)
    check("no temporary left (the other token's commit record cleaned up)",
          os.listdir(os.path.join(out, "one")) == ["features.npz"],
          os.listdir(os.path.join(out, "one")))


def case_odd_paths():
    plain = [os.path.join(TMP, "plain", "clip%d.webm" % i) for i in range(2)]
    for i, c in enumerate(plain):
        make_clip(c, i)
    odd = os.path.join(TMP, "a \"b\" 'c' ü")
    clips = [os.path.join(odd, "set", "clip 'ü' \"0\".webm"),
             os.path.join(odd, "listed ü", "clip \"1\" 'x'.webm ")]
    for p, c in zip(plain, clips):
        os.makedirs(os.path.dirname(c), exist_ok=True)
        shutil.copy(p, c)
    lst = os.path.join(odd, "list 'ü'.txt")
    # the listed clip's name ends with a space (kept as written); a blank
    # line of spaces, an indented comment and a CRLF line end
    with open(lst, "w", encoding="utf-8", newline="") as f:
        f.write("   \n  # a comment\r\n" + clips[1] + "\r\n")
    weights = os.path.join(odd, "model \"ü\".safetensors")
    shutil.copy(WEIGHTS, weights)
    ref = reference(plain)
    out = os.path.join(odd, "out \"x\" 'y'")
    r = batch(os.path.join(odd, "set"), "@" + lst, "--out", out, "--weights", weights,
              "--video", "--workers", "2")
    print(r.stdout)
    check("exit 0", r.returncode == 0, r.returncode)
    lines, recs = manifest(out)
    check("manifest: both clips done, under their paths",
          sorted(recs) == sorted(clips) and
          all(recs[c]["status"] == "done" and recs[c]["frames"] == 20 for c in clips), lines)
    names = names_from_manifest(out)
    check("each named after its file",
          [names.get(c) for c in clips] == ["clip 'ü' \"0\"", "clip \"1\" 'x'"], names)
    import numpy as np
    for p, c in zip(plain, clips):
        d = os.path.join(out, names.get(c, "?"))
        entries = sorted(os.listdir(d)) if os.path.isdir(d) else []
        check("%s holds annotated.webm and features.npz" % d,
              entries == ["annotated.webm", "features.npz"], entries)
        if "features.npz" not in entries:
            continue
        with np.load(os.path.join(d, "features.npz")) as a, \
                np.load(os.path.join(ref[p], "features.npz")) as b:
            same = a.files == b.files and all(
                np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f")
                for k in a.files if k != "model")
            model = a["model"].item() if "model" in a.files else None
        check("%s: the features of avattention-run on the same clip" % names[c], same)
        check("%s: \"model\" is the weights file's name" % names[c],
              model == os.fsencode(os.path.basename(weights)), model)


def main():
    t = time.monotonic()
    try:
        {"cluster": case_cluster, "worker-killed": case_worker_killed,
         "interrupted": case_interrupted, "bad-input": case_bad_input,
         "idempotent": case_idempotent, "odd-paths": case_odd_paths}[CASE]()
    finally:
        stop_all()
        shutil.rmtree(TMP, ignore_errors=True)
    print("%s: %d failed, %.1f s" % (CASE, len(FAILS), time.monotonic() - t))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
