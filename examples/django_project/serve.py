"""Serve the Django site and the SMCP Server from one process, with werkzeug's threaded
WSGI server (it hands the raw socket to the websocket upgrade; Django's runserver does
not). One process: offices and sessions live in its memory.

    python serve.py [--host 127.0.0.1] [--port 8000]

Runs until Ctrl-C or SIGTERM. For production use gunicorn instead (see README.md).
"""

from __future__ import annotations

import argparse
import signal

from werkzeug.serving import make_server

from smcp_site import wsgi  # first: it chooses the settings module
from smcp_site.smcp import shutdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    args = parser.parse_args()

    httpd = make_server(args.host, args.port, wsgi.application, threaded=True)
    print(f"serving on http://{args.host}:{httpd.server_port}", flush=True)
    # Ctrl-C and SIGTERM both stop it (also when started where SIGINT is ignored, as
    # background jobs of a shell are).
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.default_int_handler)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        shutdown()  # websockets never end by themselves
        httpd.server_close()


if __name__ == "__main__":
    main()
