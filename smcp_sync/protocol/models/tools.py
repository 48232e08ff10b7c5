"""Tool structures: SMCPTool with its meta rules, tool-call request and result."""

from __future__ import annotations

import html
import json
from typing import Any

from ..codec import converter, from_wire
from ._display import first_line, html_table, markdown_table, named, shorten
from ._fields import as_dict, empty_list, field, fields_of, wire_model
from .content import ContentBlock, TextContent

#: Key of `SMCPTool.meta` holding the A2C `ToolMeta` as a JSON *string* (spec rule).
A2C_TOOL_META = "a2c_tool_meta"
#: Key of `SMCPTool.meta` holding the MCP tool annotations as a JSON string.
MCP_TOOL_ANNOTATION = "MCP_TOOL_ANNOTATION"


@wire_model
class ToolMeta:
    auto_apply: bool | None = None
    alias: str | None = None
    tags: list[str] | None = None
    ret_object_mapper: dict[str, Any] | None = None

    def to_json(self) -> str:
        """The `a2c_tool_meta` string: every key present, nulls included (as the spec shows)."""
        return json.dumps(as_dict(self), ensure_ascii=False)

    def merged_over(self, base: ToolMeta | None) -> ToolMeta:
        """This meta with unset fields taken from `base` (tool_meta over default_tool_meta)."""
        if base is None:
            return self
        values = {a.name: getattr(self, a.name) for a in fields_of(ToolMeta)}
        return ToolMeta(**{k: v if v is not None else getattr(base, k) for k, v in values.items()})


@wire_model
class SMCPTool:
    #: The exposed name, ``{bundle_id}__{alias or tool}``: opaque, call the tool by it.
    name: str
    description: str
    params_schema: dict[str, Any]
    return_schema: dict[str, Any] | None = field(default=None, keep_none=True)
    meta: dict[str, Any] | None = None
    #: The MCP server it belongs to (None from 0.1.x Computers, which have no bundle_id).
    bundle_id: str | None = None

    @property
    def tool_meta(self) -> ToolMeta | None:
        """The parsed `a2c_tool_meta` (None when absent or not valid JSON)."""
        raw = (self.meta or {}).get(A2C_TOOL_META)
        if not isinstance(raw, str):
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        try:
            return from_wire(ToolMeta, data)
        except Exception:
            return None


@wire_model
class ToolCallReq:
    agent: str
    req_id: str
    computer: str
    tool_name: str
    params: dict[str, Any]
    timeout: float


@wire_model
class GetToolsReq:
    agent: str
    req_id: str
    computer: str


@wire_model
class GetToolsRet:
    tools: list[SMCPTool]
    req_id: str


@wire_model
class CallToolResult:
    """The MCP result of a tool call; `meta` carries SMCP markers (error_code, timeout...)."""

    content: list[ContentBlock] = empty_list()
    is_error: bool = field(default=False, wire="isError")
    structured_content: dict[str, Any] | None = field(default=None, wire="structuredContent")
    meta: dict[str, Any] | None = field(default=None, aliases=("_meta",))

    @property
    def text(self) -> str:
        """All text contents joined by newlines (what a person usually wants to see)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))

    @property
    def error_code(self) -> int | None:
        code = (self.meta or {}).get("error_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None

    def __repr__(self) -> str:
        code = f", error_code={self.error_code}" if self.error_code is not None else ""
        return f"CallToolResult(text={shorten(self.text, 80)!r}, is_error={self.is_error}{code})"

    def _repr_html_(self) -> str:
        code = f" [{self.error_code}]" if self.error_code is not None else ""
        status = f"<strong>tool error{code}</strong>" if self.is_error else ""
        shown = [html.escape(self.text)] if self.text else []
        shown += [f"[{html.escape(block.type)} content]" for block in self.content if not isinstance(block, TextContent)]
        if self.structured_content is not None and not self.text:
            shown.append(html.escape(json.dumps(self.structured_content, ensure_ascii=False, indent=2)))
        return status + "<pre>" + "\n".join(shown) + "</pre>"

    @classmethod
    def failure(cls, code: int, message: str, **markers: Any) -> CallToolResult:
        """An `isError` result for failures the Computer detects (docs/ARCHITECTURE.md, Wire decisions)."""
        return cls(content=[TextContent(text=message)], is_error=True, meta={"error_code": int(code), **markers})


class ToolList(list[SMCPTool]):
    """`Agent.get_tools`' answer: a list of `SMCPTool`, shown as a table."""

    def __repr__(self) -> str:
        return f"ToolList({len(self)} tools: {named(tool.name for tool in self)})"

    def _rows(self) -> list[tuple[Any, ...]]:
        return [(tool.name, tool.bundle_id, first_line(tool.description)) for tool in self]

    def _repr_html_(self) -> str:
        return html_table(("name", "MCP server", "description"), self._rows(), f"{len(self)} tools")

    def _repr_markdown_(self) -> str:
        return markdown_table(("name", "MCP server", "description"), self._rows(), f"{len(self)} tools")


# A list on the wire.
converter.register_unstructure_hook(ToolList, lambda value: [converter.unstructure(v) for v in value])
