"""The Agent relay: one process per host that holds Agent seats (one per Server URL,
office and Agent name) for every worker process of the host, so that gunicorn or Celery
workers and Django's reloader pair share an office's one Agent seat
(`Agent.via_relay`; docs/ARCHITECTURE.md, The Agent relay; docs/hosts/relay.md).

`process` is the relay, `requests` what a worker may ask it, `seat_table` and `seats`
its seats, `worker_socket` a worker's request socket there (answers written by the
thread they come on, a worker gone mid-call noticed);
`link` and `transport` are the workers' side; `wire`, `place` and `start` are shared:
messages, the private folder, starting a relay once.
"""
