"""Tests of the test MCP servers themselves, talking to them with the ``mcp`` SDK client.

Why: the Computer's tests rely on these servers behaving exactly as documented; a broken
fixture would otherwise show up as a mysterious Computer failure.  Each test runs its
own event loop (``asyncio.run``) and its servers are child processes that are always
stopped (stdio: by ``stdio_client``; HTTP: by ``stop`` in a ``finally``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

try:
    from tests.mcp_servers import RESOURCE_SERVER, TOOL_SERVER, start_http_server, stop, write_state
except ImportError:  # tests/ itself is on sys.path (pytest rootdir-less import)
    from mcp_servers import RESOURCE_SERVER, TOOL_SERVER, start_http_server, stop, write_state

# conftest.no_leaks: fails a test whose threads or child processes outlive it.
pytestmark = pytest.mark.usefixtures("no_leaks")

TRANSPORTS = ["stdio", "sse", "streamable"]
HTTP_TRANSPORTS = ["sse", "streamable"]


class Recorder:
    """A ``message_handler`` that keeps every server notification for later assertions."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)

    def of(self, kind: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]

    def updated(self, uri: str) -> int:
        return sum(1 for m in self.of(types.ResourceUpdatedNotification) if m.params.uri == uri)

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s; got {self.messages!r}")
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    script: str,
    *args: str,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    recorder: Recorder | None = None,
    on_process: Callable[[Any], None] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized ``ClientSession`` to ``script`` over ``transport``; stops the child on exit."""
    recorder = recorder or Recorder()
    errlog_path = tmp_path / f"{Path(script).stem}-{transport}-{time.monotonic_ns()}.stderr"
    with open(errlog_path, "w", encoding="utf-8") as errlog:
        if transport == "stdio":
            params = StdioServerParameters(command=sys.executable, args=[script, *args], env=env)
            streams_cm = stdio_client(params, errlog=errlog)  # errlog: a real file, always
            proc = None
        else:
            proc, url = start_http_server(script, "--transport", transport, *args, env=env, stderr=errlog)
            if on_process is not None:
                on_process(proc)
            streams_cm = sse_client(url) if transport == "sse" else streamable_http_client(url)
        try:
            async with streams_cm as streams, ClientSession(streams[0], streams[1], message_handler=recorder) as s:
                await s.initialize()
                yield s
        finally:
            if proc is not None:
                stop(proc)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def subscribe(session: ClientSession, uri: str) -> None:
    with warnings.catch_warnings():  # resources/subscribe is deprecated for 2026-07-28 servers only
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await session.subscribe_resource(uri)


async def unsubscribe(session: ClientSession, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await session.unsubscribe_resource(uri)


async def wait_for_file_line(path: Path, prefix: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith(prefix):
                    return line
        await asyncio.sleep(0.02)
    raise AssertionError(f"no line starting with {prefix!r} in {path} within {timeout}s")


# ---------------------------------------------------------------------------------------
# tool_server
# ---------------------------------------------------------------------------------------

BUILTIN_TOOLS = {
    "echo", "add", "fail", "sleep", "crash", "add_tool", "remove_tool", "big", "image", "delete_item", "meta_tool",
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tool_server_calls(transport: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with connect(transport, TOOL_SERVER, "--name", "tools-a", tmp_path=tmp_path) as s:
            assert s.server_info is not None and s.server_info.name == "tools-a"
            caps = s.server_capabilities
            assert caps is not None and caps.tools is not None and caps.tools.list_changed is True

            assert {t.name for t in (await s.list_tools()).tools} == BUILTIN_TOOLS

            echo = await s.call_tool("echo", {"text": "héllo"})
            assert not echo.is_error and text_of(echo) == "héllo"
            assert echo.structured_content == {"result": "héllo"}

            added = await s.call_tool("add", {"a": 2, "b": 40})
            assert text_of(added) == "42" and added.structured_content is None

            failed = await s.call_tool("fail", {"message": "it broke"})
            assert failed.is_error and text_of(failed) == "it broke"

            big = text_of(await s.call_tool("big", {"size": 200_000}))
            assert len(big) == 200_000 and big.startswith("0123456789")

            bad = await s.call_tool("add", {"a": "x", "b": 1})
            assert bad.is_error

            with pytest.raises(MCPError, match="Unknown tool"):
                await s.call_tool("no_such_tool", {})

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_tool_definitions_carry_schemas_annotations_and_meta(tmp_path: Path) -> None:
    async def body() -> None:
        async with connect("stdio", TOOL_SERVER, tmp_path=tmp_path) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert tools["echo"].output_schema == {
                "type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"],
            }
            assert tools["add"].output_schema is None
            assert tools["add"].input_schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}

            ann = tools["delete_item"].annotations
            assert ann is not None
            assert (ann.destructive_hint, ann.read_only_hint, ann.title) == (True, False, "Delete item")
            wire = tools["delete_item"].model_dump(by_alias=True, exclude_none=True)
            assert wire["annotations"]["destructiveHint"] is True and wire["annotations"]["readOnlyHint"] is False

            assert tools["meta_tool"].meta == {"example.com/origin": "tool_server", "tags": "server-native"}
            assert "_meta" in tools["meta_tool"].model_dump(by_alias=True, exclude_none=True)
            assert tools["echo"].meta is None and tools["echo"].annotations is None

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_prefix_applies_to_every_tool_name(tmp_path: Path) -> None:
    async def body() -> None:
        async with connect("stdio", TOOL_SERVER, "--prefix", "p_", tmp_path=tmp_path) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert names == {"p_" + n for n in BUILTIN_TOOLS}
            assert text_of(await s.call_tool("p_echo", {"text": "x"})) == "x"
            await s.call_tool("p_add_tool", {"name": "dyn"})
            assert "p_dyn" in {t.name for t in (await s.list_tools()).tools}
            with pytest.raises(MCPError):
                await s.call_tool("echo", {"text": "x"})

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_two_servers_without_prefix_clash(tmp_path: Path) -> None:
    async def body() -> None:
        async with connect("stdio", TOOL_SERVER, "--name", "one", tmp_path=tmp_path) as one, \
                connect("stdio", TOOL_SERVER, "--name", "two", tmp_path=tmp_path) as two:
            names_one = {t.name for t in (await one.list_tools()).tools}
            names_two = {t.name for t in (await two.list_tools()).tools}
            assert names_one == names_two == BUILTIN_TOOLS
            assert (one.server_info.name, two.server_info.name) == ("one", "two")  # type: ignore[union-attr]

    asyncio.run(body())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_add_and_remove_tool_notify_list_changed(transport: str, tmp_path: Path) -> None:
    async def body() -> None:
        rec = Recorder()
        async with connect(transport, TOOL_SERVER, tmp_path=tmp_path, recorder=rec) as s:
            assert text_of(await s.call_tool("add_tool", {"name": "dyn"})) == "added dyn"
            await rec.wait_until(lambda: len(rec.of(types.ToolListChangedNotification)) == 1)
            assert "dyn" in {t.name for t in (await s.list_tools()).tools}
            assert text_of(await s.call_tool("dyn", {"k": 1})) == 'dyn called with {"k": 1}'

            removed = await s.call_tool("remove_tool", {"name": "dyn"})
            assert not removed.is_error
            await rec.wait_until(lambda: len(rec.of(types.ToolListChangedNotification)) == 2)
            assert "dyn" not in {t.name for t in (await s.list_tools()).tools}
            assert (await s.call_tool("remove_tool", {"name": "dyn"})).is_error
            assert (await s.call_tool("remove_tool", {"name": "echo"})).is_error  # builtins stay

    asyncio.run(body())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", HTTP_TRANSPORTS)
def test_list_changed_reaches_every_connection(transport: str, tmp_path: Path) -> None:
    """A change made by one client is announced to another client of the same server."""

    async def body() -> None:
        proc, url = start_http_server(TOOL_SERVER, "--transport", transport, stderr=subprocess.DEVNULL)
        try:
            open_client = sse_client if transport == "sse" else streamable_http_client
            watcher_rec = Recorder()
            async with open_client(url) as w_streams, \
                    ClientSession(*w_streams, message_handler=watcher_rec) as watcher, \
                    open_client(url) as a_streams, ClientSession(*a_streams) as actor:
                await watcher.initialize()
                await actor.initialize()
                await watcher.list_tools()  # the server learns about a connection on its first request
                # On streamable HTTP the watcher's GET stream (its standalone channel) opens in
                # the background after initialize; notifications sent before that are dropped
                # by the SDK, so keep changing the list until one gets through.
                deadline = time.monotonic() + 10
                i = 0
                while not watcher_rec.of(types.ToolListChangedNotification):
                    assert time.monotonic() < deadline, "watcher never saw tools/list_changed"
                    await actor.call_tool("add_tool", {"name": f"t{i}"})
                    i += 1
                    await asyncio.sleep(0.1)
                assert "t0" in {t.name for t in (await watcher.list_tools()).tools}
        finally:
            stop(proc)

    asyncio.run(body())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_cancelling_a_call_reaches_the_server(transport: str, tmp_path: Path) -> None:
    cancel_log, started_log = tmp_path / "cancel.log", tmp_path / "started.log"
    env = {"SMCP_TEST_CANCEL_LOG": str(cancel_log), "SMCP_TEST_STARTED_LOG": str(started_log)}

    async def body() -> None:
        async with connect(transport, TOOL_SERVER, tmp_path=tmp_path, env=env) as s:
            call = asyncio.ensure_future(s.call_tool("sleep", {"seconds": 60}))
            started = await wait_for_file_line(started_log, "started ")
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            # The session is still open: the line comes from notifications/cancelled, not from
            # the connection closing.
            line = await wait_for_file_line(cancel_log, "cancelled ")
            assert line.split()[1] == started.split()[1]  # same request id
            assert line.endswith("seconds=60.0")
            assert text_of(await s.call_tool("echo", {"text": "still alive"})) == "still alive"

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_timeout_sends_cancel_and_short_sleep_completes(tmp_path: Path) -> None:
    cancel_log = tmp_path / "cancel.log"

    async def body() -> None:
        async with connect("stdio", TOOL_SERVER, tmp_path=tmp_path, env={"SMCP_TEST_CANCEL_LOG": str(cancel_log)}) as s:
            assert text_of(await s.call_tool("sleep", {"seconds": 0.05})) == "slept 0.05"
            assert not cancel_log.exists()
            with pytest.raises(MCPError) as info:
                await s.call_tool("sleep", {"seconds": 30}, read_timeout_seconds=0.5)
            assert info.value.code == types.REQUEST_TIMEOUT
            await wait_for_file_line(cancel_log, "cancelled ")

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_crash_over_stdio_closes_the_connection(tmp_path: Path) -> None:
    async def body() -> None:
        async with connect("stdio", TOOL_SERVER, tmp_path=tmp_path) as s:
            with pytest.raises(MCPError) as info:
                await s.call_tool("crash", {})
            assert info.value.code == types.CONNECTION_CLOSED
            with pytest.raises(MCPError):
                await s.call_tool("echo", {"text": "x"})

    asyncio.run(body())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", HTTP_TRANSPORTS)
def test_crash_over_http_kills_the_process(transport: str, tmp_path: Path) -> None:
    procs: list[Any] = []

    async def body() -> None:
        async with connect(transport, TOOL_SERVER, tmp_path=tmp_path, on_process=procs.append) as s:
            call = asyncio.ensure_future(s.call_tool("crash", {}, read_timeout_seconds=5))
            assert await asyncio.get_running_loop().run_in_executor(None, procs[0].wait, 10) == 3
            # The pending call fails at once with CONNECTION_CLOSED (-32000); the message
            # differs: "Connection closed" (SSE), "SSE stream ended without a response"
            # (streamable HTTP).
            with pytest.raises(MCPError) as info:
                await call
            assert info.value.code == types.CONNECTION_CLOSED

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_noisy_stderr_is_written(tmp_path: Path) -> None:
    async def body() -> None:
        async with connect("stdio", TOOL_SERVER, "--noisy-stderr", "100", tmp_path=tmp_path) as s:
            for _ in range(3):
                assert text_of(await s.call_tool("echo", {"text": "q"})) == "q"
        errlogs = list(tmp_path.glob("tool_server-stdio-*.stderr"))
        assert len(errlogs) == 1 and errlogs[0].stat().st_size >= 4 * 100 * 1024

    asyncio.run(body())


# ---------------------------------------------------------------------------------------
# resource_server
# ---------------------------------------------------------------------------------------

WINDOWS = [{"uri": f"window://com.example.app/w{i}?priority={i}", "name": f"w{i}", "text": f"window {i}"}
           for i in range(5)]
DOC = {"uri": "dpe://com.example.docs/rpt", "name": "report", "json": {"title": "Report", "pages": 2}}
PAGE = {"uri": "dpe://com.example.docs/rpt/pages/0", "name": "page 0", "json": {"text": "p0"}, "listed": False}
TEMPLATE = {"uriTemplate": "dpe://com.example.docs/{doc_ref}/pages/{page_index}", "name": "page"}


def make_state(tmp_path: Path) -> Path:
    path = tmp_path / "state.json"
    write_state(path, [*WINDOWS, DOC, PAGE], [TEMPLATE])
    return path


async def list_all(session: ClientSession) -> tuple[list[types.Resource], int]:
    resources: list[types.Resource] = []
    cursor, pages = None, 0
    while True:
        page = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        resources.extend(page.resources)
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            return resources, pages


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resource_server_list_read_and_errors(transport: str, tmp_path: Path) -> None:
    state = make_state(tmp_path)

    async def body() -> None:
        args = ("--state", str(state), "--page-size", "2")
        async with connect(transport, RESOURCE_SERVER, *args, tmp_path=tmp_path) as s:
            caps = s.server_capabilities
            assert caps is not None and caps.resources is not None
            assert caps.resources.subscribe is True and caps.resources.list_changed is True

            resources, pages = await list_all(s)
            assert [r.uri for r in resources] == [w["uri"] for w in WINDOWS] + [DOC["uri"]]
            assert pages == 3
            assert resources[-1].mime_type == "application/json"

            window = await s.read_resource(WINDOWS[1]["uri"])
            assert isinstance(window.contents[0], types.TextResourceContents)
            assert window.contents[0].text == "window 1" and window.contents[0].uri == WINDOWS[1]["uri"]

            doc = (await s.read_resource(DOC["uri"])).contents[0]
            assert isinstance(doc, types.TextResourceContents)
            assert doc.mime_type == "application/json" and json.loads(doc.text) == DOC["json"]
            page = (await s.read_resource(PAGE["uri"])).contents[0]  # readable though unlisted
            assert isinstance(page, types.TextResourceContents) and json.loads(page.text) == {"text": "p0"}

            templates = (await s.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == [TEMPLATE["uriTemplate"]]

            with pytest.raises(MCPError, match="not found") as info:
                await s.read_resource("window://com.example.app/nope")
            assert info.value.code == -32002

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_resource_state_file_is_reread(tmp_path: Path) -> None:
    state = make_state(tmp_path)

    async def body() -> None:
        async with connect("stdio", RESOURCE_SERVER, "--state", str(state), tmp_path=tmp_path) as s:
            assert len((await s.list_resources()).resources) == 6
            write_state(state, [{"uri": "window://x/only", "name": "only", "text": "v2"}])
            assert [r.uri for r in (await s.list_resources()).resources] == ["window://x/only"]
            contents = (await s.read_resource("window://x/only")).contents[0]
            assert isinstance(contents, types.TextResourceContents) and contents.text == "v2"

    asyncio.run(body())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resource_notifications_follow_subscriptions(transport: str, tmp_path: Path) -> None:
    state = make_state(tmp_path)
    watched, other = WINDOWS[0]["uri"], WINDOWS[1]["uri"]

    async def body() -> None:
        rec = Recorder()
        async with connect(transport, RESOURCE_SERVER, "--state", str(state), tmp_path=tmp_path, recorder=rec) as s:
            await subscribe(s, watched)

            touched = await s.call_tool("touch", {"uri": watched, "text": "changed"})
            assert text_of(touched) == "updated sent to 1 connection(s)"
            await rec.wait_until(lambda: rec.updated(watched) == 1)
            contents = (await s.read_resource(watched)).contents[0]
            assert isinstance(contents, types.TextResourceContents) and contents.text == "changed"

            assert text_of(await s.call_tool("touch", {"uri": other})) == "updated sent to 0 connection(s)"
            assert (await s.call_tool("touch", {"uri": "window://unknown"})).is_error

            assert text_of(await s.call_tool("burst", {"n": 50, "uri": watched})) == "50 updated notification(s) sent"
            await rec.wait_until(lambda: rec.updated(watched) == 51)

            new = [{"uri": "window://com.example.app/new", "name": "new", "text": "n"}]
            await s.call_tool("set_resources", {"resources": new})
            await rec.wait_until(lambda: len(rec.of(types.ResourceListChangedNotification)) == 1)
            assert [r.uri for r in (await s.list_resources()).resources] == [new[0]["uri"]]
            assert rec.updated(other) == 0

            await unsubscribe(s, watched)
            write_state(state, WINDOWS)
            assert text_of(await s.call_tool("touch", {"uri": watched})) == "updated sent to 0 connection(s)"

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_always_notify_updated_ignores_subscriptions(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    uri = WINDOWS[2]["uri"]

    async def body() -> None:
        rec = Recorder()
        args = ("--state", str(state), "--always-notify-updated")
        async with connect("stdio", RESOURCE_SERVER, *args, tmp_path=tmp_path, recorder=rec) as s:
            assert text_of(await s.call_tool("touch", {"uri": uri})) == "updated sent to 1 connection(s)"
            await rec.wait_until(lambda: rec.updated(uri) == 1)

    asyncio.run(body())


@pytest.mark.timeout(30)
def test_start_http_server_fails_fast_on_a_broken_server(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="exited"):
        # --state is required: argparse exits with status 2 before any PORT line.
        start_http_server(RESOURCE_SERVER, "--transport", "streamable", stderr=subprocess.DEVNULL)
