"""Offices as data: the office rules as pure functions, the registry that keeps sessions
and offices (in memory), and how every handler validates a payload and answers. Imports
no other wing of the Server.
"""
