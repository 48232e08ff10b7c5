"""Fixtures of the Agent's tests: the real Server every office of them meets in."""

from __future__ import annotations

from typing import Iterator

import pytest

from smcp_sync.server import SMCPServer

from office_parts import serving


@pytest.fixture
def server(no_leaks: None) -> Iterator[SMCPServer]:
    """A real `SMCPServer` on a loopback ephemeral port, stopped before `no_leaks` checks."""
    with serving() as smcp:
        yield smcp
