"""`smcp-sync server`'s options for the bounds on what one client may hold."""

from __future__ import annotations

import signal

import pytest
import websocket
from reliability.hostile import close_all, closed_by_server, engineio_websocket

from smcp_sync.cli import main

from .test_cli_server import server_process  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(60)


def test_the_bounds_are_command_line_options(server_process):  # noqa: F811
    server = server_process("--port", "0", "--handshake-timeout", "1", "--max-connections-per-ip", "1")
    silent = engineio_websocket(server.url)
    try:
        with pytest.raises(websocket.WebSocketBadStatusException):
            engineio_websocket(server.url)  # a second one from 127.0.0.1
        assert closed_by_server(silent, 10)
    finally:
        close_all([silent])
    assert server.stop(signal.SIGTERM)[0] == 0


@pytest.mark.parametrize(
    "args",
    [["--max-connections-per-ip", "-1"], ["--handshake-timeout", "0"], ["--header-timeout", "x"], ["--max-send-backlog", "0"]],
)
def test_bad_bounds_exit_2(args, capsys):
    assert main(["server", *args]) == 2
    assert "smcp-sync server:" in capsys.readouterr().err
