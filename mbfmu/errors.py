"""The one exception hierarchy of mbfmu.

Every error mbfmu raises on purpose derives from :class:`MbfmuError` and from
the builtin class a caller would expect (``ValueError`` for bad input,
``RuntimeError`` for a failure while running), so ``except ValueError`` keeps
working for users who do not know mbfmu's classes.

:func:`option_hint` spells an option in a message the way the user gives it:
the command line's flag while ``mbfmu`` runs a command, else the Python keyword.
:func:`require_extra` imports a package of one of mbfmu's optional extras, or
names the ``pip install`` that brings it.
"""
import contextlib
import contextvars
import importlib
from types import ModuleType

_COMMAND_LINE = contextvars.ContextVar("mbfmu_command_line", default=False)


def option_hint(python: str, cli: str) -> str:
    """``cli`` (``"--package-dir DIR"``) inside :func:`command_line`, else ``python``
    (``"package_dirs=[...]"``)."""
    return cli if _COMMAND_LINE.get() else python


@contextlib.contextmanager
def command_line():
    """Messages raised inside name command-line flags (see :func:`option_hint`)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


class MbfmuError(Exception):
    """Base class of all mbfmu errors."""


class MissingExtra(MbfmuError, ImportError):
    """A feature needs a package of an optional extra of mbfmu that is not installed."""


# import name -> the extra of mbfmu (pyproject.toml) that installs it
EXTRA_OF = {"dask": "dask", "distributed": "dask", "pandas": "pandas", "trimesh": "urdf", "collada": "urdf",
            "fast_simplification": "urdf", "example_robot_data": "urdf"}


def extra_hint(module: str) -> str:
    """The command that installs ``module``'s extra: ``pip install 'mbfmu[dask]'``
    (in a clone of mbfmu: ``pip install '.[dask]'``)."""
    extra = EXTRA_OF[module]
    return f"pip install 'mbfmu[{extra}]', or in a clone of mbfmu pip install '.[{extra}]'"


def require_extra(module: str, feature: str) -> ModuleType:
    """Import ``module``, a package of one of mbfmu's extras (see ``EXTRA_OF``).

    Parameters
    ----------
    module : str
        Import name of the package (``"distributed"``).
    feature : str
        What needs it, for the message (``"the Dask executor"``).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtra
        The package is not installed; the one-line message names the
        ``pip install 'mbfmu[...]'`` that brings it.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{feature} needs the {module!r} package, which is not installed: "
                           f"{extra_hint(module)}") from None


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


class StopRequested(CosimError):
    """A unit asked to end the run (an FMU's fmi2Discard with fmi2Terminated).

    Attributes ``unit`` (its name) and ``time`` (the last good time [s]).
    """

    def __init__(self, message: str, unit: str = "", time: float = float("nan")) -> None:
        super().__init__(message)
        self.unit, self.time = unit, time


class RunInterrupted(CosimError):
    """A run was stopped early by the user (Ctrl-C), SIGTERM or a wall-clock limit.

    ``kind`` says which: ``"SIGINT"``, ``"SIGTERM"`` or ``"timeout"``.
    """

    kind: str = "SIGINT"


#: at most this many known names are listed in full in an unknown-name error
LIST_LIMIT = 16


def unknown_name(message: str, name: object, known, listing: str = "known", hint: str = "") -> UnknownNameError:
    """An :class:`UnknownNameError` for ``name``: ``message``, then the closest
    known names ("did you mean ...?", by :func:`difflib.get_close_matches`), then
    the known names themselves when there are few, else their count and ``hint``
    (where to see them all).

    >>> str(unknown_name("unknown plant 'rigd_arm'", "rigd_arm", ["rigid_arm", "satellite"]))
    "unknown plant 'rigd_arm'; did you mean 'rigid_arm'? known: rigid_arm, satellite"
    """
    import difflib
    names = list(dict.fromkeys(str(k) for k in known))
    close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.6)
    text = message
    if close:
        text += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if len(names) <= LIST_LIMIT:
        text += f"{';' if not close else ''} {listing}: {', '.join(names) or 'none'}"
    else:
        text += f"{';' if not close else ''} {len(names)} {listing}" + (f" ({hint})" if hint else "")
    return UnknownNameError(text)
