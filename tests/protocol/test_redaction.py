"""The one redaction (`protocol.redaction`) and the log records it applies to
(`protocol.log_redaction`): credentials masked, what failed and where kept."""

from __future__ import annotations

import logging

import pytest

import smcp_sync  # noqa: F401  (importing the package redacts log records)
from smcp_sync.protocol.redaction import REDACTED, redact_args, redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://alice:hunter2@mcp.example/sse?api_key=abc&team=blue",
         f"https://{REDACTED}@mcp.example/sse?api_key={REDACTED}&team=blue"),
        ("redis://:pw@redis.local:6379/0?password=pw2&db=1", f"redis://{REDACTED}@redis.local:6379/0?password={REDACTED}&db=1"),
        ("https://h/cb#access_token=t&state=s", f"https://h/cb#access_token={REDACTED}&state=s"),
        ("https://h/x?token=${env:TOKEN}", "https://h/x?token=${env:TOKEN}"),  # names where it comes from
        ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
        ("http://[::1/x?key=1", REDACTED),  # cannot be parsed: nothing of it is told apart
    ],
)  # fmt: skip
def test_a_url_keeps_its_host_and_path_and_loses_its_credentials(url, shown):
    assert redact_url(url) == shown


def test_secret_looking_header_lines_are_masked_others_kept():
    headers = "Authorization: Bearer t\nCookie: c1\nX-Api-Key: k\nAccept: text/html\nX-Key: ${input:k}"
    assert redact_text(headers) == (
        f"Authorization: Bearer {REDACTED}\nCookie: {REDACTED}\nX-Api-Key: {REDACTED}\nAccept: text/html\nX-Key: ${{input:k}}"
    )


def test_an_exception_name_before_its_message_is_no_header():
    reason = 'OAuthTokenError: Token exchange failed (400): {"error": "invalid_scope"}'
    assert redact_text(reason) == reason
    assert redact_text("X-Auth-Token: Token abc") == f"X-Auth-Token: Token {REDACTED}"


def test_a_dotted_config_path_is_secret_by_its_last_part():
    assert redact_text("no oauth.mode.issuer: its client credentials go to x") == "no oauth.mode.issuer: its client credentials go to x"
    assert redact_text("oauth.mode.clientSecret: s3") == f"oauth.mode.clientSecret: {REDACTED}"


def test_a_command_line_loses_flag_values_assignments_and_url_credentials():
    args = ["--token", "t", "--api-key=k", "--verbose", "PASSWORD=p", "https://u:p@h/?sig=s", "plain"]
    assert redact_args(args) == [
        "--token", REDACTED, f"--api-key={REDACTED}", "--verbose", f"PASSWORD={REDACTED}", f"https://{REDACTED}@h/?sig={REDACTED}", "plain"
    ]  # fmt: skip


def test_an_upstream_error_keeps_status_and_host():
    error = (
        "Client error '401 Unauthorized' for url 'https://bob:pw@mcp.example/sse?api_key=abc'\n"
        "sent Authorization: Bearer xyz and token=t2, secret: s3"
    )
    shown = redact_text(error)
    assert shown == (
        f"Client error '401 Unauthorized' for url 'https://{REDACTED}@mcp.example/sse?api_key={REDACTED}'\n"
        f"sent Authorization: Bearer {REDACTED} and token={REDACTED}, secret: {REDACTED}"
    )
    assert redact_text("tool 'x' needs an authorization on MCP server 'y': HTTP 401") == (
        "tool 'x' needs an authorization on MCP server 'y': HTTP 401"
    )


def test_log_records_of_ours_and_of_the_libraries_are_redacted_traceback_included(caplog):
    caplog.set_level(logging.DEBUG)
    logging.getLogger("httpx2").info("HTTP Request: GET %s", "https://h/sse?api_key=abc")
    try:
        raise RuntimeError("failed for url 'https://bob:pw@h/'")
    except RuntimeError:
        logging.getLogger("smcp_sync.tests").exception("the transport failed")
    logging.getLogger("elsewhere").info("token=left-alone")  # not a logger of ours or of our libraries
    texts = [caplog.handler.format(record) for record in caplog.records]
    assert texts[0].endswith(f"HTTP Request: GET https://h/sse?api_key={REDACTED}")
    assert "bob:pw" not in texts[1] and f"https://{REDACTED}@h/" in texts[1] and "RuntimeError" in texts[1]
    assert texts[2].endswith("token=left-alone")
