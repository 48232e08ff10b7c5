"""SKILL channel structures (spec-0.3/data-structures.md "SKILL 相关结构", skill.md §6)."""

from __future__ import annotations

from typing import Any

from ._fields import wire_model

#: What `client:get_skill` reads when the request names no `rel_path`.
DEFAULT_SKILL_FILE = "SKILL.md"


@wire_model
class A2CSkillRef:
    """One skill of a Computer. `name` is opaque to Agents (compare it, never parse it);
    `source` says where it comes from (``mcp:<bundle_id>`` / ``user`` / ...)."""

    name: str
    source: str
    path: str
    description: str
    uri: str | None = None
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: list[str] | None = None
    tags: list[str] | None = None
    skill_metadata: dict[str, Any] | None = None
    version: str | None = None


@wire_model
class GetSkillsReq:
    agent: str
    req_id: str
    computer: str


@wire_model
class GetSkillsRet:
    skills: list[A2CSkillRef]
    req_id: str


@wire_model
class GetSkillReq:
    agent: str
    req_id: str
    computer: str
    name: str
    rel_path: str | None = None


@wire_model
class GetSkillRet:
    """One resource of a skill: `body` (text within the inline budget) or `blob_handle`
    (fetch it with `client:get_blob`), exactly one of them."""

    name: str
    rel_path: str
    mime_type: str
    total_size: int
    sha256: str
    req_id: str
    body: str | None = None
    blob_handle: str | None = None
