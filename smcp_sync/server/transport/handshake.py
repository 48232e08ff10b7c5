"""The version handshake at the HTTP layer, before Socket.IO (`spec-0.3/versioning.md`).

`VersionGate` is WSGI middleware around the Socket.IO app, so `wsgi_app`, `mount()`,
`start()` and `serve()` all pass through it. It checks `a2c_version` in the query of every
request that opens an Engine.IO session (no `sid` in the query): the polling handshake
and a direct websocket alike — over WSGI a websocket upgrade is a plain HTTP GET, so an
incompatible client gets the same HTTP 400 with the flat 4008 body and the
`X-A2C-Error-Code: 4008` header either way (the spec's close code 4900 is for ASGI stacks
that cannot answer a websocket request with HTTP). Requests of an open session were
checked when it opened. No Socket.IO handler runs for a refused client.

`declared_handshake` reads what a client declared (version, extensions) for the registry.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import parse_qs

from ...protocol import extensions
from ...protocol.errors import cut_short
from ...protocol.versioning import ERROR_CODE_HEADER, VERSION_MISMATCH_CODE, VERSION_QUERY_KEY, handshake_refusal
from ..offices.office_rules import Handshake

logger = logging.getLogger(__name__)

#: python-socketio's default HTTP path (`socketio.WSGIApp(socketio_path=...)`).
DEFAULT_SOCKETIO_PATH = "socket.io"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class VersionGate:
    """Refuses, with HTTP 400, clients whose `a2c_version` this Server does not speak;
    with `require_client_version` also those that send none (official 0.1.x SDKs)."""

    def __init__(self, app: WSGIApp, *, require_client_version: bool = False, socketio_path: str = DEFAULT_SOCKETIO_PATH):
        self.app = app
        self.require_client_version = require_client_version
        self._prefix = "/" + socketio_path.strip("/")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if not (path == self._prefix or path.startswith(self._prefix + "/")):
            return self.app(environ, start_response)
        query = _query(environ)
        if "sid" in query:
            return self.app(environ, start_response)
        refusal = handshake_refusal(query.get(VERSION_QUERY_KEY, []), require=self.require_client_version)
        if refusal is None:
            return self.app(environ, start_response)
        logger.warning("refused a connection from %s: %s", environ.get("REMOTE_ADDR"), refusal["message"])
        body = json.dumps(refusal).encode("utf-8")
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        if refusal["code"] == VERSION_MISMATCH_CODE:
            headers.append((ERROR_CODE_HEADER, str(VERSION_MISMATCH_CODE)))
        start_response("400 BAD REQUEST", headers)
        return [body]


def declared_handshake(environ: Mapping[str, Any]) -> Handshake:
    """What the client declared in the query of the request that opened its session."""
    query = _query(environ)
    versions = query.get(VERSION_QUERY_KEY, [])
    return Handshake(
        a2c_version=cut_short(versions[0], 64) if versions else None,
        extensions=extensions.from_query(query.get(extensions.QUERY_KEY, [])),
    )


def _query(environ: Mapping[str, Any]) -> dict[str, list[str]]:
    return parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
