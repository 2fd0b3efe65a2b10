#!/usr/bin/python3
"""Running out of memory while a model loads fails that model only
(issue 18, item 4).

A folder mount (`modelfs DIR MNT`) loads each model inside the running
daemon the first time its folder is looked in. MODELFS_TEST_ALLOC_FAIL=
NAME:N makes the N-th checked allocation of the load of a model whose path
holds NAME fail, as if memory ran out there. For several N (early in the
parse, in the documents, near the end): that model's folder holds only
ERROR saying it ran out of memory, `models.json` says so, and the daemon
goes on serving the other models byte for byte as `modelfs-ls` gives them
(the oracle). With N past the last allocation the same model loads (so it
is the injected failure that fails it). `modelfs-ls` of the model alone
exits 1 with the message, no crash.

usage: test_oom_load.py BUILD_DIR GENERATED_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402

VICTIM = "victim"


def check_mount(c, build, root, fail_at, others):
    env = dict(os.environ, MODELFS_TEST_ALLOC_FAIL="%s:%d" % (VICTIM, fail_at))
    ls = os.path.join(build, "modelfs-ls")
    with mfstest.mounted(os.path.join(build, "modelfs"), root, env=env) as mnt:
        pid = mfstest.daemon_pid(mnt)
        vdir = os.path.join(mnt, VICTIM + ".safetensors")
        names = sorted(os.listdir(vdir))
        failed = names == ["ERROR"]
        if failed:
            with open(os.path.join(vdir, "ERROR")) as f:
                line = f.read()
            c.check("out of memory while loading the model" in line and line.endswith("\n"),
                    "N=%d: ERROR names the cause: %r" % (fail_at, line))
        # The daemon is alive and serves every other model exactly.
        for name, model in others:
            tree = mfstest.walk_tree(os.path.join(mnt, name))
            want = mfstest.without_view(mfstest.ls_tree(ls, model), tree)
            c.equal(tree, want, "N=%d: %s's tree" % (fail_at, name))
            files = [p for p, size in want.items() if size is not None]
            sums, rc, _ = mfstest.ls_sums(ls, model, files)
            got = {p: mfstest.sha256_file(os.path.join(mnt, name, p)) for p in files}
            c.equal(got, {p: s[0] for p, s in sums.items()}, "N=%d: %s's bytes" % (fail_at, name))
        with open(os.path.join(mnt, "models.json")) as f:
            listed = {m["path"]: m for m in json.load(f)}
        v = listed.get(VICTIM + ".safetensors", {})
        c.equal(v.get("status"), "error" if failed else "ok", "N=%d: models.json status" % fail_at)
        c.check(pid is not None and mfstest.daemon_pid(mnt) == pid,
                "N=%d: the daemon is still the same process" % fail_at)
        return failed


def run(c, t):
    build, gen = t.build, t.args[0]
    src = os.path.join(gen, "safetensors")
    ls = os.path.join(build, "modelfs-ls")
    models = sorted(f for f in os.listdir(src) if f.endswith(".safetensors") and
                    subprocess.run([ls, "--check", os.path.join(src, f)],
                                   capture_output=True).returncode == 0)
    if len(models) < 2:
        c.skip("the generated safetensors models are missing")
        return
    tmp = tempfile.mkdtemp(prefix="modelfs-oom-")
    try:
        # The victim: the generated model with the most tensors; two others.
        sizes = sorted(models, key=lambda m: os.path.getsize(os.path.join(src, m)))
        shutil.copy(os.path.join(src, sizes[-1]), os.path.join(tmp, VICTIM + ".safetensors"))
        others = []
        for m in sizes[:2]:
            shutil.copy(os.path.join(src, m), os.path.join(tmp, "other-" + m))
            others.append(("other-" + m, os.path.join(tmp, "other-" + m)))
        # Early (the header), in the middle, late (the documents).
        for n in (1, 5, 40, 200):
            c.check(check_mount(c, build, tmp, n, others),
                    "N=%d: the injected failure fails the victim's load" % n)
        c.check(not check_mount(c, build, tmp, 10 ** 9, others),
                "with no failure reached, the victim loads")
        # The same model alone: an error exit, not a crash.
        env = dict(os.environ, MODELFS_TEST_ALLOC_FAIL="%s:5" % VICTIM)
        r = subprocess.run([os.path.join(build, "modelfs-ls"), os.path.join(tmp, VICTIM + ".safetensors")],
                           capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 1 and "out of memory while loading the model" in r.stderr,
                "modelfs-ls alone: exit %d, %r" % (r.returncode, r.stderr.strip()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("mount.oom_load", run, __doc__, min_args=1))
