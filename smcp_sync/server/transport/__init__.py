"""Sockets and HTTP: the Socket.IO/Engine.IO server (`engine.py`, the only server-side
module that touches the libraries' internals), the version gate before it, and the WSGI
servers that run it (werkzeug in threads, gunicorn's gthread and gevent workers).
"""
