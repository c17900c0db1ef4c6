"""A local OpenAI-compatible HTTP server for tests: real sockets, scripted answers, recorded requests.

    with FakeOpenAI() as fake:
        fake.queue('{"queries": ["a", "b"]}')          # answers popped in order...
        fake.responder = lambda body: '{"x": 1}'         # ...then this, then ``default_content``
        fake.mode = "hang"                               # or "error", "invalid_json", "garbage"
        client = LLMClient(fake.base_url, "sk-test", "fake-model", 0.3)
        fake.chat_requests[-1].body["messages"]          # what was sent

Endpoints: ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` (deterministic hashed
bag-of-words vectors, so texts sharing words are close; float or base64 encoding like the real API).
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import math
import re
import struct
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Mode = Literal["ok", "hang", "trickle", "error", "invalid_json", "garbage"]

GARBAGE_BODY = "<html><body>502 Bad Gateway</body></html>"
INVALID_JSON_CONTENT = "Sure! Here are some ideas: first, check the logs"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or the raw text when it wasn't JSON


@dataclass(frozen=True)
class Reply:
    """A scripted reply other than plain content, for ``queue``/``responder``: mix failures into a run."""

    kind: Mode = "ok"
    content: str = ""
    status: int = 500
    message: str = "scripted failure"
    hang_seconds: float | None = None

    @classmethod
    def hang(cls, seconds: float | None = None) -> Reply:
        """Never answer (for ``seconds``, default the server's ``hang_seconds``)."""
        return cls(kind="hang", hang_seconds=seconds)

    @classmethod
    def trickle(cls) -> Reply:
        """Send headers, then one body byte at a time, forever: per-read socket timeouts never fire."""
        return cls(kind="trickle")

    @classmethod
    def error(cls, status: int = 500, message: str = "scripted failure") -> Reply:
        """HTTP ``status`` with an OpenAI-style error body carrying ``message``."""
        return cls(kind="error", status=status, message=message)

    @classmethod
    def garbage(cls) -> Reply:
        return cls(kind="garbage")

    @classmethod
    def invalid_json(cls) -> Reply:
        return cls(kind="invalid_json")


Answer = str | Reply


# --------------------------------------------------------------------------- shared server plumbing


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a hanging handler must not hold up teardown

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that gave up (the point of hang tests) leave broken pipes behind: not errors here.
        pass


class ScriptedServer:
    """Base: a threaded HTTP server on 127.0.0.1 (free port) that records JSON requests."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # tracebacks of bugs in the fake itself (answered as HTTP 599)
        self.mode: Mode = "ok"
        self.status = 500  # for mode "error"
        self.hang_seconds = 10.0  # far beyond any client timeout in tests; cut short by stop()
        self.latency = 0.0  # seconds slept before every answer (slow but working endpoint)
        self._answers: collections.deque[Answer] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        # A short poll interval: shutdown() waits for the next poll, and every test stops a server.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=type(self).__name__,
            daemon=True,
        )

    # -- lifecycle

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting

    def queue(self, *answers: Answer) -> None:
        """Answers served in order, before ``responder``/defaults are used."""
        with self._lock:
            self._answers.extend(answers)

    def reset(self) -> None:
        with self._lock:
            self._answers.clear()
            self.requests.clear()
        self.mode = "ok"

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _next_scripted(self) -> Answer | None:
        with self._lock:
            return self._answers.popleft() if self._answers else None

    def _mode_reply(self) -> Reply | None:
        """The server-wide mode as a reply, or None when answering normally."""
        if self.mode == "ok":
            return None
        return Reply(kind=self.mode, status=self.status)

    # -- request handling (subclasses implement ``route``)

    def route(self, method: str, path: str, body: Any) -> tuple[int, str | bytes, str] | Reply:
        raise NotImplementedError

    def _hang(self, reply: Reply) -> None:
        self._stopping.wait(reply.hang_seconds if reply.hang_seconds is not None else self.hang_seconds)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.requests.append(
                        RecordedRequest(method, path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                try:
                    result: tuple[int, str | bytes, str] | Reply = server.route(method, path, body)
                except Exception:  # a bug in the fake or a responder: answer loudly, keep the trace
                    trace = traceback.format_exc()
                    server.errors.append(trace)
                    result = (599, trace, "text/plain")
                if server.latency > 0:
                    server._stopping.wait(server.latency)
                if isinstance(result, Reply):
                    if result.kind == "hang":
                        server._hang(result)
                        return  # no answer at all: the client must give up on its own
                    if result.kind == "trickle":
                        self._trickle()
                        return
                    if result.kind == "error":
                        status = result.status
                        error = {"message": result.message, "type": "invalid_request_error", "code": None}
                        payload: str | bytes = json.dumps({"error": error})
                        ctype = "application/json"
                    else:  # garbage
                        status, payload, ctype = 200, GARBAGE_BODY, "text/html"
                else:
                    status, payload, ctype = result
                data = payload.encode() if isinstance(payload, str) else payload
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client hung up first

            def _trickle(self) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    while not server._stopping.wait(0.05):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:
                    pass  # the client gave up: what the test wants

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                self._serve("POST")

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

        return Handler


def json_response(payload: Any, status: int = 200) -> tuple[int, str, str]:
    return status, json.dumps(payload), "application/json"


# --------------------------------------------------------------------------- embeddings

_WORD = re.compile(r"\w+")


def embed_vector(text: str, dims: int) -> list[float]:
    """Deterministic unit vector: hashed bag of words (signed feature hashing), so shared words mean
    higher cosine similarity. Texts without words get a vector hashed from the whole string."""
    vec = [0.0] * dims
    words = _WORD.findall(text.lower()) or [text]
    for word in words:
        digest = hashlib.sha256(word.encode()).digest()
        index = int.from_bytes(digest[:4], "little") % dims
        vec[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:  # words cancelled out exactly: fall back to one hashed axis
        digest = hashlib.sha256(text.encode()).digest()
        vec[int.from_bytes(digest[:4], "little") % dims] = 1.0
        norm = 1.0
    return [v / norm for v in vec]


# --------------------------------------------------------------------------- the fake


class FakeOpenAI(ScriptedServer):
    """OpenAI-compatible chat + embeddings. ``mode`` applies to every endpoint:

    * ``hang`` — read the request, never answer;
    * ``trickle`` — start a 200 answer and send its body one byte every 50 ms, never finishing;
    * ``error`` — HTTP ``status`` (500) with an OpenAI-style error body;
    * ``invalid_json`` — a well-formed completion whose content is prose, not JSON
      (for embeddings: a JSON-typed body that isn't JSON);
    * ``garbage`` — HTTP 200 with an HTML body.

    ``latency`` delays every answer; ``queue``/``responder`` may also return a ``Reply`` to mix
    failures into a run (``Reply.error(400, "response_format is not supported")``).
    """

    def __init__(self, *, embedding_dims: int = 384) -> None:
        super().__init__()
        self.embedding_dims = embedding_dims
        self.responder: Callable[[dict[str, Any]], Answer] | None = None
        self.default_content = "{}"
        self._ids = 0

    @property
    def base_url(self) -> str:
        """What ``CEMS_LLM_BASE_URL`` would hold."""
        return f"{self.root_url}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to("/v1/chat/completions")

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return self.requests_to("/v1/embeddings")

    def reset(self) -> None:
        super().reset()
        self.responder = None

    def route(self, method: str, path: str, body: Any) -> tuple[int, str | bytes, str] | Reply:
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(body)
        if method == "POST" and path == "/v1/embeddings":
            return self._embeddings(body)
        return json_response({"error": {"message": f"no route {method} {path}"}}, status=404)

    def _answer_for(self, body: dict[str, Any]) -> Answer:
        forced = self._mode_reply()
        if forced is not None:
            return forced
        scripted = self._next_scripted()
        if scripted is not None:
            return scripted
        if self.responder is not None:
            return self.responder(body)
        return self.default_content

    def _chat(self, body: Any) -> tuple[int, str | bytes, str] | Reply:
        if not isinstance(body, dict):
            return json_response({"error": {"message": "body is not JSON"}}, status=400)
        answer = self._answer_for(body)
        if isinstance(answer, Reply):
            if answer.kind == "invalid_json":
                answer = INVALID_JSON_CONTENT
            elif answer.kind == "ok":
                answer = answer.content
            else:
                return answer
        with self._lock:
            self._ids += 1
            ident = self._ids
        return json_response(
            {
                "id": f"chatcmpl-fake-{ident}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake-model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    def _embeddings(self, body: Any) -> tuple[int, str | bytes, str] | Reply:
        if not isinstance(body, dict):
            return json_response({"error": {"message": "body is not JSON"}}, status=400)
        forced = self._mode_reply()
        if forced is not None:
            if forced.kind == "invalid_json":
                return 200, '{"object": "list", "data": [', "application/json"
            return forced
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        if not texts or not all(isinstance(t, str) for t in texts):
            return json_response({"error": {"message": "input must be a string or list of strings"}}, 400)
        dims = body.get("dimensions") or self.embedding_dims
        data = []
        for i, text in enumerate(texts):
            vec = embed_vector(text, int(dims))
            encoded: Any = vec
            if body.get("encoding_format") == "base64":  # the SDK's default: packed float32
                encoded = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(len(t.split()) for t in texts)
        return json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )
