"""Multi-process hosts as real processes, each worker with the one line of the app
(`Agent.via_relay`): every answer checked, exactly one Agent in the office
(docs/hosts/relay.md). In the `edges` share: each starts a host and its workers."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from scale_out.parts import RedisServer
from smcp_sync import Agent
from smcp_sync.relay.place import RelayPlace

from .conftest import OFFICE, TESTS, wait_until

pytestmark = pytest.mark.timeout(240)

HERE = Path(__file__).resolve().parent
REQUESTS, CONCURRENT = 100, 10


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str, timeout: float = 60) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())


def hammer(base: str) -> list[dict[str, Any]]:
    """`REQUESTS` echo requests, `CONCURRENT` at a time; each answer is checked."""
    texts = [f"request-{n}" for n in range(REQUESTS)]
    with ThreadPoolExecutor(CONCURRENT) as pool:
        answers = list(pool.map(lambda text: get(f"{base}/echo?text={text}"), texts))
    assert [a["echo"] for a in answers] == texts
    return answers


def wait_serving(process: subprocess.Popen[bytes], base: str, timeout: float = 90) -> None:
    """Until the host answers (a request that needs the relay: started by the first)."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, f"the host exited with {process.returncode}"
        try:
            get(f"{base}/echo?text=ready", timeout=30)
            return
        except OSError:
            assert time.monotonic() < deadline, f"{base} not answering within {timeout}s"
            time.sleep(0.2)  # a server starting in another process: nothing to wait on but it


def host_env(office: Any, place: RelayPlace) -> dict[str, str]:
    return {**os.environ, "SMCP_URL": office.url, "SMCP_OFFICE": OFFICE, "SMCP_RELAY_DIR": str(place.folder),
            "PYTHONPATH": os.pathsep.join([str(HERE), TESTS])}  # fmt: skip


@pytest.mark.parametrize(
    "options",
    [["-w", "2"], ["-w", "2", "--preload"], ["-w", "2", "-k", "gthread", "--threads", "4"]],
    ids=["sync", "sync-preload", "gthread"],
)
def test_gunicorn_workers_share_the_seat(office: Any, place: RelayPlace, options: list[str]) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    host = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", *options, "--bind", f"127.0.0.1:{port}", "host_app:application"],
        env=host_env(office, place), cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_serving(host, base)
        answers = hammer(base)
        assert len({a["pid"] for a in answers}) == 2  # both workers answered
        assert get(f"{base}/agents") == ["agent"]
    finally:
        host.send_signal(signal.SIGTERM)
        host.wait(30)


@pytest.fixture
def broker() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server on PATH")
    with RedisServer(binary) as redis_server:
        yield redis_server.url


def test_celery_prefork_children_share_the_seat(office: Any, place: RelayPlace, broker: str) -> None:
    env = {**host_env(office, place), "SMCP_BROKER": broker}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "-P", "prefork", "-c", "2",
         "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "WARNING"],
        env=env, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with _celery_client(env) as tasks:
            texts = [f"task-{n}" for n in range(REQUESTS)]
            with ThreadPoolExecutor(CONCURRENT) as pool:
                answers = list(pool.map(lambda text: tasks.echo.delay(text).get(timeout=120), texts))
            assert [a["echo"] for a in answers] == texts
            assert len({a["pid"] for a in answers}) == 2  # both children answered
            assert tasks.agents.delay().get(timeout=60) == ["agent"]
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)


@contextlib.contextmanager
def _celery_client(env: dict[str, str]) -> Iterator[Any]:
    """The task module as a client imports it (its relay Agent is made and never used here)."""
    saved = {k: os.environ.get(k) for k in ("SMCP_URL", "SMCP_OFFICE", "SMCP_RELAY_DIR", "SMCP_BROKER")}
    os.environ.update({k: env[k] for k in saved})
    sys.path.insert(0, str(HERE))
    try:
        import celery_app

        try:
            yield celery_app
        finally:
            celery_app.agent.close()
            celery_app.app.close()
            sys.modules.pop("celery_app", None)
    finally:
        sys.path.remove(str(HERE))
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_django_runserver_with_its_reloader_shares_the_seat(office: Any, place: RelayPlace) -> None:
    """The example site's Agent made in `AppConfig.ready()`, which the reloader's parent
    and its serving child both run."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    site = HERE.parents[1] / "examples" / "django_project"
    env = {**host_env(office, place), "SMCP_SERVER_URL": office.url, "PYTHONPATH": str(site)}
    host = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"],
        env=env, cwd=site, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        call = f"{base}/computers/c1/tools/tools__echo"
        wait_until(lambda: _answers(call, "ready"), 90, "runserver answers")
        texts = [f"view-{n}" for n in range(REQUESTS)]
        with ThreadPoolExecutor(CONCURRENT) as pool:
            answers = list(pool.map(lambda text: _post(call, {"text": text}), texts))
        assert [a["content"][0]["text"] for a in answers] == texts
        with Agent.via_relay("django-agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
            assert [s.name for s in agent.list_room(timeout=20) if s.role == "agent"] == ["django-agent"]
        assert len(psutil.Process(host.pid).children()) == 1  # the reloader's serving child
    finally:
        os.killpg(host.pid, signal.SIGTERM)
        host.wait(30)


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def _answers(url: str, text: str) -> bool:
    try:
        return bool(_post(url, {"text": text})["content"][0]["text"] == text)
    except OSError:
        return False
