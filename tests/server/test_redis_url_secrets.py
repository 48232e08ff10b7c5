"""A Redis URL's password, as user info or as ``?password=`` (redis-py reads both), is in
no log record of the Server and no line `smcp-sync server` prints, while the "Redis
unreachable" warning still says where (docs/server/security-redaction.md)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from .peers import wait_until
from smcp_sync.server import RedisOptions

pytestmark = pytest.mark.timeout(60)

pytest.importorskip("redis")

USER, PASSWORD, QUERY_PASSWORD = "user-5ecret-81", "pw-5ecret-82", "pw-5ecret-83"
#: Nothing listens on port 1: every connection is refused at once.
UNREACHABLE = f"redis://{USER}:{PASSWORD}@127.0.0.1:1/0?password={QUERY_PASSWORD}"
CLI = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())"]


def assert_no_secret(where: str, text: str) -> None:
    for secret in (USER, PASSWORD, QUERY_PASSWORD):
        assert secret not in text, f"{secret} in {where}: {text[:2000]}"


def test_the_unreachable_warning_names_the_host_not_the_password(server_factory, every_log_record):
    server_factory(redis=RedisOptions(UNREACHABLE))
    wait_until(lambda: any("unreachable" in record for record in every_log_record))
    unreachable = next(record for record in every_log_record if "unreachable" in record)
    assert "127.0.0.1:1" in unreachable, unreachable
    for record in every_log_record:
        assert_no_secret("a log record", record)


def test_smcp_sync_server_prints_no_redis_password(no_leaks):
    proc = subprocess.Popen(
        [*CLI, "server", "--port", "0", "--redis", UNREACHABLE],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # until the warning (the registry retries: the stream goes on)
            seen.append(line)
            if "unreachable" in line:
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, rest = proc.communicate(timeout=30)
    assert any("unreachable" in line and "127.0.0.1:1" in line for line in seen), "".join(seen) + rest
    assert_no_secret("smcp-sync server's output", "".join(seen) + rest + stdout)


def test_a_redis_url_that_cannot_be_read_is_refused_without_its_password(no_leaks):
    done = subprocess.run(
        [*CLI, "server", "--port", "0", "--redis", f"redis://{USER}:{PASSWORD}@127.0.0.1:notaport/0?password={QUERY_PASSWORD}"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Redis URL" in done.stderr, done.stderr
    assert_no_secret("smcp-sync server's output", done.stderr + done.stdout)
