"""The workspace the built-in tools work on, as the operator's TOML file describes it.

``config`` loads a workspace (database, file roots, web bases, data folder); ``maps`` holds its
optional sections (documents, configuration files, history, accounts, jobs, routes);
``mcp_servers`` lists the MCP servers whose tools runs may use.

May import: ``core`` and ``providers`` (the model server's settings). Never ``tools``, which
builds on it.
"""
