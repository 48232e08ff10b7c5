"""Connection authentication: the API-key provider and custom providers."""

from __future__ import annotations

import logging

import pytest
import socketio

from smcp_sync.protocol.events import NAMESPACE
from smcp_sync.server import APIKeyAuth, SMCPServer

from .peers import Peer

pytestmark = pytest.mark.timeout(60)

KEY = "s3cret-key-\u00e9"


class TestAPIKeyAuth:
    @pytest.mark.parametrize("field", ["token", "access_token", "api_key"])
    def test_accepts_the_key_in_each_field_a_client_may_use(self, field):
        assert APIKeyAuth(KEY).authenticate({}, {field: KEY}) is True
        assert APIKeyAuth(KEY).authenticate({}, {"api_key": "wrong", field: KEY}) is True

    def test_fields_are_configurable(self):
        auth = APIKeyAuth(KEY, fields=["secret"], headers=[])
        assert auth.authenticate({}, {"secret": KEY}) is True
        assert auth.authenticate({}, {"token": KEY}) is False
        assert auth.authenticate({"HTTP_AUTHORIZATION": f"Bearer {KEY}"}, None) is False

    def test_accepts_the_key_in_the_headers_as_wsgi_presents_them(self):
        latin1 = KEY.encode("utf-8").decode("latin-1")  # a WSGI environ holds header bytes as latin-1
        auth = APIKeyAuth(KEY)
        assert auth.authenticate({"HTTP_ACCESS_TOKEN": latin1}, None) is True
        assert auth.authenticate({"HTTP_AUTHORIZATION": f"Bearer {latin1}"}, None) is True
        assert auth.authenticate({"HTTP_AUTHORIZATION": f"bearer   {latin1} "}, None) is True

    @pytest.mark.parametrize(
        "environ",
        [
            {"HTTP_AUTHORIZATION": KEY},  # no scheme
            {"HTTP_AUTHORIZATION": f"Basic {KEY}"},
            {"HTTP_AUTHORIZATION": "Bearer "},
            {"HTTP_ACCESS_TOKEN": "\u0100" + KEY},  # not latin-1: not a header's bytes
            {"HTTP_ACCESS_TOKEN": 12345},
            {"HTTP_X_API_KEY": KEY},
        ],
    )
    def test_refuses_other_headers(self, environ):
        assert APIKeyAuth(KEY).authenticate(environ, None) is False

    @pytest.mark.parametrize(
        "presented",
        [None, "s3cret", [KEY], {}, {"api_key": KEY[:-1]}, {"api_key": KEY + "x"}, {"api_key": 123}, {"other": KEY}],
    )
    def test_refuses_anything_else(self, presented):
        assert APIKeyAuth(KEY).authenticate({}, presented) is False

    def test_repr_never_shows_the_key(self):
        assert KEY not in repr(APIKeyAuth(KEY)) and "api_key" in repr(APIKeyAuth(KEY))

    @pytest.mark.parametrize("bad", ["", None, 42])
    def test_needs_a_non_empty_string_key(self, bad):
        with pytest.raises(ValueError):
            APIKeyAuth(bad)

    def test_needs_somewhere_to_read_the_key(self):
        with pytest.raises(ValueError, match="at least one"):
            APIKeyAuth(KEY, fields=(), headers=())


def test_server_rejects_an_auth_argument_of_the_wrong_type():
    with pytest.raises(TypeError, match="auth must be"):
        SMCPServer(auth=12345)


def test_fixed_socketio_options_cannot_be_overridden():
    with pytest.raises(ValueError, match="async_mode"):
        SMCPServer(async_mode="eventlet")


def refused(url: str, auth) -> str:
    """The reason the Server gave for refusing the connection."""
    client = socketio.Client(handle_sigint=False, reconnection=False)
    reasons = []
    client.on("connect_error", lambda data=None: reasons.append(data), namespace=NAMESPACE)
    with pytest.raises(socketio.exceptions.ConnectionError):
        client.connect(url, namespaces=[NAMESPACE], auth=auth, transports=["websocket"], wait_timeout=5)
    client.disconnect()
    assert len(reasons) == 1
    return reasons[0]["message"]


def test_wrong_or_missing_key_refuses_the_connection(server_factory, caplog):
    caplog.set_level(logging.DEBUG)
    server = server_factory(auth=KEY)
    assert refused(server.url, {"api_key": "nope"}) == "[401] authentication failed"
    refused(server.url, None)
    refused(server.url, {"access_token": KEY + "!"})
    good = Peer(server.url, auth={"api_key": KEY})
    try:
        assert good.join("agent", "a1", "o1") == (True, None)
    finally:
        good.close()
    server.stop()  # the refusals are logged as a count per address, at the latest when the Server stops
    assert all(KEY not in record.getMessage() for record in caplog.records)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "namespace connects" in r.getMessage()]
    assert warnings == [warnings[0]] and warnings[0].startswith("refused 3 namespace connects from 127.0.0.1"), warnings


def test_official_sdk_style_access_token_is_accepted_over_polling_too(server_factory, peer_factory):
    server = server_factory(auth=KEY)
    peer = peer_factory(url=server.url, auth={"access_token": KEY}, transports=("polling", "websocket"))
    assert peer.join("computer", "c1", "o1") == (True, None)


class IdentityProvider:
    def __init__(self):
        self.seen = []

    def authenticate(self, environ, auth):
        self.seen.append((environ.get("REMOTE_ADDR"), auth))
        if auth == {"user": "boom"}:
            raise RuntimeError("provider bug")
        return {"user": auth["user"]} if isinstance(auth, dict) and auth.get("user") in ("ann", "bob") else None


def test_custom_provider_sees_environ_and_auth_and_its_identity_is_kept(server_factory, peer_factory):
    provider = IdentityProvider()
    server = server_factory(auth=provider)
    ann = peer_factory(url=server.url, auth={"user": "ann"})
    assert provider.seen == [("127.0.0.1", {"user": "ann"})]
    assert server.sio.get_session(ann.sid, namespace=NAMESPACE) == {"identity": {"user": "ann"}}
    refused(server.url, {"user": "eve"})
    refused(server.url, {"user": "boom"})  # a failing provider refuses, and the Server goes on
    bob = peer_factory(url=server.url, auth={"user": "bob"})
    assert bob.join("agent", "bob", "o1") == (True, None)
