"""`smcp-sync server`'s options for the bounds on what one client may hold."""

from __future__ import annotations

import signal

import pytest
import websocket
from reliability.hostile import close_all, closed_by_server, engineio_websocket

from smcp_sync.cli import main
from smcp_sync.server.limits.limits import SERVE_MODES

from .test_cli_server import server_process  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_the_bounds_are_command_line_options(server_process, mode):  # noqa: F811
    server = server_process("--port", "0", "--handshake-timeout", "1", "--max-connections-per-ip", "1", "--mode", mode)
    silent = engineio_websocket(server.url)
    try:
        with pytest.raises(websocket.WebSocketBadStatusException):
            engineio_websocket(server.url)  # a second one from 127.0.0.1
        assert closed_by_server(silent, 10)
    finally:
        close_all([silent])
    assert server.stop(signal.SIGTERM)[0] == 0


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_the_authentication_bounds_are_command_line_options(server_process, mode):  # noqa: F811
    server = server_process(
        "--port", "0", "--api-key", "k", "--handshake-timeout", "60",  # not what closes them here
        "--max-auth-failures-per-socket", "1", "--max-unauthenticated-bytes", "100", "--mode", mode,
    )  # fmt: skip
    guessing = engineio_websocket(server.url)
    talkative = engineio_websocket(server.url)
    try:
        guessing.send('40/smcp,{"token":"wrong"}')  # the first refused key closes it
        talkative.send("40/smcp," + "x" * 200)  # more than 100 bytes before a key is accepted
        assert closed_by_server(guessing, 10) and closed_by_server(talkative, 10)
    finally:
        close_all([guessing, talkative])
    assert server.stop(signal.SIGTERM)[0] == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--max-connections-per-ip", "-1"],
        ["--handshake-timeout", "0"],
        ["--header-timeout", "x"],
        ["--max-send-backlog", "0"],
        ["--max-unauthenticated-bytes", "0"],
        ["--max-auth-failures-per-socket", "0"],
        ["--max-auth-failures-per-ip", "-1"],
    ],
)
def test_bad_bounds_exit_2(args, capsys):
    assert main(["server", *args]) == 2
    assert "smcp-sync server:" in capsys.readouterr().err
