"""OAuth for remote MCP servers (docs/computer/oauth.md), with real parts: a
streamable HTTP (and an SSE) MCP server protected by the `mcp` SDK's server auth support, and the
tests' own authorization server (authorization_server.py); the user's browser is an HTTP
client following the authorization URL. One of each per module; the scenario runs in order.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx2
import pytest

from smcp_sync.computer import Computer, FileTokenStore, OAuthAuthorizationError, allow_all
from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.errors import ErrorCode

from ..authorization_server import AuthorizationServer
from ..helpers import FAST, http_config, start_http_server, stop

pytestmark = pytest.mark.timeout(90)

OAUTH_SERVER = str(Path(__file__).parents[2] / "mcp_servers" / "oauth_server.py")
#: Tokens live this long: the scenario waits it out once, to see a refresh. Long enough
#: for an authorization's first requests on a loaded machine (at 2 s, a token issued by
#: `authorize` expired before its tools/list under load in CI: a 401, not a refresh).
TTL = 4.0
OAUTH = {
    "scopes": ["tools"],
    "clientName": "smcp_sync tests",
    "mode": {"type": "authorizationCode", "registration": "dynamic"},
}


@contextlib.contextmanager
def protected_server(**options: Any) -> Iterator[tuple[AuthorizationServer, str]]:
    """(an authorization server made with `options`, the URL of a streamable MCP server
    it protects)."""
    with AuthorizationServer(**options) as issuer:
        proc, url = start_http_server(OAUTH_SERVER, "--transport", "streamable", "--issuer", issuer.url)
        try:
            yield issuer, url
        finally:
            stop(proc)


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[AuthorizationServer, str]]:
    with protected_server(ttl=TTL) as provided:
        yield provided


class Browser:
    """The user: follows the authorization URL (the provider grants at once) to wherever
    it redirects, as a browser does."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def __call__(self, url: str) -> None:
        self.opened.append(url)
        with urllib.request.urlopen(url, timeout=10) as answer:  # follows the redirect to the listener
            assert answer.status == 200


def computer(url: str, store: FileTokenStore) -> Computer:
    config = http_config("locked", "streamable", url, oauth=OAUTH)
    return Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=store)


def assert_authorization_needed(result: Any) -> None:
    assert result.is_error and result.error_code == ErrorCode.TOOL_AUTHORIZATION_REQUIRED
    assert result.meta["mcp_server"] == "locked"
    assert result.meta["auth_hint"] == {
        "action": "user_authorization_required",
        "message": "authorize MCP server 'locked' on the Computer (or check its client credentials there), then retry",
    }


def test_authorize_then_call_refresh_without_the_user_and_revoked_is_4006_again(
    provider: tuple[AuthorizationServer, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    no_leaks: None,
) -> None:
    issuer, url = provider
    caplog.set_level(logging.DEBUG)
    store = FileTokenStore(tmp_path / "oauth")
    browser = Browser()
    grants = issuer.grants["authorization_code"]
    with computer(url, store) as first:
        first.start()
        # never authorized: its tools are not even listed, a call by its prefix is 4006
        assert_authorization_needed(first.call_tool("locked__echo", {"text": "hi"}, timeout=20))
        status = first.authorize("locked", browser, timeout=30)
        assert status.running and len(browser.opened) == 1
        sent = dict(part.split("=", 1) for part in browser.opened[0].split("?", 1)[1].split("&"))
        assert sent["code_challenge_method"] == "S256" and sent["redirect_uri"].startswith("http%3A%2F%2F127.0.0.1%3A")
        assert first.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        shown = json.dumps(to_wire(first.get_config()))
    # the tokens were stored, mode 0600, for the next run
    [stored] = list((tmp_path / "oauth").iterdir())
    assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "oauth").st_mode) == 0o700
    assert set(json.loads(stored.read_text())) == {"tokens", "client", "server"}

    time.sleep(TTL + 0.5)  # the stored token expires: the next run refreshes it, nobody is asked
    refreshes = issuer.grants["refresh_token"]
    with computer(url, store) as second:
        second.start()
        assert second.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert issuer.grants["refresh_token"] > refreshes
        assert len(browser.opened) == 1 and issuer.grants["authorization_code"] == grants + 1

        issuer.revoke_everything()  # the user withdraws the grant at the provider
        assert_authorization_needed(second.call_tool("locked__echo", {"text": "hi"}, timeout=20))

    said = caplog.text + shown
    leaked = [value for value in issuer.issued if value in said and not value.startswith("client-")]
    assert leaked == []


def test_a_refused_authorization_raises_4007_without_secrets(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    _, url = provider

    def user_says_no(authorization_url: str) -> str:
        return "myapp://oauth?error=access_denied&state=x"

    with computer(url, FileTokenStore(tmp_path)) as host:
        host.start()
        with pytest.raises(OAuthAuthorizationError) as refused:
            host.authorize("locked", user_says_no, timeout=30, redirect_uri="myapp://oauth")
        assert refused.value.code == ErrorCode.TOOL_AUTHORIZATION_FAILED
        assert refused.value.message == "authorization of MCP server 'locked' was not granted: access_denied"
        assert_authorization_needed(host.call_tool("locked__echo", {"text": "hi"}, timeout=20))


def test_a_user_who_never_comes_back_times_out_and_the_listener_is_closed(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    _, url = provider
    shown: list[str] = []
    with computer(url, FileTokenStore(tmp_path)) as host:
        host.start()
        with pytest.raises(TimeoutError, match=r"^MCP server 'locked' was not authorized within 1.5s$"):
            host.authorize("locked", shown.append, timeout=1.5)
        redirect = dict(part.split("=", 1) for part in shown[0].split("?", 1)[1].split("&"))["redirect_uri"]
        listener = urllib.parse.unquote(redirect)
        with pytest.raises(urllib.error.URLError):  # nobody listens there any more
            urllib.request.urlopen(listener, timeout=5)


def test_a_preregistered_client_with_a_redirect_the_host_receives_itself(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    issuer, url = provider
    _, client = issuer.register({"redirect_uris": ["myapp://oauth"], "client_name": "the host app"})
    registrations = len(issuer.clients)
    mode = {"type": "authorizationCode", "registration": "preregistered", "clientId": client["client_id"]}
    config = http_config("locked", "streamable", url, oauth={"scopes": ["tools"], "mode": mode})

    def web_view(authorization_url: str) -> str:
        """The host's own web view: it stops at its redirect and hands the URL back."""
        answer = httpx2.get(authorization_url, follow_redirects=False, timeout=10)
        assert answer.status_code == 302
        return answer.headers["location"]

    store = FileTokenStore(tmp_path)
    with Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=store) as host:
        host.start()
        assert host.authorize("locked", web_view, timeout=30, redirect_uri="myapp://oauth").running
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
    assert len(issuer.clients) == registrations  # no dynamic registration


def test_an_sse_server_the_same_way(provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None) -> None:
    issuer, _ = provider
    proc, url = start_http_server(OAUTH_SERVER, "--transport", "sse", "--issuer", issuer.url)
    try:
        config = http_config("locked", "sse", url, oauth=OAUTH)
        with Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=FileTokenStore(tmp_path)) as host:
            host.start()
            assert_authorization_needed(host.call_tool("locked__echo", {"text": "hi"}, timeout=20))
            assert host.authorize("locked", Browser(), timeout=30).running
            assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
            issuer.revoke_everything()
            assert_authorization_needed(host.call_tool("locked__echo", {"text": "hi"}, timeout=20))
    finally:
        stop(proc)


def test_the_default_store_is_the_keyring_when_one_is_usable_else_files_under_the_config_dir(tmp_path: Path) -> None:
    import keyring
    from keyring.backends import fail
    from keyrings.alt.file import PlaintextKeyring

    from smcp_sync.computer.config.oauth_store import KeyringTokenStore, default_oauth_dir, default_token_store

    assert default_oauth_dir({"XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/smcp_sync/oauth")
    assert default_oauth_dir({"XDG_CONFIG_HOME": "relative"}) == Path.home() / ".config" / "smcp_sync" / "oauth"
    before = keyring.get_keyring()
    try:
        keyring.set_keyring(fail.Keyring())
        assert isinstance(default_token_store(), FileTokenStore)
        backend = PlaintextKeyring()
        backend.file_path = str(tmp_path / "keyring.cfg")
        keyring.set_keyring(backend)
        store = default_token_store()
        assert isinstance(store, KeyringTokenStore)
        store.save("locked http://x/mcp/tokens", '{"token": 1}')
        assert store.load("locked http://x/mcp/tokens") == '{"token": 1}'
        store.delete("locked http://x/mcp/tokens")
        store.delete("locked http://x/mcp/tokens")  # nothing there: no error
        assert store.load("locked http://x/mcp/tokens") is None
    finally:
        keyring.set_keyring(before)


class Authorize:
    """``smcp-sync authorize locked --config FILE --no-browser`` as a child process, its
    stdout read line by line (the URL comes before the command ends)."""

    def __init__(
        self, tmp_path: Path, document: dict[str, Any], env: dict[str, str] | None = None, timeout: float = 20
    ) -> None:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps(document))
        environment = {
            **os.environ,
            **(env or {}),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",  # no keyring: the file store
        }
        command = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())"]
        self.proc = subprocess.Popen(
            [*command, "authorize", "locked", "--config", str(config), "--no-browser", "--timeout", str(timeout)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self._errors: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines.put), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self._errors.append), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, keep: Callable[[str], None]) -> None:
        for line in stream:
            keep(line)

    def finish(self) -> tuple[int, str, str]:
        """(exit code, all of stdout not yet taken, stderr), once the command ended (at
        most 30 s; killed past that)."""
        try:
            self.proc.wait(30)
        finally:
            self.close()
        for reader in self._readers:
            reader.join(5)
        return self.proc.returncode, "".join(iter_queue(self.lines)), "".join(self._errors)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for reader in self._readers:
            reader.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def iter_queue(lines: queue.Queue[str]) -> Iterator[str]:
    while True:
        try:
            yield lines.get_nowait()
        except queue.Empty:
            return


def test_smcp_sync_authorize_prints_the_url_waits_for_the_user_and_stores_the_tokens_for_a_computer(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    _, url = provider
    command = Authorize(tmp_path, {"servers": [http_config("locked", "streamable", url, oauth=OAUTH)]}, timeout=30)
    try:
        assert command.lines.get(timeout=30) == "To authorize MCP server 'locked', open this URL in a web browser:\n"
        Browser()(command.lines.get(timeout=5).strip())
    finally:
        code, out, err = command.finish()
    assert code == 0, err
    assert out == "MCP server 'locked' is authorized; its tokens are stored for the next runs\n"
    with computer(url, FileTokenStore(tmp_path / "config" / "smcp_sync" / "oauth")) as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"


def test_an_authorization_that_cannot_reach_the_server_raises_4007_naming_why(tmp_path: Path, no_leaks: None) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = http_config("locked", "streamable", f"http://127.0.0.1:{port}/mcp", oauth=OAUTH)
    with Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=FileTokenStore(tmp_path)) as host:
        host.start(timeout=5)
        with pytest.raises(OAuthAuthorizationError) as failed:
            host.authorize("locked", Browser(), timeout=10)
        assert failed.value.message == "authorization of MCP server 'locked' failed (ConnectError: All connection attempts failed)"


def test_smcp_sync_authorize_exits_2_for_a_server_not_in_the_config_and_1_when_the_user_never_comes_back(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], no_leaks: None
) -> None:
    from smcp_sync.cli import main

    _, url = provider
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([http_config("locked", "streamable", url, oauth=OAUTH)]))
    assert main(["authorize", "other", "--config", str(config)]) == 2
    assert capsys.readouterr().err == f"smcp-sync authorize: {config}: no MCP server 'other'\n"
    assert main(["authorize", "locked", "--config", str(config), "--no-browser", "--timeout", "1"]) == 1
    shown = capsys.readouterr()
    assert shown.out.startswith("To authorize MCP server 'locked', open this URL in a web browser:\nhttp://127.0.0.1:")
    assert shown.err.endswith("smcp-sync authorize: MCP server 'locked' was not authorized within 1s\n")


def test_an_authorization_waiting_for_the_user_is_cancelled_from_another_thread(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    _, url = provider
    shown: queue.Queue[str] = queue.Queue()
    outcome: queue.Queue[BaseException] = queue.Queue()

    def authorize(host: Computer) -> None:
        try:
            host.authorize("locked", shown.put, timeout=30)
        except BaseException as exc:
            outcome.put(exc)

    with computer(url, FileTokenStore(tmp_path)) as host:
        host.start()
        assert host.cancel_authorization("locked") is False  # nothing to cancel
        worker = threading.Thread(target=authorize, args=(host,))
        worker.start()
        redirect = dict(part.split("=", 1) for part in shown.get(timeout=20).split("?", 1)[1].split("&"))["redirect_uri"]
        assert host.cancel_authorization("locked") is True
        worker.join(10)
        error = outcome.get(timeout=1)
        assert isinstance(error, OAuthAuthorizationError) and error.code == ErrorCode.TOOL_AUTHORIZATION_FAILED
        assert error.message == "authorization of MCP server 'locked' was cancelled"
        with pytest.raises(urllib.error.URLError):  # the listener is closed
            urllib.request.urlopen(urllib.parse.unquote(redirect), timeout=5)


def test_smcp_sync_computer_refused_by_an_unauthorized_server_says_how_to_authorize_it(
    provider: tuple[AuthorizationServer, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_leaks: None,
) -> None:
    from smcp_sync.cli import main

    _, url = provider
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no tokens stored there
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([http_config("locked", "streamable", url, oauth=OAUTH)]))
    arguments = ["computer", "--config", str(config), "--url", "http://127.0.0.1:9", "--office", "o", "--name", "c"]
    assert main([*arguments, "--timeout", "10"]) == 1
    assert capsys.readouterr().err.endswith(
        f" (authorize them first: smcp-sync authorize locked --config {config})\n"
    )
