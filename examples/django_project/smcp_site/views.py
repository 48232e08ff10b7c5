"""The one view: call a tool on a Computer of the office, through the shared Agent."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from smcp_sync import BadRequestError, SMCPError, to_wire

from .smcp import shared_agent

TOOL_TIMEOUT = 30.0


@csrf_exempt  # a JSON API for programs, not a form
@require_POST
def call_tool(request: HttpRequest, computer: str, tool_name: str) -> JsonResponse:
    """Call `tool_name` on `computer` (in the Agent's office) with the JSON body as its
    arguments; answer the MCP CallToolResult. A tool that fails is still a result
    (``isError: true``); protocol failures are the spec's error object, with the HTTP
    status of their code (502 for codes that are not HTTP codes: office rules)."""
    try:
        arguments = _arguments(request.body)
        agent = shared_agent(settings.SMCP_SERVER_URL or request.build_absolute_uri("/"))
        result = agent.call_tool(computer, tool_name, arguments, timeout=TOOL_TIMEOUT)
    except SMCPError as exc:
        return JsonResponse(exc.to_wire(), status=exc.code if exc.code < 600 else 502)
    return JsonResponse(to_wire(result))


def _arguments(body: bytes) -> dict:
    try:
        arguments = json.loads(body) if body else {}
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise BadRequestError("the request body must be a JSON object of tool arguments")
    return arguments
