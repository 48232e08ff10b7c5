"""`GET /health/live` and `/health/ready` on the Server's own port: under `start()` and
inside another WSGI app (`mount()`); under `serve()`'s workers: tests/cli/
test_server_operations.py; with Redis stopped and back: tests/scale_out/test_health_probes.py."""

from __future__ import annotations

from typing import Any, Callable

from smcp_sync.server import SMCPServer
from smcp_sync.server.transport.background_http import BackgroundHTTPServer
from smcp_sync.server.observability import Observability

from .http_probe import get, probe


def test_live_and_ready_answer_json_under_start(server):
    assert probe(server.url + "/health/live") == (200, {"status": "live"})
    assert probe(server.url + "/health/ready") == (
        200,
        {"status": "ready", "accepting": True, "registry": {"ready": True, "kind": "in-process"}},
    )


def test_head_answers_without_a_body_and_other_methods_are_refused(server):
    assert get(server.url + "/health/live", method="HEAD") == (200, "application/json", b"")
    status, _, body = get(server.url + "/health/ready", method="POST")
    assert status == 405 and b"GET or HEAD" in body


def test_a_stopped_server_is_not_ready_and_still_live(server):
    server.stop()
    health = server.operator.health  # nothing serves HTTP any more: asked directly
    assert health.ready() == (503, {"status": "not ready", "accepting": False, "registry": {"ready": True, "kind": "in-process"}})
    assert health.live() == (200, {"status": "live"})


def test_probes_can_be_switched_off(server_factory):
    server = server_factory(observability=Observability(health=False))
    assert get(server.url + "/health/live")[0] == 404  # Engine.IO's answer to a path it does not serve


def test_mounted_in_another_wsgi_app_the_probes_come_first(no_leaks):
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"the host app: " + environ["PATH_INFO"].encode()]

    server = SMCPServer()
    http = BackgroundHTTPServer(server.mount(app), "127.0.0.1", 0)
    http.start()
    try:
        assert probe(http.url + "/health/live") == (200, {"status": "live"})
        assert probe(http.url + "/health/ready")[0] == 200
        assert get(http.url + "/health") == (200, "text/plain", b"the host app: /health")
    finally:
        http.stop_accepting(5)
        server.stop()
        http.join_connections(5)
