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
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import psutil
import pytest
from mcp_servers import logged_lines
from notebook_parts import run_interrupted

from scale_out.parts import RedisServer
from smcp_sync import Agent
from smcp_sync.relay.link import relay_status
from smcp_sync.relay.place import RelayPlace

from .conftest import OFFICE, TESTS, running_relay, wait_until

pytestmark = pytest.mark.timeout(240)

HERE = Path(__file__).resolve().parent
REQUESTS, CONCURRENT = 400, 20
#: Descriptors the relay holds per worker request socket: the socket, and the duplicate
#: its answers are written through from the thread that has them (`wire.Channel.write_from_elsewhere`).
RELAY_FDS_PER_SOCKET = 2
#: Requests before the threads and descriptors are counted (pools grown to the load).
WARM_UP = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str, timeout: float = 60) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())


def hammer(base: str, requests: int = REQUESTS) -> list[dict[str, Any]]:
    """`requests` echo requests, `CONCURRENT` at a time; each answer is checked."""
    texts = [f"request-{n}" for n in range(requests)]
    with ThreadPoolExecutor(CONCURRENT) as pool:
        answers = list(pool.map(lambda text: get(f"{base}/echo?text={text}"), texts))
    assert [a["echo"] for a in answers] == texts
    return answers


def usage(processes: list[psutil.Process]) -> dict[int, tuple[int, int]]:
    """Each process's threads and open file descriptors, by pid."""
    return {p.pid: (p.num_threads(), p.num_fds()) for p in processes}


def host_and_relay(host: subprocess.Popen[bytes], place: RelayPlace) -> list[psutil.Process]:
    """The host's processes (its workers with it) and the relay's."""
    root = psutil.Process(host.pid)
    relay = running_relay(place)
    assert relay is not None, "no relay runs"
    return [root, *root.children(recursive=True), psutil.Process(relay)]


def stays_flat(processes: list[psutil.Process], load: Callable[[], Any]) -> Any:
    """`load()`, after which no process of the host or the relay has grown by more threads
    or file descriptors than there are requests at once (`CONCURRENT`: a worker's pool of
    relay sockets and the relay's thread per socket grow to the load a process got at
    once, which a warm-up cannot fix for every worker; the relay holds
    `RELAY_FDS_PER_SOCKET` descriptors per socket), where one thread or descriptor kept
    per request would show `REQUESTS` of them."""
    before = usage(processes)
    result = load()
    grown: dict[int, Any] = {}

    def flat() -> bool:
        grown.clear()
        for pid, (threads, fds) in usage(processes).items():
            if threads > before[pid][0] + CONCURRENT or fds > before[pid][1] + RELAY_FDS_PER_SOCKET * CONCURRENT:
                grown[pid] = (before[pid], (threads, fds))
        return not grown

    try:
        wait_until(flat, 15, "threads and descriptors back near where they were")  # a thread ends after its request
    except AssertionError as exc:
        raise AssertionError(f"{exc}; grown (pid: before, now): {grown}") from None
    return result


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


@contextlib.contextmanager
def running(command: list[str], env: dict[str, str], cwd: Path = HERE) -> Iterator[subprocess.Popen[bytes]]:
    """The host as a process group of its own, SIGTERMed at the end (SIGKILLed if it
    lingers); its output's last lines go into a failure's message."""
    with tempfile.TemporaryFile() as output:
        host = subprocess.Popen(command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            yield host
        except BaseException as exc:
            output.seek(0)
            exc.add_note("the host's output ends:\n" + output.read().decode(errors="replace")[-3000:])
            raise
        finally:
            os.killpg(host.pid, signal.SIGTERM)
            try:
                host.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(host.pid, signal.SIGKILL)
                host.wait(30)


def serves_the_load(host: subprocess.Popen[bytes], base: str, place: RelayPlace, workers: int) -> None:
    """The host answers `REQUESTS` at `CONCURRENT`, every worker of it, with threads and
    descriptors flat, and the office has exactly one Agent."""
    wait_serving(host, base)
    hammer(base, WARM_UP)
    answers = stays_flat(host_and_relay(host, place), lambda: hammer(base))
    assert len({a["pid"] for a in answers}) == workers  # every worker answered
    assert get(f"{base}/agents") == ["agent"]


GUNICORN = {
    "sync": ["-w", "2"],
    "sync-preload": ["-w", "2", "--preload"],
    "gthread": ["-w", "2", "-k", "gthread", "--threads", "4"],
    "gevent": ["-w", "2", "-k", "gevent"],
    "gevent-preload": ["-w", "2", "-k", "gevent", "--preload"],
}


@pytest.mark.parametrize("options", GUNICORN.values(), ids=GUNICORN.keys())
def test_gunicorn_workers_share_the_seat(
    office: Any, place: RelayPlace, logs: dict[str, Path], options: list[str]
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "gunicorn", *options, "--bind", f"127.0.0.1:{port}",
               "--graceful-timeout", "5", "host_app:application"]  # fmt: skip  (a worker still booting when
    # SIGTERM comes holds gunicorn's exit for the whole graceful timeout, 30 s by default)
    with running(command, host_env(office, place)) as host:
        serves_the_load(host, base, place, workers=2)
        if "gevent" in options:
            long_calls_leave_the_hub_free_and_die_with_their_worker(host, base, place, office, logs)


def long_calls_leave_the_hub_free_and_die_with_their_worker(
    host: subprocess.Popen[bytes], base: str, place: RelayPlace, office: Any, logs: dict[str, Path]
) -> None:
    """Two minute-long calls in flight: the gevent workers answer other requests
    meanwhile (a wait that blocked the hub would hold up its worker's every request
    for the minute); the workers SIGKILLed mid-call, the MCP server sees both calls
    cancelled, and neither the relay nor the Server keeps anything pending."""
    started_log, cancel_log = logs["SMCP_TEST_STARTED_LOG"], logs["SMCP_TEST_CANCEL_LOG"]
    started, cancelled = len(logged_lines(started_log, timeout=0)), len(logged_lines(cancel_log, timeout=0))
    with ThreadPoolExecutor(2) as pool:
        sleeps = [pool.submit(get, f"{base}/sleep?seconds=60", 90) for _ in range(2)]
        assert len(logged_lines(started_log, started + 2, timeout=30)) == started + 2
        hammer(base, WARM_UP)
        assert not any(sleep.done() for sleep in sleeps)  # answered while both calls ran
        for worker in psutil.Process(host.pid).children():
            worker.kill()
        for sleep in sleeps:
            with pytest.raises(OSError):  # the worker died without answering
                sleep.result(30)
    lines = logged_lines(cancel_log, cancelled + 2, timeout=30)[cancelled:]
    assert [line.split()[0] for line in lines] == ["cancelled", "cancelled"]
    wait_until(lambda: relay_status(place, 5)["calls"] == 0, 30, "the relay's calls end")
    wait_until(lambda: len(office.pending) == 0, 30, "the Server has no call pending")


UWSGI = {"processes": [], "lazy-apps": ["--lazy-apps"]}


@pytest.mark.parametrize("options", UWSGI.values(), ids=UWSGI.keys())
def test_uwsgi_processes_share_the_seat(office: Any, place: RelayPlace, options: list[str]) -> None:
    """Without `--lazy-apps` the master imports the app and forks its workers (as
    `--preload`); with it each worker imports it."""
    pytest.importorskip("pyuwsgi", reason="the test extra's pyuwsgi runs uWSGI")
    port = free_port()
    command = [sys.executable, "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())", "--http-socket", f"127.0.0.1:{port}", "--master", "--processes", "2", "--die-on-term",
               "--need-app", "--module", "host_app:application", *options]  # fmt: skip
    with running(command, host_env(office, place)) as host:
        serves_the_load(host, f"http://127.0.0.1:{port}", place, workers=2)


@pytest.fixture
def broker() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server on PATH")
    with RedisServer(binary) as redis_server:
        yield redis_server.url


def test_celery_prefork_children_share_the_seat(office: Any, place: RelayPlace, broker: str) -> None:
    env = {**host_env(office, place), "SMCP_BROKER": broker}
    command = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "-P", "prefork", "-c", "2",
               "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "WARNING"]  # fmt: skip
    with running(command, env) as worker, _celery_client(env) as tasks:

        def echoes(count: int) -> list[dict[str, Any]]:
            texts = [f"task-{n}" for n in range(count)]
            with ThreadPoolExecutor(CONCURRENT) as pool:
                answers = list(pool.map(lambda text: tasks.echo.delay(text).get(timeout=120), texts))
            assert [a["echo"] for a in answers] == texts
            return answers

        echoes(WARM_UP)
        answers = stays_flat(host_and_relay(worker, place), lambda: echoes(REQUESTS))
        assert len({a["pid"] for a in answers}) == 2  # both children answered
        assert tasks.agents.delay().get(timeout=60) == ["agent"]


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
    call = f"http://127.0.0.1:{port}/computers/c1/tools/tools__echo"
    site = HERE.parents[1] / "examples" / "django_project"
    env = {**host_env(office, place), "SMCP_SERVER_URL": office.url, "PYTHONPATH": str(site)}
    with running([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"], env, cwd=site) as host:
        wait_until(lambda: _answers(call, "ready"), 90, "runserver answers")

        def views(count: int) -> None:
            texts = [f"view-{n}" for n in range(count)]
            with ThreadPoolExecutor(CONCURRENT) as pool:
                answers = list(pool.map(lambda text: _post(call, {"text": text}), texts))
            assert [a["content"][0]["text"] for a in answers] == texts

        views(WARM_UP)
        stays_flat(host_and_relay(host, place), lambda: views(REQUESTS))
        with Agent.via_relay("django-agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
            assert [s.name for s in agent.list_room(timeout=20) if s.role == "agent"] == ["django-agent"]
        assert len(psutil.Process(host.pid).children()) == 1  # the reloader's serving child


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def _answers(url: str, text: str) -> bool:
    try:
        return bool(_post(url, {"text": text})["content"][0]["text"] == text)
    except OSError:
        return False


NOTEBOOK_CELL = """
import json
from smcp_sync import Agent

agent = Agent.via_relay("agent", url={url!r}, office_id={office!r}, relay_dir={folder!r})
try:
    agent.call_tool("c1", "tools__sleep", {{"seconds": 3600}}, timeout=3600)
except KeyboardInterrupt as interrupt:
    notes = interrupt.__notes__
agent.close()
print(json.dumps(notes))
"""


def test_a_jupyter_kernel_interrupted_mid_call_through_the_relay(
    office: Any, place: RelayPlace, logs: dict[str, Path]
) -> None:
    """The notebook's interrupt button during a relay Agent's call: the MCP server sees
    the cancel, and the relay and the Server keep nothing of the call."""
    for module in ("nbformat", "nbclient", "ipykernel"):
        pytest.importorskip(module, reason="the Jupyter test needs nbformat, nbclient and ipykernel")
    started, cancelled = (len(logged_lines(logs[k], timeout=0)) for k in ("SMCP_TEST_STARTED_LOG", "SMCP_TEST_CANCEL_LOG"))
    cell = NOTEBOOK_CELL.format(url=office.url, office=OFFICE, folder=str(place.folder))
    [note] = run_interrupted(cell, logs["SMCP_TEST_STARTED_LOG"], started)
    assert note.startswith("smcp_sync: tool call 'tools__sleep' on computer 'c1' (req_id ") and note.endswith("cancel sent")
    now_cancelled = logged_lines(logs["SMCP_TEST_CANCEL_LOG"], cancelled + 1)
    assert [line.split()[0] for line in now_cancelled[cancelled:]] == ["cancelled"]
    wait_until(lambda: relay_status(place, 5)["calls"] == 0, 30, "the relay's call ends")
    wait_until(lambda: len(office.pending) == 0, 30, "the Server has no call pending")
