"""Thread primitives shared by the Server, the Computer and the Agent: the worker
pool, the serial event thread, debouncing, deadlines, the stop flag of a background
thread, and when a thread may write to its socket itself.
"""

from .deadlines import Deadline, Deadlines
from .debounce import Debouncer
from .serial import Batches, SerialThread
from .thread_stop import join_stopped
from .worker_pool import WorkerPool
from .write_at_once import WRITE_AT_ONCE_MAX, room_to_write

__all__ = [
    "Batches",
    "Deadline",
    "Deadlines",
    "Debouncer",
    "SerialThread",
    "WorkerPool",
    "WRITE_AT_ONCE_MAX",
    "join_stopped",
    "room_to_write",
]
