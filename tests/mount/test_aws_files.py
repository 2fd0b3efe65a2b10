#!/usr/bin/python3
"""The AWS shared files behind s3:// (issue 34, defect 10): a credentials
or config file that is a FIFO with no writer (named by
AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, or at ~/.aws/credentials)
used to hang the mount for ever; now the mount fails at once with a
message naming the file, as it does for a folder or a file over 1 MiB. The
same files, regular, mount a model from s3server.py on 127.0.0.1 (the
profile's keys signed with, the bytes right)."""
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
try:
    import s3server  # noqa: E402 (needs Debian's python3-botocore)
except ImportError as e:
    print("SKIP: %s (scripts/install-deps.sh installs python3-botocore)" % e)
    sys.exit(mfstest.SKIP)

REGION = "eu-test-1"
KEY_ID, SECRET = "AKIDMODELFSFILES", "filesSECRETsecret/K7MDENG+bPxRfiCY"
SECONDS = 10   # longer is a hang


def mount(c, modelfs, url, env, what):
    """modelfs URL MNT (daemon mode), given up on after SECONDS: (exit
    code or 'hung', stderr, mount point or None while mounted)."""
    mnt = mfstest.scratch("modelfs-mnt-")
    try:
        r = subprocess.run([modelfs, url, mnt], capture_output=True, text=True, env=env,
                           timeout=SECONDS)
    except subprocess.TimeoutExpired:
        mfstest.unmount(mnt)
        os.rmdir(mnt)
        return "hung", "", None
    if r.returncode != 0:
        os.rmdir(mnt)
        return r.returncode, r.stderr, None
    return 0, r.stderr, mnt


def run(c, t):
    modelfs = t.modelfs
    base = t.env
    for k in list(base):
        if k.startswith("AWS_"):
            del base[k]   # the runner's own AWS settings never reach the test
    root = mfstest.scratch("modelfs-aws-files-")
    home = os.path.join(root, "home")
    os.makedirs(os.path.join(home, ".aws"))
    base["HOME"] = home
    base["XDG_CACHE_HOME"] = os.path.join(root, "cache")
    bucket = os.path.join(root, "models")
    os.makedirs(bucket)
    data = os.urandom(300 << 10)
    mfstest.write_safetensors(os.path.join(bucket, "m.safetensors"), {"t": data})
    srv = s3server.start({"models": bucket}, {KEY_ID: (SECRET, None)}, region=REGION)
    url = "s3://models/m.safetensors"
    env = dict(base, AWS_ENDPOINT_URL=srv.url, AWS_REGION=REGION, AWS_PROFILE="dev")
    creds = os.path.join(root, "creds")
    with open(creds, "w") as f:
        f.write("[dev]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (KEY_ID, SECRET))
    config = os.path.join(root, "config")
    with open(config, "w") as f:
        f.write("[profile dev]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                % (KEY_ID, SECRET))
    fifo = os.path.join(root, "fifo")
    os.mkfifo(fifo, 0o600)
    huge = os.path.join(root, "huge")
    with open(huge, "w") as f:
        f.write("[dev]\n" + "# filler\n" * (120 << 10))
    t0 = time.time()
    try:
        # The regular files: the profile's keys, the right bytes.
        for what, e in (("AWS_SHARED_CREDENTIALS_FILE", dict(env, AWS_SHARED_CREDENTIALS_FILE=creds)),
                        ("AWS_CONFIG_FILE", dict(env, AWS_CONFIG_FILE=config))):
            code, err, mnt = mount(c, modelfs, url, e, what)
            if c.equal(code, 0, "%s a regular file: mounts (%s)" % (what, err.strip())):
                c.equal(mfstest.read_or_errno(os.path.join(mnt, "tensors", "t")), (data, 0),
                        "%s a regular file: the tensor's bytes" % what)
                mfstest.unmount_and_remove(mnt)
        # A FIFO with no writer, a folder, a file over 1 MiB: refused at
        # once, naming the file.
        dflt = os.path.join(home, ".aws", "credentials")
        cases = [("AWS_SHARED_CREDENTIALS_FILE a FIFO", dict(env, AWS_SHARED_CREDENTIALS_FILE=fifo),
                  fifo, "FIFO"),
                 ("AWS_CONFIG_FILE a FIFO", dict(env, AWS_SHARED_CREDENTIALS_FILE=creds,
                                                 AWS_CONFIG_FILE=fifo), fifo, "FIFO"),
                 ("~/.aws/credentials a FIFO", env, dflt, "FIFO"),
                 ("AWS_CONFIG_FILE a folder", dict(env, AWS_SHARED_CREDENTIALS_FILE=creds,
                                                   AWS_CONFIG_FILE=root), root, "folder"),
                 ("AWS_SHARED_CREDENTIALS_FILE over 1 MiB",
                  dict(env, AWS_SHARED_CREDENTIALS_FILE=huge), huge, "larger than")]
        for what, e, path, why in cases:
            if path == dflt:
                os.mkfifo(dflt, 0o600)
            t = time.time()
            code, err, mnt = mount(c, modelfs, url, e, what)
            if mnt is not None:
                mfstest.unmount_and_remove(mnt)
            c.check(code == 2 and path in err and why in err,
                    "%s: exit 2 within %d s naming it (%r %r, %.1f s)"
                    % (what, SECONDS, code, err.strip(), time.time() - t))
            if path == dflt:
                os.unlink(dflt)
    finally:
        srv.stop()
    print("aws files: %.1f s" % (time.time() - t0), flush=True)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("aws files tests", run, __doc__))
