"""`${input:id}` placeholders: the official SDK's rendering rules and where values come from."""

from __future__ import annotations

import sys

import pytest

from smcp_sync.computer import InputError
from smcp_sync.computer.config.inputs import InputResolver
from smcp_sync.protocol import CommandInput, PickStringInput, PromptStringInput, from_wire

pytestmark = pytest.mark.timeout(20)

TOKEN = PromptStringInput(id="token", description="API token", password=True)
PORT = PromptStringInput(id="port", description="Port")
REGION = PickStringInput(id="region", description="Region", options=["eu", "us"], default="eu")


def test_a_whole_string_placeholder_keeps_the_values_type_and_embedded_ones_become_text() -> None:
    inputs = InputResolver([PORT, REGION], values={"port": 8080})
    rendered = inputs.render({"url": "http://h:${input:port}/${input:region}", "port": "${input:port}", "n": 3})
    assert rendered == {"url": "http://h:8080/eu", "port": 8080, "n": 3}


def test_nested_lists_and_dicts_are_rendered_but_keys_are_not() -> None:
    inputs = InputResolver([REGION])
    rendered = inputs.render({"args": ["--region", "${input:region}"], "${input:region}": {"deep": ["${input:region}"]}})
    assert rendered == {"args": ["--region", "eu"], "${input:region}": {"deep": ["eu"]}}


def test_unknown_ids_are_left_as_text() -> None:
    inputs = InputResolver([REGION])
    assert inputs.render("${input:nope} and ${input:region}") == "${input:nope} and eu"
    assert inputs.render("${input:nope}") == "${input:nope}"


def test_values_are_resolved_once_and_cached() -> None:
    asked: list[str] = []

    def ask(item):
        asked.append(item.id)
        return f"value-of-{item.id}"

    inputs = InputResolver([TOKEN, PORT], ask=ask)
    assert inputs.render(["${input:token}", "${input:token}", "${input:port}"]) == [
        "value-of-token", "value-of-token", "value-of-port",
    ]
    assert inputs.value("token") == "value-of-token"
    assert asked == ["token", "port"]


def test_order_given_values_then_resolver_then_default() -> None:
    inputs = InputResolver([REGION, PORT, TOKEN], values={"port": "1"}, ask=lambda item: None if item.id == "region" else "asked")
    assert (inputs.value("port"), inputs.value("region"), inputs.value("token")) == ("1", "eu", "asked")


def test_an_input_without_any_value_is_a_clear_error() -> None:
    inputs = InputResolver([TOKEN])
    with pytest.raises(InputError) as caught:
        inputs.render({"env": {"TOKEN": "${input:token}"}})
    assert caught.value.code == 400
    assert "'token' (API token) has no value" in caught.value.message


def test_a_pick_string_value_must_be_one_of_its_options() -> None:
    with pytest.raises(InputError, match=r"'region' must be one of \['eu', 'us'\], got 'mars'"):
        InputResolver([REGION], values={"region": "mars"}).value("region")


def test_a_command_input_takes_the_commands_output() -> None:
    command = CommandInput(id="who", description="Who", command=f"{sys.executable} -c \"print('  alice  ')\"")
    assert InputResolver([command]).render("user=${input:who}") == "user=alice"
    failing = CommandInput(id="bad", description="Bad", command=f"{sys.executable} -c \"raise SystemExit(3)\"")
    with pytest.raises(InputError, match="exited with status 3"):
        InputResolver([failing]).value("bad")


def test_secret_text_hides_password_inputs_only() -> None:
    inputs = InputResolver([TOKEN, REGION], values={"token": "s3cr3t"})
    shown = inputs.render({"a": "Bearer ${input:token}", "b": "${input:region}"}, secret_text="<redacted>")
    assert shown == {"a": "Bearer <redacted>", "b": "eu"}


def test_inputs_load_from_the_official_format() -> None:
    item = from_wire(PromptStringInput, {"type": "promptString", "id": "k", "description": "Key", "password": True})
    assert InputResolver([item]).is_secret("k") and not InputResolver([PORT]).is_secret("port")
