"""The one exception hierarchy of mbfmu.

Every error mbfmu raises on purpose derives from :class:`MbfmuError` and from
the builtin class a caller would expect (``ValueError`` for bad input,
``RuntimeError`` for a failure while running), so ``except ValueError`` keeps
working for users who do not know mbfmu's classes.
"""


class MbfmuError(Exception):
    """Base class of all mbfmu errors."""


class ModelError(MbfmuError, ValueError):
    """A mechanism description is invalid (topology, inertia, joint, file)."""


class InputError(MbfmuError, ValueError):
    """An argument has the wrong size, type or a non-finite value."""


class UnknownNameError(MbfmuError, KeyError, ValueError):
    """A body, joint, signal, plant or unit name is not known."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class SimulationError(MbfmuError, RuntimeError):
    """A simulation could not continue (singular mass matrix, step failure)."""


class CosimError(MbfmuError, RuntimeError):
    """A co-simulation system is invalid or a unit failed during a run."""
