"""Interop harness: the official A2C-SMCP Python SDK (a2c-smcp 0.4.2 and 0.1.6), each in its own venv.

* ``venv.official_sdk_python(version)`` builds/reuses that version's virtualenv;
* ``harness`` starts the scripts of ``scripts/`` (official server, computer, agent and a
  mcp 1.x echo MCP server) and reads their JSON-line output;
* ``WIRE_NOTES.md`` (0.1.6) and ``WIRE_NOTES_0.4.2.md`` record the SDKs' wire behaviour.
"""
