"""Our peers as child processes: ``python -m benchmarks.peers ROLE [options]``.

Why processes: the official stack runs its Server, Computer and Agent in three processes;
ours must too, or one GIL would be shared by all three roles and the comparison would
measure that instead. A separate Server process is also what lets the memory section
read the Server's RSS and threads without the clients' own.

Roles:

* ``smcp-server [--redis URL] [--options JSON] [--observability off|on|SET]``:
  `SMCPServer(**options).start()` (werkzeug, threading mode; the fields of
  `ServerLimits` among the options are its `limits`) on 127.0.0.1:0, without the
  per-address cap (every client of a benchmark comes from 127.0.0.1); with ``--redis`` a
  node of a scale-out sharing that Redis; ``--observability off``: no metrics and no
  audit trail, ``on``: metrics and the audit trail written as JSON lines (to
  /dev/null: the cost of making and formatting each record, not of a disk), or a
  comma-separated set of ``metrics``, ``audit``, ``tracing`` (the routing spans), else
  the default (metrics, the audit logger left off);
* ``smcp-serve --threads N [--mode M --connections C] --options JSON``:
  `SMCPServer(**options).serve()` (gunicorn, gthread or gevent: a master, whose pid the
  ready line gives, and one worker process);
* ``raw-server``: a bare python-socketio threading Server on the same werkzeug
  transport, whose ``echo`` event returns its payload (the Socket.IO floor);
* ``computer --url U --office O --name N --mcp-config JSON``: a `Computer` joined to O,
  with one MCP server config or a list of them (JSON);
* ``idle-agents --url U --count N --prefix P``: N Agents, each joined to its own office,
  then idle;
* ``callers --url U --office O --computer C --threads T --calls N``: an Agent joined to
  O, one warm call, then T threads making N echo calls each on C; prints ``ready``, then
  ``done`` with every latency and the seconds all took.

``--tracing`` (``smcp-server``, ``computer``, ``callers``): OpenTelemetry's SDK tracer
provider set in that process, its spans batched and exported to nowhere
(`install_tracing`): what making, carrying and batching spans costs, not an exporter's
network.

Each prints one JSON line ``{"event": "ready", ...}`` when it is up, then waits; EOF on
stdin (or SIGTERM) makes it close everything and exit. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

RAW_NAMESPACE = "/bench"


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def wait_for_stop() -> None:
    """Until stdin reaches EOF or SIGTERM/SIGINT arrives."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    def watch_stdin() -> None:
        for _ in sys.stdin:
            pass
        stop.set()

    threading.Thread(target=watch_stdin, name="bench-stdin", daemon=True).start()
    while not stop.wait(1.0):
        pass


def install_tracing() -> None:
    """The tracing extra's SDK as an application sets it up, with an exporter that drops
    what its batch hands it."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    trace.set_tracer_provider(provider)


def run_smcp_server(args: argparse.Namespace) -> None:
    from smcp_sync.server import RedisOptions, SMCPServer

    options = _keywords({"max_connections_per_ip": None, **json.loads(args.options)})
    if args.redis:
        options["redis"] = RedisOptions(args.redis)
    if args.observability is not None:
        options["observability"] = _observability(args.observability)
    server = SMCPServer(**options)
    url = server.start()
    emit({"event": "ready", "url": url, "pid": os.getpid()})
    wait_for_stop()
    server.stop()


def _keywords(options: dict[str, Any]) -> dict[str, Any]:
    """`SMCPServer`'s keywords from the JSON a benchmark gives: the fields of
    `ServerLimits` among them are its `limits`."""
    from smcp_sync.server import ServerLimits

    fields = attrs.fields_dict(ServerLimits)
    limits = {name: options.pop(name) for name in list(options) if name in fields}
    return {**options, "limits": ServerLimits(**limits)}


#: What ``--observability`` may name, besides ``off`` and ``on`` (metrics and the audit trail).
OBSERVED = ("metrics", "audit", "tracing")


def _observability(choice: str) -> Any:
    """The Server's `Observability` from ``--observability``: ``off`` (no metrics, no
    audit trail, not even the routing spans' check), ``on`` (metrics and the audit trail
    as JSON lines to /dev/null), or a comma-separated set of `OBSERVED`."""
    from smcp_sync.server.observability import AuditOptions, Observability

    presets = {"off": set(), "on": {"metrics", "audit", "tracing"}}
    chosen = presets[choice] if choice in presets else set(choice.split(","))
    unknown = chosen - set(OBSERVED)
    if unknown:
        raise SystemExit(f"--observability: unknown {sorted(unknown)}; choose off, on or from {OBSERVED}")
    if "audit" in chosen:
        audit_to_devnull()
    return Observability(metrics="metrics" in chosen, audit=AuditOptions() if "audit" in chosen else None, tracing="tracing" in chosen)


def audit_to_devnull() -> None:
    """The audit trail on, its records formatted as JSON lines and written to /dev/null:
    what making a record costs, not what a disk does."""
    from smcp_sync.server.observability.audit import AUDIT_LOGGER, JsonLinesFormatter

    handler = logging.FileHandler(os.devnull)
    handler.setFormatter(JsonLinesFormatter())
    audit = logging.getLogger(AUDIT_LOGGER)
    audit.addHandler(handler)
    audit.setLevel(logging.INFO)
    audit.propagate = False


def run_smcp_serve(args: argparse.Namespace) -> None:
    """In the foreground until SIGTERM, which EOF on stdin sends (gunicorn's master
    handles the signals; its worker serves)."""
    from smcp_sync.server import SMCPServer

    def ready(url: str) -> None:  # before the worker is forked: find it among pid's children
        emit({"event": "ready", "url": url, "pid": os.getpid()})

    def stop_on_eof() -> None:
        for _ in sys.stdin:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_on_eof, name="bench-stdin", daemon=True).start()
    SMCPServer(**_keywords(json.loads(args.options))).serve(
        port=0, mode=args.mode, threads=args.threads, connections=args.connections, on_ready=ready
    )


def run_raw_server(args: argparse.Namespace) -> None:
    import socketio

    from smcp_sync.server.transport.background_http import BackgroundHTTPServer

    sio = socketio.Server(async_mode="threading", namespaces=[RAW_NAMESPACE])
    sio.on("echo", lambda sid, data: data, namespace=RAW_NAMESPACE)
    http = BackgroundHTTPServer(socketio.WSGIApp(sio), "127.0.0.1", 0)
    http.start()
    emit({"event": "ready", "url": http.url, "pid": os.getpid()})
    wait_for_stop()
    http.stop_accepting(5.0)
    sio.shutdown()


def run_computer(args: argparse.Namespace) -> None:
    from smcp_sync.computer import Computer

    configs = json.loads(args.mcp_config)
    computer = Computer(args.name, servers=configs if isinstance(configs, list) else [configs])
    try:
        computer.start(args.timeout)
        computer.connect(args.url, args.office, timeout=args.timeout)
        emit({"event": "ready", "tools": [tool.name for tool in computer.tools()], "pid": os.getpid()})
        wait_for_stop()
    finally:
        computer.close()


def run_callers(args: argparse.Namespace) -> None:
    from smcp_sync.agent import Agent
    from smcp_sync.connection.session import ReconnectPolicy

    with Agent("bench-callers", reconnect=ReconnectPolicy(enabled=False)) as agent:
        agent.connect(args.url, timeout=30)
        agent.join_office(args.office, timeout=30)

        def calls(thread: int) -> list[float]:
            latencies = []
            for n in range(args.calls):
                started = time.perf_counter()
                agent.call_tool(args.computer, "echo", {"text": f"t{thread}c{n}"}, timeout=30)
                latencies.append(time.perf_counter() - started)
            return latencies

        agent.call_tool(args.computer, "echo", {"text": "warm"}, timeout=30)
        emit({"event": "ready", "pid": os.getpid()})
        began = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            done = list(pool.map(calls, range(args.threads)))
        seconds = time.perf_counter() - began
        emit({"event": "done", "latencies": [value for mine in done for value in mine], "seconds": seconds})


def run_idle_agents(args: argparse.Namespace) -> None:
    from smcp_sync.connection.session import ReconnectPolicy

    from smcp_sync.agent import Agent

    agents = []
    try:
        for index in range(args.count):
            agent = Agent(f"{args.prefix}-{index}", reconnect=ReconnectPolicy(enabled=False))
            agents.append(agent)
            agent.connect(args.url, timeout=30)
            agent.join_office(f"{args.prefix}-office-{index}", timeout=30)
        emit({"event": "ready", "count": len(agents), "pid": os.getpid()})
        wait_for_stop()
    finally:
        for agent in agents:
            agent.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    roles = parser.add_subparsers(dest="role", required=True)
    smcp_server = roles.add_parser("smcp-server")
    smcp_server.set_defaults(run=run_smcp_server)
    smcp_server.add_argument("--redis", help="share offices through this Redis (a scale-out node)")
    smcp_server.add_argument("--options", default="{}", help="SMCPServer keyword options (JSON)")
    smcp_server.add_argument("--observability", help=f"off, on (metrics and the audit trail), or a comma-separated set of {OBSERVED}")
    roles.add_parser("raw-server").set_defaults(run=run_raw_server)
    serve = roles.add_parser("smcp-serve")
    serve.set_defaults(run=run_smcp_serve)
    serve.add_argument("--threads", type=int, required=True)
    serve.add_argument("--mode", default="threads", help="serve()'s mode: threads or gevent")
    serve.add_argument("--connections", type=int, default=10_000, help="most connections in mode gevent")
    serve.add_argument("--options", default="{}", help="SMCPServer keyword options (JSON)")
    computer = roles.add_parser("computer")
    computer.set_defaults(run=run_computer)
    idle = roles.add_parser("idle-agents")
    idle.set_defaults(run=run_idle_agents)
    for role in (computer, idle):
        role.add_argument("--url", required=True)
    computer.add_argument("--office", required=True)
    computer.add_argument("--name", required=True)
    computer.add_argument("--mcp-config", required=True, help="an MCP server config or a list of them (JSON)")
    computer.add_argument("--timeout", type=float, default=30.0, help="seconds to start the MCP servers and join")
    idle.add_argument("--count", type=int, required=True)
    idle.add_argument("--prefix", required=True)
    callers = roles.add_parser("callers")
    callers.set_defaults(run=run_callers)
    for option in ("--url", "--office", "--computer"):
        callers.add_argument(option, required=True)
    callers.add_argument("--threads", type=int, default=1)
    callers.add_argument("--calls", type=int, required=True, help="calls per thread")
    for role in (smcp_server, computer, callers):
        role.add_argument("--tracing", action="store_true", help="spans made and batched (install_tracing)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if getattr(args, "tracing", False):
        install_tracing()
    args.run(args)


if __name__ == "__main__":
    main()
