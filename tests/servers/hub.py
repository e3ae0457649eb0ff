"""A small Hugging Face Hub-compatible HTTP server for tests (stdlib only, real git repos on disk).

Run: ``python tests/servers/hub.py --root DIR [--port 0]``; it prints ``PORT <n>`` once listening.

It implements the routes ``huggingface_hub`` (legacy LFS path, ``HF_HUB_DISABLE_XET=1``) and
``datasets`` call to create a dataset repo, upload and commit files, list refs, create tags,
list trees / paths-info and resolve (download) files at any revision, including tags.

Storage: ``DIR/<type>s/<org>/<name>`` is a non-bare git repository (the layout ``olah`` reads as
a local mirror): commits are written with git plumbing; LFS files are committed as git-lfs
pointers and their content stored in ``.git/lfs/objects/aa/bb/<sha256>``.

Every request is appended to ``DIR/requests.jsonl`` as ``{"method", "path", "kind", "status",
"repo", "auth", "detail"}`` (no headers, so a token never reaches the log). Test hooks:
``POST /_admin/fail {"kind", "status", "times"}`` makes the next requests of a kind fail;
``POST /_admin/delete {"repo_type", "repo", "path", "purge_lfs"}`` removes a file with a server-side
commit (and, with ``purge_lfs``, its LFS object, so its bytes must be sent again).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

POINTER_RE = re.compile(rb"^version https://git-lfs\.github\.com/spec/v1\noid sha256:([0-9a-f]{64})\nsize (\d+)\n$")
LFS_SUFFIXES = (".parquet", ".arrow", ".png", ".jpg", ".zip", ".gz", ".bin")
GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in LFS_SUFFIXES)
GIT_ENV = {"GIT_AUTHOR_NAME": "hub", "GIT_AUTHOR_EMAIL": "hub@localhost",
           "GIT_COMMITTER_NAME": "hub", "GIT_COMMITTER_EMAIL": "hub@localhost"}
REPO = r"(?P<type>datasets|models|spaces)/(?P<repo>[^/]+/[^/]+?)"
ROUTES: list[tuple[str, str, re.Pattern[str]]] = [
    (m, kind, re.compile(p + r"$")) for m, kind, p in [
        ("POST", "create_repo", r"/api/repos/create"),
        ("POST", "validate_yaml", r"/api/validate-yaml"),
        ("GET", "whoami", r"/api/whoami-v2"),
        ("POST", "preupload", rf"/api/{REPO}/preupload/(?P<rev>[^/]+)"),
        ("POST", "commit", rf"/api/{REPO}/commit/(?P<rev>[^/]+)"),
        ("POST", "tag", rf"/api/{REPO}/tag/(?P<rev>[^/]+)"),
        ("GET", "refs", rf"/api/{REPO}/refs"),
        ("POST", "paths_info", rf"/api/{REPO}/paths-info/(?P<rev>[^/]+)"),
        ("GET", "tree", rf"/api/{REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?"),
        ("GET", "info", rf"/api/{REPO}(?:/revision/(?P<rev>[^/]+))?"),
        ("POST", "lfs_batch", rf"/{REPO}\.git/info/lfs/objects/batch"),
        ("PUT", "lfs_put", rf"/_lfs/{REPO}/(?P<oid>[0-9a-f]{{64}})"),
        ("POST", "lfs_verify", rf"/_lfs/{REPO}/(?P<oid>[0-9a-f]{{64}})/verify"),
        ("GET", "resolve", rf"/{REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"),
        ("HEAD", "resolve", rf"/{REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"),
        ("POST", "admin_fail", r"/_admin/fail"),
        ("POST", "admin_delete", r"/_admin/delete"),
    ]
]


class HubError(Exception):
    """An HTTP error answer: status code and message (sent as ``{"error": message}``)."""

    def __init__(self, status: int, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra or {}


class GitRepo:
    """One repository on disk; every method takes the repo lock where it writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()

    def git(self, *args: str, data: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
        proc = subprocess.run(["git", *args], cwd=self.path, input=data, capture_output=True,
                              env={**os.environ, **GIT_ENV, **(env or {})}, check=False)
        if proc.returncode != 0:
            raise HubError(500, f"git {args[0]} failed: {proc.stderr.decode(errors='replace')[:200]}")
        return proc.stdout

    def create(self, private: bool) -> None:
        self.path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        (self.path / ".git" / "hub-private").write_text("1" if private else "0")
        self.commit("main", [{"key": "file", "value": {"path": ".gitattributes", "encoding": "base64",
                    "content": base64.b64encode(GITATTRIBUTES.encode()).decode()}}], "initial commit", None)

    @property
    def private(self) -> bool:
        return (self.path / ".git" / "hub-private").read_text() == "1"

    def lfs_path(self, oid: str) -> Path:
        return self.path / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid

    def resolve(self, rev: str) -> str:
        proc = subprocess.run(["git", "rev-parse", "--verify", "-q", f"{rev}^{{commit}}"], cwd=self.path,
                              capture_output=True, check=False)
        if proc.returncode != 0:
            raise HubError(404, f"Revision Not Found: {rev}")
        return proc.stdout.decode().strip()

    def refs(self) -> dict[str, list[dict[str, str]]]:
        out = {"branches": [], "converts": [], "tags": []}
        lines = self.git("for-each-ref", "--format=%(refname) %(objectname)").decode().splitlines()
        for line in lines:
            ref, sha = line.split(" ")
            for prefix, group in (("refs/heads/", "branches"), ("refs/tags/", "tags"), ("refs/convert/", "converts")):
                if ref.startswith(prefix):
                    out[group].append({"name": ref[len(prefix):], "ref": ref, "targetCommit": sha})
        return out

    def entries(self, commit: str, path: str = "", recursive: bool = True) -> list[dict[str, Any]]:
        """Hub tree entries under ``path`` (a folder, or one file) at ``commit``."""
        args = ["ls-tree", "-l", "-z", "-t"] + (["-r"] if recursive else []) + [commit]
        if path:
            args += ["--", path if recursive else path.rstrip("/") + "/"]
        raw = self.git(*args).decode().split("\0")
        found = []
        for record in filter(None, raw):
            meta, name = record.split("\t", 1)
            _mode, kind, oid, size = meta.split()
            if kind == "tree":
                if recursive and path and not name.startswith(path.rstrip("/") + "/"):
                    continue
                found.append({"type": "directory", "oid": oid, "size": 0, "path": name})
                continue
            entry: dict[str, Any] = {"type": "file", "oid": oid, "size": int(size), "path": name}
            if int(size) < 200 and (m := POINTER_RE.match(self.git("cat-file", "blob", oid))):
                entry["size"] = int(m.group(2))
                entry["lfs"] = {"oid": m.group(1).decode(), "size": int(m.group(2)), "pointerSize": int(size)}
            found.append(entry)
        return found

    def read(self, commit: str, path: str) -> tuple[dict[str, Any], bytes]:
        matches = [e for e in self.entries(commit, path) if e["path"] == path and e["type"] == "file"]
        if not matches:
            raise HubError(404, f"Entry Not Found: {path}")
        entry = matches[0]
        if "lfs" in entry:
            return entry, self.lfs_path(entry["lfs"]["oid"]).read_bytes()
        return entry, self.git("cat-file", "blob", entry["oid"])

    def commit(self, branch: str, ops: list[dict[str, Any]], message: str, parent_expected: str | None) -> str:
        """Apply Hub commit operations (ndjson values) to ``branch``; returns the new commit id."""
        with self.lock:
            parent = self.resolve(branch) if (self.path / ".git" / "refs" / "heads" / branch).exists() else None
            if parent_expected and parent_expected != parent:
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
            with tempfile.TemporaryDirectory() as tmp:
                env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
                if parent:
                    self.git("read-tree", parent, env=env)
                for op in ops:
                    self._apply(op, env)
                tree = self.git("write-tree", env=env).decode().strip()
            args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
            new = self.git(*args).decode().strip()
            self.git("update-ref", f"refs/heads/{branch}", new, *([parent] if parent else []))
            return new

    def _apply(self, op: dict[str, Any], env: dict[str, str]) -> None:
        key, value = op["key"], op["value"]
        if key == "file":
            blob = base64.b64decode(value["content"])
        elif key == "lfsFile":
            stored = self.lfs_path(value["oid"])
            if not stored.exists():
                raise HubError(422, f"LFS object {value['oid']} was never uploaded")
            size = stored.stat().st_size
            blob = f"version https://git-lfs.github.com/spec/v1\noid sha256:{value['oid']}\nsize {size}\n".encode()
        elif key in ("deletedFile", "deletedFolder"):
            prefix = value["path"].rstrip("/")
            listed = self.git("ls-files", "-z", "--", prefix, env=env).decode().split("\0")
            for name in filter(None, listed):
                self.git("update-index", "--force-remove", "--", name, env=env)
            return
        else:
            raise HubError(400, f"unknown commit operation {key}")
        oid = self.git("hash-object", "-w", "--stdin", data=blob).decode().strip()
        self.git("update-index", "--add", "--cacheinfo", f"100644,{oid},{value['path']}", env=env)


class HubState:
    """All repositories under ``root``, the request log and the pending injected failures."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repos: dict[str, GitRepo] = {}
        self.lock = threading.Lock()
        self.failures: dict[str, list[int]] = {}
        self.log_path = root / "requests.jsonl"

    def repo(self, repo_type: str, repo_id: str, must_exist: bool = True) -> GitRepo:
        with self.lock:
            if (repo_type, repo_id) not in self.repos:
                self.repos[(repo_type, repo_id)] = GitRepo(self.root / repo_type / repo_id)
            repo = self.repos[(repo_type, repo_id)]
        if must_exist and not (repo.path / ".git").exists():
            raise HubError(404, "Repository Not Found")
        return repo

    def pop_failure(self, kind: str) -> int | None:
        with self.lock:
            pending = self.failures.get(kind) or []
            return pending.pop(0) if pending else None

    def log(self, record: dict[str, Any]) -> None:
        with self.lock, open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")


def upload_mode(path: str, size: int, sample: bytes) -> str:
    """``lfs`` for data/binary files (as the Hub's default .gitattributes would), else ``regular``."""
    return "lfs" if path.endswith(LFS_SUFFIXES) or size > 1_000_000 or b"\0" in sample else "regular"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "HubServer"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the default stderr access log (the JSONL log is the record)."""

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_HEAD(self) -> None:
        self.dispatch("HEAD")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def do_PUT(self) -> None:
        self.dispatch("PUT")

    def body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().split(b";")[0].strip(), 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        record: dict[str, Any] = {"method": method, "path": unquote(url.path), "kind": None, "detail": None,
                                  "auth": self.headers.get("Authorization", "").startswith("Bearer ")}
        data = self.body() if method in ("POST", "PUT") else b""
        try:
            for route_method, kind, pattern in ROUTES:
                match = pattern.match(url.path)
                if route_method == method and match:
                    record["kind"] = kind
                    params = {k: unquote(v) for k, v in match.groupdict().items() if v is not None}
                    record["repo"] = params.get("repo")
                    if (status := self.server.state.pop_failure(kind)) is not None:
                        raise HubError(status, f"injected failure of {kind}")
                    code, payload, headers = getattr(self, "route_" + kind)(params, query, data, record)
                    break
            else:
                raise HubError(404, f"no route for {method} {url.path}")
        except HubError as err:
            code, payload, headers = err.status, json.dumps({"error": str(err), **err.extra}).encode(), {}
            headers["X-Error-Message"] = str(err)
        record["status"] = code
        self.server.state.log(record)
        self.send_response(code)
        content_type = headers.pop("Content-Type", "application/json")
        for name, value in {"Content-Type": content_type, "Content-Length": str(len(payload)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(payload)

    # -- helpers -------------------------------------------------------------------------------
    def need_write(self, record: dict[str, Any]) -> None:
        if not record["auth"]:
            raise HubError(401, "Invalid credentials in Authorization header")

    def readable(self, params: dict[str, str], record: dict[str, Any]) -> GitRepo:
        repo = self.server.state.repo(params["type"], params["repo"])
        if repo.private and not record["auth"]:
            raise HubError(404, "Repository Not Found")
        return repo

    def base(self) -> str:
        return f"http://{self.headers.get('Host')}"

    @staticmethod
    def ok(value: Any) -> tuple[int, bytes, dict[str, str]]:
        return 200, json.dumps(value).encode(), {}

    # -- write routes --------------------------------------------------------------------------
    def route_create_repo(self, params, query, data, record):
        self.need_write(record)
        body = json.loads(data)
        repo_type = (body.get("type") or "model") + "s"
        repo_id = f"{body.get('organization') or 'tester'}/{body['name']}"
        repo = self.server.state.repo(repo_type, repo_id, must_exist=False)
        url = f"{self.base()}/{repo_type}/{repo_id}"
        with repo.lock:
            if (repo.path / ".git").exists():
                raise HubError(409, "You already created this dataset repo", {"url": url})
            repo.create(private=body.get("visibility") == "private" or bool(body.get("private")))
        record["repo"], record["detail"] = repo_id, {"private": repo.private}
        return self.ok({"url": url, "name": repo_id, "id": repo_id})

    def route_validate_yaml(self, params, query, data, record):
        return self.ok({"errors": [], "warnings": []})

    def route_whoami(self, params, query, data, record):
        self.need_write(record)
        return self.ok({"type": "user", "name": "tester", "orgs": [], "auth": {"type": "access_token"}})

    def route_preupload(self, params, query, data, record):
        self.need_write(record)
        repo = self.readable(params, record)
        commit = repo.resolve(params["rev"])
        remote = {e["path"]: e for e in repo.entries(commit)}
        files = []
        for item in json.loads(data)["files"]:
            mode = upload_mode(item["path"], item["size"], base64.b64decode(item["sample"]))
            known = remote.get(item["path"])
            oid = (known.get("lfs", {}).get("oid") if mode == "lfs" else known["oid"]) if known else None
            files.append({"path": item["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        record["detail"] = {f["path"]: f["uploadMode"] for f in files}
        return self.ok({"files": files, "commitOid": commit})

    def route_lfs_batch(self, params, query, data, record):
        self.need_write(record)
        repo = self.readable(params, record)
        objects = []
        for obj in json.loads(data)["objects"]:
            answer: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"]}
            if not repo.lfs_path(obj["oid"]).exists():
                href = f"{self.base()}/_lfs/{params['type']}/{params['repo']}/{obj['oid']}"
                answer["actions"] = {"upload": {"href": href}, "verify": {"href": href + "/verify"}}
            objects.append(answer)
        record["detail"] = {o["oid"]: "actions" in o for o in objects}
        return 200, json.dumps({"transfer": "basic", "objects": objects}).encode(), {
            "Content-Type": "application/vnd.git-lfs+json"}

    def route_lfs_put(self, params, query, data, record):
        repo = self.server.state.repo(params["type"], params["repo"])
        if hashlib.sha256(data).hexdigest() != params["oid"]:
            raise HubError(400, "uploaded content does not match its oid")
        target = repo.lfs_path(params["oid"])
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(target)
        record["detail"] = {"oid": params["oid"], "bytes": len(data)}
        return 200, b"", {}

    def route_lfs_verify(self, params, query, data, record):
        repo = self.server.state.repo(params["type"], params["repo"])
        if not repo.lfs_path(params["oid"]).exists():
            raise HubError(404, "object not found")
        return self.ok({})

    def route_commit(self, params, query, data, record):
        self.need_write(record)
        repo = self.readable(params, record)
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        ops = [line for line in lines if line["key"] != "header"]
        record["detail"] = {op["value"]["path"]: op["key"] for op in ops}
        oid = repo.commit(params["rev"], ops, header["summary"], header.get("parentCommit"))
        url = f"{self.base()}/{params['type']}/{params['repo']}/commit/{oid}"
        return self.ok({"commitUrl": url, "commitOid": oid, "success": True})

    def route_tag(self, params, query, data, record):
        self.need_write(record)
        repo = self.readable(params, record)
        tag = json.loads(data)["tag"]
        with repo.lock:
            if any(t["name"] == tag for t in repo.refs()["tags"]):
                raise HubError(409, f"Tag {tag} already exists")
            repo.git("update-ref", f"refs/tags/{tag}", repo.resolve(params["rev"]))
        record["detail"] = {"tag": tag}
        return self.ok({})

    def route_admin_fail(self, params, query, data, record):
        body = json.loads(data)
        with self.server.state.lock:
            self.server.state.failures.setdefault(body["kind"], []).extend([body["status"]] * body.get("times", 1))
        return self.ok({})

    def route_admin_delete(self, params, query, data, record):
        body = json.loads(data)
        repo = self.server.state.repo(body.get("repo_type", "datasets"), body["repo"])
        entry, _content = repo.read(repo.resolve("main"), body["path"])
        oid = repo.commit("main", [{"key": "deletedFile", "value": {"path": body["path"]}}], "admin delete", None)
        if body.get("purge_lfs") and "lfs" in entry:
            repo.lfs_path(entry["lfs"]["oid"]).unlink()
        return self.ok({"commitOid": oid})

    # -- read routes ---------------------------------------------------------------------------
    def route_refs(self, params, query, data, record):
        return self.ok(self.readable(params, record).refs())

    def route_paths_info(self, params, query, data, record):
        repo = self.readable(params, record)
        commit = repo.resolve(params["rev"])
        form = parse_qs(data.decode()) if data else {}
        wanted = set(form.get("paths", []))
        listed = repo.entries(commit)
        return self.ok([e for e in listed if e["path"] in wanted])

    def route_tree(self, params, query, data, record):
        repo = self.readable(params, record)
        commit = repo.resolve(params["rev"])
        recursive = query.get("recursive", "false").lower() in ("1", "true")
        path = params.get("path", "").strip("/")
        listed = repo.entries(commit, path, recursive=recursive)
        if path and not listed:
            raise HubError(404, f"Entry Not Found: {path}")
        return self.ok(listed)

    def route_info(self, params, query, data, record):
        repo = self.readable(params, record)
        commit = repo.resolve(params.get("rev") or "main")
        files = [e for e in repo.entries(commit) if e["type"] == "file"]
        return self.ok({"_id": params["repo"], "id": params["repo"], "sha": commit, "private": repo.private,
                        "disabled": False, "gated": False, "downloads": 0, "likes": 0, "tags": [],
                        "author": params["repo"].split("/")[0], "lastModified": "2026-01-01T00:00:00.000Z",
                        "siblings": [{"rfilename": e["path"], "size": e["size"]} for e in files]})

    def route_resolve(self, params, query, data, record):
        repo = self.readable(params, record)
        commit = repo.resolve(params["rev"])
        entry, content = repo.read(commit, params["path"])
        etag = entry["lfs"]["oid"] if "lfs" in entry else entry["oid"]
        headers = {"X-Repo-Commit": commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if "lfs" in entry:
            headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(entry["size"])})
        ranged = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if ranged:
            start = int(ranged.group(1))
            end = int(ranged.group(2)) if ranged.group(2) else len(content) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
            return 206, content[start:end + 1], headers
        return 200, content, headers


class HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: HubState) -> None:
        super().__init__(address, Handler)
        self.state = state


def main(argv: list[str] | None = None) -> int:
    """Serve until killed; print ``PORT <n>`` (flushed) once the socket listens."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="directory holding repos and requests.jsonl")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    server = HubServer((args.host, args.port), HubState(args.root))
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
