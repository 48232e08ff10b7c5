"""Where `smcp-sync agent|computer` put the key (--api-key-field, --api-key-header) and
extra headers (--header): each reaches a Server that reads the key only there."""

from __future__ import annotations

from typing import Iterator

import pytest

from smcp_sync import SMCPServer
from smcp_sync.cli import main
from smcp_sync.server import APIKeyAuth

pytestmark = pytest.mark.timeout(30)

KEY = "cli-key"


@pytest.fixture
def serve(no_leaks: None) -> Iterator:
    servers: list[SMCPServer] = []

    def start(**auth_options) -> str:
        server = SMCPServer(auth=APIKeyAuth(KEY, **auth_options))
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def room(url: str, *options: str) -> int:
    return main(["agent", "--url", url, "--office", "o", "--timeout", "5", *options, "room"])


def test_the_default_fields_reach_a_042_style_server(serve):
    url = serve(fields=["token"], headers=[])  # what a2c-smcp 0.4.2's Server reads
    assert room(url, "--api-key", KEY) == 0


def test_api_key_field_chooses_the_field(serve, capsys):
    url = serve(fields=["secret"], headers=[])
    assert room(url, "--api-key", KEY) == 1
    assert "[401]" in capsys.readouterr().err
    assert room(url, "--api-key", KEY, "--api-key-field", "secret") == 0


def test_api_key_header_and_header_send_http_headers(serve):
    url = serve(fields=[], headers=["authorization"])
    assert room(url, "--api-key", KEY, "--api-key-header", "Authorization") == 0
    assert room(url, "--header", f"Authorization: Bearer {KEY}") == 0


@pytest.mark.parametrize(
    "option, says",
    [
        (["--header", "no colon"], "argument --header: expected NAME:VALUE"),
        (["--header", "bad name: x"], "argument --header: HTTP header name 'bad name' is not a valid header name"),
        (["--api-key", KEY, "--api-key-header", "bad name"], "HTTP header name 'bad name' is not a valid header name"),
    ],
)
def test_bad_headers_exit_2_naming_them(option, says, capsys):
    assert room("http://127.0.0.1:1", *option) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
