"""The MissionWeave Protocol as pure Python.

Nothing in this package imports Django (``tests/protocol/test_purity.py`` proves it): it is
the rule book — canonical JSON, signatures, the command envelope, error codes, the command
registry and the ``decide``/``evolve`` functions — and it is tested without a database.
"""
