"""Several Server processes sharing offices through Redis: the Redis registry, its key
prefix, the other processes' members as last read, and the publisher thread that keeps
Redis off every socket's thread. Imports only the `offices` wing.
"""
