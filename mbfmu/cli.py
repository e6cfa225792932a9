"""The ``mbfmu`` command line: ``build``, ``simulate``, ``linearize``,
``view``, ``list`` and ``demo``.

Each sub-command lives in the layer that does the work, as a module with
``add_parser(subparsers)`` that registers the sub-command and sets
``func(args) -> int`` on it; this file only collects them, importing each
module lazily so that ``mbfmu --help`` stays fast.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

from .errors import MbfmuError, command_line

# sub-command -> module defining add_parser(subparsers)
COMMANDS = {
    "list": "mbfmu.plant.library",
    "build": "mbfmu.fmu.cli",
    "simulate": "mbfmu.cosim.cli",
    "linearize": "mbfmu.control.cli",
    "analyze": "mbfmu.control.analyze_cli",
    "view": "mbfmu.viewer.cli",
    "demo": "mbfmu.demo",
    "sweep": "mbfmu.studies.cli",
    "tune": "mbfmu.studies.tune_cli",
    "export-controller": "mbfmu.control.export_cli",
}


class MbfmuParser(argparse.ArgumentParser):
    """An argument parser whose usage errors name the sub-command, suggest the
    closest option or command ("did you mean ...?") and exit with 1, the exit
    status of bad input everywhere in mbfmu (argparse's own is 2)."""

    def error(self, message: str):  # noqa: D401 (argparse hook)
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}{self._suggestion(message)}\n")

    def _suggestion(self, message: str) -> str:
        import difflib
        import re
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1)
        else:
            m = re.search(r"unrecognized arguments: (.*)", message)
            if not m:
                return ""
            flags = [a for a in self._option_string_actions if a.startswith("--")]
            words = [w.split("=", 1)[0] for w in m.group(1).split() if w.startswith("-")]
            close = [c for w in words for c in difflib.get_close_matches(w, flags, n=1)]
        return f" (did you mean {' or '.join(close)}?)" if close else ""


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    parser = MbfmuParser(prog="mbfmu", description="Multibody plants as FMI co-simulation units.")
    parser.add_argument("--version", action="version", version=f"mbfmu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            importlib.import_module(module).add_parser(sub)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            sub.add_parser(name, help="(not available in this installation)")
    return parser


@contextlib.contextmanager
def one_line_warnings():
    """Warnings printed as ``warning: <message>``, one line on stderr, with no
    file path or source line, while a sub-command runs (Python's own format
    is restored after)."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())  # one line, whatever the message
        print(f"warning: {text}", file=file or sys.stderr)

    saved = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = saved


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # report an unknown flag against the sub-command that was given it
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        owner = subparsers.choices.get(args.command, parser)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        with command_line(), one_line_warnings():
            return int(args.func(args) or 0)
    except BrokenPipeError:  # the output went to a pager or `head` that closed early
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MbfmuError as exc:
        print(f"mbfmu {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
