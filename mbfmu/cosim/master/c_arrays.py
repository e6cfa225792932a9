"""The ctypes pointer types and arrays of the C descriptions that :mod:`.c_events`
and :mod:`.c_scheduled` hand to the compiled loop (``csrc/fastloop.c``)."""
from __future__ import annotations

import ctypes
from typing import Any

DP = ctypes.POINTER(ctypes.c_double)
IP = ctypes.POINTER(ctypes.c_int)
UP = ctypes.POINTER(ctypes.c_uint)
LP = ctypes.POINTER(ctypes.c_longlong)
BP = ctypes.POINTER(ctypes.c_bool)
VP = ctypes.c_void_p


def c_array(ctype: Any, values: list, keep: list) -> Any:
    """A C array of ``ctype`` holding ``values`` (one element at least, so C gets a
    valid pointer when there are none), appended to ``keep`` to stay alive for the run.

    Parameters
    ----------
    ctype : ctypes type
        The element type (``ctypes.c_int``, ``ctypes.c_double``, ...).
    values : list
        The elements.
    keep : list
        What the run keeps alive; the array is appended.

    Returns
    -------
    ctypes.Array
    """
    a = (ctype * max(len(values), 1))(*values)
    keep.append(a)
    return a
