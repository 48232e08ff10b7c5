"""The value objects `Computer` takes, one per concern (issue 35): where `${input:id}`
values come from (`Inputs`), the Skills (`SkillsOptions`), blobs and uploads
(`BlobOptions`), and how the context channels announce and order (`ChannelOptions`).
Plain data, each checked once when built, so a bad value is refused before any thread
or MCP server starts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import attrs

from ..blobs import DEFAULT_HANDLE_TTL
from ..blobs.uploads import DEFAULT_UPLOAD_IDLE_TIMEOUT, DEFAULT_UPLOAD_MAX_BYTES
from ..protocol.codec import from_wire
from ..protocol.models import MCPServerInput
from .channels.skills import DEFAULT_INLINE_BUDGET, DEFAULT_MAX_RESOURCE_SIZE
from .channels.watch import DEFAULT_DEBOUNCE
from .config.input_sources import InputMemory
from .config.inputs import AskInput
from .tools.history import DEFAULT_HISTORY_SIZE


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{attribute.name} must be a number > 0, got {value!r}")


def _not_negative(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{attribute.name} must be a number >= 0, got {value!r}")


def _count(instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be an integer >= 0, got {value!r}")


def _definitions(items: Iterable[MCPServerInput | Mapping[str, Any]]) -> tuple[MCPServerInput, ...]:
    return tuple(from_wire(MCPServerInput, item) if isinstance(item, Mapping) else item for item in items)


def _folder(value: str | os.PathLike[str] | None) -> Path | None:
    return None if value is None else Path(value).expanduser()


@attrs.frozen
class Inputs:
    """How `${input:id}` placeholders get their values: `definitions` (models or dicts in
    the official SDK's format; a config file's come first), `values` given up front,
    `resolver` asked for the others, `memory` where its answers are kept for the next run
    (None: nowhere). `A2C_SMCP_<ID>` environment variables are read too."""

    definitions: tuple[MCPServerInput, ...] = attrs.field(default=(), converter=_definitions)
    values: Mapping[str, Any] | None = None
    resolver: AskInput | None = None
    memory: InputMemory | None = None


@attrs.frozen
class SkillsOptions:
    """`user_folder`: the user's SKILL packages (``<folder>/<skill>/SKILL.md``; None:
    none); `home`: where packages MCP servers serve are written (None: a private
    temporary folder, removed by `close()`); `max_size`: the most bytes one skill file may
    have to be served; `inline_budget`: the most bytes of text `client:get_skill` answers
    inline (a larger or binary file is answered with a blob handle)."""

    user_folder: Path | None = attrs.field(default=None, converter=_folder)
    home: Path | None = attrs.field(default=None, converter=_folder)
    max_size: int = attrs.field(default=DEFAULT_MAX_RESOURCE_SIZE, validator=_count)
    inline_budget: int = attrs.field(default=DEFAULT_INLINE_BUDGET, validator=_count)


@attrs.frozen
class BlobOptions:
    """`handle_ttl`: seconds a blob handle (large tool results, skill files) stays
    readable; `landing_folder`: where `client:put_blob` uploads land (None: uploads
    refused with 4019), each at most `upload_max_bytes`, dropped when no chunk came for
    `upload_idle_timeout` seconds."""

    handle_ttl: float = attrs.field(default=DEFAULT_HANDLE_TTL, validator=_positive)
    landing_folder: Path | None = attrs.field(default=None, converter=_folder)
    upload_max_bytes: int = attrs.field(default=DEFAULT_UPLOAD_MAX_BYTES, validator=_positive)
    upload_idle_timeout: float = attrs.field(default=DEFAULT_UPLOAD_IDLE_TIMEOUT, validator=_positive)


@attrs.frozen
class ChannelOptions:
    """`update_debounce`: seconds of quiet before a Desktop / Finder / Skills change is
    announced (a burst is one announcement); `history_size`: the finished tool calls
    remembered, whose order orders the Desktop and the Finder."""

    update_debounce: float = attrs.field(default=DEFAULT_DEBOUNCE, validator=_not_negative)
    history_size: int = attrs.field(default=DEFAULT_HISTORY_SIZE, validator=_count)
