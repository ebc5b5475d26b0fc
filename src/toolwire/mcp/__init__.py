"""The Model Context Protocol, both ways, through the gate and the seam.

- client side: the tools of MCP servers a workspace lists, registered as ``<server>__<tool>``;
- server side: ``toolwire mcp`` serves toolwire's own tools to MCP hosts, content only, with
  read-only resources (its runs, the documents) and the workspace's prompts.

Built on the official ``mcp`` SDK.

Layer: above ``store``. May import ``core`` up to ``runs`` (an MCP client's tools pass the
runtime's gate and seam); never the queue, the inspector or the command line.
"""
