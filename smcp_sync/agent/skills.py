"""A Computer's SKILL packages (spec-0.3/skill.md): the list, and one file of a package.

`get_skills` keeps its answer in the Agent's `skill_cache` (kept current by
`notify:update_skills`, like the tool cache by `notify:update_tool_list`). `get_skill`
checks an inline body against the sha256 the Computer sent; a file answered with a blob
handle (binary, or text over the Computer's inline budget) is fetched with
`Agent.get_blob`, which checks it the same way; a text one is fetched by itself unless
the Agent or the call opts out (`rehydrate`).
"""

from __future__ import annotations

import hashlib

from .transport import AgentTransport
from ..protocol import events
from ..protocol.errors import InternalError
from ..protocol.models import A2CSkillRef, GetSkillReq, GetSkillRet, GetSkillsReq, GetSkillsRet
from .cache import ComputerCache
from .rehydrate import Rehydration
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, ask, new_req_id


class SkillMethods:
    """The Agent's skill requests (a mixin: needs the Agent's `_connection`, `name` and
    `skill_cache`)."""

    _connection: AgentTransport
    name: str
    skill_cache: ComputerCache[tuple[A2CSkillRef, ...]]
    _rehydration: Rehydration

    def get_skills(self, computer: str, timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT) -> list[A2CSkillRef]:
        """The skills `computer` offers now (also stored in `skill_cache`)."""
        ticket = self.skill_cache.ticket()
        request = GetSkillsReq(agent=self.name, req_id=new_req_id(), computer=computer)
        skills = ask(self._connection, events.GET_SKILLS, request, GetSkillsRet, timeout).skills
        self.skill_cache.store(computer, tuple(skills), ticket)
        return skills

    def get_skill(
        self,
        computer: str,
        name: str,
        rel_path: str | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
        *,
        rehydrate: bool | None = None,
    ) -> GetSkillRet:
        """File `rel_path` (default: SKILL.md without its front matter) of skill `name`:
        `body` for text (sha256 checked; text over the Computer's inline budget fetched
        unless `rehydrate`, None: the Agent's setting, is false), otherwise a
        `blob_handle` for `get_blob`. 4016: `name` is malformed; 4014: no such skill;
        4017: `rel_path` leaves the package, is forbidden, missing or too large."""
        request = GetSkillReq(agent=self.name, req_id=new_req_id(), computer=computer, name=name, rel_path=rel_path)
        answer = ask(self._connection, events.GET_SKILL, request, GetSkillRet, timeout)
        if (answer.body is None) == (answer.blob_handle is None):
            raise InternalError(
                "the answer to client:get_skill must carry exactly one of body and blob_handle",
                details={"event": events.GET_SKILL},
            )
        if answer.body is not None and hashlib.sha256(answer.body.encode("utf-8")).hexdigest() != answer.sha256:
            raise InternalError(
                f"the body of skill {name!r} does not match its sha256", details={"event": events.GET_SKILL}
            )
        if self._rehydration.wanted(rehydrate):
            return self._rehydration.skill(computer, answer, timeout)
        return answer
