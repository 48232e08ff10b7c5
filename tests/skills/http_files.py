"""A loopback HTTP(S) server of fixed files, for skill archives fetched by URL (and OAuth
client metadata documents, over TLS)."""

from __future__ import annotations

import contextlib
import http.server
import ssl
import threading
from typing import Any, Iterator


@contextlib.contextmanager
def http_files(files: dict[str, bytes], tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serves `files` by path (404 for others) on 127.0.0.1, over TLS given `tls` (a server
    context); yields the base URL."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            body = files.get(self.path.lstrip("/"))
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="archive-http")
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
