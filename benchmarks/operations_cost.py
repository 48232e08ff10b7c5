"""What observing one request costs the Server's CPU: the request wrapper of
`smcp_sync.server.observability` around an answered tool call, with metrics, with
metrics and the audit trail (JSON lines to /dev/null), and with neither but tracing's
check (no tracer provider). In-process CPU time per call (`time.process_time`), which a
busy machine moves far less than the round trips' wall time.

    python -m benchmarks.operations_cost [--calls 50000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from smcp_sync.server.transport.engine import SocketIOServer
from smcp_sync.server.observability import AuditOptions
from smcp_sync.server.observability.audit import AuditTrail
from smcp_sync.server.observability.metrics import ServerMetrics
from smcp_sync.server.observability.requests import RequestObserver
from smcp_sync.server.offices.registry import InMemoryRegistry

from .peers import audit_to_devnull

PAYLOAD = {"agent": "a1", "req_id": "0" * 32, "computer": "pc", "tool_name": "echo", "params": {"text": "ping"}, "timeout": 10}
ANSWER = {"content": [{"type": "text", "text": "ping"}], "isError": False}


def cpu_us_per_call(observer: RequestObserver, calls: int) -> float:
    handler = observer.observe("client:tool_call", lambda sid, *args: ANSWER)
    for _ in range(1000):  # warm: labelled children made, caches filled
        handler("s1", PAYLOAD)
    started = time.process_time()
    for _ in range(calls):
        handler("s1", PAYLOAD)
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=50_000)
    args = parser.parse_args()
    registry = InMemoryRegistry()
    registry.add_session("s1")
    registry.join("s1", "agent", "a1", "o1")
    sio = SocketIOServer()
    metrics: Any = ServerMetrics(sio, registry, lambda: 0)
    audit_to_devnull()
    audit = AuditTrail(AuditOptions(), registry)
    rows = {
        "nothing observed (no wrapper)": RequestObserver(None, None, tracing=False),
        "tracing's check only (no tracer provider)": RequestObserver(None, None, tracing=True),
        "metrics": RequestObserver(metrics, None, tracing=True),
        "metrics + audit trail (JSON lines)": RequestObserver(metrics, audit, tracing=True),
    }
    print("| observed | CPU µs per request |\n| --- | --- |")
    for label, observer in rows.items():
        print(f"| {label} | {cpu_us_per_call(observer, args.calls):.1f} |")
    sio.shutdown()


if __name__ == "__main__":
    main()
