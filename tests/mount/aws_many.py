#!/usr/bin/python3
"""aws_many.py OUT ARGS_JSON: several commands of Debian's awscli in one
Python, as `/usr/bin/aws ARGS...` runs each (awscli.clidriver.main, a new
driver and session a command), writing [[exit code, stdout, stderr], ...]
to OUT as JSON. Each `aws` is a Python of its own that imports botocore:
0.7-1 CPU-s a command, most of mount.real_clients's awscli part."""
import io
import json
import os
import sys

if os.environ.get("LC_CTYPE", "") == "UTF-8":   # as /usr/bin/aws does
    os.environ["LC_CTYPE"] = "en_US.UTF-8"
import awscli.clidriver  # noqa: E402


def one(args):
    out, err = io.BytesIO(), io.BytesIO()
    so, se = sys.stdout, sys.stderr
    sys.stdout = io.TextIOWrapper(out, "utf-8", "surrogateescape", write_through=True)
    sys.stderr = io.TextIOWrapper(err, "utf-8", "replace", write_through=True)
    try:
        rc = awscli.clidriver.create_clidriver().main(args)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    except Exception as e:   # noqa: BLE001 (a crash is a failed command, said)
        sys.stderr.write("aws_many: %s: %r\n" % (" ".join(args), e))
        rc = 255
    finally:
        w = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = so, se
        for f in w:
            f.flush()
            f.detach()   # else its collection closes the BytesIO under it
    return [rc, out.getvalue().decode("utf-8", "surrogateescape"),
            err.getvalue().decode("utf-8", "replace")]


def main():
    results = [one(a) for a in json.loads(sys.argv[2])]
    with open(sys.argv[1], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
