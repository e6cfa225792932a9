"""The command line every example script shares: ``--help`` and ``--output DIR``.

An example (``examples/*.py``) starts its ``main(argv)`` with
:func:`example_parser`, adds its own options, and writes only under the
folder given by ``--output``; ``--help`` prints the module docstring's first
paragraph and the options, and writes nothing.
"""
from __future__ import annotations

import argparse


def example_parser(doc: str | None, default_output: str, prog: str | None = None) -> argparse.ArgumentParser:
    """An argument parser with the example's summary and ``-o/--output DIR``.

    Parameters
    ----------
    doc : str or None
        The example's module docstring; its first paragraph is the description.
    default_output : str
        Output folder used when ``--output`` is not given (relative to the
        current directory).
    prog : str, optional
        Program name shown in the usage line (default: the script's name).

    Returns
    -------
    argparse.ArgumentParser
    """
    summary = (doc or "").strip().split("\n\n")[0]
    parser = argparse.ArgumentParser(prog=prog, description=" ".join(summary.split()))
    parser.add_argument("-o", "--output", metavar="DIR", default=default_output,
                        help=f"folder for the results, plots and replays (default: {default_output})")
    return parser
