"""The `server` extra: an Agent/Computer install has no werkzeug or gunicorn, and what
needs them says which extra to install. Run in a child interpreter in which both
libraries cannot be imported (as on such an install)."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[1]
HINT = "the SMCP Server needs the 'server' extra (werkzeug is not installed): pip install 'smcp_sync[server]'"
WITHOUT_EXTRA = 'import sys; sys.modules["werkzeug"] = sys.modules["gunicorn"] = None\n'


def without_extra(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA + code, *args], capture_output=True, text=True, timeout=50, stdin=subprocess.DEVNULL
    )


def test_the_extra_holds_the_wsgi_servers_and_the_base_install_does_not() -> None:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    base = config["options"]["install_requires"]
    extras = config["options.extras_require"]
    assert "werkzeug" not in base and "gunicorn" not in base
    assert {line.split(">")[0] for line in extras["server"].split()} == {"werkzeug", "gunicorn"}
    assert set(extras["server"].split()) <= set(extras["test"].split())


def test_agents_and_computers_work_and_the_server_names_the_extra() -> None:
    done = without_extra(
        "from smcp_sync import Agent, Computer\n"
        "Computer('c').close(); Agent('a').close()\n"
        "import smcp_sync.server.auth, smcp_sync.server.offices.registry\n"
        "try:\n"
        "    from smcp_sync import SMCPServer\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == HINT + "\n"


@pytest.mark.parametrize("command", [["server", "--port", "0"], ["demo", "--port", "0"]])
def test_the_commands_that_run_a_server_say_which_extra_they_need(command: list[str]) -> None:
    done = without_extra("from smcp_sync.cli import main; sys.exit(main(sys.argv[1:]))", *command)
    assert done.returncode == 1
    assert done.stderr == f"smcp-sync {command[0]}: {HINT}\n"


def test_the_other_commands_need_no_extra() -> None:
    done = without_extra("from smcp_sync.cli import main; sys.exit(main(sys.argv[1:]))", "agent", "--help")
    assert done.returncode == 0 and "usage: smcp-sync agent" in done.stdout, done.stderr
