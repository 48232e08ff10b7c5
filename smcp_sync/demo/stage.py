"""The demo's stage: a Server, a Computer hosting the bundled MCP servers and an Agent,
all in this process, in one office.

Everything started here is stopped by `close()` (in reverse order, also after a failed
start), so the demo leaves no thread, child process or temporary folder behind.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs

from ..agent import Agent
from ..computer import Computer, allow_all
from ..server import SMCPServer
from . import DEFAULT_OFFICE, SAMPLE_DOCUMENTS
from .bundle import bundled_servers

logger = logging.getLogger(__name__)

COMPUTER_NAME = "demo-computer"
AGENT_NAME = "demo-agent"


@attrs.frozen
class StageSettings:
    """`documents`: the folder to serve, or None for a temporary copy of the bundled
    samples (which the demo may then change); `port` 0 picks a free one; `timeout`:
    seconds for each start-up step."""

    documents: Path | None = None
    office: str = DEFAULT_OFFICE
    port: int = 0
    timeout: float = 30.0


class DemoStage:
    """Open with `open()` (or `with`); then `url`, `office`, `computer_name`, `agent`,
    `documents` and `writable` (may the demo change files in `documents`?) are set."""

    computer_name = COMPUTER_NAME

    def __init__(self, settings: StageSettings) -> None:
        self.settings = settings
        self.office = settings.office
        self.url = ""
        self.documents = settings.documents or SAMPLE_DOCUMENTS
        self.writable = settings.documents is None
        self.agent: Agent | None = None
        self._closing = contextlib.ExitStack()

    def open(self) -> DemoStage:
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def _open(self) -> None:
        timeout = self.settings.timeout
        if self.settings.documents is None:
            self.documents = self._sample_copy()
        server = SMCPServer()
        self.url = server.start("127.0.0.1", self.settings.port)
        self._closing.callback(server.stop)
        # the bundled tools only read and compute: every call is approved
        # (docs/computer/index.md, *What a Computer runs unasked*)
        computer = Computer(self.computer_name, bundled_servers(self.documents), confirm=allow_all)
        self._closing.callback(computer.close)
        computer.start(timeout)
        computer.connect(self.url, self.office, timeout=timeout)
        self.agent = Agent(AGENT_NAME)
        self._closing.callback(self.release_agent)
        self.agent.connect(self.url, timeout=timeout)
        self.agent.join_office(self.office, timeout=timeout)
        logger.info("demo stage open: %s, office %r", self.url, self.office)

    def _sample_copy(self) -> Path:
        """A temporary copy of the bundled samples: the demo writes into it, and the
        installed package stays untouched."""
        folder = Path(self._closing.enter_context(tempfile.TemporaryDirectory(prefix="smcp-sync-demo-")))
        return Path(shutil.copytree(SAMPLE_DOCUMENTS, folder / "documents"))

    def release_agent(self) -> None:
        """Close the demo's Agent, freeing the office for another one (one Agent per office)."""
        agent, self.agent = self.agent, None
        if agent is not None:
            agent.close()

    def close(self) -> None:
        """Stop the Agent, the Computer (and its MCP server processes), the Server, and
        remove the temporary documents. Idempotent."""
        self._closing.close()

    def __enter__(self) -> DemoStage:
        return self.open()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
