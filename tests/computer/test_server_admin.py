"""`computer.servers` is the one admin face of a Computer's MCP servers (issue 35): what
it adds, starts, stops and removes is what the Computer's tools show; the Computer's
old admin methods are kept one release and warn naming the new place."""

from __future__ import annotations

import pytest
from computer.helpers import stdio_config

import smcp_sync.computer
from smcp_sync import Computer
from smcp_sync.computer import MCPServers, ServerState, allow_all


def test_the_face_adds_stops_starts_and_removes_and_the_tools_follow(no_leaks):
    with Computer("c", confirm=allow_all) as computer:
        assert isinstance(computer.servers, MCPServers)
        added = computer.servers.add(stdio_config("tools"), timeout=20)
        assert added.state is ServerState.RUNNING
        count = len(computer.tools())
        assert count > 0
        assert computer.servers.stop("tools").state is ServerState.STOPPED
        assert computer.tools() == []
        assert computer.servers.start("tools", timeout=20).state is ServerState.RUNNING
        assert len(computer.tools()) == count
        assert [status.bundle_id for status in computer.servers.statuses()] == ["tools"]
        computer.servers.remove("tools")
        assert computer.servers.statuses() == [] and computer.tools() == []


def test_the_old_admin_methods_warn_and_do_what_the_face_does(no_leaks):
    with Computer("c", [stdio_config("tools")], confirm=allow_all) as computer:
        with pytest.warns(DeprecationWarning, match=r"^Computer\.server_statuses\(\) is deprecated; use Computer\.servers\.statuses\(\)$"):
            assert computer.server_statuses() == computer.servers.statuses()
        with pytest.warns(DeprecationWarning, match=r"use Computer\.servers\.stop\(\)$") as warned:
            assert computer.stop_server("tools").state is ServerState.STOPPED
        assert warned[0].filename == __file__


def test_the_server_manager_is_internal():
    assert "ServerManager" not in smcp_sync.computer.__all__
    assert not hasattr(smcp_sync.computer, "ServerManager")
