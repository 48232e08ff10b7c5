#!/usr/bin/env python
"""Django's command line for the example site (e.g. ``python manage.py runserver``: with
``SMCP_SERVER_URL`` set, its views reach that Server's office through the Agent relay,
which the reloader's two processes share)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "smcp_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
