"""`${input:<id>}` placeholders in MCP server configurations, resolved through inputs.

Same rules as the official SDK's renderer, so its config files work unchanged: strings
anywhere in a config (not keys) are rendered; a string that is exactly one placeholder
takes the value as is (a number stays a number); inside a longer string the value is
inserted as text; unknown ids are left as text (with a warning).

A value comes from, in order: the cache (each input is resolved once; `set` replaces
it), the `values` the host gave, the input's `A2C_SMCP_<ID>` environment variable, what
`memory` remembers of an earlier answer (`input_sources`), the `ask` callback (how a
non-interactive host, or the CLI's prompt, supplies values; returning None means "no
answer"; `memory` keeps its answer), the input's `default`, and for `command` inputs
the command's standard output. The library itself never prompts.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
from typing import Any, Callable, Iterable, Mapping

from ...protocol.errors import BadRequestError
from ...protocol.models import CommandInput, MCPServerInput, PickStringInput, PromptStringInput
from .input_sources import InputMemory, check_env_names, env_var_name

log = logging.getLogger(__name__)

PLACEHOLDER = re.compile(r"\$\{input:([^}]+)\}")
#: Seconds a `command` input may run.
COMMAND_TIMEOUT = 30.0

AskInput = Callable[[MCPServerInput], Any]


def placeholders(data: Any) -> set[str]:
    """The input ids the placeholders of `data` name (strings anywhere, not keys)."""
    if isinstance(data, Mapping):
        return set().union(*(placeholders(value) for value in data.values()))
    if isinstance(data, (list, tuple)):
        return set().union(*(placeholders(value) for value in data))
    return set(PLACEHOLDER.findall(data)) if isinstance(data, str) else set()


class InputError(BadRequestError):
    """An input has no usable value; the message names the input and how to supply one."""


class InputResolver:
    def __init__(
        self,
        inputs: Iterable[MCPServerInput] = (),
        values: Mapping[str, Any] | None = None,
        ask: AskInput | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        memory: InputMemory | None = None,
    ) -> None:
        self._inputs = {item.id: item for item in inputs}
        check_env_names(self._inputs)
        self._given = dict(values or {})
        self._ask = ask
        self._environ = os.environ if environ is None else environ
        self._memory = memory
        self._cache: dict[str, Any] = {}
        self._lock = threading.RLock()
        unknown = sorted(set(self._given) - set(self._inputs))
        if unknown:
            log.warning("values given for undefined inputs %s are ignored unless an input defines them", unknown)

    @property
    def definitions(self) -> list[MCPServerInput]:
        return list(self._inputs.values())

    def is_secret(self, input_id: str) -> bool:
        item = self._inputs.get(input_id)
        return isinstance(item, PromptStringInput) and bool(item.password)

    def render(self, data: Any, *, secret_text: str | None = None) -> Any:
        """`data` with its placeholders replaced; with `secret_text`, password inputs
        render as that text instead of their value (for showing a config)."""
        if isinstance(data, Mapping):
            return {key: self.render(value, secret_text=secret_text) for key, value in data.items()}
        if isinstance(data, (list, tuple)):
            return [self.render(value, secret_text=secret_text) for value in data]
        if isinstance(data, str):
            return self._render_text(data, secret_text)
        return data

    def value(self, input_id: str) -> Any:
        """The value of a defined input (resolved once, then cached)."""
        with self._lock:
            if input_id in self._cache:
                return self._cache[input_id]
            item = self._inputs.get(input_id)
            if item is None:
                raise InputError(f"no input with id {input_id!r} is defined")
            value = self._resolve(item)
            self._cache[input_id] = value
            return value

    def set(self, input_id: str, value: Any) -> None:
        """Replace the value of a defined input (checked as any other value)."""
        with self._lock:
            item = self._inputs.get(input_id)
            if item is None:
                raise InputError(f"no input with id {input_id!r} is defined", details={"input": input_id})
            self._cache[input_id] = self._checked(item, value)

    def _render_text(self, text: str, secret_text: str | None) -> Any:
        whole = PLACEHOLDER.fullmatch(text)
        if whole:
            return self._substitute(whole, secret_text, as_text=False)
        return PLACEHOLDER.sub(lambda match: self._substitute(match, secret_text, as_text=True), text)

    def _substitute(self, match: re.Match[str], secret_text: str | None, *, as_text: bool) -> Any:
        input_id = match.group(1)
        if input_id not in self._inputs:
            log.warning("placeholder %s names no defined input; left as is", match.group(0))
            return match.group(0)
        if secret_text is not None and self.is_secret(input_id):
            return secret_text
        value = self.value(input_id)
        return str(value) if as_text else value

    def _resolve(self, item: MCPServerInput) -> Any:
        if item.id in self._given:
            return self._checked(item, self._given[item.id])
        from_environment = self._environ.get(env_var_name(item.id))
        if from_environment is not None:
            return self._checked(item, from_environment)
        remembered = self._memory.recall(item) if self._memory is not None else None
        if remembered is not None:
            return self._checked(item, remembered)
        if self._ask is not None:
            answer = self._ask(item)
            if answer is not None:
                checked = self._checked(item, answer)
                if self._memory is not None:
                    self._memory.remember(item, checked)
                return checked
        if isinstance(item, (PromptStringInput, PickStringInput)) and item.default is not None:
            return self._checked(item, item.default)
        if isinstance(item, CommandInput):
            return _run_command(item)
        raise InputError(
            f"input {item.id!r} ({item.description}) has no value: pass it in input_values, "
            f"set {env_var_name(item.id)} or give an input resolver",
            details={"input": item.id},
        )

    @staticmethod
    def _checked(item: MCPServerInput, value: Any) -> Any:
        if isinstance(item, PickStringInput) and item.options:
            allowed = [option_value for _, option_value in item.choices]
            if value not in allowed:
                raise InputError(
                    f"input {item.id!r} must be one of {allowed}, got {value!r}",
                    details={"input": item.id},
                )
        return value


def _run_command(item: CommandInput) -> str:
    """A `command` input's value: the command's stdout (run by the shell, like the
    official SDK; `args` are not used by it either)."""
    try:
        done = subprocess.run(
            item.command, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"command of input {item.id!r} did not finish within {COMMAND_TIMEOUT:g}s") from None
    if done.returncode != 0:
        raise InputError(
            f"command of input {item.id!r} exited with status {done.returncode}",
            details={"input": item.id},
        )
    return done.stdout.strip()
