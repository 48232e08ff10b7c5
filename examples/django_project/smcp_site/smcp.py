"""The SMCP side of the site: the Server (mounted in `wsgi.py`) and the one Agent the
views share.

An office has room for one Agent (error 4101) and an Agent is thread-safe, so the whole
process shares one, made on first use. With the Server in another process
(``SMCP_SERVER_URL``) the Agent is made in the app's `ready()` through the Agent relay,
so that every process of the site (runserver's reloader pair, gunicorn's workers) shares
the office's one seat.
"""

from __future__ import annotations

import threading

from django.conf import settings

from smcp_sync import Agent, SMCPServer

AGENT_NAME = "django-agent"

server = SMCPServer(auth=settings.SMCP_API_KEY)

_agent: Agent | None = None
_agent_lock = threading.Lock()


def make_relay_agent() -> None:
    """The views' Agent through the Agent relay, when the Server is another process."""
    global _agent
    url = settings.SMCP_SERVER_URL
    if url:
        key = settings.SMCP_API_KEY
        with _agent_lock:
            _agent = Agent.via_relay(
                AGENT_NAME, url=url, office_id=settings.SMCP_OFFICE, auth={"api_key": key} if key else None
            )


def shared_agent(url: str) -> Agent:
    global _agent
    with _agent_lock:
        if _agent is None:
            key = settings.SMCP_API_KEY
            agent = Agent(AGENT_NAME, auth={"api_key": key} if key else None)
            try:
                agent.connect(url)
                agent.join_office(settings.SMCP_OFFICE)
            except BaseException:
                agent.close()
                raise
            _agent = agent
        return _agent


def shutdown() -> None:
    """Close the Agent and drop every Socket.IO connection, so the process can exit at
    once instead of waiting for open websockets (called by `serve.py` on exit)."""
    global _agent
    with _agent_lock:
        agent, _agent = _agent, None
    if agent is not None:
        agent.close()
    server.drop_connections()
