"""How the documents server reports Finder errors over MCP, so a Computer can map them to
the SMCP codes 4201–4204 (spec/error-handling.md).

MCP has no field for an SMCP code, so this is the convention (the Computer relies on it):

* The JSON-RPC error of ``resources/read``, ``resources/subscribe`` or
  ``completion/complete`` has

  - ``code``: ``-32002`` (MCP "resource not found") for 4201 unknown document, 4202 page
    out of range and 4203 unknown element; ``-32602`` (invalid params) for 4204 invalid
    ``dpe://`` URI;
  - ``message``: ``"[42xx] "`` followed by a sentence naming the offending value, e.g.
    ``"[4202] page 12 is out of range: document 'q1-report-3fa2b1' has 6 pages (0-5)"``
    (the same shape as `str(SMCPError)`);
  - ``data``: ``{"smcp_code": 42xx, "details": {...}}`` with the spec's details
    (``doc_ref``, ``page_index``/``page_count``, ``element_id``, ``uri``); ``details``
    is left out when empty and never carries host paths.

* Read ``data["smcp_code"]`` first; a peer that drops ``data`` still has the ``[42xx]``
  prefix of the message. Other MCP errors of these servers carry no ``smcp_code``. Do not
  map by the JSON-RPC code alone: MCP's 2026-07-28 revision reports unknown resources
  as -32602 too.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError

from .notifying_server import RESOURCE_NOT_FOUND
from smcp_sync.protocol.errors import ErrorCode, SMCPError


def as_mcp_error(error: SMCPError) -> MCPError:
    """`error` (one of 4201–4204) in the convention above."""
    code = types.INVALID_PARAMS if error.code == ErrorCode.INVALID_DPE_URI else RESOURCE_NOT_FOUND
    data: dict[str, Any] = {"smcp_code": error.code}
    if error.details:
        data["details"] = error.details
    return MCPError(code=code, message=str(error), data=data)


def document_not_found(doc_ref: str) -> SMCPError:
    return SMCPError.for_code(
        ErrorCode.DOCUMENT_NOT_FOUND, f"document {doc_ref!r} not found", {"doc_ref": doc_ref}
    )


def page_out_of_range(doc_ref: str, page_index: int, page_count: int) -> SMCPError:
    return SMCPError.for_code(
        ErrorCode.PAGE_OUT_OF_RANGE,
        f"page {page_index} is out of range: document {doc_ref!r} has {page_count} pages (0-{page_count - 1})",
        {"doc_ref": doc_ref, "page_index": page_index, "page_count": page_count},
    )


def element_not_found(doc_ref: str, element_id: str) -> SMCPError:
    return SMCPError.for_code(
        ErrorCode.ELEMENT_NOT_FOUND,
        f"element {element_id!r} not found in document {doc_ref!r}",
        {"doc_ref": doc_ref, "element_id": element_id},
    )
