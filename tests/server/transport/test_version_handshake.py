"""The version handshake at the HTTP layer (spec-0.3/versioning.md), on a real Server:
the polling handshake and a direct websocket alike, through `start()` and `mount()`."""

from __future__ import annotations

import json
import threading

import pytest
import requests
import socketio
import websocket
from werkzeug.serving import make_server

from smcp_sync.protocol.events import NAMESPACE
from smcp_sync.protocol.versioning import PROTOCOL_VERSION, mismatch_body
from smcp_sync.server import SMCPServer

pytestmark = pytest.mark.timeout(60)


def polling_handshake(url: str, query: str = "") -> requests.Response:
    return requests.get(f"{url}/socket.io/?EIO=4&transport=polling{query}", timeout=10)


def websocket_handshake(url: str, query: str = "") -> websocket.WebSocketBadStatusException | str:
    """A direct websocket (no polling first): the Engine.IO OPEN packet, or the refusal."""
    try:
        ws = websocket.create_connection(url.replace("http", "ws", 1) + f"/socket.io/?EIO=4&transport=websocket{query}", timeout=10)
    except websocket.WebSocketBadStatusException as refusal:
        return refusal
    try:
        return ws.recv()
    finally:
        ws.close()


def test_a_compatible_version_opens_a_session(server):
    assert polling_handshake(server.url, f"&a2c_version={PROTOCOL_VERSION}").text.startswith("0{")
    assert polling_handshake(server.url, "&a2c_version=0.4.9-dev").text.startswith("0{")
    assert websocket_handshake(server.url, f"&a2c_version={PROTOCOL_VERSION}").startswith("0{")


@pytest.mark.parametrize("client", ["0.3.0", "0.5.0", "1.4.0", "0.1.6"])
def test_an_incompatible_version_gets_400_with_the_4008_body_and_header(server, client):
    answer = polling_handshake(server.url, f"&a2c_version={client}")
    assert answer.status_code == 400
    assert answer.headers["X-A2C-Error-Code"] == "4008"
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json() == mismatch_body(client)

    refusal = websocket_handshake(server.url, f"&a2c_version={client}")
    assert isinstance(refusal, websocket.WebSocketBadStatusException) and refusal.status_code == 400
    assert refusal.resp_headers["x-a2c-error-code"] == "4008"
    assert json.loads(refusal.resp_body) == answer.json()  # byte for byte the polling answer


@pytest.mark.parametrize(
    "query, says",
    [
        ("&a2c_version=abc", "Invalid a2c_version: 'abc' is not MAJOR.MINOR.PATCH"),
        ("&a2c_version=", "Invalid a2c_version"),
        ("&a2c_version=0.4.0&a2c_version=0.4.1", "a2c_version given 2 times; give it once"),
        ("&a2c_version=%FF%FE", "Invalid a2c_version"),
    ],
)
def test_a_malformed_version_gets_400_saying_why(server, query, says):
    answer = polling_handshake(server.url, query)
    assert answer.status_code == 400 and "X-A2C-Error-Code" not in answer.headers
    assert answer.json()["code"] == 400 and says in answer.json()["message"]
    refusal = websocket_handshake(server.url, query)
    assert isinstance(refusal, websocket.WebSocketBadStatusException) and refusal.status_code == 400


def test_no_version_is_accepted_by_default_and_refused_when_required(server_factory):
    lenient = server_factory()
    assert polling_handshake(lenient.url).text.startswith("0{")
    strict = server_factory(require_client_version=True)
    answer = polling_handshake(strict.url)
    assert answer.status_code == 400 and answer.json() == {"code": 400, "message": "Missing a2c_version query parameter"}
    assert isinstance(websocket_handshake(strict.url), websocket.WebSocketBadStatusException)
    assert polling_handshake(strict.url, f"&a2c_version={PROTOCOL_VERSION}").text.startswith("0{")


def test_requests_of_an_open_session_are_not_checked_again(server_factory):
    """Requests carrying a session's sid belong to a session checked when it opened."""
    strict = server_factory(require_client_version=True)
    opened = polling_handshake(strict.url, f"&a2c_version={PROTOCOL_VERSION}")
    sid = json.loads(opened.text[1:])["sid"]
    connect = requests.post(f"{strict.url}/socket.io/?EIO=4&transport=polling&sid={sid}", data=f"40{NAMESPACE},", timeout=10)
    assert connect.status_code == 200 and connect.text == "OK"
    assert polling_handshake(strict.url, f"&sid={sid}").text.startswith(f"40{NAMESPACE},")


def test_a_refused_client_never_reaches_socketio(server_factory):
    seen = []

    class Recording:
        def authenticate(self, environ, auth):
            seen.append(environ.get("QUERY_STRING"))
            return True

    server = server_factory(auth=Recording())
    client = socketio.Client(handle_sigint=False, reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        client.connect(f"{server.url}?a2c_version=0.9.0", namespaces=[NAMESPACE], wait_timeout=5)
    assert seen == []


def test_other_paths_of_a_mounted_app_are_not_gated(no_leaks):
    def hello(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"hello"]

    smcp = SMCPServer()
    http = make_server("127.0.0.1", 0, smcp.mount(hello), threaded=True)
    thread = threading.Thread(target=http.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{http.server_port}"
    try:
        assert requests.get(f"{url}/socket.iox?a2c_version=bad", timeout=10).text == "hello"
        assert requests.get(f"{url}/app?a2c_version=bad", timeout=10).text == "hello"
        assert polling_handshake(url, "&a2c_version=0.5.0").status_code == 400
        assert polling_handshake(url, f"&a2c_version={PROTOCOL_VERSION}").text.startswith("0{")
    finally:
        smcp.drop_connections()
        http.shutdown()
        http.server_close()
        thread.join(5)


def test_list_room_shows_each_sessions_declared_version(server):
    legacy = socketio.Client(handle_sigint=False, reconnection=False)  # like an official 0.1.x client
    current = socketio.Client(handle_sigint=False, reconnection=False)
    try:
        legacy.connect(server.url, namespaces=[NAMESPACE], transports=["websocket"], wait_timeout=5)
        current.connect(f"{server.url}?a2c_version=0.4.2", namespaces=[NAMESPACE], transports=["websocket"], wait_timeout=5)
        assert legacy.call("server:join_office", {"role": "computer", "name": "old", "office_id": "o"}, namespace=NAMESPACE, timeout=5) == (True, None)
        assert current.call("server:join_office", {"role": "agent", "name": "a", "office_id": "o"}, namespace=NAMESPACE, timeout=5) == (True, None)
        answer = current.call("server:list_room", {"agent": "a", "req_id": "r1", "office_id": "o"}, namespace=NAMESPACE, timeout=5)
    finally:
        legacy.disconnect()
        current.disconnect()
    by_name = {session["name"]: session for session in answer["sessions"]}
    assert by_name["a"]["a2c_version"] == "0.4.2"
    assert "a2c_version" not in by_name["old"]
