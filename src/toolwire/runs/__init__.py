"""A run's lifecycle around the loop: start, record, hold, resume and settle.

``runtime`` is the entry point (``Runtime``); ``recorder`` is the audit store's seam;
``resume`` checks an operator's decision against a waiting run; ``held`` hands a held call to
whoever answers it.

May import: every layer below it (``core``, ``providers``, ``workspace``, ``tools``,
``policy``, ``loop``) and ``telemetry``. Never the store, the queue, MCP, the inspector or the
command line, which build on it.
"""
