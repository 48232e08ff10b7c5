"""What `smcp-sync computer` answers on its terminal (docs/computer/mcp-client.md): an MCP
server's elicitation (each field of a form asked in turn, its default offered, Enter
keeps it, then sent or declined; a URL shown and the user asked whether they go there;
end of input, Ctrl-D, cancels), and the URL to open when a server asks for a wider
OAuth scope during a call. Without a terminal the command gives neither callback, so
its MCP servers are told it cannot elicit, and such a call is 4007.

One question at a time: elicitations from several servers wait for the terminal in turn.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ..computer import ElicitationAnswer, FormElicitation
from ..computer.mcp.client_features import Elicitation

#: Reads one line after showing its prompt (`input`).
Ask = Callable[[str], str]

_terminal = threading.Lock()
_MAX_TRIES = 3


def answer_on_terminal(request: Elicitation, ask: Ask = input) -> ElicitationAnswer:
    """Ask the user `request` through `ask` (the terminal)."""
    with _terminal:
        try:
            if isinstance(request, FormElicitation):
                return _fill_in(request, ask)
            print(f"MCP server {request.server!r}: {request.message}\n  {request.url}", flush=True)
            going = ask("Will you open it? [y/N]: ").strip().lower() in ("y", "yes")
            return ElicitationAnswer.accept() if going else ElicitationAnswer.decline()
        except EOFError:
            return ElicitationAnswer.cancel()


def show_authorization_url(url: str) -> None:
    """`ClientFeatures.open_url`: the URL of a scope step-up, for the user to open (the
    redirect comes back to the Computer's loopback listener)."""
    with _terminal:
        print(f"An MCP server asks for a wider authorization; open this URL in a web browser:\n{url}", flush=True)


def _fill_in(request: FormElicitation, ask: Ask) -> ElicitationAnswer:
    print(f"MCP server {request.server!r} asks: {request.message}", flush=True)
    properties = request.requested_schema.get("properties")
    required = set(request.requested_schema.get("required") or ())
    content: dict[str, Any] = {}
    for name, field in (properties if isinstance(properties, dict) else {}).items():
        value = _field_value(name, field if isinstance(field, dict) else {}, name in required, ask)
        if value is not None:
            content[name] = value
    if ask("Send these answers? [Y/n]: ").strip().lower() in ("n", "no"):
        return ElicitationAnswer.decline()
    return ElicitationAnswer.accept(content)


def _field_value(name: str, field: dict[str, Any], required: bool, ask: Ask) -> Any:
    """The user's value for one field (its default on Enter; None: left empty)."""
    kind = field.get("type", "string")
    choices = field.get("enum")
    label = field.get("title") or name
    about = f" - {field['description']}" if field.get("description") else ""
    if isinstance(choices, list):
        for number, choice in enumerate(choices, 1):
            print(f"  {number}. {choice}", flush=True)
    default = field.get("default")
    shown = f" [{_shown(default)}]" if default is not None else ""
    for _ in range(_MAX_TRIES):
        text = ask(f"{label}{about} ({'choose a number' if isinstance(choices, list) else kind}){shown}: ").strip()
        if not text:
            if default is not None or not required:
                return default
            print(f"  {label} is required", flush=True)
            continue
        try:
            return _parsed(text, kind, choices)
        except ValueError as exc:
            print(f"  {exc}", flush=True)
    raise EOFError  # no valid answer: the form is cancelled


def _parsed(text: str, kind: str, choices: Any) -> Any:
    if isinstance(choices, list):
        if text.isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1]
        raise ValueError(f"a number from 1 to {len(choices)}")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError("y or n")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("a whole number") from None
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError("a number") from None
    return text


def _shown(default: Any) -> str:
    if isinstance(default, bool):
        return "y" if default else "n"
    return str(default)
