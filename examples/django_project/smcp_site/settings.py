"""Settings of the minimal Django project: no database, no migrations, one app (its
`ready()` makes the views' Agent: `apps.py`) — one JSON view, and the SMCP Server
mounted next to Django in `wsgi.py`."""

import os

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-example-key-set-DJANGO_SECRET_KEY")
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
ROOT_URLCONF = "smcp_site.urls"
WSGI_APPLICATION = "smcp_site.wsgi.application"
INSTALLED_APPS = ["smcp_site.apps.SmcpSiteConfig"]
MIDDLEWARE: list[str] = []
DATABASES: dict[str, dict] = {}
USE_TZ = True

# The key Computers and Agents must present (unset: open server, for trying it out on
# 127.0.0.1 only).
SMCP_API_KEY = os.environ.get("SMCP_API_KEY") or None
# The office the view's Agent joins.
SMCP_OFFICE = os.environ.get("SMCP_OFFICE", "web-office")
# Where the view's Agent connects (None: this site's own URL, from the first request).
# Set, the Agent goes through the Agent relay (made in `apps.py`), which every process
# of the site shares: runserver's reloader pair, gunicorn's workers.
SMCP_SERVER_URL = os.environ.get("SMCP_SERVER_URL") or None
