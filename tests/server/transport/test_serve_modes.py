"""`serve()`'s modes as configured for gunicorn (what no client can observe without
timing: how many connections the worker accepts), and the refusals of a mode that
cannot run. Each mode serving, refusing, limiting and stopping: test_cli_server.py,
test_cli_limits.py, tests/reliability/test_hostile_clients_serve.py."""

from __future__ import annotations

import gc
import importlib.util
import json
import resource
import signal
import subprocess
import sys
import urllib.request

import psutil
import pytest

from smcp_sync.server import SMCPServer
from smcp_sync.server.transport.gunicorn_runner import GC_THRESHOLDS, GRACEFUL_TIMEOUT, SPARE_FILES, GunicornServer

from ..peers import wait_until


def _runner(mode: str, **options: int | float) -> GunicornServer:
    settings = {"threads": 400, "connections": 10_000, "header_timeout": 5.0, **options}
    return GunicornServer(lambda: pytest.fail("nothing is served here"), host="127.0.0.1", port=0, mode=mode, **settings)


def test_gthread_accepts_twice_threads_past_gunicorns_default_of_1000():
    """docs/server/deployment.md: `--threads` caps the connections served at once, gunicorn
    accepts twice as many (it left its own 1,000 in place: 1,002 of 3,000 connected)."""
    config = _runner("threads", threads=3000).cfg
    assert (config.threads, config.worker_connections) == (3000, 6000)
    assert config.worker_class_str.endswith("._BoundedThreadWorker")


def test_gevent_caps_connections_and_reads_each_head_within_the_header_timeout():
    config = _runner("gevent", connections=12_000, header_timeout=2.5).cfg
    assert config.worker_connections == 12_000
    assert config.keepalive == 3  # gunicorn takes whole seconds
    assert config.worker_class_str == "smcp_sync.server.transport.gevent_worker.BoundedGeventWorker"


def test_gevent_mode_without_gevent_names_the_extra(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "gevent" else find_spec(name, *args))
    with pytest.raises(RuntimeError, match=r"pip install 'smcp_sync\[gevent\]'"):
        _runner("gevent")


def test_modes_that_cannot_run_are_refused():
    with pytest.raises(ValueError, match="mode must be one of threads, gevent, got 'eventlet'"):
        SMCPServer().serve(mode="eventlet")
    with pytest.raises(ValueError, match="async_mode is one of threading, gevent, got 'eventlet'"):
        SMCPServer(async_mode="eventlet")
    with pytest.raises(RuntimeError, match="needs the standard library patched by gevent first"):
        SMCPServer(async_mode="gevent")  # this process is not patched


#: In a child: a soft limit of 512 open files, then what the worker does for 2,000
#: connections; prints the soft limit in force.
RAISE_LIMIT = """
import resource
from smcp_sync.server.transport.gunicorn_runner import SPARE_FILES, _allow_open_files
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
_allow_open_files(2000 + SPARE_FILES)
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)
"""


def test_the_worker_raises_its_open_files_limit_for_its_connections():
    """docs/server/deployment.md: the usual soft limit (1,024) would refuse connections long
    before gevent's 10,000."""
    out = subprocess.run([sys.executable, "-c", RAISE_LIMIT], capture_output=True, text=True, timeout=60, check=True)
    soft, hard = (int(value) for value in out.stdout.split())
    wanted = 2000 + SPARE_FILES
    assert soft == (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)) > 512


#: In a child: `serve()`'s gunicorn in mode argv[1], serving an app that answers the
#: worker's garbage collector thresholds; prints its URL once bound.
GC_IN_THE_WORKER = """
import gc, json, sys
from smcp_sync.server.limits.request_deadlines import RequestDeadlines
from smcp_sync.server.transport.gunicorn_runner import GunicornServer, Served

def thresholds(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(gc.get_threshold()).encode()]

def build():
    return Served(thresholds, lambda: None, RequestDeadlines(5.0, 5.0))

GunicornServer(build, host="127.0.0.1", port=0, mode=sys.argv[1], threads=4, connections=10, header_timeout=5.0,
               on_ready=lambda url: print(url, flush=True)).serve()
"""


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("mode", ["threads", "gevent"])
def test_the_worker_collects_garbage_less_often_than_cpythons_default(mode):
    """benchmarks/README.md, routing at size: at 1,000 offices a routed call's objects
    outlived CPython's young collections and brought on full ones."""
    if mode == "gevent":
        pytest.importorskip("gevent", reason="the gevent extra")
    child = subprocess.Popen([sys.executable, "-c", GC_IN_THE_WORKER, mode], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert tuple(json.load(answer)) == GC_THRESHOLDS != gc.get_threshold()
    finally:
        child.terminate()  # gunicorn's master stops its worker on SIGTERM
        child.communicate(timeout=30)
    assert child.returncode == 0


#: In a child: `serve()`'s gunicorn in mode argv[1], whose worker, once forked, says so
#: (file argv[2]/booting) and boots only once the test has signalled the master (file
#: argv[2]/signalled): a stop that comes while a worker boots; a worker that loaded the
#: app says so (file argv[2]/built).
STOP_WHILE_BOOTING = """
import os, sys, time
from pathlib import Path
from smcp_sync.server.limits.request_deadlines import RequestDeadlines
from smcp_sync.server.transport import gunicorn_runner

mode, folder = sys.argv[1], Path(sys.argv[2])
module, name = gunicorn_runner.WORKER_CLASSES[mode].rsplit(".", 1)
__import__(module)
worker_class = getattr(sys.modules[module], name)
boot = worker_class.init_process

def init_process(self):
    (folder / "booting").touch()
    deadline = time.monotonic() + 30
    while not (folder / "signalled").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    boot(self)

worker_class.init_process = init_process

def build():
    (folder / "built").touch()
    return gunicorn_runner.Served(lambda environ, start_response: [], lambda: None, RequestDeadlines(5.0, 5.0))

try:
    gunicorn_runner.GunicornServer(build, host="127.0.0.1", port=0, mode=mode, threads=4, connections=10,
                                   header_timeout=5.0).serve()
except KeyboardInterrupt:
    pass
"""


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize(("mode", "signum"), [("threads", signal.SIGTERM), ("gevent", signal.SIGINT)])
def test_a_stop_while_the_worker_boots_ends_it_without_the_graceful_wait(mode, signum, tmp_path):
    """The master's handlers, inherited by a worker before gunicorn sets its own, only
    queue the signal for the master's loop: the worker went on to load the app and serve
    until the master killed it, 10 s later. Now the stop ends the booting worker there."""
    if mode == "gevent":
        pytest.importorskip("gevent", reason="the gevent extra")
    child = subprocess.Popen([sys.executable, "-c", STOP_WHILE_BOOTING, mode, str(tmp_path)], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (tmp_path / "booting").exists() or child.poll() is not None, timeout=30)
        assert child.poll() is None, "no worker forked"
        workers = psutil.Process(child.pid).children()
        child.send_signal(signum)
        _, booting = psutil.wait_procs(workers, timeout=GRACEFUL_TIMEOUT / 2)
        (tmp_path / "signalled").touch()  # a worker that ignored the stop goes on to boot
        _, stderr = child.communicate(timeout=30)
        assert not booting, "the booting worker ignored the stop: its master waited out the graceful timeout"
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, stderr[-3000:]
    assert "SIGKILL" not in stderr, stderr[-3000:]  # gunicorn: "Worker (pid:N) was sent SIGKILL!"
    assert not (tmp_path / "built").exists(), "the worker loaded the app after the stop"
