"""Errors the command line reports in one line, wherever they are raised.

A stage raises a subclass of :class:`InputError` for bad input it cannot build from (a corpus
with problems, a distractor source that cannot be found); the CLI prints its message (which names
the file or field and what is wrong) without a traceback, so the core needs no stage's error type.
"""


class InputError(Exception):
    """Bad input named in the message; the CLI prints it in one line and exits 1."""
