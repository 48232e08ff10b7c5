"""Credentials masked in the log records of smcp_sync and of the libraries it drives.

Why: a URL or an upstream error reaches log records our code does not write: httpx logs
each request's URL, the mcp SDK logs its transport's exceptions with their tracebacks
(an `HTTPStatusError` quotes the whole URL, ``?api_key=…`` included), and a traceback
of our own may quote one too. Each record of those loggers is redacted as it is made
(`redaction.redact_text`: its message and its traceback), whatever handler then gets it.
A filter on a logger would see only the records of that very logger, not its children.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .redaction import redact_text

#: The loggers (and their children) whose records are redacted: ours, and those of the
#: libraries through which a configured URL, header or upstream error passes.
REDACTED_LOGGERS = frozenset(
    {"smcp_sync", "mcp", "httpx", "httpx2", "httpcore", "redis", "socketio", "engineio", "werkzeug", "gunicorn", "websocket"}
)

_lock = threading.Lock()
_installed = False


def redact_log_records() -> None:
    """Make every new record of `REDACTED_LOGGERS` redacted (once per process; the
    record factory in place before is kept and called first)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        made_by = logging.getLogRecordFactory()

        def redacted_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = made_by(*args, **kwargs)
            if record.name.partition(".")[0] in REDACTED_LOGGERS:
                _redact(record)
            return record

        logging.setLogRecordFactory(redacted_record)


def _redact(record: logging.LogRecord) -> None:
    """The record's message and traceback with their credentials masked (left as they
    are when there is nothing to mask, so handlers still see the message's template)."""
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the message: the handler reports that
        return
    shown = redact_text(message)
    if shown != message:
        record.msg, record.args = shown, None
    if record.exc_info and record.exc_info[1] is not None:
        trace = logging.Formatter().formatException(record.exc_info)
        shown = redact_text(trace)
        if shown != trace:  # the text replaces the exception, which still quotes them
            record.exc_text, record.exc_info = shown, None
