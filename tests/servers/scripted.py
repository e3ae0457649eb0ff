"""A scripted OpenAI-compatible HTTP server for tests and benchmarks.

It serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on a free port of 127.0.0.1
(stdlib ``ThreadingHTTPServer``, HTTP/1.1 keep-alive), records every request it receives,
and answers each chat request with the next queued :class:`Reply`, or else with what the
test's handler function returns (default: echo the last user message). Replies inject
faults: HTTP errors, 429 with ``Retry-After``, hangs past the client timeout, bodies that
are not JSON, and any answer text (e.g. invalid JSON for structured output).

Run ``python -m tests.servers.scripted --latency 0.05`` to serve echo answers from another
process (the benchmark does); it prints its base URL on stdout.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the class methods."""

    kind: str
    content: str = ""
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @classmethod
    def ok(cls, content: str, prompt_tokens: int | None = None, completion_tokens: int | None = None) -> Reply:
        """A normal chat completion whose message content is ``content``."""
        return cls("ok", content=content, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    @classmethod
    def error(cls, status: int = 500, message: str = "scripted server error", retry_after: str | None = None) -> Reply:
        """An HTTP error with an OpenAI-style JSON error body."""
        headers = (("Retry-After", retry_after),) if retry_after is not None else ()
        return cls("error", content=message, status=status, headers=headers)

    @classmethod
    def rate_limit(cls, retry_after: str | float | None = "1") -> Reply:
        """HTTP 429, optionally with a ``Retry-After`` header (seconds or an HTTP date)."""
        value = None if retry_after is None else str(retry_after)
        return cls.error(429, "rate limit reached (scripted)", retry_after=value)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        """Say nothing for ``seconds`` (or until the server stops), then drop the connection."""
        return cls("hang", seconds=seconds)

    @classmethod
    def malformed(cls) -> Reply:
        """HTTP 200, ``Content-Type: application/json``, but a truncated JSON body."""
        return cls("raw", content='{"id": "chatcmpl-broken", "choices": [{"mess', status=200)


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any] | None
    received_at: float


Handler = Callable[[dict[str, Any], int], Reply]


def echo_handler(body: dict[str, Any], index: int) -> Reply:
    """Default answer: ``echo: <last user message>``."""
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return Reply.ok(f"echo: {users[-1] if users else ''}")


def structured_handler(json_text: str) -> Handler:
    """Answer requests that carry a ``response_format`` with ``json_text``, echo the others.

    Lets one server play an evaluated model and a structured judge (``--json-reply``).
    """

    def handler(body: dict[str, Any], index: int) -> Reply:
        return Reply.ok(json_text) if "response_format" in body else echo_handler(body, index)

    return handler


def word_count(text: str) -> int:
    return len(text.split())


@dataclass
class ScriptedServer:
    """The server; use as a context manager (``with ScriptedServer() as server: server.base_url``)."""

    handler: Handler = echo_handler
    latency: float = 0.0
    models: tuple[str, ...] = ("scripted-model",)
    bind_port: int = 0  # 0: any free port
    slots: int = 0  # > 0: answer at most this many chat requests at a time, the rest queue (a llama.cpp-like server)
    requests: list[Recorded] = field(default_factory=list)
    _queue: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _chat_count: int = 0
    _slots: threading.Semaphore | None = None
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next chat requests with ``replies``, in order, before the handler."""
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[Recorded]:
        """The chat completion requests received so far (in arrival order)."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> ScriptedServer:
        self._slots = threading.Semaphore(self.slots) if self.slots > 0 else None
        self._httpd = _Server(("127.0.0.1", self.bind_port), _make_handler(self))
        # a short poll so that stop() returns at once (the default half second adds up over the suite)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            index = self._chat_count
            self._chat_count += 1
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self.handler(body, index)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)


class _Server(ThreadingHTTPServer):
    """A threading HTTP server with a listen backlog big enough for bursts of connections."""

    request_queue_size = 256
    daemon_threads = True


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    """Request headers with lower-case names."""
    return {name.lower(): value for name, value in handler.headers.items()}


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt_words = sum(word_count(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_words
    completion = reply.completion_tokens if reply.completion_tokens is not None else word_count(reply.content)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted-model"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": reply.content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _make_handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # headers and body go out in separate writes: without this, Nagle + delayed ACK add ~40 ms
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            return

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            server._record(Recorded("GET", self.path, _headers(self), None, time.monotonic()))
            if self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in server.models]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = None
            server._record(Recorded("POST", self.path, _headers(self), body, time.monotonic()))
            if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
                self._send(404 if body is not None else 400, b'{"error": {"message": "bad request"}}')
                return
            if server._slots is not None:
                server._slots.acquire()  # queued like a busy single-slot server: work goes on if the client leaves
            server._enter()
            try:
                self._answer(server._next_reply(body), body)
            finally:
                server._leave()
                if server._slots is not None:
                    server._slots.release()

        def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
            if server.latency and server._stopping.wait(server.latency):
                return
            if reply.kind == "hang":
                server._stopping.wait(reply.seconds)
                self.close_connection = True
                return
            if reply.kind == "error":
                payload = {"error": {"message": reply.content, "type": "scripted", "code": str(reply.status)}}
                self._send(reply.status, json.dumps(payload).encode(), reply.headers)
            elif reply.kind == "raw":
                self._send(reply.status, reply.content.encode())
            else:
                self._send(200, json.dumps(_completion(body, reply)).encode())

        def _send(self, status: int, payload: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return _Handler


def main(argv: list[str] | None = None) -> int:
    """Serve echo answers with a fixed latency until interrupted; print the base URL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each chat answer")
    parser.add_argument("--json-reply", help="answer requests with a response_format with this text (others: echo)")
    parser.add_argument("--slots", type=int, default=0, help="chat requests answered at a time (0: no limit)")
    args = parser.parse_args(argv)
    handler = structured_handler(args.json_reply) if args.json_reply is not None else echo_handler
    server = ScriptedServer(handler=handler, latency=args.latency, slots=args.slots).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
