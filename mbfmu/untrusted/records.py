"""Nested per-thread records of the files a block of code read.

A recorder (:func:`mbfmu.untrusted.archive.watch_inputs`,
:func:`mbfmu.studies.run_inputs.record_opened`) keeps, in a
``threading.local``, a stack of the dicts its open blocks fill; a file read
inside nested blocks is recorded in each of them.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def recording(local: threading.local) -> Iterator[dict[str, str]]:
    """Within: a new dict ``{path: sha256 hex}`` on the stack ``local.stack``, yielded.

    Parameters
    ----------
    local : threading.local
        The recorder's per-thread state.

    Yields
    ------
    dict of str to str
        The files recorded while the block runs.
    """
    seen: dict[str, str] = {}
    stack = open_records(local)
    stack.append(seen)
    try:
        yield seen
    finally:
        stack.remove(seen)


def open_records(local: threading.local) -> list[dict[str, str]]:
    """The dicts of the blocks open in this thread (innermost last; empty when none).

    Parameters
    ----------
    local : threading.local
        The recorder's per-thread state.

    Returns
    -------
    list of dict
        ``local.stack``, created empty on first use.
    """
    stack = getattr(local, "stack", None)
    if stack is None:
        stack = local.stack = []
    return stack
