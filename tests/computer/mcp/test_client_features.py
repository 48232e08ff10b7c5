"""The Computer as an MCP client that answers (docs/computer/mcp-client.md): a real MCP
server (tests/mcp_servers/client_features_server.py) asks for a form, a URL visit, a
sampled message and the roots while an Agent's tool call waits, through a real Server;
the tool's answer shows what the server received. Without callbacks: the SDK's standard
refusal, and nothing announced."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from office_parts import connected_computer, joined_agent, serving

from smcp_sync import SMCPServer
from smcp_sync.computer import (
    ClientFeatures,
    Computer,
    ConfigError,
    ElicitationAnswer,
    FormElicitation,
    Root,
    SampledMessage,
    SamplingRequest,
    UrlElicitation,
    allow_all,
)
from smcp_sync.protocol.errors import ErrorCode

from ..helpers import FAST, stdio_config, wait_until

pytestmark = pytest.mark.timeout(60)

SERVER = str(Path(__file__).parents[2] / "mcp_servers" / "client_features_server.py")
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def server(no_leaks_in_module: None) -> Iterator[SMCPServer]:
    """One Server for the module, its threads started (a request was routed) before the
    tests' own leak checks."""
    with serving() as started:
        with connected_computer("warm-up", [], started.url, "warm-up", timeout=TIMEOUT):
            with joined_agent("warm-up", started.url, "warm-up", timeout=TIMEOUT) as agent:
                agent.get_tools("warm-up", timeout=TIMEOUT)
        yield started


def ask(server: SMCPServer, features: ClientFeatures | None, tool: str, params: dict[str, Any], timeout: float = TIMEOUT) -> Any:
    """Call `tool` of the client_features server from an Agent, through a Computer with
    `features`; the tool's JSON answer."""
    office = f"office-{tool}-{threading.get_ident()}-{id(features)}"
    with connected_computer(
        "c", [stdio_config("asker", script=SERVER)], server.url, office, timeout=TIMEOUT, policy=FAST,
        client_features=features,
    ):
        with joined_agent("a", server.url, office, timeout=TIMEOUT) as agent:
            result = agent.call_tool("c", "asker__" + tool, params, timeout=timeout)
    assert not result.is_error, result.text
    return json.loads(result.text)


def test_a_form_elicitation_is_answered_by_the_host_with_the_schemas_defaults_offered(
    server: SMCPServer, no_leaks: None
) -> None:
    asked: list[FormElicitation] = []

    def elicit(request: Any) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer.accept({**request.defaults, "newsletter": True})

    answer = ask(server, ClientFeatures(elicit=elicit), "ask_form", {"message": "Who are you?"})
    assert answer == {"action": "accept", "content": {"name": "Ada", "age": 36, "newsletter": True}}
    [request] = asked
    assert isinstance(request, FormElicitation)
    assert (request.server, request.message) == ("asker", "Who are you?")
    assert request.defaults == {"name": "Ada", "age": 36}
    assert request.requested_schema["required"] == ["name"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_form_declined_or_cancelled_reaches_the_server_so(server: SMCPServer, action: str, no_leaks: None) -> None:
    features = ClientFeatures(elicit=lambda request: ElicitationAnswer(action))
    assert ask(server, features, "ask_form", {"message": "Who?"}) == {"action": action}


def test_a_url_elicitation_names_the_url_and_the_users_consent_goes_back(server: SMCPServer, no_leaks: None) -> None:
    asked: list[Any] = []

    def elicit(request: Any) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer.accept()

    answer = ask(server, ClientFeatures(elicit=elicit), "ask_url", {"url": "https://example.test/sign-in"})
    assert answer == {"action": "accept"}
    assert asked == [UrlElicitation("asker", "Sign in to continue", "https://example.test/sign-in", "elicit-1")]


def test_sampling_names_the_asking_server_and_returns_the_hosts_message(server: SMCPServer, no_leaks: None) -> None:
    asked: list[SamplingRequest] = []

    def sample(request: SamplingRequest) -> SampledMessage:
        asked.append(request)
        return SampledMessage(model="host-model-1", text=request.text.upper())

    answer = ask(server, ClientFeatures(sample=sample), "sample", {"prompt": "what is 2+2?"})
    assert answer == {"model": "host-model-1", "text": "WHAT IS 2+2?", "stopReason": "endTurn"}
    [request] = asked
    assert (request.server, request.system_prompt, request.max_tokens) == ("asker", "Answer briefly.", 50)
    assert request.messages == ({"role": "user", "content": {"type": "text", "text": "what is 2+2?"}},)


def test_roots_from_a_list_and_from_a_callable(server: SMCPServer, tmp_path: Path, no_leaks: None) -> None:
    listed = [Root(tmp_path.as_uri(), "work"), "file:///srv/shared"]
    assert ask(server, ClientFeatures(roots=listed), "list_roots", {}) == [
        {"uri": tmp_path.as_uri(), "name": "work"},
        {"uri": "file:///srv/shared"},
    ]
    calls: list[int] = []

    def roots() -> list[Root]:
        calls.append(1)
        return [Root("file:///home/user/project", "project")]

    assert ask(server, ClientFeatures(roots=roots), "list_roots", {}) == [
        {"uri": "file:///home/user/project", "name": "project"}
    ]
    assert calls == [1]


def test_set_roots_tells_the_running_servers_which_list_them_again(server: SMCPServer, no_leaks: None) -> None:
    office = "office-set-roots"
    features = ClientFeatures(roots=["file:///first"])
    with connected_computer(
        "c", [stdio_config("asker", script=SERVER)], server.url, office, timeout=TIMEOUT, policy=FAST,
        client_features=features,
    ) as computer:
        with joined_agent("a", server.url, office, timeout=TIMEOUT) as agent:

            def notices() -> Any:
                return json.loads(agent.call_tool("c", "asker__roots_notices", {}, timeout=TIMEOUT).text)

            assert notices() == {"notices": 0, "roots": [], "errors": []}
            computer.set_roots([Root("file:///second", "second")])
            seen = wait_until(lambda: (n := notices())["roots"] and n, timeout=10, what="the roots listed again")
            assert seen == {"notices": 1, "roots": [{"uri": "file:///second", "name": "second"}], "errors": []}


def test_without_callbacks_nothing_is_announced_and_the_sdk_refuses_as_ever(server: SMCPServer, no_leaks: None) -> None:
    assert ask(server, None, "capabilities", {}) == {}
    assert ask(server, None, "ask_form", {"message": "Who?"}) == {"code": -32600, "error": "Elicitation not supported"}
    assert ask(server, None, "sample", {"prompt": "hi"}) == {"code": -32600, "error": "Sampling not supported"}
    assert ask(server, None, "list_roots", {}) == {"code": -32600, "error": "List roots not supported"}


def test_each_capability_is_announced_only_with_its_callback(server: SMCPServer, no_leaks: None) -> None:
    announced = ask(server, ClientFeatures(roots=[]), "capabilities", {})
    assert announced == {"roots": {"listChanged": True}}
    announced = ask(server, ClientFeatures(elicit=lambda r: ElicitationAnswer.cancel()), "capabilities", {})
    assert announced == {"elicitation": {"form": {}, "url": {}}}
    announced = ask(server, ClientFeatures(sample=lambda r: SampledMessage("m", "t")), "capabilities", {})
    assert announced == {"sampling": {}}


def test_a_callback_that_fails_is_an_error_for_the_server_naming_no_value(server: SMCPServer, no_leaks: None) -> None:
    def sample(request: SamplingRequest) -> SampledMessage:
        raise RuntimeError("api key sk-secret-123 rejected")

    answer = ask(server, ClientFeatures(sample=sample), "sample", {"prompt": "hi"})
    assert answer == {"code": -32603, "error": "the client's sample callback failed"}


def test_an_unanswered_elicitation_is_cancelled_at_the_calls_deadline_and_the_call_still_answers(
    server: SMCPServer, no_leaks: None
) -> None:
    """The person never answers: the callback is abandoned when the Agent's call is due
    (not at the callback's own, longer timeout), and the call fails as a timeout."""
    release = threading.Event()
    asked: queue.Queue[Any] = queue.Queue()

    def elicit(request: Any) -> ElicitationAnswer:
        asked.put(request)
        release.wait(30)
        return ElicitationAnswer.accept({"name": "late"})

    office = "office-unanswered"
    try:
        with connected_computer(
            "c", [stdio_config("asker", script=SERVER)], server.url, office, timeout=TIMEOUT, policy=FAST,
            client_features=ClientFeatures(elicit=elicit, timeout=600),
        ):
            with joined_agent("a", server.url, office, timeout=TIMEOUT) as agent:
                result = agent.call_tool("c", "asker__ask_form", {"message": "Who?"}, timeout=2)
                assert result.is_error and result.error_code == ErrorCode.TOOL_TIMEOUT
                assert asked.get(timeout=1).message == "Who?"
    finally:
        release.set()


def test_bad_values_are_refused_when_given() -> None:
    with pytest.raises(ValueError, match="a root's uri is a file:// URI"):
        Root("https://example.test/")
    with pytest.raises(ValueError, match="'accept', 'decline' or 'cancel', not 'ok'"):
        ElicitationAnswer("ok")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="either text or content"):
        SampledMessage("m")
    with pytest.raises(ValueError, match="timeout must be positive"):
        ClientFeatures(timeout=0)
    with pytest.raises(ValueError, match="a root's uri is a file:// URI"):
        ClientFeatures(roots=["/home/user"])
    with pytest.raises(TypeError, match="not one string"):
        ClientFeatures(roots="file:///home/user")


def test_roots_from_the_config_document(no_leaks: None) -> None:
    document = {"servers": [stdio_config("asker", script=SERVER)], "roots": ["file:///srv/a", {"uri": "file:///srv/b", "name": "b"}]}
    with Computer("c", config=document, policy=FAST, confirm=allow_all) as computer:
        answer = computer.call_tool("asker__list_roots", {}, timeout=TIMEOUT)
    assert json.loads(answer.text) == [{"uri": "file:///srv/a"}, {"uri": "file:///srv/b", "name": "b"}]
    with pytest.raises(ConfigError) as refused:
        Computer("c", config={"servers": [], "roots": ["/srv/a"]})
    assert refused.value.details == {"field": "roots[0]"}


def test_outside_a_call_a_callback_is_bounded_by_its_own_timeout(server: SMCPServer, no_leaks: None) -> None:
    """The server lists the roots again on a notice, with no call in flight: the callable
    that never answers is abandoned after ClientFeatures.timeout, the server told so."""
    release = threading.Event()
    asked = threading.Event()

    def roots() -> list[str]:
        asked.set()
        release.wait(30)
        return ["file:///late"]

    office = "office-own-timeout"
    try:
        with connected_computer(
            "c", [stdio_config("asker", script=SERVER)], server.url, office, timeout=TIMEOUT, policy=FAST,
            client_features=ClientFeatures(roots=roots, timeout=1),
        ) as computer:
            with joined_agent("a", server.url, office, timeout=TIMEOUT) as agent:
                computer.set_roots(roots)
                assert asked.wait(10)

                def errors() -> Any:
                    return json.loads(agent.call_tool("c", "asker__roots_notices", {}, timeout=TIMEOUT).text)["errors"]

                # well before the callable would answer (30 s): the server heard the refusal
                failed = wait_until(errors, timeout=15, what="the server told the roots did not come")
                assert failed == ["the client's roots callback did not answer in time"]
    finally:
        release.set()
