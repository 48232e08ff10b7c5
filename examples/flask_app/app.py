"""A Flask app that mounts the SMCP Server and calls tools on Computers through an Agent.

    cd examples/flask_app && gunicorn        # serves app:app with ./gunicorn.conf.py

One process serves both the web pages and the Socket.IO endpoint (``/socket.io``):
Computers and other Agents connect to the same URL as the browser. The view does not
touch the Server's internals: it talks to it as an ordinary Agent, over Socket.IO, like
an Agent in any other process would.

Environment:
    SMCP_API_KEY     the key Computers and Agents must present (unset: open server, for
                     trying it out on 127.0.0.1 only)
    SMCP_OFFICE      the office the view's Agent joins (default "web-office")
    SMCP_SERVER_URL  where the view's Agent connects (default: this app's own URL, taken
                     from the first request)
"""

from __future__ import annotations

import os
import threading

from flask import Flask, jsonify, request

from smcp_sync import Agent, BadRequestError, SMCPError, SMCPServer, to_wire

API_KEY = os.environ.get("SMCP_API_KEY") or None
OFFICE = os.environ.get("SMCP_OFFICE", "web-office")
AGENT_NAME = "flask-agent"
TOOL_TIMEOUT = 30.0

server = SMCPServer(auth=API_KEY)
app = Flask(__name__)
app.wsgi_app = server.mount(app.wsgi_app)

# One Agent for the whole process, made on first use. An office has room for one Agent
# (error 4101), and an Agent is thread-safe, so every request thread shares it.
_agent: Agent | None = None
_agent_lock = threading.Lock()


def shared_agent(url: str) -> Agent:
    global _agent
    with _agent_lock:
        if _agent is None:
            agent = Agent(AGENT_NAME, auth={"api_key": API_KEY} if API_KEY else None)
            try:
                agent.connect(url)
                agent.join_office(OFFICE)
            except BaseException:
                agent.close()
                raise
            _agent = agent
        return _agent


def shutdown() -> None:
    """Close the Agent and drop every Socket.IO connection, so the worker can exit at
    once instead of waiting for open websockets (called by gunicorn.conf.py)."""
    global _agent
    with _agent_lock:
        agent, _agent = _agent, None
    if agent is not None:
        agent.close()
    server.drop_connections()


@app.post("/computers/<computer>/tools/<tool_name>")
def call_tool(computer: str, tool_name: str):
    """Call `tool_name` on `computer` (in the Agent's office) with the JSON body as its
    arguments; answer the MCP CallToolResult. A tool that fails is still a result
    (``isError: true``); protocol failures are the spec's error object."""
    arguments = request.get_json(silent=True) if request.content_length else {}
    if not isinstance(arguments, dict):
        raise BadRequestError("the request body must be a JSON object of tool arguments")
    agent = shared_agent(os.environ.get("SMCP_SERVER_URL") or request.host_url)
    result = agent.call_tool(computer, tool_name, arguments, timeout=TOOL_TIMEOUT)
    return jsonify(to_wire(result))


@app.errorhandler(SMCPError)
def protocol_error(exc: SMCPError):
    """Protocol codes below 600 are HTTP codes already; the others (office rules) mean
    the upstream refused: 502."""
    return jsonify(exc.to_wire()), exc.code if exc.code < 600 else 502
