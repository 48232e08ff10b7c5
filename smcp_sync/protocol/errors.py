"""Error codes of spec/error-handling.md and the exceptions that carry them.

One exception class per code family, with a subclass per code where callers plausibly
want to catch it alone. `SMCPError.from_wire` reads both the nested spec form
``{"error": {"code", "message", "details"}}`` and the flat form later SDKs emit, so a
caller gets the same typed exception whoever produced the error.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Mapping


class ErrorCode(enum.IntEnum):
    BAD_REQUEST = 400
    UNAUTHORIZED = 401
    FORBIDDEN = 403
    NOT_FOUND = 404
    TIMEOUT = 408
    INTERNAL_ERROR = 500
    TOOL_NOT_FOUND = 4001
    TOOL_DISABLED = 4002
    TOOL_EXECUTION_FAILED = 4003
    TOOL_TIMEOUT = 4004
    TOOL_REQUIRES_CONFIRMATION = 4005
    ROOM_FULL = 4101
    ROOM_NOT_FOUND = 4102
    NOT_IN_ROOM = 4103
    CROSS_ROOM_ACCESS = 4104
    DOCUMENT_NOT_FOUND = 4201
    PAGE_OUT_OF_RANGE = 4202
    ELEMENT_NOT_FOUND = 4203
    INVALID_DPE_URI = 4204


_CLASS_BY_CODE: dict[int, type[SMCPError]] = {}


class SMCPError(Exception):
    """A protocol failure: `code` (see `ErrorCode`), human `message`, structured `details`.

    `details` must never carry secrets, host paths or stack traces: it goes on the wire.
    """

    default_code: ClassVar[int] = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.code = int(code if code is not None else self.default_code)
        self.message = message
        self.details = dict(details or {})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        codes = cls.__dict__.get("codes", ())
        for code in codes:
            _CLASS_BY_CODE[int(code)] = cls
        if codes:
            cls.default_code = codes[0]

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, details={self.details!r})"

    def __reduce__(self):  # keep code/details across pickling (multiprocessing, futures)
        return (_rebuild, (type(self), self.message, self.code, self.details))

    def to_wire(self) -> dict[str, Any]:
        """The spec's nested error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}

    @staticmethod
    def for_code(code: int, message: str, details: Mapping[str, Any] | None = None) -> SMCPError:
        """The most specific exception class for `code` (unknown codes give a plain SMCPError)."""
        cls = _CLASS_BY_CODE.get(int(code), SMCPError)
        return cls(message, code=code, details=details)

    @staticmethod
    def from_wire(data: Any) -> SMCPError | None:
        """The error carried by an answer, or None when `data` is not an error object."""
        if not isinstance(data, Mapping):
            return None
        body = data.get("error") if isinstance(data.get("error"), Mapping) else data
        code, message = body.get("code"), body.get("message")
        if isinstance(code, bool) or not isinstance(code, int) or not isinstance(message, str):
            return None
        if body is data and not _looks_flat(data):
            return None
        details = body.get("details")
        return SMCPError.for_code(code, message, details if isinstance(details, Mapping) else None)


def cut_short(text: str, limit: int = 200) -> str:
    """`text` cut to at most `limit` characters: refusals quote what they refuse, and a
    huge value must make neither a huge message nor huge details (both go back on the
    wire, and into logs)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _looks_flat(data: Mapping[str, Any]) -> bool:
    """A flat error has an error code (every spec code is >= 400) and only error keys: a
    result that merely has a `code` field, or a ``{"code": 0, "message": "ok"}`` success
    envelope, is not one."""
    return data["code"] >= 400 and set(data) <= {"code", "message", "details", "req_id", "error_code", "data"}


def _rebuild(cls: type[SMCPError], message: str, code: int, details: dict[str, Any]) -> SMCPError:
    return cls(message, code=code, details=details)


class BadRequestError(SMCPError):
    codes = (ErrorCode.BAD_REQUEST,)


class AuthError(SMCPError):
    codes = (ErrorCode.UNAUTHORIZED,)


class ForbiddenError(SMCPError):
    codes = (ErrorCode.FORBIDDEN,)


class OfficeError(ForbiddenError):
    """Office (room) rule violations: 4101–4104."""

    codes = (ErrorCode.ROOM_FULL, ErrorCode.ROOM_NOT_FOUND, ErrorCode.NOT_IN_ROOM, ErrorCode.CROSS_ROOM_ACCESS)


class NotFoundError(SMCPError):
    codes = (ErrorCode.NOT_FOUND,)


class SMCPTimeoutError(SMCPError, TimeoutError):
    """Also a builtin `TimeoutError`, so generic timeout handling catches it."""

    codes = (ErrorCode.TIMEOUT,)


class InternalError(SMCPError):
    codes = (ErrorCode.INTERNAL_ERROR,)


class ToolError(SMCPError):
    """Tool-call failures 4001–4005."""

    codes = (
        ErrorCode.TOOL_NOT_FOUND,
        ErrorCode.TOOL_DISABLED,
        ErrorCode.TOOL_EXECUTION_FAILED,
        ErrorCode.TOOL_REQUIRES_CONFIRMATION,
    )


class ToolTimeoutError(ToolError, SMCPTimeoutError):
    codes = (ErrorCode.TOOL_TIMEOUT,)


class FinderError(SMCPError):
    """Finder document-system failures 4201–4203."""

    codes = (ErrorCode.DOCUMENT_NOT_FOUND, ErrorCode.PAGE_OUT_OF_RANGE, ErrorCode.ELEMENT_NOT_FOUND)


class InvalidURIError(FinderError):
    """A `dpe://` (4204) or `window://` URI that fails validation; the message says which rule."""

    codes = (ErrorCode.INVALID_DPE_URI,)
