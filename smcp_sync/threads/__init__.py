"""Thread primitives shared by the Server, the Computer and the Agent: the worker
pool, the serial event thread, debouncing and the stop flag of a background thread.
"""
