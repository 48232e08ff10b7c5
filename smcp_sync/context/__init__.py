"""How Desktop windows and Finder documents are ordered, filtered and rendered.

Pure functions and values, no I/O: the server order both share, the Desktop organiser,
the Finder's catalogue entries, filters and ordering (the Computer's `FinderIndex` keeps
them current; `organize_finder` is the same rule over a whole list at once), and DPE
rendering to Markdown / plain text (the Agent renders JSON answers with it).
"""

from .desktop import Window, organize_desktop
from .dpe_render import render_markdown, render_text
from .finder_order import organize_finder
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
