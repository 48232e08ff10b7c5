"""The WSGI application: Socket.IO (``/socket.io``) served by the SMCP Server, every
other path by Django. Needs a server that can upgrade to websocket in threading mode
(gunicorn ``-k gthread``, werkzeug — see `serve.py`); Django's runserver cannot."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "smcp_site.settings")

from .smcp import server  # noqa: E402 (needs the settings module chosen)

application = server.mount(get_wsgi_application())
