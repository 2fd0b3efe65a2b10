#!/usr/bin/python3
"""The one runner of the per-format mount checks (ctest: mount.NAME, one
case per file of tests/mount/formats/). For every model in the format's
folders (formats/NAME.py: DIRS) it mounts the model once and makes there

  generic  the checks of every stored format against the model's
           .expect.json and modelfs-ls (format_checks.py: listing, sha256
           of every file, dtypes, shapes, xattrs, offsets, EROFS; a corrupt
           one refused with exit 5);
  npy      the .npy twins, with numpy (format_checks.check_twins);
  own      the format's own checks of the model (formats/NAME.py:
           check_model), then its checks of files it writes itself
           (EXTRAS: hostile files, random models, ...).

It prints each model's ok/FAIL line, the number of checks of each part,
and ends as every mount test does (mfstest.main: "N passed, M failed",
exit 1 on a failure, 77 when it could run nothing).

usage: test_formats.py BUILD_DIR --format=NAME [--parts=generic,npy,own] GEN_DIR SHARED_DIR
GEN_DIR: the generated models (build/generated); SHARED_DIR: ../shared
(its fixtures are skipped, visibly, when absent).
"""
import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import mfstest  # noqa: E402
import format_checks  # noqa: E402

PARTS = ("generic", "npy", "own")


def names():
    """Every format of the table: one file formats/NAME.py each."""
    return sorted(f[:-3] for f in os.listdir(os.path.join(HERE, "formats"))
                  if f.endswith(".py") and not f.startswith("_"))


def take_option(args, key):
    """The value of a leading --KEY=VALUE of args (taken off it), or None."""
    if args and args[0].startswith("--%s=" % key):
        return args.pop(0)[len(key) + 3:]
    return None


class Mount:
    """The runner's one mount of a model (its NAME.links folder as
    links_dir when there is one), made on the first call, shared by the
    parts; close() unmounts."""

    def __init__(self, t, model):
        self.t, self.model, self.ctx, self.mnt, self.error = t, model, None, None, None

    def __call__(self):
        if self.mnt is None and self.error is None:
            links = self.model + ".links"
            extra = ("-o", "links_dir=" + os.path.abspath(links)) if os.path.isdir(links) else ()
            ctx = mfstest.mounted(self.t.modelfs, self.model, env=self.t.env, extra=extra)
            try:
                self.mnt = ctx.__enter__()
                self.ctx = ctx
            except RuntimeError as e:
                self.error = str(e)
        if self.error is not None:
            raise RuntimeError(self.error)
        return self.mnt

    def close(self):
        if self.ctx is not None:
            self.ctx.__exit__(None, None, None)
            self.ctx = self.mnt = None


def run(c, t):
    name = take_option(t.args, "format")
    if name not in names():
        mfstest.fail_main("--format: one of %s" % ", ".join(names()))
    parts = take_option(t.args, "parts")
    parts = set(parts.split(",")) if parts else set(PARTS)
    if not parts <= set(PARTS) or len(t.args) != 2:
        mfstest.fail_main(__doc__)
    spec = importlib.import_module("formats." + name)
    c.name = "%s format tests" % name
    t.gen, t.shared = t.args
    roots = {"gen": t.gen, "shared": t.shared}

    def where(d):
        root, _, sub = d.partition("/")
        return os.path.join(roots[root], sub)

    dirs = [where(d) for d in spec.DIRS]
    counts = dict.fromkeys(PARTS, 0)

    def part(which, fn, *args):
        before = c.passed + c.failed
        fn(*args)
        counts[which] += c.passed + c.failed - before

    if getattr(spec, "ONE_CPU", True):
        mfstest.mounts_on_one_cpu()  # reads one file at a time: see there
    own = "own" in parts and getattr(spec, "check_model", None)
    if "own" in parts and hasattr(spec, "setup"):
        part("own", spec.setup, c, t)
    # OWN_DIRS: folders of other formats' models that the format's own
    # checks look into too (ONNX files beside ../shared's RTen ones).
    own_dirs = [where(d) for d in getattr(spec, "OWN_DIRS", ())] if own else []
    for model in mfstest.model_files(c, dirs + own_dirs):
        others = os.path.dirname(model) in own_dirs
        expect = None
        if os.path.exists(model + ".expect.json"):
            with open(model + ".expect.json") as f:
                expect = json.load(f)
        before, ran = c.failed, c.passed + c.failed
        mount = Mount(t, model)
        try:
            if "generic" in parts and not others and format_checks.generic_applies(model, expect):
                part("generic", format_checks.check_model, c, t.build, model, expect, t.env, mount)
            if "npy" in parts and not others:
                try:
                    mnt = mount()
                except RuntimeError:
                    mnt = None  # one that does not mount: the generic checks say whether it must
                if mnt is not None:
                    part("npy", format_checks.check_twins, c, model, mnt)
            if own:
                part("own", own, c, t, model, expect, mount)
        finally:
            mount.close()
        if c.passed + c.failed > ran:
            print("%s %s" % ("ok  " if c.failed == before else "FAIL", model), flush=True)
    if "own" in parts:
        for extra in getattr(spec, "EXTRAS", ()):
            part("own", extra, c, t)
    print("%s: %s checks" % (name, ", ".join("%s %d" % (p, counts[p]) for p in PARTS if p in parts)),
          flush=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("format tests", run, __doc__, min_args=3))
