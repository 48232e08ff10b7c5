"""How long a client keeps asking to re-join its office after a reconnect.

A refused re-join is often only early: after a Server process dies its clients reconnect
to another within a second, while their old sessions still hold their places until the
dead process's heartbeat expires (docs/server/scale-out.md: about 6 s), and a Server whose
Redis is recovering answers 500 until it has written its members back. So refusals that
end by themselves are retried with a growing pause, for up to a minute (as the Rust SDK
does for its office refusals); any other refusal is final at once.
"""

from __future__ import annotations

from typing import Iterator

import attrs

from ..protocol.errors import ErrorCode

#: Refusals that a moment may lift: the office's Agent seat or the name is held by a
#: session that is ending (4101, 403), the Server's registry is unavailable (500), no answer (408).
RETRIED_CODES = frozenset({ErrorCode.ROOM_FULL, ErrorCode.FORBIDDEN, ErrorCode.INTERNAL_ERROR, ErrorCode.TIMEOUT})


@attrs.frozen
class RejoinPolicy:
    """The first pause in seconds, doubled after each refusal up to `delay_max`; no
    attempt starts after `give_up_after` seconds."""

    delay: float = 0.25
    delay_max: float = 1.0
    give_up_after: float = 60.0

    def pauses(self) -> Iterator[float]:
        """The pauses between attempts, until their sum would pass `give_up_after`."""
        spent, delay = 0.0, self.delay
        while spent + delay <= self.give_up_after:
            yield delay
            spent += delay
            delay = min(delay * 2, self.delay_max)
