"""What `smcp-sync demo` needs at run time, shipped inside the package so that
``pip install smcp_sync && smcp-sync demo`` works anywhere: the example MCP servers
(`servers`, run as ``python -m smcp_sync.demo.servers.<name>``), the sample documents
they serve, and the walkthrough itself.

Kept import-light on purpose: every example MCP server process imports this package.
"""

from pathlib import Path

#: The bundled sample documents (Markdown, CSV, text) the example servers serve by default.
SAMPLE_DOCUMENTS = Path(__file__).resolve().parent / "documents"

#: The office the demo's roles join unless told otherwise.
DEFAULT_OFFICE = "demo-office"
