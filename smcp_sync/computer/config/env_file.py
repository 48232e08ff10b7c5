"""`envFile`: ``KEY=VALUE`` lines loaded into a stdio MCP server's environment at spawn.

The file is read as a2c-smcp 0.4.2 reads it (VS Code's format): blank lines and ``#``
comments skipped, an ``export `` prefix tolerated, one pair of matching quotes around a
value removed, no variable expansion, a line without ``=`` skipped with a warning. The
explicit ``env`` of the config wins over the file. Unlike 0.4.2 (which warns and spawns
without it), a missing or unreadable file is a configuration error: the server would
otherwise start without the credentials the file was meant to give it.
"""

from __future__ import annotations

import logging
import os
from typing import Mapping

from ...protocol.errors import BadRequestError
from ...protocol.models import MCPServerConfig, StdioServerConfig

log = logging.getLogger(__name__)

_QUOTES = ("'", '"')


class EnvFileError(BadRequestError):
    """An `envFile` that cannot be read; the message names the server and the path."""


def read_env_file(path: str, server: str) -> dict[str, str]:
    """The variables of `path` (relative to the working directory, as in 0.4.2)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise EnvFileError(
            f"MCP server {server!r}: cannot read its envFile {path!r}: {exc.strerror}",
            details={"field": "envFile", "mcp_server": server},
        ) from None
    return parse_env_lines(text, path)


def parse_env_lines(text: str, where: str) -> dict[str, str]:
    variables: dict[str, str] = {}
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, sep, value = line.partition("=")
        if not sep:
            log.warning("envFile %s line %d has no '=': skipped", where, number)
            continue
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in _QUOTES:
            value = value[1:-1]
        if key:
            variables[key] = value
    return variables


def spawn_environment(env: Mapping[str, str] | None, env_file: str | None, server: str) -> dict[str, str] | None:
    """The `env` a stdio server is spawned with: the file's variables under the explicit
    ones (None, as configured, when there is neither)."""
    if not env_file:
        return dict(env) if env is not None else None
    return {**read_env_file(os.fspath(env_file), server), **(env or {})}


def check_env_file(config: MCPServerConfig) -> None:
    """Refuse a stdio config whose envFile cannot be read now (it is read again at each
    spawn; a disabled server is never spawned); an envFile on another transport has no
    process to go to (warned, as in 0.4.2)."""
    if not config.env_file or config.disabled:
        return
    server = config.bundle_id or config.name
    if isinstance(config, StdioServerConfig):
        read_env_file(config.env_file, server)
    else:
        log.warning("MCP server %r: envFile applies to stdio servers only; ignored on a %s server", server, config.type)
