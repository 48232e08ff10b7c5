"""A cold Finder catalogue end to end: the Agent's first `get_finder` after the Computer
joined answers within the Computer's `cold_wait` with the documents read so far
(`total_count` counts those, `get_config` says the rest is still being read); one
`notify:update_finder` follows once the catalogue is complete, and the refresh it
triggers (and any `get_finder` after it) has every document."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from smcp_sync.computer import ServerPolicy
from smcp_sync.protocol import events

from .helpers import Notifications, office

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaks")]

SERVER = Path(__file__).resolve().parents[1] / "computer" / "servers" / "slow_catalogue_server.py"
UPDATE = events.UPDATE_FINDER_NOTIFICATION
COLD_WAIT = 0.5
#: 160 documents, 16 requests in flight, 0.1 s per subscription and 0.2 s per read: at
#: least 3 s to read the catalogue, whatever the machine.
DOCUMENTS = 160


def test_a_cold_catalogue_answers_what_is_read_in_time_and_notifies_once_complete() -> None:
    args = [str(SERVER), "--host-id", "cold.docs", "--documents", str(DOCUMENTS), "--read-delay", "0.2"]
    parameters = {"command": sys.executable, "args": [*args, "--subscribe-delay", "0.1"]}
    config = {"name": "slow", "type": "stdio", "server_parameters": parameters}
    policy = ServerPolicy(cold_wait=COLD_WAIT)
    with office([config], {"policy": policy}, prefetch_finder=True) as (computer, agent):
        notes = Notifications(agent, UPDATE)
        began = time.monotonic()
        cold = agent.get_finder("c1", limit=100, timeout=10)
        assert time.monotonic() - began < COLD_WAIT + 2.0
        assert cold.total_count < DOCUMENTS and len(cold.documents) == min(cold.total_count, 100)
        diagnostics = computer.diagnostics()
        assert any(f"of {DOCUMENTS} dpe:// resources are still being read" in d for d in diagnostics), diagnostics

        notes.wait_for(UPDATE, 1, timeout=20)
        notes.cached("finder", lambda cached: cached.total_count == DOCUMENTS)  # refreshed on the notification
        full = agent.get_finder("c1", limit=100, timeout=10)
        assert full.total_count == DOCUMENTS and full.documents[0].doc_ref == "doc-159"
        assert notes.settle(UPDATE) == 1
