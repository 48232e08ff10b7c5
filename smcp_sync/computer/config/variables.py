"""`${env:VAR}`, `${userHome}` and `${pathSeparator}` in MCP server configs, rendered as
a2c-smcp 0.4.2 renders them (VS Code's variables), so its config files work unchanged.

Strings anywhere in a config (not keys): ``${env:VAR}`` becomes the Computer's
environment variable VAR, or "" with a warning naming VAR when it is not set (as 0.4.2
does); ``${userHome}`` the user's home folder; ``${pathSeparator}`` `os.sep`.
``${input:…}`` is left to `inputs`; any other ``${…}`` is left as written, with a
warning naming it (0.4.2 leaves it silently). Rendered when the config is added.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Mapping

log = logging.getLogger(__name__)

_VARIABLE = re.compile(r"\$\{([^}]+)\}")


def render_variables(data: Any, environ: Mapping[str, str] | None = None) -> Any:
    """`data` with its variables replaced (see the module's docstring)."""
    source = os.environ if environ is None else environ
    if isinstance(data, Mapping):
        return {key: render_variables(value, source) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [render_variables(value, source) for value in data]
    if isinstance(data, str):
        return _VARIABLE.sub(lambda match: _value(match, source), data)
    return data


def _value(match: re.Match[str], environ: Mapping[str, str]) -> str:
    token = match.group(1)
    if token.startswith("env:"):
        name = token[len("env:") :]
        value = environ.get(name)
        if value is None:
            log.warning("environment variable %s is not set: ${env:%s} renders as an empty string", name, name)
            return ""
        return value
    if token == "userHome":
        return os.path.expanduser("~")
    if token == "pathSeparator":
        return os.sep
    if not token.startswith("input:"):
        log.warning("placeholder %s is not a variable smcp_sync knows; left as written", match.group(0))
    return match.group(0)
