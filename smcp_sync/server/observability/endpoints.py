"""The operator's HTTP paths on the Server's own port, in front of Socket.IO: WSGI
middleware, so `start()`, `serve()` (both workers) and `mount()` serve them alike."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: (HTTP status, content type, body) of a response.
Response = tuple[int, str, bytes]

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 501: "Not Implemented", 503: "Service Unavailable"}
JSON_TYPE = "application/json"


def json_response(status: int, body: dict[str, Any]) -> Response:
    return status, JSON_TYPE, json.dumps(body).encode()


class OperatorEndpoints:
    """Answers GET (and HEAD) of each path in `routes` with its response; every other
    request goes to `app` unchanged."""

    def __init__(self, app: WSGIApp, routes: dict[str, Callable[[], Response]]) -> None:
        self.app = app
        self._routes = routes

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        route = self._routes.get(environ.get("PATH_INFO", ""))
        if route is None:
            return self.app(environ, start_response)
        method = environ.get("REQUEST_METHOD", "GET")
        if method in ("GET", "HEAD"):
            status, content_type, body = route()
        else:
            status, content_type, body = json_response(405, {"error": f"{method} not allowed: GET or HEAD"})
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), ("Cache-Control", "no-store")]
        if status == 405:
            headers.append(("Allow", "GET, HEAD"))
        start_response(f"{status} {_REASONS.get(status, '')}".strip(), headers)
        return [] if method == "HEAD" else [body]
