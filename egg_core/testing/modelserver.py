"""A loopback stand-in for the model APIs that the real agent CLIs call.

Tests that drive ``claude``, ``codex``, ``gemini`` or ``opencode`` end to end cannot reach the real
services (and must not spend money or leak prompts), so this server answers every model call with
one fixed text. It speaks just enough of each wire format for the CLIs to finish one turn:

* Anthropic Messages: ``POST /v1/messages`` (SSE when ``"stream": true``) and ``count_tokens``;
* OpenAI Responses: ``POST /v1/responses`` (what Codex uses) and ``GET /v1/models``;
* OpenAI Chat Completions: ``POST /v1/chat/completions`` (stream and non-stream);
* Gemini: ``:generateContent``, ``:streamGenerateContent`` (``?alt=sse`` or a JSON array),
  ``:countTokens`` and ``:embedContent`` under ``/v1beta/models/``.

Anything else is logged to stderr and answered with a 404 JSON body, so a new CLI version that
calls something unexpected shows up in the test log instead of hanging. Only ``127.0.0.1`` is
served, on a free port, and every socket read has a timeout so a stuck client cannot block a test.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ModelServer"]

#: Seconds a connection may sit idle (or a body may take to arrive) before it is dropped.
READ_TIMEOUT = 10.0
#: Token counts reported in every usage block (the CLIs print or sum them; any small number does).
USAGE_IN, USAGE_OUT = 8, 4


class ModelServer:
    """Serve fixed model answers on loopback: ``with ModelServer(answer="X") as srv: srv.url``.

    ``requests`` lists ``(method, path)`` pairs in arrival order (the path keeps its query);
    ``bodies`` holds the parsed JSON body of each request (``None`` without one) in the same
    order, for tests that want to check what a CLI sent. ``verbose`` echoes each request to stderr.
    """

    def __init__(self, answer: str = "EGG-ANSWER-OK", *, verbose: bool = False) -> None:
        self.answer = answer
        self.verbose = verbose
        self._lock = threading.Lock()
        self._seen: list[tuple[str, str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ModelServer:
        """Bind ``127.0.0.1:0`` and serve on a daemon thread (one more daemon thread a client)."""
        handler = type("BoundHandler", (_Handler,), {"owner": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket; open keep-alive clients just time out."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (only while started)."""
        if self._httpd is None:
            raise RuntimeError("ModelServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash or an API version."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[tuple[str, str]]:
        """A snapshot of the ``(method, path)`` pairs seen so far."""
        with self._lock:
            return [(method, path) for method, path, _ in self._seen]

    @property
    def bodies(self) -> list[Any]:
        """A snapshot of the parsed request bodies, parallel to :attr:`requests`."""
        with self._lock:
            return [body for _, _, body in self._seen]

    def _record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self._seen.append((method, path, body))
        if self.verbose:
            print(f"modelserver: {method} {path}", file=sys.stderr, flush=True)


def _sse(event: str | None, data: Any) -> bytes:
    """One server-sent event; ``event`` is omitted for formats that use bare ``data:`` lines."""
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def _typed_sse(events: list[dict[str, Any]]) -> list[bytes]:
    """Anthropic and Responses events carry their ``type`` both as SSE event name and in data."""
    return [_sse(event["type"], event) for event in events]


def _fill_schema(schema: Any, answer: str) -> Any:
    """The smallest value a JSON (or Gemini OpenAPI-style) schema accepts; text is ``answer``.

    gemini-cli routes each prompt through a classifier that must answer JSON matching a schema,
    and it retries (never finishing the turn) when the reply does not parse.
    """
    if not isinstance(schema, dict):
        return answer
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _fill_schema(schema[key][0], answer)
    kind = schema.get("type", "object")
    kind = str(kind[0] if isinstance(kind, list) else kind).lower()
    if kind == "object":
        return {k: _fill_schema(v, answer) for k, v in (schema.get("properties") or {}).items()}
    if kind in ("integer", "number"):
        return max(1, int(schema.get("minimum", 1)))
    return [] if kind == "array" else False if kind == "boolean" else answer


class _Server(ThreadingHTTPServer):
    """Daemon threads (a stuck client never delays exit) and one-line errors, not tracebacks."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        print(f"modelserver: client {client_address}: {sys.exc_info()[1]!r}", file=sys.stderr)


class _Handler(BaseHTTPRequestHandler):
    """Routes one request to the wire format its path names."""

    owner: ModelServer
    protocol_version = "HTTP/1.1"  # keep-alive: the Node and Rust clients reuse connections
    timeout = READ_TIMEOUT  # applied to the socket: every read gives up after this

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log; unknown paths are reported in :meth:`_route`."""

    def do_GET(self) -> None:
        self._route({})

    def do_POST(self) -> None:
        try:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        except (OSError, ValueError):  # a body that never came (read timeout) or a bad length
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        self._route(body if isinstance(body, dict) else {})

    def do_HEAD(self) -> None:
        """Reachability probes (and CORS preflights below): an empty success."""
        self.owner._record(self.command, self.path, None)
        self.send_response(200 if self.command == "HEAD" else 204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_OPTIONS = do_HEAD

    def _route(self, body: dict[str, Any]) -> None:
        self.owner._record(self.command, self.path, body or None)
        parts = urlsplit(self.path)
        path, post, answer = parts.path.rstrip("/"), self.command == "POST", self.owner.answer
        stream = bool(body.get("stream"))
        tail = path.rsplit("/", 1)[-1]
        if self.headers.get("Upgrade", "").lower() == "websocket":
            # Codex tries a Responses WebSocket first; a 426 makes it fall back to HTTP + SSE at
            # once, where a 404 costs five retries with backoff (about six seconds).
            self._json({"error": {"type": "upgrade_required", "message": "no websockets"}}, 426)
        elif post and path.endswith("/messages/count_tokens"):
            self._json({"input_tokens": USAGE_IN})
        elif post and path.endswith("/messages"):
            self._anthropic(body.get("model", "egg-model"), answer, stream)
        elif post and path.endswith("/responses"):
            self._responses(body.get("model", "egg-model"), answer, stream)
        elif post and path.endswith("/chat/completions"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._chat(body.get("model", "egg-model"), answer, stream, usage)
        elif post and ":" in tail:
            config = body.get("generationConfig") or {}
            if config.get("responseMimeType") == "application/json":
                schema = config.get("responseJsonSchema") or config.get("responseSchema")
                answer = json.dumps(_fill_schema(schema or {}, answer))
            model, _, method = tail.partition(":")
            self._gemini(model, method, answer, "alt=sse" in parts.query)
        elif not post and path.endswith("/models"):
            entry = {"id": "egg-model", "object": "model", "created": 0, "owned_by": "egg"}
            listing = {"object": "list", "data": [entry], "models": [{"name": "models/egg-model"}]}
            self._json(listing)
        else:
            print(f"modelserver: unknown {self.command} {self.path}", file=sys.stderr, flush=True)
            self._json({"error": {"type": "not_found", "message": f"no route {path}"}}, 404)

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[bytes]) -> None:
        """Send SSE events, then close: a close-delimited body needs no chunked encoding."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # also sets self.close_connection
        self.end_headers()
        self.wfile.write(b"".join(events))
        self.wfile.flush()

    def _anthropic(self, model: str, answer: str, stream: bool) -> None:
        usage = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        text = {"type": "text", "text": answer}
        message: dict[str, Any] = {"id": "msg_egg", "type": "message", "role": "assistant"}
        message["model"] = model
        done = {"stop_reason": "end_turn", "stop_sequence": None}
        if not stream:
            self._json({**message, "content": [text], **done, "usage": usage})
            return
        start: dict[str, Any] = {**message, "content": [], "stop_reason": None}
        start["stop_sequence"] = None
        delta = {"type": "text_delta", "text": answer}
        self._stream(_typed_sse([
            {"type": "message_start", "message": {**start, "usage": usage | {"output_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": {**text, "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": done, "usage": {"output_tokens": USAGE_OUT}},
            {"type": "message_stop"},
        ]))  # fmt: skip

    def _responses(self, model: str, answer: str, stream: bool) -> None:
        part = {"type": "output_text", "text": answer, "annotations": []}
        item: dict[str, Any] = {"type": "message", "id": "msg_egg", "role": "assistant"}
        item["status"] = "completed"
        item["content"] = [part]
        usage: dict[str, Any] = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}
        usage["total_tokens"] = USAGE_IN + USAGE_OUT
        usage["input_tokens_details"] = {"cached_tokens": 0}
        usage["output_tokens_details"] = {"reasoning_tokens": 0}
        base = {"id": "resp_egg", "object": "response", "created_at": int(time.time())}
        base |= {"model": model, "output": [], "status": "in_progress"}
        done = {**base, "status": "completed", "output": [item], "usage": usage}
        if not stream:
            self._json(done)
            return
        at = {"item_id": "msg_egg", "output_index": 0, "content_index": 0}
        added = {**item, "status": "in_progress", "content": []}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": base},
            {"type": "response.in_progress", "response": base},
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **at, "delta": answer},
            {"type": "response.output_text.done", **at, "text": answer},
            {"type": "response.content_part.done", **at, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]  # fmt: skip
        self._stream(_typed_sse([{**e, "sequence_number": n} for n, e in enumerate(events)]))

    def _chat(self, model: str, answer: str, stream: bool, with_usage: bool) -> None:
        usage = {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT}
        usage["total_tokens"] = USAGE_IN + USAGE_OUT
        head = {"id": "chatcmpl-egg", "created": int(time.time()), "model": model}
        message = {"role": "assistant", "content": answer}
        if not stream:
            choice = {"index": 0, "finish_reason": "stop", "message": message}
            self._json({**head, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        chunk = {**head, "object": "chat.completion.chunk"}
        chunks = [
            {**chunk, "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        if with_usage:  # the client asked with stream_options.include_usage
            chunks.append({**chunk, "choices": [], "usage": usage})
        self._stream([*(_sse(None, c) for c in chunks), _sse(None, "[DONE]")])

    def _gemini(self, model: str, method: str, answer: str, sse: bool) -> None:
        if method == "countTokens":
            self._json({"totalTokens": USAGE_IN})
            return
        if method in ("embedContent", "batchEmbedContents"):
            vector = {"values": [0.0] * 8}
            single = method == "embedContent"
            self._json({"embedding": vector} if single else {"embeddings": [vector]})
            return
        content = {"role": "model", "parts": [{"text": answer}]}
        usage = {"promptTokenCount": USAGE_IN, "candidatesTokenCount": USAGE_OUT}
        usage["totalTokenCount"] = USAGE_IN + USAGE_OUT
        candidate = {"index": 0, "finishReason": "STOP", "content": content}
        reply = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model}
        if method == "generateContent":
            self._json(reply)
        elif method == "streamGenerateContent":
            if sse:
                self._stream([_sse(None, reply)])
            else:
                self._json([reply])
        else:
            print(f"modelserver: unknown gemini method {method}", file=sys.stderr, flush=True)
            self._json({"error": {"code": 404, "message": f"no method {method}"}}, 404)
