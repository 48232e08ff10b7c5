"""The operator's HTTP paths on the Server's own port, in front of Socket.IO: WSGI
middleware, so `start()`, `serve()` (both workers) and `mount()` serve them alike."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: (HTTP status, content type, body) of a response.
Response = tuple[int, str, bytes]

_REASONS = {200: "OK", 405: "Method Not Allowed", 501: "Not Implemented", 503: "Service Unavailable"}


def json_response(status: int, body: dict[str, Any]) -> Response:
    return status, "application/json", json.dumps(body).encode()


def answering(respond: Callable[[], Response]) -> WSGIApp:
    """A WSGI app answering every request with `respond()`, never cached."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        status, content_type, body = respond()
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), ("Cache-Control", "no-store")]
        if status == 405:
            headers.append(("Allow", "GET, HEAD"))
        start_response(f"{status} {_REASONS.get(status, '')}".strip(), headers)
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    return app


_NOT_ALLOWED = answering(lambda: json_response(405, {"error": "GET or HEAD only"}))


class OperatorEndpoints:
    """Serves GET (and HEAD) of each path in `routes` with its app; every other request
    goes to `app` unchanged."""

    def __init__(self, app: WSGIApp, routes: dict[str, WSGIApp]) -> None:
        self.app = app
        self._routes = routes

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        route = self._routes.get(environ.get("PATH_INFO", ""))
        if route is None:
            return self.app(environ, start_response)
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _NOT_ALLOWED(environ, start_response)
        return route(environ, start_response)
