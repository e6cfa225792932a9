"""``mbfmu build [NAME ...] [-o fmus/] [-p NAME=VALUE ...] [--platform P] [--python-hint]``: build plant FMUs."""
from __future__ import annotations

import argparse
import sys

from ..errors import InputError

DEFAULT_PLANTS = ("rigid_arm", "canonical_2body", "flexible_arm", "satellite", "crash_occupant")


def _library_plants() -> list[str]:
    try:
        from .. import library
        names = list(library.list_plants())
    except ImportError:
        return list(DEFAULT_PLANTS)
    return names or list(DEFAULT_PLANTS)


def _parameters(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"parameter {item!r} is not NAME=VALUE with a number VALUE (SI units)") from None
    return out


def run(args: argparse.Namespace) -> int:
    from .builder import build_fmu

    names = args.names or _library_plants()
    params = _parameters(args.parameter)
    if params and len(names) != 1:
        raise InputError("-p/--parameter needs exactly one plant")
    for name in names:
        path = build_fmu(name, args.output, parameters=params or None, platforms=args.platform or None,
                         python_hint=args.python_hint)
        print(path)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``mbfmu build``."""
    p = subparsers.add_parser(
        "build", help="build FMI 2.0 co-simulation FMUs of plants",
        description="Build fmus/<name>.fmu for each plant: a library name (all library plants by default), "
                    "'package.module:Class' or a model file 'path/model.py[:Class]'.")
    p.add_argument("names", nargs="*", metavar="NAME", help="plants to build (default: every library plant)")
    p.add_argument("-o", "--output", default="fmus", help="output folder (default: fmus/)")
    p.add_argument("-p", "--parameter", action="append", default=[], metavar="NAME=VALUE",
                   help="parameter value in SI units (one plant only); repeatable")
    p.add_argument("--platform", action="append", choices=("linux64", "win64"), metavar="PLATFORM",
                   help="binary platform, repeatable: linux64, win64 (default: both when the mingw-w64 "
                        "cross-compiler is installed)")
    p.add_argument("--python-hint", action="store_true",
                   help="record this interpreter as the last place the FMU looks for Python (after "
                        "MBFMU_PYTHON and PATH); off by default, so the FMU holds no path of this machine")
    p.set_defaults(func=run)
    return p


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="mbfmu")
    add_parser(parser.add_subparsers())
    a = parser.parse_args()
    sys.exit(a.func(a))
