"""What `client:get_config` may show of the configuration: no secrets (spec/security.md).

* env values and header values are replaced by `REDACTED` (their keys stay, so an
  agent can see *what* is configured);
* the config is shown as written, `${input:...}` placeholders included, so values typed
  at a prompt never leave the machine; only when a placeholder stands where the schema
  needs a non-string value is it rendered, and then password inputs show `REDACTED`;
* a password input's `default` is `REDACTED`;
* credentials written inline are `REDACTED` too (`protocol.redaction`, the one
  redaction every role uses): a URL's user info and the values of its secret-looking
  query keys, in `url` and in stdio `args`, and in `args` the value after a
  secret-looking flag (``--token X``, ``--api-key=X``).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...protocol.codec import from_wire
from ...protocol.errors import BadRequestError
from ...protocol.models import MCPServerConfig, MCPServerInput, PromptStringInput, StdioServerConfig
from ...protocol.models._fields import evolve
from ...protocol.redaction import REDACTED, redact_args, redact_url
from .inputs import InputResolver



def public_server_config(raw: Mapping[str, Any], inputs: InputResolver) -> MCPServerConfig | None:
    """`raw` fit to show, or None when it cannot be shown without its secrets."""
    for shown in (lambda: raw, lambda: inputs.render(raw, secret_text=REDACTED)):
        try:
            config: MCPServerConfig = from_wire(MCPServerConfig, shown())
        except BadRequestError:
            continue
        return _without_secrets(config)
    return None


def public_input(item: MCPServerInput) -> MCPServerInput:
    if isinstance(item, PromptStringInput) and item.password and item.default is not None:
        return evolve(item, default=REDACTED)
    return item


def _without_secrets(config: MCPServerConfig) -> MCPServerConfig:
    if isinstance(config, StdioServerConfig):
        stdio = config.server_parameters
        args = redact_args(stdio.args)
        return evolve(config, server_parameters=evolve(stdio, env=_masked(stdio.env), args=args))
    remote = config.server_parameters
    url = redact_url(remote.url)
    return evolve(config, server_parameters=evolve(remote, headers=_masked(remote.headers), url=url))


def _masked(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if values is None else {key: REDACTED for key in values}
