#!/usr/bin/python3
"""Holds the man pages (docs/*.1) and README.md to what the programs say.

usage: check_docs.py BUILD_DIR SOURCE_DIR

For modelfs and modelfs-ls, from their --help:
  - the options of --help and of the man page's OPTIONS are the same set
    (short, long and -o options; modelfs's includes FUSE's own);
  - every option of --help is in README's Usage section, except FUSE's own
    (README points at FUSE for those), and every option README's Usage
    section names is in one of the two --help texts;
  - the man page's SYNOPSIS lines are the usage lines of --help;
  - the man page's EXIT STATUS is README's exit-code table, word for word,
    and every code --help lists is in that table (7 and 8 only for
    modelfs-ls);
  - the version in the man page's .TH line is the one --version prints;
  - groff -man -ww renders the page without a warning.
Ends with "check_docs: N passed, M failed"; exits 1 if any failed.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

PASSED = 0
FAILED = 0


def check(ok, what):
    global PASSED, FAILED
    if ok:
        PASSED += 1
    else:
        FAILED += 1
        print("FAIL: " + what)


# --- roff to plain text: only what man(7) pages written by hand use ------

FONT = re.compile(r"\\f(?:\[[^\]]*\]|\([A-Za-z]{2}|[A-Za-z0-9])")
ESCAPES = [("\\-", "-"), ("\\&", ""), ("\\(dq", '"'), ("\\(em", "--"),
           ("\\ ", " "), ("\\e", "\\")]
# Macros whose arguments alternate fonts and are joined without spaces.
ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}


def unescape(text):
    text = FONT.sub("", text)
    for esc, plain in ESCAPES:
        text = text.replace(esc, plain)
    return text


def roff_line(line):
    """The text a line adds: a macro's arguments, or the line itself."""
    if not line.startswith("."):
        return unescape(line)
    macro, _, rest = line[1:].partition(" ")
    try:
        args = shlex.split(rest.replace("\\", "\\\\"), posix=True)
    except ValueError:
        args = rest.split()
    sep = "" if macro in ALTERNATING else " "
    return unescape(sep.join(args))


def sections(roff):
    """{".SH name": [lines]}, lines without comments."""
    out, cur = {}, None
    for line in roff.splitlines():
        if line.startswith('.\\"'):
            continue
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def tagged(lines):
    """[(tag text, body text)] of every .TP paragraph in lines."""
    items, i = [], 0
    while i < len(lines):
        if lines[i].startswith(".TP") and i + 1 < len(lines):
            tag = roff_line(lines[i + 1])
            body, j = [], i + 2
            while j < len(lines) and not re.match(r"\.(TP|PP|SH|SS|RS|RE|IP|P|LP)\b", lines[j]):
                body.append(roff_line(lines[j]))
                j += 1
            items.append((tag, " ".join(body)))
            i = j
        else:
            i += 1
    return items


# --- options as tokens: "-x", "--long", "o:name" (an -o option) ----------

DASH = re.compile(r"(?<![\w-])(--[a-z][\w-]*|-[A-Za-z])(?![\w-])")
OPT_O = re.compile(r"(?<![\w-])-o ([a-z_]+)")
OPT_KV = re.compile(r"^([a-z_]+)=")


OPT_FLAG = re.compile(r"[a-z_]+")


def tokens(text, flag_ok=False):
    """flag_ok: a lone word is an -o flag (a man page's option tag)."""
    text = text.strip()
    found = set(DASH.findall(text))
    found |= {"o:" + n for n in OPT_O.findall(text)}
    m = OPT_KV.match(text)
    if m:
        found.add("o:" + m.group(1))
    if flag_ok and OPT_FLAG.fullmatch(text):
        found.add("o:" + text)
    return found


def help_options(text):
    """Options in the option column of --help: (own, FUSE's)."""
    own, fuse, cur = set(), set(), None
    cur = own
    for line in text.splitlines():
        if line.strip() == "FUSE options:":
            cur = fuse
            continue
        if not line.startswith(" "):
            continue
        flag = re.match(r"    ([a-z_]+)(\s{2,}|$)", line)
        if flag:  # a -o flag in the option column (4 spaces in), no "="
            cur.add("o:" + flag.group(1))
            continue
        for field in re.split(r"\s{2,}", line.strip()):
            if field.startswith("-") or OPT_KV.match(field):
                cur |= tokens(field)
            else:
                break  # the description starts
    return own, fuse


def help_usage(text):
    """The "usage:" line and the indented program lines right after it."""
    lines = []
    for line in text.splitlines():
        m = re.match(r"(?:usage:|\s+)\s*(modelfs\S* .*)$", line)
        if m and (lines or line.startswith("usage:")):
            lines.append(" ".join(m.group(1).split()))
        elif lines:
            break
    return lines


def help_exit_codes(text):
    m = re.search(r"Exit codes: (.*?)\.\s*$", text, re.S | re.M)
    return {int(c) for c in re.findall(r"(?:^|,\s*)(\d+) ", m.group(1))} if m else set()


# --- README ---------------------------------------------------------------

def readme_section(readme, heading):
    """The text under a heading, up to the next heading of its level or above."""
    level = heading.split(" ")[0]
    out, on = [], False
    for line in readme.splitlines():
        h = re.match(r"(#+) ", line)
        if h and on and len(h.group(1)) <= len(level):
            break
        if line.strip() == heading:
            on = True
        elif on:
            out.append(line)
    return "\n".join(out)


def readme_options(usage):
    """Options named in the inline code of the Usage section's prose."""
    prose = re.sub(r"```.*?```", "", usage, flags=re.S)
    found = set()
    for span in re.findall(r"`([^`]+)`", prose):
        if span.startswith("-") or re.match(r"modelfs(-ls)? ", span) or OPT_KV.match(span):
            found |= tokens(span)
    return found


def readme_exit_codes(readme):
    table = readme_section(readme, "### Exit codes (modelfs and modelfs-ls)")
    codes = {}
    for m in re.finditer(r"^\| (\d+) \| (.*?) \|$", table, re.M):
        codes[int(m.group(1))] = " ".join(m.group(2).replace("`", "").split())
    return codes


def show(tokens_):
    return ", ".join(sorted(t.replace("o:", "-o ") for t in tokens_)) or "none"


def run(exe, arg):
    r = subprocess.run([exe, arg], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0, "%s %s exits %d" % (exe, arg, r.returncode))
    return r.stdout


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, src = argv[1], argv[2]
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    readme_opts = readme_options(readme_section(readme, "## Usage"))
    codes = readme_exit_codes(readme)
    check(sorted(codes) == list(range(9)),
          "README's exit-code table has codes %s, not 0..8" % sorted(codes))

    helps = {}
    for prog in ("modelfs", "modelfs-ls"):
        exe = os.path.join(build, prog)
        text = run(exe, "--help")
        version = run(exe, "--version").split()
        helps[prog] = (text, version[1] if len(version) > 1 else "?")
    all_help = set()
    for prog, (text, _) in helps.items():
        own, fuse = help_options(text)
        all_help |= own | fuse

    for prog, (text, version) in helps.items():
        page = os.path.join(src, "docs", prog + ".1")
        roff = open(page, encoding="utf-8").read()
        secs = sections(roff)
        own, fuse = help_options(text)
        check(len(own) >= 4, "%s --help: found only %s" % (prog, show(own)))

        # OPTIONS: the same set both ways.
        man_opts = set()
        for tag, _ in tagged(secs.get("OPTIONS", [])):
            man_opts |= tokens(tag, flag_ok=True)
        check(not (own | fuse) - man_opts, "%s.1 OPTIONS lacks %s (in --help)"
              % (prog, show((own | fuse) - man_opts)))
        check(not man_opts - (own | fuse), "%s.1 OPTIONS has %s (not in --help)"
              % (prog, show(man_opts - (own | fuse))))

        # README: every own option; FUSE's own are libfuse's to document.
        check(not own - readme_opts, "README's Usage lacks %s (in %s --help)"
              % (show(own - readme_opts), prog))

        # SYNOPSIS: the usage lines of --help.
        syn, cur = [], []
        for line in secs.get("SYNOPSIS", []):
            if line.startswith(".br"):
                syn.append(" ".join(" ".join(cur).split()))
                cur = []
            else:
                cur.append(roff_line(line))
        if cur:
            syn.append(" ".join(" ".join(cur).split()))
        usage = help_usage(text)
        check(bool(usage) and syn == usage, "%s.1 SYNOPSIS %r is not --help's usage %r"
              % (prog, syn, usage))

        # EXIT STATUS: README's table, word for word.
        man_codes = {}
        for tag, body in tagged(secs.get("EXIT STATUS", [])):
            if tag.strip().isdigit():
                man_codes[int(tag)] = " ".join(body.split())
        for c in sorted(set(codes) | set(man_codes)):
            check(codes.get(c) == man_codes.get(c), "%s.1 exit %d: %r, README: %r"
                  % (prog, c, man_codes.get(c), codes.get(c)))
        listed = help_exit_codes(text)
        check(bool(listed) and listed <= set(codes),
              "%s --help lists exit codes %s, README's table %s" % (prog, sorted(listed), sorted(codes)))
        if prog == "modelfs":
            ls_only = {c for c, m in codes.items() if m.startswith("(modelfs-ls)")}
            check(not listed & ls_only, "modelfs --help lists modelfs-ls's exit codes %s"
                  % sorted(listed & ls_only))

        # .TH ... "modelfs VERSION"
        th = re.search(r'^\.TH .*"modelfs ([^"]+)"', roff, re.M)
        check(th is not None and th.group(1) == version, "%s.1 .TH version %s, --version %s"
              % (prog, th.group(1) if th else None, version))

        # man -l shows it cleanly: groff (groff-base, beside man-db) warns of nothing.
        if shutil.which("groff"):
            r = subprocess.run(["groff", "-man", "-ww", "-z", page], capture_output=True,
                               text=True, timeout=10)
            check(r.returncode == 0 and not r.stderr.strip(), "groff -man -ww %s: %s"
                  % (page, r.stderr.strip() or "exit %d" % r.returncode))
        else:
            print("SKIP: groff -man -ww %s: no groff" % page)

    # README names no option that neither program has.
    check(not readme_opts - all_help, "README's Usage names %s (in no --help)"
          % show(readme_opts - all_help))

    print("check_docs: %d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
