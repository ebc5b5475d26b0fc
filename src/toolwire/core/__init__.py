"""The bottom layer: typed values and the bounds on them.

Errors, text and JSON encoding, reprs, lazy names, the version, a tool's result and its byte
bounds, chat messages, trust zones and data classes, the secret redactor, run statuses
(``lifecycle``), sealed values and their binding (``binding``, ``sealing``, ``latest``) and the
private folders and files on disk (``private``).

May import: nothing else of toolwire (only its own modules and the standard library or
third-party packages). Every other layer may import it.
"""
