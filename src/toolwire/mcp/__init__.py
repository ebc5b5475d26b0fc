"""The Model Context Protocol, both ways, through the gate and the seam.

- client side: the tools of MCP servers a workspace lists, registered as ``<server>__<tool>``;
- server side: ``toolwire mcp`` serves toolwire's own tools to MCP hosts, content only.

Built on the official ``mcp`` SDK.
"""
