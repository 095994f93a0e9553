"""A local stub of SGLang's OpenAI-compatible streaming /v1/completions, for the export's runner.

It answers each POST with one SSE chunk per output token ({"choices": [{"index": 0, "text": ...}]}, as
SGLang streams them), a usage chunk (prompt_tokens counted from the prompt's token ids, completion_tokens)
and `data: [DONE]`, then closes. Bounded: at most `max_requests` answers, `token_s` between tokens; later
requests get 429. Used by tests/test_benchtest.py and to make tests/data/bench_serving/.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _handler(max_requests: int, token_s: float, seen: list):
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                allowed = self.path == "/v1/completions" and len(seen) < max_requests
                if allowed:
                    seen.append(body)
            if not allowed:
                self.send_response(429 if self.path == "/v1/completions" else 404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            prompt = body["prompt"]
            num_prompt = len(prompt) if isinstance(prompt, list) else len(prompt.split())
            for k in range(body["max_tokens"]):
                time.sleep(token_s)
                self._event({"id": "1", "object": "text_completion", "model": body["model"],
                             "choices": [{"index": 0, "text": f" t{k}", "finish_reason": None}]})
            self._event({"id": "1", "object": "text_completion", "model": body["model"], "choices": [],
                         "usage": {"prompt_tokens": num_prompt, "completion_tokens": body["max_tokens"],
                                   "total_tokens": num_prompt + body["max_tokens"]}})
            self.wfile.write(b"data: [DONE]\n\n")

        def _event(self, obj: dict) -> None:
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

    return Handler


@contextmanager
def stub_server(max_requests: int = 20, token_s: float = 0.001):
    """Yields (base URL, the request bodies it answered); stops the server on exit."""
    seen: list = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(max_requests, token_s, seen))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
