"""The ``mbfmu`` command line: ``build``, ``simulate``, ``linearize``,
``view``, ``list`` and ``demo``.

Each sub-command lives in the layer that does the work, as a module with
``add_parser(subparsers)`` that registers the sub-command and sets
``func(args) -> int`` on it; this file only collects them, importing each
module lazily so that ``mbfmu --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import MbfmuError, command_line

# sub-command -> module defining add_parser(subparsers)
COMMANDS = {
    "list": "mbfmu.plant.library",
    "build": "mbfmu.fmu.cli",
    "simulate": "mbfmu.cosim.cli",
    "linearize": "mbfmu.control.cli",
    "view": "mbfmu.viewer.cli",
    "demo": "mbfmu.demo",
    "sweep": "mbfmu.studies.cli",
}


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    parser = argparse.ArgumentParser(prog="mbfmu", description="Multibody plants as FMI co-simulation units.")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        with command_line():
            return int(args.func(args) or 0)
    except MbfmuError as exc:
        print(f"mbfmu {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
