"""The parameters that most algorithms share, documented once.

:func:`parameters` adds a numpydoc ``Parameters`` section to a function's
docstring from :data:`SHARED` (``model``, ``q``, ``v``, ``a``, ...) and from
entries given in place, so that the descriptions and units of the
coordinates are written in one place and stay the same everywhere.
"""
from __future__ import annotations

import inspect
import re
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)

#: Parameter name -> "type\n    description" (numpydoc), for the engine's common arguments.
SHARED = {
    "model": "Model\n    The mechanism.",
    "q": "array_like, shape (nq,)\n    Joint positions: rad for revolute joints, m for prismatic ones; spherical and\n"
         "    free joints carry a unit quaternion, scalar first.",
    "v": "array_like, shape (nv,)\n    Joint velocities: rad/s or m/s; for spherical and free joints the body's\n"
         "    angular (and linear) velocity in its own frame.",
    "a": "array_like, shape (nv,)\n    Joint accelerations, rad/s^2 or m/s^2 (the time derivative of ``v``).",
    "tau": "array_like, shape (nv,)\n    Generalized forces at the joints, N m or N.",
    "f_ext": "array_like, shape (nbodies, 6), optional\n    Spatial forces [n; f] applied to each body, in the body frame about its\n"
             "    origin, N m and N; row 0 (the world) is ignored.",
    "body": "int or str\n    The body, by index (0 is the world) or name.",
    "p_BP": "array_like, shape (3,)\n    A point in the body's frame, m.",
    "system": "FlexibleSystem or RigidSystem\n    The mechanism with its flexible coordinates.",
    "q0": "array_like, shape (nq,), optional\n    Configuration to linearize about (default: the neutral one).",
}

_SECTION = re.compile(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", re.M)


def _entry(name: str, spec: str) -> str:
    return f"{name} : {spec}"


def parameters(*names: str, **own: str) -> Callable[[F], F]:
    """Add a ``Parameters`` section to the decorated function's docstring.

    Parameters
    ----------
    *names : str
        Parameters described by :data:`SHARED`.
    **own : str
        Further parameters, each as ``"type\\n    description"``.

    Returns
    -------
    callable
        The decorator; the function itself is returned unchanged but for its
        ``__doc__``.
    """
    unknown = [n for n in names if n not in SHARED]
    if unknown:
        raise KeyError(f"no shared description for {', '.join(unknown)}")

    def decorate(fn: F) -> F:
        order = list(inspect.signature(fn).parameters)
        specs = {n: SHARED[n] for n in names} | own
        ordered = [n for n in order if n in specs] + [n for n in specs if n not in order]
        block = "Parameters\n----------\n" + "\n".join(_entry(n, specs[n]) for n in ordered) + "\n"
        doc = inspect.cleandoc(fn.__doc__ or "")
        m = _SECTION.search(doc)
        if m is None:
            doc = f"{doc}\n\n{block}"
        else:
            doc = f"{doc[:m.start()].rstrip()}\n\n{block}\n{doc[m.start():].lstrip()}"
        fn.__doc__ = doc
        return fn

    return decorate
