"""The Computer's context channels: one mechanism (`channel`, `uri_cache`, `watch`,
`warmer`) that lists, caches, warms and announces the MCP resources of one URI scheme,
and its three uses, the Desktop (`window://`), the Finder (`dpe://`) and the Skills
(`skill://`); `reads` answers an Agent's resource requests, `exposure` is what no Agent
is ever shown.
"""
