"""`smcp-sync agent ... blob get|put`: move large bytes to and from a Computer.

    blob get COMPUTER HANDLE -o FILE     the bytes behind a blob handle (e.g. a tool
                                         result's _meta.a2c_blob_handle), sha256 checked
    blob put COMPUTER FILE [--name N]    upload FILE into the Computer's landing folder

A handle is bound to the Agent it was minted for: use the same `--name` (and office) as
the command that received it. Progress goes to stderr when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO, Any, Callable

from ..agent import Agent
from ..blobs import file_sha256
from ..protocol.models import PutBlobRet

_MB = 1024 * 1024


def add_blob_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    blob = actions.add_parser("blob", help="get the bytes behind a blob handle, or upload a file")
    ops = blob.add_subparsers(dest="blob_op", required=True, metavar="OP")
    get = ops.add_parser("get", help="save the bytes behind a blob handle (sha256 checked)")
    get.add_argument("computer")
    get.add_argument("handle")
    get.add_argument("-o", "--output", required=True, help="the file to write")
    put = ops.add_parser("put", help="upload a file into the Computer's landing folder")
    put.add_argument("computer")
    put.add_argument("file")
    put.add_argument("--name", dest="name_hint", help="the name to suggest (default: the file's)")


def run_blob(agent: Agent, args: argparse.Namespace) -> Any:
    """What the blob command did, as a wire-ready value."""
    progress = terminal_progress(sys.stderr)
    if args.blob_op == "get":
        agent.get_blob(args.computer, args.handle, args.output, progress=progress, timeout=args.timeout)
        path = Path(args.output)
        return {"path": str(path), "total_size": path.stat().st_size, "sha256": file_sha256(path)}
    return agent.put_blob(args.computer, args.file, name_hint=args.name_hint, progress=progress, timeout=args.timeout)


def blob_summary(result: Any) -> str:
    if isinstance(result, PutBlobRet):
        return f"landed at {result.landing_path} ({result.total_size} bytes, sha256 {result.sha256})"
    return f"wrote {result['total_size']} bytes to {result['path']} (sha256 {result['sha256']})"


def terminal_progress(stream: IO[str]) -> Callable[[int, int], None] | None:
    """A progress line rewritten in place on `stream`, if it is a terminal."""
    if not stream.isatty():
        return None

    def show(done: int, total: int) -> None:
        percent = 100 if total == 0 else done * 100 // total
        stream.write(f"\r{done / _MB:9.1f} / {total / _MB:.1f} MB {percent:3d}%")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show

