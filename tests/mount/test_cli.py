#!/usr/bin/python3
"""The command line contract: help, version, exit codes and one-line errors
(a bad -o found before the model is fetched, a folder PATH named with its
model, --diff with one model saying so),
daemon mode returning only once the mount works, foreground mode and
signals, fusermount3 -u, and EIO (not a crash) when the model file changes
under a mount.

usage: test_cli.py BUILD_DIR MODEL (a valid model file)
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)


def one_line_error(c, r, code, must_contain, what):
    c.equal(r.returncode, code, what + " exit code")
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    c.check(len(lines) >= 1, what + ": no message")
    if lines:
        c.check(all(s in lines[0] for s in must_contain),
                "%s: message %r lacks %r" % (what, lines[0], must_contain))


def main(argv):
    build, model = argv[1], os.path.abspath(argv[2])
    modelfs, modelfs_ls = os.path.join(build, "modelfs"), os.path.join(build, "modelfs-ls")
    c = mfstest.Checker("cli tests")
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = mfstest.sanitizer_env(logdir)
    work = tempfile.mkdtemp(prefix="modelfs-cli-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)

    for prog in (modelfs, modelfs_ls):
        r = run([prog, "--help"], env)
        c.check(r.returncode == 0 and "usage:" in r.stdout and "Exit codes" in r.stdout,
                "%s --help" % prog)
        r = run([prog, "--version"], env)
        c.check(r.returncode == 0 and r.stdout.startswith(os.path.basename(prog) + " "),
                "%s --version: %r" % (prog, r.stdout))
        r = run([prog], env)
        c.equal(r.returncode, 2, "%s with no arguments" % prog)

    r = run([modelfs, "--no-such-option", model, mnt], env)
    c.equal(r.returncode, 2, "unknown option")
    # Several models: the last argument is the mount point, which must exist.
    r = run([modelfs, model, mnt, "extra"], env)
    c.equal(r.returncode, 6, "MODEL MODEL MOUNTPOINT with no such mount point")
    c.check("extra" in r.stderr, "the message names the mount point: %r" % r.stderr)

    missing = os.path.join(work, "missing.rten")
    for prog, args in ((modelfs, [missing, mnt]), (modelfs_ls, [missing])):
        one_line_error(c, run([prog, *args], env), 3, [missing, "cannot open"], "%s missing file" % prog)

    junk = os.path.join(work, "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"hello, this is not a model\n" * 10)
    for prog, args in ((modelfs, [junk, mnt]), (modelfs_ls, [junk])):
        one_line_error(c, run([prog, *args], env), 4, [junk, "not a model"], "%s unrecognised file" % prog)

    data = open(model, "rb").read()
    corrupt = os.path.join(work, "corrupt.rten")
    with open(corrupt, "wb") as f:  # a V2 header whose model range runs past the end
        f.write(data[:8] + (10 ** 9).to_bytes(8, "little") + data[16:])
    for prog, args in ((modelfs, [corrupt, mnt]), (modelfs_ls, [corrupt])):
        one_line_error(c, run([prog, *args], env), 5, [corrupt, "byte ", "outside the file"],
                       "%s corrupt file" % prog)

    r = run([modelfs, model, os.path.join(work, "no-such-dir")], env)
    c.equal(r.returncode, 6, "missing mount point")
    c.check("no-such-dir: mount point: " in r.stderr, "missing mount point: %r" % r.stderr)
    # Both missing: the model is what is wrong first.
    one_line_error(c, run([modelfs, missing, os.path.join(work, "no-such-dir")], env), 3,
                   [missing, "cannot open"], "modelfs missing file and mount point")
    r = run([modelfs_ls, model, "no/such/path"], env)
    c.equal(r.returncode, 7, "modelfs-ls missing path")

    # Messages a new user meets (issue 34, defect 12).
    # A bad -o is found before the model is fetched: here an address
    # nothing answers on, whose error would otherwise be all one sees.
    url = "http://127.0.0.1:%d/m.safetensors" % mfstest.free_port()
    r = run([modelfs, "-o", "bogus_opt", url, mnt], env)
    c.equal(r.returncode, 2, "modelfs -o bogus_opt URL MNT: exit 2 (%r)" % r.stderr)
    c.check("bogus_opt" in r.stderr and "connect" not in r.stderr.lower(),
            "modelfs -o bogus_opt URL: names the option, fetches nothing: %r" % r.stderr)
    r = run([modelfs, "-o", "allow_other,nonsense=3", model, mnt], env)
    c.equal(r.returncode, 2, "modelfs -o allow_other,nonsense=3: exit 2")
    c.check("nonsense" in r.stderr, "the unknown option is named: %r" % r.stderr)
    c.check(not os.path.ismount(mnt), "nothing mounted after a bad -o")
    # A folder of the tree is no file to write: the model and the path
    # are named, exit 7 (README's table) as for a path not in the tree.
    for args in ([model, "tensors"], ["--sha256", model, "tensors"]):
        one_line_error(c, run([modelfs_ls, *args], env), 7, [model, "tensors", "is a directory"],
                       "modelfs-ls %s" % " ".join(args[:-2] + ["MODEL", "tensors"]))
    # --diff with one model: the first line says what is wrong.
    r = run([modelfs_ls, "--diff", model], env)
    c.equal(r.returncode, 2, "--diff with one model: exit 2")
    c.equal(r.stderr.splitlines()[:1], ["modelfs-ls: --diff needs two models, got 1"],
            "--diff with one model: the first line")
    r = run([modelfs_ls, "--diff", model, model, model], env)
    c.equal(r.stderr.splitlines()[:1], ["modelfs-ls: --diff needs two models, got 3"],
            "--diff with three models: the first line")

    if not mfstest.can_mount():
        c.skip("no /dev/fuse: mount cases")
        return c.finish()

    # Daemon mode: usable on the next line, gone after fusermount3 -u.
    r = run([modelfs, model, mnt], env)
    c.equal(r.returncode, 0, "mount: " + r.stderr)
    c.check(os.path.isfile(os.path.join(mnt, "model.json")), "model.json right after modelfs returns")
    c.check(os.path.ismount(mnt), "mounted")
    # libcurl and libcrypto are opened on first use (crypto_lib.h): a
    # mount that has fetched and hashed nothing maps neither, so neither
    # costs a start its relocations.
    pid = mfstest.daemon_pid(mnt)
    if c.check(pid is not None, "the daemon's pid"):
        with open("/proc/%d/maps" % pid) as f:
            libs = {ln.split("/")[-1].split(".so")[0] for ln in f if ".so" in ln}
        c.check(not libs & {"libcrypto", "libcurl"}, "the daemon maps %s" % sorted(libs))
        with open(os.path.join(mnt, "SHA256SUMS"), "rb") as f:
            f.read()
        with open("/proc/%d/maps" % pid) as f:
            c.check("/libcrypto.so" in f.read(), "libcrypto mapped once SHA256SUMS is read")
    r = run(["fusermount3", "-u", mnt])
    c.equal(r.returncode, 0, "fusermount3 -u")
    c.check(not os.path.ismount(mnt), "unmounted by fusermount3 -u")

    # Through mount(8) and mount.fuse3, as fstab would ("PROG#SOURCE" form,
    # so no install is needed); root only.
    if os.geteuid() == 0 and shutil.which("mount"):
        r = run(["mount", "-t", "fuse", "%s#%s" % (os.path.abspath(modelfs), model), mnt, "-o", "ro"], env)
        c.equal(r.returncode, 0, "mount -t fuse: " + r.stderr)
        c.check(os.path.isfile(os.path.join(mnt, "model.json")), "mounted through mount.fuse3")
        c.check(mfstest.unmount(mnt), "unmount after mount -t fuse")
    else:
        c.skip("mount -t fuse needs root")

    # Foreground: SIGTERM and SIGINT unmount cleanly and exit 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        p = subprocess.Popen([modelfs, "-f", model, mnt], env=env, stderr=subprocess.PIPE)
        for _ in range(100):
            if os.path.ismount(mnt) and os.path.exists(os.path.join(mnt, "model.json")):
                break
            time.sleep(0.05)
        c.check(os.path.ismount(mnt), "foreground mount")
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        c.equal(rc, 0, "exit status after %s" % sig.name)
        c.check(not os.path.ismount(mnt), "unmounted after %s" % sig.name)
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)

    # The model file shrinks under the mount: tensor reads fail with EIO,
    # the daemon stays up and unmounts normally.
    copy = os.path.join(work, "copy.rten")
    shutil.copyfile(model, copy)
    with mfstest.mounted(modelfs, copy, env) as m:
        names = sorted(os.listdir(os.path.join(m, "tensors")))
        biggest = max(names, key=lambda n: os.stat(os.path.join(m, "tensors", n)).st_size)
        with open(copy, "r+b") as f:
            f.truncate(len(data) // 2)
        err = None
        try:
            with open(os.path.join(m, "tensors", biggest), "rb") as f:
                f.read()
        except OSError as e:
            err = e.errno
        c.equal(err, 5, "read after the model file shrank (EIO)")
        c.check(os.path.isfile(os.path.join(m, "model.json")), "daemon still serving")

    mfstest.check_sanitizer_reports(c, logdir)
    shutil.rmtree(work, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
