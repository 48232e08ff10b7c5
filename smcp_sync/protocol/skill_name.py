"""SKILL names (spec-0.3/skill.md §1): the lexer every `client:get_skill` name passes
before the Skill Registry is consulted, and how the Computer composes names.

Three shapes, told apart by the number of ``:``-separated segments: ``<skill>`` (user),
``<plugin>:<skill>`` (marketplace), ``mcp:<bundle_id>:<skill>`` (an MCP server). A
skill or plugin segment is strict kebab-case (1–64 of ``[a-z0-9-]``, no leading,
trailing or doubled ``-``); the server segment is a bundle_id.
"""

from __future__ import annotations

import re

from .bundle_id import InvalidBundleId, check_bundle_id
from .errors import ErrorCode, SkillError

_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MAX_SEGMENT = 64
MCP_PREFIX = "mcp"


def is_skill_segment(segment: str) -> bool:
    """Whether `segment` is a valid skill (or plugin) segment: strict kebab-case."""
    return len(segment) <= _MAX_SEGMENT and _KEBAB.fullmatch(segment) is not None


def check_skill_name(name: object) -> str:
    """`name` if the lexer accepts it; otherwise 4016 with ``details.name`` (cut short)."""
    if isinstance(name, str) and _lexes(name):
        return name
    shown = name[:200] if isinstance(name, str) else repr(name)[:200]
    raise SkillError("Invalid skill name format", code=ErrorCode.SKILL_NAME_INVALID, details={"name": shown})


def mcp_skill_name(bundle_id: str, skill: str) -> str:
    """``mcp:<bundle_id>:<skill>``: the name of an MCP server's skill."""
    return f"{MCP_PREFIX}:{bundle_id}:{skill}"


def _lexes(name: str) -> bool:
    segments = name.split(":")
    if len(segments) == 3:
        prefix, server, skill = segments
        return prefix == MCP_PREFIX and _is_bundle_id(server) and is_skill_segment(skill)
    return len(segments) in (1, 2) and all(is_skill_segment(segment) for segment in segments)


def _is_bundle_id(segment: str) -> bool:
    try:
        check_bundle_id(segment)
    except InvalidBundleId:
        return False
    return True
