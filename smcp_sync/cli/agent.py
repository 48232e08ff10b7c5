"""`smcp-sync agent`: one Agent request from the shell, for scripts and quick inspection.

    smcp-sync agent --url URL --office OFFICE [--name NAME] [--api-key KEY] [--json] ACTION
        tools COMPUTER                      the Computer's tools
        call COMPUTER TOOL [PARAMS_JSON]    call a tool (exit 1 when the tool reports an error)
        desktop COMPUTER [--size N] [--window URI]
        finder COMPUTER [--keyword K]... [--file-type T] [--offset N] [--limit N]
                                            the Finder catalogue (documents and their dpe:// URIs)
        read COMPUTER URI [--mcp-server NAME]
                                            read a resource, e.g. a dpe:// page:
                                            dpe://HOST/DOC/pages/0?format=markdown
        skills COMPUTER                     the Computer's skills (name, source, description)
        skill COMPUTER NAME [--rel-path P] [-o FILE]
                                            a file of a skill (default its SKILL.md body);
                                            one sent as a blob is fetched; -o writes it to FILE
        blob get COMPUTER HANDLE -o FILE    save the bytes behind a blob handle (sha256 checked)
        blob put COMPUTER FILE [--name N]   upload FILE into the Computer's landing folder
                                            (both with progress on a terminal: `cli.blob`)
        room                                every session in the office

The Agent joins the office for the duration of the command, so it is refused (4101)
while another Agent is in that office. `--json` prints the wire form of the result.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from ..agent import Agent
from ..agent.resources import check_uri, content_value
from ..protocol.codec import from_wire, to_wire
from ..protocol.conventions import DEFAULT_REQUEST_TIMEOUT
from ..protocol.errors import SMCPError
from ..protocol.models import DEFAULT_FINDER_LIMIT, BlobResourceContents, CallToolResult, GetFinderRet, GetSkillRet
from ..protocol.redaction import redact_url
from ..protocol.skill_mime import is_text_mime
from .blob import add_blob_parser, blob_summary, run_blob
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .options import (
    add_client_auth,
    add_json,
    add_timeout,
    add_url,
    client_credentials,
    fail,
    failure,
    finder_limit,
    positive_count,
    whole_number,
)
from .waiting import terminal, waiting

DEFAULT_NAME = "smcp-sync-cli"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "agent",
        help="act as an Agent once: tools, a tool call, the desktop, the Finder, a resource, the office",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_url(parser)
    parser.add_argument("--office", required=True, help="office (room) id to join")
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"this Agent's name (default: {DEFAULT_NAME})")
    add_client_auth(parser)
    add_timeout(parser, DEFAULT_REQUEST_TIMEOUT, "seconds for each step; for `call`, the tool's timeout")
    add_json(parser, "print the result as JSON (its wire form)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("tools", help="list a Computer's tools").add_argument("computer")
    call = actions.add_parser("call", help="call a tool")
    call.add_argument("computer")
    call.add_argument("tool")
    call.add_argument("params", nargs="?", default="{}", help="the tool's arguments as a JSON object (default: {})")
    desktop = actions.add_parser("desktop", help="show a Computer's desktop")
    desktop.add_argument("computer")
    desktop.add_argument("--size", type=positive_count, help="at most this many windows")
    desktop.add_argument("--window", help="only this window:// URI")
    finder = actions.add_parser("finder", help="list a Computer's Finder documents")
    finder.add_argument("computer")
    finder.add_argument(
        "--keyword", action="append", dest="keywords", metavar="K", help="keep documents matching it (repeatable)"
    )
    finder.add_argument("--file-type", help="keep documents of exactly this type, e.g. md")
    finder.add_argument("--offset", type=whole_number, default=0, help="skip this many documents (default: 0)")
    finder.add_argument("--limit", type=finder_limit, default=DEFAULT_FINDER_LIMIT, help="at most this many, 1-100 (default 20)")
    read = actions.add_parser("read", help="read a resource: dpe://, window:// or, with --mcp-server, any URI")
    read.add_argument("computer")
    read.add_argument("uri")
    read.add_argument("--mcp-server", help="the MCP server to ask (needed unless dpe:// or window://)")
    actions.add_parser("skills", help="list a Computer's skills").add_argument("computer")
    skill = actions.add_parser("skill", help="show a file of a skill (default: its SKILL.md)")
    skill.add_argument("computer")
    skill.add_argument("skill_name", metavar="name")
    skill.add_argument("--rel-path", help="a file inside the package, e.g. references/guide.md")
    skill.add_argument("-o", "--output", help="write the file's bytes here instead of printing them")
    add_blob_parser(actions)
    actions.add_parser("room", help="list the sessions in the office")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    try:
        params = json.loads(args.params) if args.action == "call" else None
    except ValueError as exc:
        return _fail(f"PARAMS is not valid JSON: {exc}", EXIT_USAGE)
    if params is not None and not isinstance(params, dict):
        return _fail("PARAMS must be a JSON object, e.g. '{\"text\": \"hi\"}'", EXIT_USAGE)
    if args.action == "read":
        try:
            check_uri(args.uri)
        except SMCPError as exc:
            return _fail(exc.message, EXIT_USAGE)

    try:
        auth, headers = client_credentials(args)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    try:
        noted = terminal(sys.stderr, args.json or args.action == "blob")  # blob: its own progress line
        with Agent(args.name, auth=auth, headers=headers) as agent, waiting(f"{args.action}: waiting for {redact_url(args.url)}", noted):
            agent.connect(args.url, timeout=args.timeout)
            agent.join_office(args.office, timeout=args.timeout)
            result = _act(agent, args, params)
    except SMCPError as exc:
        return _fail(failure(exc), EXIT_FAILURE)
    print(json.dumps(to_wire(result), ensure_ascii=False, indent=2) if args.json else _human(args.action, result))
    if isinstance(result, CallToolResult) and result.is_error:
        return EXIT_FAILURE
    return EXIT_OK


def _act(agent: Agent, args: argparse.Namespace, params: dict[str, Any] | None) -> Any:
    if args.action == "tools":
        return agent.get_tools(args.computer, timeout=args.timeout)
    if args.action == "call":  # large binary items stay handles to show (`blob get` fetches one)
        return agent.call_tool(args.computer, args.tool, params, timeout=args.timeout, rehydrate=False)
    if args.action == "desktop":
        return agent.get_desktop(args.computer, desktop_size=args.size, window=args.window, timeout=args.timeout)
    if args.action == "finder":
        return agent.get_finder(
            args.computer, args.keywords, args.file_type, args.offset, args.limit, timeout=args.timeout
        )
    if args.action == "skills":
        return agent.get_skills(args.computer, timeout=args.timeout)
    if args.action == "skill":
        return _skill_file(agent, args)
    if args.action == "blob":
        return run_blob(agent, args)
    if args.action == "read":
        return agent.read_resource_contents(args.computer, args.uri, mcp_server=args.mcp_server, timeout=args.timeout)
    return agent.list_room(timeout=args.timeout)


def _human(action: str, result: Any) -> str:
    if action == "tools":
        return "\n".join(f"{tool.name}\t{_first_line(tool.description)}" for tool in result)
    if action == "room":
        return "\n".join(f"{session.role}\t{session.name}\t{session.sid}" for session in result)
    if action == "desktop":
        return "\n\n".join(result)
    if action == "finder":
        return _catalogue(result)
    if action == "blob":
        return blob_summary(result)
    if action == "read":
        return "\n\n".join(_content(content) for content in result)
    if action == "skills":
        return "\n".join(f"{skill.name}\t{skill.source}\t{_first_line(skill.description)}" for skill in result)
    if action == "skill":
        return result.body if result.body is not None else f"[{result.total_size} bytes of {result.mime_type}]"
    shown = [result.text] if result.text else []
    shown += [json.dumps(to_wire(block), ensure_ascii=False) for block in result.content if block.type != "text"]
    if result.structured_content is not None and not result.text:
        shown.append(json.dumps(result.structured_content, ensure_ascii=False))
    code = f" [{result.error_code}]" if result.error_code is not None else ""
    prefix = f"tool error{code}: " if result.is_error else ""
    return prefix + "\n".join(shown)


def _skill_file(agent: Agent, args: argparse.Namespace) -> GetSkillRet:
    """The skill file; one sent as a blob is fetched (sha256 checked) and, when it is
    UTF-8 text, shown as its body. `--output` gets the file's bytes."""
    # with --output a file sent as a blob is streamed to it, not fetched into memory first
    rehydrate = args.output is None
    answer = agent.get_skill(args.computer, args.skill_name, args.rel_path, timeout=args.timeout, rehydrate=rehydrate)
    if answer.body is not None:
        if args.output is not None:
            with open(args.output, "wb") as file:
                file.write(answer.body.encode("utf-8"))
        return answer
    assert answer.blob_handle is not None  # get_skill checked: exactly one of them
    if args.output is not None:  # streamed to the file, never held whole
        agent.get_blob(args.computer, answer.blob_handle, args.output, timeout=args.timeout)
        return answer
    data = agent.get_blob(args.computer, answer.blob_handle, timeout=args.timeout)
    if isinstance(data, bytes) and is_text_mime(answer.mime_type):
        with contextlib.suppress(UnicodeDecodeError):
            return from_wire(GetSkillRet, {**to_wire(answer), "body": data.decode("utf-8"), "blob_handle": None})
    return answer


def _catalogue(finder: GetFinderRet) -> str:
    lines = [f"{doc.uri}\t{doc.file_type}\t{doc.page_count} pages\t{doc.title}" for doc in finder.documents]
    return "\n".join([*lines, f"({len(finder.documents)} of {finder.total_count} documents)"])


def _content(content: Any) -> str:
    """Text as is, JSON pretty-printed; a blob only described (`--json` has its data)."""
    if isinstance(content, BlobResourceContents):
        return f"[blob {content.uri}: {len(content_value(content))} bytes of {content.mime_type or 'unknown type'}]"
    value = content_value(content)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _fail(message: str, code: int) -> int:
    return fail("agent", message, code)
