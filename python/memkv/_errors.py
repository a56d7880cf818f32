"""The exceptions of memkv: one class per status code, under memkv.Error.

The codes are those of the wire protocol, the C API (MEMKV_*) and the C++
memkv::StatusCode; they never change. This module imports nothing of the
extension, which looks these classes up (_BY_CODE) when it is imported.
"""

import enum
from typing import Dict, Optional, Type


class StatusCode(enum.IntEnum):
    """Status codes, as in memkv/status.h and on the wire."""

    OK = 0
    NOT_FOUND = 1
    INVALID_ARGUMENT = 2
    DEADLINE_EXCEEDED = 3
    UNAVAILABLE = 4
    AUTH_FAILED = 5
    UNSUPPORTED_VERSION = 6
    TOO_LARGE = 7
    RESOURCE_EXHAUSTED = 8
    CORRUPTION = 9
    PROTOCOL_ERROR = 10
    INTERNAL = 11
    IO_ERROR = 12
    FAILED_PRECONDITION = 13
    PERMISSION_DENIED = 14
    BUSY = 15
    DRAINING = 16


class Error(Exception):
    """Base of every memkv error: .code is the status code (an int), .message the text."""

    code: int = -1

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            # A code this version does not know stays a plain int.
            self.code = StatusCode(code) if code in StatusCode._value2member_map_ else code


class NotFound(Error):
    """The key is absent (a miss)."""
    code = StatusCode.NOT_FOUND


class InvalidArgument(Error, ValueError):
    """An argument or option outside the documented rules (also a ValueError)."""
    code = StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(Error):
    """The call's deadline (timeout_ms) passed."""
    code = StatusCode.DEADLINE_EXCEEDED


class Unavailable(Error):
    """Server unreachable, connection lost, or shutting down."""
    code = StatusCode.UNAVAILABLE


class AuthFailed(Error):
    """Wrong auth key, or a tampered or replayed frame."""
    code = StatusCode.AUTH_FAILED


class UnsupportedVersion(Error):
    """The peer speaks a newer wire version."""
    code = StatusCode.UNSUPPORTED_VERSION


class TooLarge(Error):
    """A key, value or batch over a limit, or a destination buffer smaller than the value."""
    code = StatusCode.TOO_LARGE


class ResourceExhausted(Error):
    """The store is full and nothing is evictable right now."""
    code = StatusCode.RESOURCE_EXHAUSTED


class Corruption(Error):
    """A checksum mismatch."""
    code = StatusCode.CORRUPTION


class ProtocolError(Error):
    """A malformed frame."""
    code = StatusCode.PROTOCOL_ERROR


class Internal(Error):
    """A bug or an unexpected OS failure."""
    code = StatusCode.INTERNAL


class IoError(Error):
    """A file or device operation failed on the server."""
    code = StatusCode.IO_ERROR


class FailedPrecondition(Error):
    """The system is not in a state that allows the call (e.g. the client is closed)."""
    code = StatusCode.FAILED_PRECONDITION


class PermissionDenied(Error):
    """The credential does not allow the call (a write with a read-only tenant's key)."""
    code = StatusCode.PERMISSION_DENIED


class Busy(Error):
    """The server is overloaded and shed the put: not a failure. Skip the
    store (the value is simply not there later) and go on."""
    code = StatusCode.BUSY


class Draining(Error):
    """The server is draining and takes no new keys. The client itself puts
    such a key on the next server, so callers rarely see this."""
    code = StatusCode.DRAINING


_BY_CODE: Dict[int, Type[Error]] = {int(cls.code): cls for cls in Error.__subclasses__()}

# Shown as memkv.NotFound (where users meet them), not memkv._errors.NotFound.
for _cls in (Error, *_BY_CODE.values()):
    _cls.__module__ = "memkv"
