"""The site's one app: its `ready()` makes the views' Agent when the Server is another
process (``SMCP_SERVER_URL``), through the Agent relay: runserver's reloader runs
`ready()` in both of its processes, and every worker of gunicorn or uWSGI runs it too,
and one office has one Agent seat (docs/hosts/relay.md)."""

from django.apps import AppConfig


class SmcpSiteConfig(AppConfig):
    name = "smcp_site"

    def ready(self) -> None:
        from . import smcp

        smcp.make_relay_agent()
