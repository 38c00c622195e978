"""The base of every error evalduck raises on purpose, so that a caller can catch them all with one class.

Only the standard library here: the library (``evalduck.scorers``), the flows and the launcher's
stdlib-only start (``evalduck.flows.project.root``) all import it.
"""

from __future__ import annotations

__all__ = ("EvalduckError",)


class EvalduckError(Exception):
    """Base of every evalduck error a user can see: the scorers', the judge's, the store's, datasets',
    targets', the project file's, the local server's and the run's.

    Its remedy is in its message, not in an attribute: ``str(error)`` names the file, option or value
    concerned and ends with what to do about it where evalduck knows (a DuckDB error passed on may not), so
    that the CLI prints it as it is (``error: <message>``). The CLI's exit status for
    each member of the family is decided in one place, ``evalduck.flows.cli.errors.exit_code``.
    """
