"""What an office may ask of a Computer, written once: `OfficeRequests` answers each
`client:*` request over the Computer's wings (the tool catalogue and calls, the Desktop,
the Finder, the Skills, resource reads), and `Computer` is it with a lifecycle, a
connection and an admin face. The socket side (`socket_side`) knows only this class, so
it never imports the class that owns it."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..blobs import BlobHandles
from ..blobs.uploads import Uploads
from ..protocol.conventions import DEFAULT_TOOL_TIMEOUT
from ..protocol.models import (
    DEFAULT_FINDER_LIMIT,
    A2CResource,
    A2CSkillRef,
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    Desktop,
    GetComputerConfigRet,
    ResourceContents,
    SMCPTool,
)
from ..threads.forks import parent_pid
from .channels.desktop import DesktopWindows
from .channels.finder_catalogue import FinderCatalogue, FinderPage
from .channels.reads import ResourceRequests
from .channels.skill_files import SkillResource
from .channels.skills import SkillRegistry
from .channels.watch import ResourceWatch
from .config.redaction import public_input
from .mcp.manager import ServerManager
from .mcp.status import ComputerNotRunningError
from .tools.calls import ToolCaller
from .tools.catalog import ToolCatalog
from .tools.history import ToolCallHistory


class OfficeRequests:
    """The Computer as an office sees it: every request answered once, here. The
    attributes are the wings `Computer.__init__` builds."""

    name: str
    #: Blob handles minted for the office's Agents (results, skill files) and their reads.
    blobs: BlobHandles
    #: Blobs the office's Agents upload (`client:put_blob`).
    uploads: Uploads
    #: Most bytes of a skill file's text answered inline.
    skill_inline_budget: int
    _manager: ServerManager
    _catalog: ToolCatalog
    _caller: ToolCaller
    _history: ToolCallHistory
    _watch: ResourceWatch
    _desktop: DesktopWindows
    _finder: FinderCatalogue
    _skills: SkillRegistry
    _resources: ResourceRequests
    _started: bool
    _closed: bool
    _inherited: bool  # started by the process this one forked from (`computer` module doc)

    def tools(self) -> list[SMCPTool]:
        """The tools agents see, in configuration order."""
        return list(self._catalog.tools)

    def call_tool(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        *,
        req_id: str | None = None,
    ) -> CallToolResult:
        """Call a tool by its exposed name (``{bundle_id}__{tool}``; the bare tool name
        also works while only one server has it). Failures are results, not exceptions:
        see `CallToolResult.error_code` (docs/ARCHITECTURE.md, Wire decisions). `req_id` lets `cancel_tool_call` find it."""
        self._require_started()
        return self._caller.call(name, _call_arguments(params, timeout), timeout, req_id)

    def start_tool_call(
        self,
        name: str,
        params: Mapping[str, Any] | None,
        timeout: float,
        req_id: str | None,
        done: Callable[[CallToolResult], None],
    ) -> None:
        """`call_tool` without waiting: `done(result)` is called when the call ends (on the
        Computer's event loop thread: it must not block), or at once when it cannot start.
        The office's door (`OfficeRequests`): the socket side checked the request as it
        came off the wire, so nothing is checked again here."""
        self._require_started()
        self._caller.start(name, dict(params or {}), timeout, req_id, done)

    def cancel_tool_call(self, req_id: str) -> bool:
        """Cancel the in-flight call `req_id` (its MCP request too); False if none was
        running (a call arriving later with that id is cancelled at once)."""
        return self._caller.cancel(req_id)

    def desktop(self, desktop_size: int | None = None, window: str | None = None) -> list[Desktop]:
        """The Desktop (spec/desktop.md): rendered windows, at most `desktop_size` (None:
        all). `window` fetches that one window (its exact listed URI) and nothing else."""
        self._require_started()
        servers = self._watch.current_servers()
        return self._desktop.windows(servers, self._history.records(), desktop_size, window)

    def finder(
        self,
        keywords: list[str] | None = None,
        file_type: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_FINDER_LIMIT,
    ) -> FinderPage:
        """One page of the document catalogue (spec/finder.md) and its `total_count`; not
        `complete` while documents being read in the background were left out (waits at
        most `ServerPolicy.cold_wait` for them)."""
        self._require_started()
        servers = self._watch.current_servers()
        return self._finder.page(servers, self._history.records(), keywords, file_type, offset, limit)

    def skills(self) -> list[A2CSkillRef]:
        """The skills an Agent may use now (spec-0.3/skill.md): the MCP servers' (running
        ones only) in configuration order, then the user's."""
        self._require_started()
        return [skill.ref for skill in self._skills.current(self._watch.current_servers())]

    def skill_resource(self, name: str, rel_path: str | None = None) -> SkillResource:
        """File `rel_path` (default SKILL.md, its front matter stripped) of skill `name`:
        4016 for a malformed name, 4014 for an unknown one, 4017 for a path outside the
        package, a forbidden or missing file, or one over `skill_max_size`."""
        self._require_started()
        return self._skills.resource(name, rel_path, self._watch.current_servers)

    def read_resource(self, uri: str, mcp_server: str | None = None) -> list[ResourceContents]:
        """Read `uri` on the MCP server that lists its host (`dpe://`, `window://`), or on
        `mcp_server`. Invalid `dpe://` URIs are 4204; unknown documents, pages and elements
        4201 / 4202 / 4203."""
        self._require_started()
        return self._resources.read(uri, mcp_server)

    def get_resources(self, mcp_server: str, cursor: str | None = None) -> tuple[list[A2CResource], str | None]:
        """One page of `resources/list` of the MCP server whose bundle_id is `mcp_server`,
        and the next page's cursor (None: last)."""
        self._require_started()
        return self._resources.page(mcp_server, cursor)

    def complete(
        self,
        ref: CompletionReference,
        argument: CompletionArgument,
        context: CompletionContext | None = None,
        mcp_server: str | None = None,
    ) -> Completion:
        """MCP `completion/complete`, on the server owning the resource template's host (a
        prompt reference needs `mcp_server`)."""
        self._require_started()
        return self._resources.complete(ref, argument, context, mcp_server)

    def get_config(self) -> GetComputerConfigRet:
        """Servers and inputs as agents may see them: secrets redacted (`redaction`), and
        no management diagnostics (computer-management/protocol.md §7: see `diagnostics`)."""
        servers, _ = self._manager.public_configs()
        inputs = [public_input(item) for item in self._manager.inputs.definitions]
        return GetComputerConfigRet(servers=servers, inputs=inputs)

    def _require_started(self) -> None:
        if self._inherited and not self._closed:
            raise self._inherited_error()
        if not self._started or self._closed:
            raise ComputerNotRunningError(f"Computer {self.name!r} is {'closed' if self._closed else 'not started'}")

    def _inherited_error(self) -> ComputerNotRunningError:
        return ComputerNotRunningError(
            f"Computer {self.name!r} was started before os.fork(): its MCP servers and threads belong to "
            f"process {parent_pid()}; start a Computer in the child process instead (gunicorn: the "
            "post_fork hook; Celery: the worker_process_init signal)"
        )


def _call_arguments(params: Mapping[str, Any] | None, timeout: float) -> dict[str, Any]:
    """A caller's tool call arguments as a dict, checked with its `timeout` where they
    enter the Computer (the socket side checks an Agent's)."""
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return dict(params or {})
