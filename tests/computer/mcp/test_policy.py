"""ServerPolicy refuses timings that make no sense, naming the field; zero is allowed
where it means "off" or "do not wait"."""

from __future__ import annotations

import pytest

from smcp_sync.computer.mcp.policy import ServerPolicy


@pytest.mark.parametrize("field", ["init_timeout", "request_timeout", "ping_timeout", "stop_timeout", "backoff_initial"])
def test_a_timeout_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=f"'{field}' must be > 0: 0"):
        ServerPolicy(**{field: 0})


@pytest.mark.parametrize("field", ["cold_wait", "health_interval", "stable_after"])
def test_a_wait_may_be_zero_but_not_negative(field: str) -> None:
    assert getattr(ServerPolicy(**{field: 0}), field) == 0
    with pytest.raises(ValueError, match=f"'{field}' must be >= 0: -1"):
        ServerPolicy(**{field: -1})
