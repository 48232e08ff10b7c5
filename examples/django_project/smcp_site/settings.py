"""Settings of the minimal Django project: no database, no apps, no migrations — one
JSON view, and the SMCP Server mounted next to Django in `wsgi.py`."""

import os

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-example-key-set-DJANGO_SECRET_KEY")
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
ROOT_URLCONF = "smcp_site.urls"
WSGI_APPLICATION = "smcp_site.wsgi.application"
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
DATABASES: dict[str, dict] = {}
USE_TZ = True

# The key Computers and Agents must present (unset: open server, for trying it out on
# 127.0.0.1 only).
SMCP_API_KEY = os.environ.get("SMCP_API_KEY") or None
# The office the view's Agent joins.
SMCP_OFFICE = os.environ.get("SMCP_OFFICE", "web-office")
# Where the view's Agent connects (None: this site's own URL, from the first request).
SMCP_SERVER_URL = os.environ.get("SMCP_SERVER_URL") or None
