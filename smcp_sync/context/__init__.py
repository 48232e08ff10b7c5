"""What the Agent sees of a Computer besides tools: Desktop windows and Finder documents.

Pure functions over already-gathered data (no I/O): the server order both organisers
share, the Desktop and Finder organisers, and DPE rendering to Markdown / plain text.
"""

from .desktop import Window, organize_desktop
from .dpe_render import render_markdown, render_text
from .finder import organize_finder
from .server_order import CallRecord, order_servers

__all__ = [
    "CallRecord",
    "Window",
    "order_servers",
    "organize_desktop",
    "organize_finder",
    "render_markdown",
    "render_text",
]
