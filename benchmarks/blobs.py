"""Blob transfer: a large file each way through Agent -> SMCPServer -> Computer, sha256
verified, with each side's peak memory and MB/s, next to a raw Socket.IO transfer of
the same bytes over loopback.

    python -m benchmarks.blobs [--size-mb 200] [--json FILE]

Each measured role runs in its own process (started again for each direction), so its
peak RSS (VmHWM) is its own; `baseline` is its RSS once imported and connected,
before the transfer. The Server runs in this process. The raw transfer is a bare
python-socketio Server (werkzeug, websocket, like SMCPServer) and Client, pulling and
pushing the file in base64 chunks of the size the Agent uses, one request per chunk,
one hop (the smcp_sync path has two: Agent -> Server -> Computer).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from smcp_sync.computer import BlobOptions

OFFICE = "blob-bench"
TIMEOUT = 60.0
_MB = 1024 * 1024


def peak_mb() -> float:
    """This process's peak RSS: VmHWM, its own address space's high-water mark
    (`ru_maxrss` would not do: Linux carries the parent's over fork + exec)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux, bytes on macOS


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / _MB


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


# -- roles (child processes) -------------------------------------------------------------


def computer_role(url: str, source: str, landing: str) -> None:
    from smcp_sync import Computer
    from smcp_sync.blobs import from_path

    with Computer("bench-pc", blobs=BlobOptions(landing_folder=landing, upload_max_bytes=1 << 40)) as computer:
        computer.connect(url, OFFICE, timeout=TIMEOUT)
        handle = computer.blobs.mint(from_path(source), office_id=OFFICE, agent="bench", mime_type="").handle
        say(handle=handle, baseline_mb=rss_mb())
        sys.stdin.readline()  # the transfer is over
        say(peak_mb=peak_mb())


def agent_role(url: str, direction: str, handle: str, path: str) -> None:
    from smcp_sync import Agent

    with Agent("bench") as agent:
        agent.connect(url, timeout=TIMEOUT)
        agent.join_office(OFFICE, timeout=TIMEOUT)
        baseline = rss_mb()
        started = time.perf_counter()
        if direction == "get":
            agent.get_blob("bench-pc", handle, path, timeout=TIMEOUT)
            landed = path
        else:
            landed = agent.put_blob("bench-pc", path, timeout=TIMEOUT).landing_path
        say(seconds=time.perf_counter() - started, baseline_mb=baseline, peak_mb=peak_mb(), landed=landed)


def raw_server_role(source: str, landing: str) -> None:
    import socketio
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # no request log, nor the 400 at disconnect
    sio = socketio.Server(async_mode="threading", max_http_buffer_size=1_000_000)
    out = open(landing, "wb")  # noqa: SIM115

    @sio.on("pull")
    def pull(sid: str, request: dict) -> dict:
        with open(source, "rb") as file:
            file.seek(request["offset"])
            return {"blob": base64.b64encode(file.read(request["size"])).decode("ascii")}

    @sio.on("push")
    def push(sid: str, request: dict) -> bool:
        out.write(base64.b64decode(request["blob"]))
        if request["eof"]:
            out.flush()
        return True

    server = make_server("127.0.0.1", 0, socketio.WSGIApp(sio), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say(url=f"http://127.0.0.1:{server.server_port}", baseline_mb=rss_mb())
    sys.stdin.readline()
    out.close()
    server.shutdown()
    say(peak_mb=peak_mb())


def raw_client_role(url: str, direction: str, size: int, chunk: int, path: str) -> None:
    import socketio

    # as smcp_sync's Connection does: websocket-client's pure-Python UTF-8 check costs ~0.25 s/MB
    client = socketio.Client(websocket_extra_options={"skip_utf8_validation": True})
    client.connect(url, transports=["websocket"], wait_timeout=TIMEOUT)
    baseline = rss_mb()
    started = time.perf_counter()
    if direction == "get":
        with open(path, "wb") as out:
            for offset in range(0, size, chunk):
                answer = client.call("pull", {"offset": offset, "size": chunk}, timeout=TIMEOUT)
                out.write(base64.b64decode(answer["blob"]))
    else:
        with open(path, "rb") as source:
            for offset in range(0, size, chunk):
                data = source.read(chunk)
                client.call("push", {"blob": base64.b64encode(data).decode("ascii"),
                                     "eof": offset + chunk >= size}, timeout=TIMEOUT)
    seconds = time.perf_counter() - started
    client.disconnect()
    say(seconds=seconds, baseline_mb=baseline, peak_mb=peak_mb())


# -- the run ---------------------------------------------------------------------------


class Child:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.blobs", "--role", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def line(self) -> dict[str, Any]:
        text = self.process.stdout.readline()
        if not text:
            raise RuntimeError(f"{self.process.args} ended with {self.process.wait(TIMEOUT)}")
        return json.loads(text)

    def finish(self) -> dict[str, Any]:
        self.process.stdin.write("done\n")
        self.process.stdin.flush()
        last = self.line()
        self.process.wait(TIMEOUT)
        return last



def same_bytes(path: str, source: str) -> bool:
    """Whether `path` holds `source`'s bytes (imported here, in the parent only: the raw
    roles' memory figures must not include smcp_sync)."""
    from smcp_sync.blobs import file_sha256

    return file_sha256(path) == file_sha256(source)


def smcp_direction(url: str, direction: str, source: str, work: Path) -> dict[str, Any]:
    landing = work / f"landing-{direction}"
    computer = Child("computer", url, source, str(landing))
    try:
        ready = computer.line()
        target = str(work / "got.bin") if direction == "get" else source
        agent = Child("agent", url, direction, ready["handle"], target)
        result = agent.line()
        agent.process.wait(TIMEOUT)
        computer_peak = computer.finish()["peak_mb"]
    finally:
        computer.process.kill()
    assert same_bytes(result["landed"], source), f"{direction}: sha256 differs"
    os.unlink(result["landed"])
    return {"seconds": result["seconds"], "agent_baseline_mb": result["baseline_mb"], "agent_peak_mb": result["peak_mb"],
            "computer_baseline_mb": ready["baseline_mb"], "computer_peak_mb": computer_peak}


def raw_direction(direction: str, source: str, size: int, chunk: int, work: Path) -> dict[str, Any]:
    sink = work / "raw-sink.bin"
    server = Child("raw-server", source, str(sink))
    try:
        ready = server.line()
        target = str(work / "raw-got.bin") if direction == "get" else source
        client = Child("raw-client", ready["url"], direction, str(size), str(chunk), target)
        result = client.line()
        client.process.wait(TIMEOUT)
        server_peak = server.finish()["peak_mb"]
    finally:
        server.process.kill()
    landed = target if direction == "get" else str(sink)
    assert same_bytes(landed, source), f"raw {direction}: sha256 differs"
    os.unlink(landed)
    return {"seconds": result["seconds"], "client_peak_mb": result["peak_mb"], "server_peak_mb": server_peak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.blobs")
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--role", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        role, *rest = args.role
        {"computer": computer_role, "agent": agent_role, "raw-server": raw_server_role,
         "raw-client": lambda *a: raw_client_role(a[0], a[1], int(a[2]), int(a[3]), a[4])}[role](*rest)
        return 0

    from smcp_sync import SMCPServer
    from smcp_sync.blobs import chunk_size

    size = args.size_mb * _MB
    with tempfile.TemporaryDirectory() as tmp, SMCPServer() as server:
        work = Path(tmp)
        source = str(work / "source.bin")
        with open(source, "wb") as file:
            for _ in range(args.size_mb):
                file.write(os.urandom(_MB))
        url = server.start()
        chunk = chunk_size(None, None)
        figures: dict[str, Any] = {"size_mb": args.size_mb, "chunk_bytes": chunk}
        for direction in ("get", "put"):
            print(f"smcp_sync {direction} ...", file=sys.stderr, flush=True)
            figures[f"smcp_{direction}"] = smcp_direction(url, direction, source, work)
            print(f"raw socket.io {direction} ...", file=sys.stderr, flush=True)
            figures[f"raw_{direction}"] = raw_direction(direction, source, size, chunk, work)
    print(report(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


def report(figures: dict[str, Any]) -> str:
    size = figures["size_mb"]
    lines = [f"Blob transfer of {size} MB (sha256 verified), chunks of {figures['chunk_bytes']} bytes", "",
             "| path | MB/s | Agent / client peak RSS (baseline) MB | Computer / server peak RSS (baseline) MB |",
             "| --- | ---: | ---: | ---: |"]
    for direction, name in (("get", "Computer -> Agent (get_blob)"), ("put", "Agent -> Computer (put_blob)")):
        smcp, raw = figures[f"smcp_{direction}"], figures[f"raw_{direction}"]
        lines.append(f"| smcp_sync {name} | {size / smcp['seconds']:.1f} | {smcp['agent_peak_mb']:.0f} "
                     f"({smcp['agent_baseline_mb']:.0f}) | {smcp['computer_peak_mb']:.0f} ({smcp['computer_baseline_mb']:.0f}) |")
        lines.append(f"| raw Socket.IO {direction} | {size / raw['seconds']:.1f} | {raw['client_peak_mb']:.0f} | "
                     f"{raw['server_peak_mb']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
