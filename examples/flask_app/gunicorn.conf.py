"""gunicorn settings for the Flask example (gunicorn reads ./gunicorn.conf.py by default).

One worker process: offices and sessions live in memory, in that process. The `gthread`
worker hands the raw socket to the websocket upgrade; each open connection (every
Computer and Agent, the view's own Agent included) holds one of its threads.

A websocket never ends by itself, so both stop paths drop them (`app.shutdown`): without
that, Ctrl-C hangs until the master kills the worker and SIGTERM waits out the whole
`graceful_timeout`. The dropped Computers and Agents see a lost connection and come
back once the app is up again.
"""

import signal

wsgi_app = "app:app"
bind = "127.0.0.1:8000"
worker_class = "gthread"
workers = 1
threads = 100
control_socket_disable = True  # gunicorn >= 24: no control socket file under ~/.gunicorn


def worker_int(worker):
    """Ctrl-C (SIGINT) and SIGQUIT, just before the worker exits."""
    from app import shutdown

    shutdown()


def post_worker_init(worker):
    """SIGTERM: once gunicorn has stopped taking requests (its own handler), drop the
    websockets so the graceful stop finishes in about a second."""
    from app import shutdown

    graceful_stop = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        graceful_stop(signum, frame)
        shutdown()

    signal.signal(signal.SIGTERM, on_sigterm)
