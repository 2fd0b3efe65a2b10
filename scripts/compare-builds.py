#!/usr/bin/python3
"""Do two builds of modelfs-ls show the same models identically?

    compare-builds.py [--new-env] [--xattrs N] [--jobs N] OLD_LS NEW_LS PATH...

Each PATH is a model or a folder searched for models (every regular file
and every folder some build loads). For each model, both builds must give
the same listing (`modelfs-ls MODEL`), the same exit code, the same
"SHA256 SIZE PATH" line for every file (`--sha256`), and the same
extended attributes (`-x`) of its first N files (--xattrs, default 60). Prints each difference and a
closing "N passed, N failed" line; exits 1 when any model differs.

With MODELFS_SOURCE=read in the environment of NEW only (--new-env), the
same compares the mapped source against the read one.

With --remote, each PATH folder is served over HTTP on 127.0.0.1
(tests/mount/rangeserver.py) and each model file in it is compared as
its URL (folders are left out: a URL names a file); each build gets a
cache folder of its own (XDG_CACHE_HOME), so neither reads the other's
blocks."""

import os
import subprocess
import sys


ENVS = {}  # build -> its environment (--remote: a cache of its own)


def run(ls, args, env=None):
    if env is None:
        env = ENVS.get(ls)
    p = subprocess.run([ls] + args, capture_output=True, env=env, timeout=600)
    return p.returncode, p.stdout


def files_of(listing):
    """Paths of the files in a listing ("f SIZE PATH" and "d - PATH/" lines)."""
    out = []
    for line in listing.decode("utf-8", "surrogateescape").splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0] == "f":
            out.append(parts[2])
    return out


def models(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
        elif os.path.isdir(p):
            for dirpath, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if not f.endswith((".expect.json", ".md", ".py", ".txt", ".sh")):
                        yield os.path.join(dirpath, f)
                for d in dirs:
                    yield os.path.join(dirpath, d)


def remote_models(paths):
    """Each model file of each folder as a URL of a server of its own."""
    import tempfile
    import urllib.parse
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tests", "mount"))
    import rangeserver
    servers, out = [], []
    for p in paths:
        root = os.path.abspath(p)
        srv = rangeserver.start(root)
        servers.append(srv)
        for m in models([root]):
            if os.path.isfile(m):
                rel = os.path.relpath(m, root)
                out.append(srv.url.rstrip("/") + "/" + urllib.parse.quote(rel))
    return servers, out, tempfile.TemporaryDirectory()


def compare(old, new, model, new_env, nx):
    problems = []
    rc_a, list_a = run(old, [model])
    rc_b, list_b = run(new, [model], new_env)
    if rc_a != rc_b:
        return ["exit %d, now %d" % (rc_a, rc_b)]
    if rc_a != 0:
        return []  # not a model for either: the same refusal code
    if list_a != list_b:
        problems.append("listings differ")
    paths = files_of(list_a)
    if paths:
        for i in range(0, len(paths), 200):
            chunk = paths[i:i + 200]
            ra, sa = run(old, ["--sha256", model] + chunk)
            rb, sb = run(new, ["--sha256", model] + chunk, new_env)
            if (ra, sa) != (rb, sb):
                problems.append("sha256 of files %d..%d differ" % (i, i + len(chunk) - 1))
        for p in paths[:nx]:
            xa = run(old, ["-x", model, p])
            xb = run(new, ["-x", model, p], new_env)
            if xa != xb:
                la, lb = xa[1].splitlines(), xb[1].splitlines()
                first = next((k for k in range(max(len(la), len(lb)))
                              if la[k:k + 1] != lb[k:k + 1]), None)
                problems.append("xattrs of %s differ (exit %d vs %d; first at line %s: %r vs %r)"
                                % (p, xa[0], xb[0], first, la[first:first + 1],
                                   lb[first:first + 1]))
                break
    return problems


def main():
    args = sys.argv[1:]
    new_env = None
    remote = False
    nx, jobs = 60, os.cpu_count() or 1
    while args and args[0].startswith("--"):
        if args[0] == "--new-env":
            new_env = dict(os.environ, MODELFS_SOURCE="read")
            args = args[1:]
        elif args[0] == "--remote":
            remote = True
            args = args[1:]
        elif args[0] in ("--xattrs", "--jobs") and len(args) > 1:
            if args[0] == "--xattrs":
                nx = int(args[1])
            else:
                jobs = max(1, int(args[1]))
            args = args[2:]
        else:
            break
    if len(args) < 3:
        print(__doc__)
        return 2
    old, new, paths = args[0], args[1], args[2:]
    from concurrent.futures import ThreadPoolExecutor
    servers = []
    if remote:
        servers, ms, caches = remote_models(paths)
        for i, ls in enumerate((old, new)):
            cache = os.path.join(caches.name, str(i))
            os.makedirs(cache)
            ENVS[ls] = dict(new_env or os.environ, XDG_CACHE_HOME=cache) if i else \
                dict(os.environ, XDG_CACHE_HOME=cache)
        if new_env is not None:
            new_env = ENVS[new]
    else:
        ms = list(models(paths))
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda m: compare(old, new, m, new_env, nx), ms))
    passed = failed = 0
    for m, problems in zip(ms, results):
        if problems:
            failed += 1
            print("DIFF %s: %s" % (m, "; ".join(problems)))
        else:
            passed += 1
    for srv in servers:
        srv.stop()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
