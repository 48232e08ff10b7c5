"""Where an input's value comes from besides the host: an `A2C_SMCP_<ID>` environment
variable, and what an earlier answer left behind (docs/computer/inputs.md).

Same names and places as a2c-smcp 0.4.2, so values set up for its Computer are found by
ours and the other way round:

* the variable is ``A2C_SMCP_`` + the id with every character outside ``[A-Za-z0-9_]``
  replaced by ``_`` (case kept, nothing folded or trimmed); two ids naming one variable
  are refused when the inputs are defined (one would silently take the other's value);
* a `password: true` input is remembered in the OS keyring (service ``a2c-computer``,
  the id as user name) through the optional `keyring` package (the ``[keyring]`` extra);
  without a usable keyring it is not remembered at all, never written in clear;
* other prompt and pick inputs go to ``$XDG_STATE_HOME/a2c/input-values.json`` (else
  ``~/.local/state/a2c/``), a JSON object by id, written atomically with mode 0600;
  `command` inputs are never remembered (the command runs each time).

No value read or written here reaches a log line.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

from ...protocol.errors import BadRequestError
from ...protocol.models import MCPServerInput, PickStringInput, PromptStringInput

log = logging.getLogger(__name__)

ENV_PREFIX = "A2C_SMCP_"
KEYRING_SERVICE = "a2c-computer"
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")


def env_var_name(input_id: str) -> str:
    """The environment variable an input's value is read from."""
    return ENV_PREFIX + _NOT_IN_NAME.sub("_", input_id)


def check_env_names(input_ids: Iterable[str]) -> None:
    """400 naming the ids when two of them read the same variable."""
    by_name: dict[str, list[str]] = {}
    for input_id in input_ids:
        by_name.setdefault(env_var_name(input_id), []).append(input_id)
    clashes = {name: ids for name, ids in sorted(by_name.items()) if len(ids) > 1}
    if clashes:
        listed = "; ".join(f"{ids} -> {name}" for name, ids in clashes.items())
        raise BadRequestError(
            f"input ids that read the same environment variable, rename one: {listed}",
            details={"inputs": sorted(i for ids in clashes.values() for i in ids)},
        )


def default_values_file(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/a2c/input-values.json`` (a relative XDG_STATE_HOME is ignored, as
    the XDG spec says), else ``~/.local/state/a2c/input-values.json``."""
    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME", "")
    base = Path(state) if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "a2c" / "input-values.json"


def _is_secret(item: MCPServerInput) -> bool:
    return isinstance(item, PromptStringInput) and bool(item.password)


class InputMemory:
    """Answers remembered across runs: secrets in the keyring, the rest in `values_file`
    (None: `default_values_file()`). Thread-safe."""

    def __init__(
        self, values_file: str | os.PathLike[str] | None = None, keyring_service: str = KEYRING_SERVICE
    ) -> None:
        self.values_file = Path(values_file) if values_file is not None else default_values_file()
        self._service = keyring_service
        self._lock = threading.Lock()
        self._said_no_keyring = False

    def recall(self, item: MCPServerInput) -> Any:
        """The remembered value of `item`, or None."""
        if _is_secret(item):
            return self._keyring_call("get_password", item.id)
        if isinstance(item, (PromptStringInput, PickStringInput)):
            with self._lock:
                return self._load().get(item.id)
        return None

    def remember(self, item: MCPServerInput, value: Any) -> None:
        """Keep an answer for the next run (secrets only where a keyring is usable)."""
        if _is_secret(item):
            self._keyring_call("set_password", item.id, str(value))
        elif isinstance(item, (PromptStringInput, PickStringInput)):
            with self._lock:
                values = self._load()
                values[item.id] = value
                self._write(values)

    def _keyring_call(self, operation: str, *args: str) -> Any:
        try:
            import keyring  # the optional [keyring] extra
            from keyring.errors import NoKeyringError
        except ImportError:
            log.debug("no keyring package: password inputs are not remembered")
            return None
        try:
            return getattr(keyring, operation)(self._service, *args)
        except NoKeyringError:  # a machine without a keyring service: expected, said once
            if not self._said_no_keyring:
                self._said_no_keyring = True
                log.info("no usable keyring backend: password inputs are not remembered")
            return None
        except Exception as exc:  # a locked or failing store
            log.warning("keyring %s for input %r failed (%s): not remembered", operation, args[0], type(exc).__name__)
            return None

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.values_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("remembered input values in %s unreadable (%s): ignored", self.values_file, type(exc).__name__)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, values: Mapping[str, Any]) -> None:
        folder = self.values_file.parent
        folder.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".input-values-", dir=folder)  # created 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                json.dump(values, out, ensure_ascii=False, indent=2)
            os.replace(temporary, self.values_file)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
