"""The saved FMU state of the pythonfmu slave: its format, and checking one
that a host hands back.

A serialized state is data from outside (``fmi2DeSerializeFMUstate`` takes
any bytes): it is read as JSON and checked completely here, before the slave
applies any of it, so that a malformed state is refused with one message
naming what is wrong and the instance keeps the state it had. The slave adds
the checks that need the plant (sizes, plant name, parameters it accepts).

Format 1, a JSON object with exactly these keys::

    format   1
    plant    name of the plant (str)
    t        time (s), finite
    stepped  whether a step was taken (bool)
    x, u, p  plant state, inputs and parameters (SI units): flat lists of finite numbers
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

STATE_FORMAT = 1
KEYS = ("format", "plant", "t", "stepped", "x", "u", "p")
#: a serialized state holds a few vectors; far more is not a state of ours
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SavedState:
    """A checked state: time (s), whether a step was taken, and the vectors."""

    plant: str
    t: float
    stepped: bool
    x: np.ndarray
    u: np.ndarray
    p: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of format 1."""
        return {"format": STATE_FORMAT, "plant": self.plant, "t": self.t, "stepped": self.stepped,
                "x": self.x.tolist(), "u": self.u.tolist(), "p": self.p.tolist()}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _vector(state: dict, key: str, what: str) -> np.ndarray:
    value = state[key]
    if not isinstance(value, list):
        raise ValueError(f"its {what} ({key!r}) is a {_kind(value)}, not a list of numbers")
    for i, v in enumerate(value):
        if not _is_number(v):
            raise ValueError(f"its {what} ({key!r}) holds a {_kind(v)} at index {i}, not a number")
    try:
        vec = np.array(value, dtype=float)
    except OverflowError:  # an integer beyond float range
        raise ValueError(f"its {what} is not finite") from None
    if not np.all(np.isfinite(vec)):
        raise ValueError(f"its {what} is not finite")
    return vec


def check_state(state: Any) -> SavedState:
    """The state ``state`` (a decoded JSON value) checked completely.

    Raises
    ------
    ValueError
        Naming the first thing that is wrong (its type, a missing or unknown
        key, a value of the wrong type, a non-finite number).
    """
    if not isinstance(state, dict):
        raise ValueError(f"a saved state is a JSON object, not a {_kind(state)}")
    missing = [k for k in KEYS if k not in state]
    if missing:
        raise ValueError(f"it lacks {', '.join(map(repr, missing))}")
    unknown = sorted(str(k) for k in state if k not in KEYS)
    if unknown:
        raise ValueError(f"unknown keys {', '.join(map(repr, unknown))[:200]}")
    if state["format"] != STATE_FORMAT or not _is_number(state["format"]):
        raise ValueError(f"format {str(state['format'])[:40]!r} is not {STATE_FORMAT}")
    if not isinstance(state["plant"], str):
        raise ValueError(f"its plant name is a {_kind(state['plant'])}, not a string")
    t = state["t"]
    if not _is_number(t):
        raise ValueError(f"its time is a {_kind(t)}, not a number")
    try:
        t = float(t)
    except OverflowError:
        t = math.inf
    if not math.isfinite(t):
        raise ValueError("its time is not finite")
    if not isinstance(state["stepped"], bool):
        raise ValueError(f"'stepped' is a {_kind(state['stepped'])}, not true or false")
    x = _vector(state, "x", "state")
    u = _vector(state, "u", "inputs")
    p = _vector(state, "p", "parameters")
    return SavedState(state["plant"], t, state["stepped"], x, u, p)


def state_from_bytes(data: bytes) -> SavedState:
    """A serialized state (UTF-8 JSON of format 1) read and checked.

    Raises
    ------
    ValueError
        The bytes are not UTF-8 JSON (or nest too deeply, or are too many),
        or :func:`check_state` refuses what they hold.
    """
    if len(data) > MAX_BYTES:
        raise ValueError(f"{len(data)} bytes is more than a saved state of this FMU can be ({MAX_BYTES})")
    try:
        value = json.loads(bytes(data).decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("the bytes are not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    except RecursionError:
        raise ValueError("the JSON nests too deeply") from None
    return check_state(value)
