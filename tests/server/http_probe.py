"""A plain HTTP GET for the operator's paths (`/health/...`, `/metrics`), bounded."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

HTTP_TIMEOUT = 5.0


def get(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    """(status, content type, body) of `url`; an error status is returned, not raised."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers.get("Content-Type", ""), error.read()


def probe(url: str) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) of a health probe."""
    status, content_type, body = get(url)
    assert content_type == "application/json", (status, content_type, body)
    return status, json.loads(body)
