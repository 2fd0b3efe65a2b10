"""A test Hugging Face Hub on loopback, speaking the protocol as
huggingface_hub does (file_download.py, hf_api.py), for test_hub.py.

Two servers: the Hub (127.0.0.1) and the host its resolve redirects to
(127.0.0.2, as the Hub's CDN is another host):

  HEAD|GET /[datasets/]ORG/REPO/resolve/REV/PATH   (REV quoted whole)
      an LFS file (any but *.json): 302 to the byte host, a signed URL
      (?expires=T), with X-Repo-Commit, X-Linked-Size, X-Linked-Etag (the
      sha256), ETag (the git oid of its LFS pointer); a small file
      (*.json): 200 (206 for a range) from the Hub itself, ETag its git
      blob oid. 401 without the token for a gated repository; 404 with
      X-Error-Code RepoNotFound, RevisionNotFound or EntryNotFound.
  HEAD|GET /[datasets/]ORG/REPO/raw/REV/PATH   the file as git holds it:
      an LFS file's pointer, a small file itself; from the Hub.
  REV: a branch or other ref, a commit, or HEAD (the default branch).
  GET /api/{models|datasets}/ORG/REPO/revision/REV[?expand=F...]   the
      repository's info: _id, id, sha (the commit), siblings, gated...;
      with expand= only those fields (and _id, id).
  GET /api/{models|datasets}/ORG/REPO/tree/REV[/PATH]?recursive=B[&cursor=N]
      `page` entries (folders too) below PATH, one level or (recursive)
      all; files with their git oid and, for LFS, lfs {oid, size,
      pointerSize}; the next page in a Link header (same query).
  A gated repository's info and tree are public; its files need the token.
  Faults: a renamed repository (307, relative), an X-Linked-Size that
  lies, a next page on the byte host.
  GET (byte host) /blob/SHA256?expires=T   ranges (206, Content-Range),
      ETag "SHA256", If-Match (412), 403 once T has passed (the clock
      can be moved on: srv.skew).

Each request is logged: (host, method, path, Range, carried the token),
and in .headers (host, path, {lower-case name: value}) with every header.
For the redirect tests: the Hub over TLS (tls=(cert, key)), the resolve's
Location on another base (.bytes_base, e.g. with a user:password), a
file the Hub serves at resolve whose GETs it then redirects to the byte
host (.own_then_redirect), and a listing whose last page links back to
the first (.next_wraps).
Servers stop when told; handlers are bounded (no waiting).
"""
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testserver  # noqa: E402


class Repo:
    """Commits of {path: local file}, refs {name: commit}."""

    def __init__(self, gated=False):
        self.gated = gated
        self.commits = {}
        self.refs = {}

    def commit(self, files, ref="main"):
        sha = hashlib.sha1(json.dumps(sorted(files.items())).encode() +
                           str(len(self.commits)).encode()).hexdigest()
        self.commits[sha] = dict(files)
        if ref:
            self.refs[ref] = sha
        return sha

    def at(self, rev):
        if rev == "HEAD":
            rev = "main"   # the default branch, as git's HEAD names it
        sha = rev if rev in self.commits else self.refs.get(rev)
        return sha, self.commits.get(sha)


def sha256_of(path, memo={}):
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in memo:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        memo[key] = h.hexdigest()
    return memo[key]


def is_lfs(path):
    """Which files the repositories here keep in LFS."""
    return not path.endswith(".json")


def lfs_pointer(local):
    """The Git LFS pointer that git holds for an LFS file."""
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
            % (sha256_of(local), os.path.getsize(local))).encode()


def git_oid(path, local, memo={}):
    """The git blob id of `path` in a commit: of its LFS pointer, or of
    its bytes."""
    if is_lfs(path):
        data = lfs_pointer(local)
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    st = os.stat(local)
    key = (local, st.st_size, st.st_mtime_ns)
    if key not in memo:
        h = hashlib.sha1(b"blob %d\0" % st.st_size)
        with open(local, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        memo[key] = h.hexdigest()
    return memo[key]


class Handler(testserver.Handler):
    def serve(self, head):
        hub = self.server.hub
        auth = self.headers.get("Authorization")
        with hub.lock:
            hub.log.append((self.server.role, self.command, self.path, self.headers.get("Range"),
                            auth is not None and hub.token in auth))
            hub.headers.append((self.server.role, self.path, self.header_dict()))
        if self.server.role == "bytes":
            return self.serve_blob(head)
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.split("/")[1:]
        if parts[:1] == ["api"]:
            return self.serve_api(parts[1:], urllib.parse.parse_qs(url.query), auth)
        kind = "models"
        if parts[:1] == ["datasets"]:
            kind, parts = "datasets", parts[1:]
        if len(parts) < 5 or parts[2] not in ("resolve", "raw"):
            return self.send_plain(404)
        repo_id = parts[0] + "/" + parts[1]
        if repo_id in hub.renamed:
            # A renamed repository: a relative redirect on the Hub itself.
            return self.send_plain(307, [("Location", "/%s/%s" % (hub.renamed[repo_id],
                                                                "/".join(parts[2:])))])
        rev = urllib.parse.unquote(parts[3])
        path = urllib.parse.unquote("/".join(parts[4:]))
        repo = self.repo(kind, repo_id, auth)
        if repo is None:
            return
        sha, files = repo.at(rev)
        if files is None:
            return self.send_plain(404, [("X-Error-Code", "RevisionNotFound")])
        if path not in files:
            return self.send_plain(404, [("X-Error-Code", "EntryNotFound"),
                                         ("X-Repo-Commit", sha)])
        local = files[path]
        size = os.path.getsize(local)
        digest = sha256_of(local)
        etag = '"%s"' % git_oid(path, local)
        if parts[2] == "raw":
            return self.serve_file(local, etag, head, [("X-Repo-Commit", sha)],
                                   data=lfs_pointer(local) if is_lfs(path) else None)
        expires = int(time.time() + hub.skew) + hub.ttl
        if hub.own_then_redirect and is_lfs(path):
            # The Hub serves the file itself at resolve, then redirects its
            # GETs to the byte host (where its token must not go).
            if self.command == "GET":
                return self.send_plain(302, [("Location", "%s/blob/%s?expires=%d" % (
                    hub.bytes_url, digest, expires))])
            return self.serve_file(local, etag, head, [("X-Repo-Commit", sha)])
        if is_lfs(path):
            return self.send_plain(302, [
                ("Location", "%s/blob/%s?expires=%d" % (hub.bytes_base or hub.bytes_url, digest,
                                                        expires)),
                ("X-Repo-Commit", sha), ("X-Linked-Size", str(size + hub.size_lie)),
                ("X-Linked-Etag", '"%s"' % digest), ("ETag", etag)])
        return self.serve_file(local, etag, head, [("X-Repo-Commit", sha)])

    def repo(self, kind, repo_id, auth, files=True):
        """The repository, or None when the answer (401, 404) was sent;
        `files`: its files are asked for (a gated repository's are not
        public, its info and tree are)."""
        hub = self.server.hub
        repo = hub.repos.get((kind, repo_id))
        if repo is None:
            self.send_plain(404, [("X-Error-Code", "RepoNotFound")])
            return None
        if files and repo.gated and auth != "Bearer " + hub.token:
            self.send_plain(401, [("X-Error-Code", "GatedRepo")])
            return None
        return repo

    def serve_api(self, parts, query, auth):
        hub = self.server.hub
        if len(parts) < 5 or parts[0] not in ("models", "datasets"):
            return self.send_plain(404)
        repo_id = parts[1] + "/" + parts[2]
        repo = self.repo(parts[0], repo_id, auth, files=False)
        if repo is None:
            return
        sha, files = repo.at(urllib.parse.unquote(parts[4]))
        if files is None:
            return self.send_plain(404, [("X-Error-Code", "RevisionNotFound")])
        if parts[3] == "revision":
            return self.serve_info(parts[0], repo_id, repo, sha, files, query)
        if parts[3] != "tree":
            return self.send_plain(404)
        below = urllib.parse.unquote("/".join(parts[5:])).strip("/")
        recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
        entries, dirs = [], set()
        for p in sorted(files):
            if below and not p.startswith(below + "/"):
                continue
            rest = p[len(below) + 1:] if below else p
            steps = rest.split("/")
            for i in range(1, len(steps) if recursive else min(len(steps), 2)):
                d = "/".join(([below] if below else []) + steps[:i])
                if d not in dirs:
                    dirs.add(d)
                    entries.append({"type": "directory", "size": 0, "path": d,
                                    "oid": hashlib.sha1(("tree " + sha + d).encode()).hexdigest()})
            if not recursive and len(steps) > 1:
                continue
            size = os.path.getsize(files[p])
            e = {"type": "file", "oid": git_oid(p, files[p]), "size": size, "path": p}
            if is_lfs(p):
                e["lfs"] = {"oid": sha256_of(files[p]), "size": size,
                            "pointerSize": len(lfs_pointer(files[p]))}
            entries.append(e)
        if below and not entries:
            return self.send_plain(404, [("X-Error-Code", "EntryNotFound")])
        cursor = int(query.get("cursor", ["0"])[0])
        page = entries[cursor:cursor + hub.page]
        headers = [("Content-Type", "application/json")]
        if cursor + hub.page < len(entries):
            # The same listing (path, recursive, expand), from the next entry.
            q = [(k, v) for k, vs in query.items() if k != "cursor" for v in vs]
            nxt = "%s%s?%s" % (hub.bytes_url if hub.foreign_next else hub.url,
                               urllib.parse.urlsplit(self.path).path,
                               urllib.parse.urlencode(q + [("cursor", cursor + hub.page)]))
            headers.append(("Link", '<%s>; rel="next"' % nxt))
        elif hub.next_wraps and cursor > 0:
            headers.append(("Link", '<%s/api/%s?recursive=true>; rel="next"'
                            % (hub.url, "/".join(parts[:5]))))
        return self.send_plain(200, headers, json.dumps(page).encode())

    def serve_info(self, kind, repo_id, repo, sha, files, query):
        """/api/KIND/ORG/REPO/revision/REV: what the Hub says of a
        repository at a revision (with expand=, those fields only)."""
        when = "2026-01-01T00:00:00.000Z"
        info = {"_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24], "id": repo_id,
                "author": repo_id.split("/")[0], "sha": sha, "lastModified": when,
                "createdAt": when, "private": False,
                "gated": "manual" if repo.gated else False, "disabled": False,
                "downloads": 0, "likes": 0, "tags": [],
                "siblings": [{"rfilename": p} for p in sorted(files)]}
        if kind == "models":
            info.update(modelId=repo_id, pipeline_tag=None, library_name=None)
        expand = query.get("expand")
        if expand:
            info = {k: v for k, v in info.items() if k in ("_id", "id") or k in expand}
        return self.send_plain(200, [("Content-Type", "application/json")],
                               json.dumps(info).encode())

    def serve_blob(self, head):
        hub = self.server.hub
        url = urllib.parse.urlsplit(self.path)
        digest = url.path.rsplit("/", 1)[-1]
        expires = int(urllib.parse.parse_qs(url.query).get("expires", ["0"])[0])
        if time.time() + hub.skew > expires:
            with hub.lock:
                hub.expired += 1
            return self.send_plain(403)
        local = hub.blobs.get(digest)
        if local is None:
            return self.send_plain(404)
        return self.serve_file(local, '"%s"' % digest, head, [])

    def serve_file(self, local, etag, head, extra, data=None):
        """The file at `local` (or the bytes `data`): ranges, If-Match."""
        size = os.path.getsize(local) if data is None else len(data)
        im = self.headers.get("If-Match")
        if im is not None and im != etag:
            return self.send_plain(412, [("ETag", etag)])
        first, last, partial = 0, size - 1, False
        try:
            asked = testserver.byte_range(self.headers.get("Range"), size)
        except testserver.BadRange:
            asked = None   # ignored, as the Hub's servers do
        if asked is not None:
            first, last = asked
            if not testserver.satisfiable(first, last, size):
                return self.send_plain(416, [("Content-Range", "bytes */%d" % size),
                                             ("ETag", etag)])
            partial = True
        self.send_response(206 if partial else 200)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if partial:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        if head:
            return
        if data is None:
            with open(local, "rb") as f:
                f.seek(first)
                data = f.read(last - first + 1)
        else:
            data = data[first:last + 1]
        self.write(data)


class Hub:
    def __init__(self, token, page=2, ttl=3600, tls=None):
        self.token = token
        self.page = page
        self.ttl = ttl
        self.skew = 0
        self.expired = 0          # 403s for an expired signed URL
        self.renamed = {}         # old ORG/REPO: new (307 to the new name)
        self.size_lie = 0         # added to X-Linked-Size
        self.foreign_next = False  # the Link to the next page on the byte host
        self.next_wraps = False    # the last page's Link back to the first
        self.bytes_base = None     # the resolve's Location there, not at bytes_url
        self.own_then_redirect = False  # a file served at resolve, its GETs redirected
        self.headers = []
        self.repos = {}
        self.blobs = {}
        self.lock = threading.Lock()
        self.log = []
        self.servers = []
        for role, host in (("hub", "127.0.0.1"), ("bytes", "127.0.0.2")):
            srv = testserver.start(Handler, host, tls if role == "hub" else None,
                                   role=role, hub=self)
            if role == "hub":
                self.url = srv.url
            else:
                self.bytes_url = srv.url
            self.servers.append(srv)

    def add_repo(self, repo_id, files, kind="models", gated=False, ref="main"):
        """A repository of {path: local file} at one commit of `ref`."""
        repo = self.repos.setdefault((kind, repo_id), Repo(gated))
        for local in files.values():
            self.blobs[sha256_of(local)] = local
        return repo.commit(files, ref)

    def requests(self, role=None, since=0):
        with self.lock:
            return [r for r in self.log[since:] if role is None or r[0] == role]

    def stop(self):
        for srv in self.servers:
            srv.stop()
