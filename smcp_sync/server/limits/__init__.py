"""The Server's limits: what one address, one socket and one request may take (connections
per address, failed authentications, a send backlog's bytes, an HTTP request's deadlines)
and the `ServerLimits` that sets them. Imports nothing of the Server's other wings.
"""
