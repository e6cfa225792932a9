"""mbfmu's own source distribution, for the pythonfmu FMUs to carry.

mbfmu is on no package index a recipient of an FMU can reach, so
``pip install mbfmu==<version>`` fails for them. A pythonfmu FMU therefore
carries the source distribution of the mbfmu that built it
(``resources/mbfmu-<version>.tar.gz``); where the FMU finds no matching mbfmu,
its log names ``python -m pip install <that file>``. pip then needs only
mbfmu's dependencies (numpy, scipy, pythonfmu, ...) from the packages already
installed or from the recipient's own index, and a C compiler for the kernels.

The distribution is made with setuptools from mbfmu's source tree: the one
this mbfmu runs from (a clone, an editable install), or the folder a plain
``pip install <folder>`` recorded (``direct_url.json``). An mbfmu installed
from a wheel whose source is gone has none: its FMUs then carry no copy and
their log names the package instead.
"""
from __future__ import annotations

import contextlib
import functools
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

from .. import __version__


def sdist_name(version: str = __version__) -> str:
    """File name of mbfmu's source distribution (``mbfmu-<version>.tar.gz``)."""
    return f"mbfmu-{version}.tar.gz"


def _is_mbfmu_tree(root: Path) -> bool:
    try:
        text = (root / "pyproject.toml").read_text()
    except OSError:
        return False
    name = re.search(r'(?m)^name\s*=\s*"([^"]+)"', text)
    version = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
    return (bool(name and name.group(1) == "mbfmu" and version and version.group(1) == __version__)
            and (root / "setup.py").is_file() and (root / "mbfmu" / "__init__.py").is_file())


def source_tree() -> Path | None:
    """mbfmu's source tree of this version, or None (see the module docstring)."""
    here = Path(__file__).resolve().parents[2]
    if _is_mbfmu_tree(here):
        return here
    try:
        direct = metadata.distribution("mbfmu").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    if direct:
        try:
            url = urlparse(json.loads(direct).get("url", ""))
        except (ValueError, AttributeError):
            return None
        if url.scheme == "file":
            root = Path(unquote(url.path))
            if _is_mbfmu_tree(root):
                return root
    return None


@functools.cache
def source_distribution() -> Path | None:
    """Path of mbfmu's source distribution, made once per process into a
    private temporary folder; None where there is no source tree.

    Raises
    ------
    RuntimeError
        setuptools failed on the source tree (its message included).
    """
    root = source_tree()
    if root is None:
        return None
    from ..untrusted.scratch import private_dir
    out = private_dir("sdist")
    # egg_info's folder goes to the private folder too: written into the source
    # tree, it is what importlib.metadata finds there, and an FMU instantiated
    # meanwhile in another process read a half-written one (no mbfmu version)
    # setuptools' sdist assembles the release in the folder mbfmu-<version>/ of
    # the source tree and deletes it after: two processes making it at once
    # (test workers, a build beside a demo) delete each other's files. An
    # exclusive lock on the tree's setup.py makes them take turns.
    with _tree_lock(root):
        res = subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(out), "sdist",
                              "--dist-dir", str(out)], cwd=root, capture_output=True, text=True, timeout=600)
    made = out / sdist_name()
    if res.returncode != 0 or not made.is_file():
        raise RuntimeError(f"making mbfmu's source distribution from {root} failed: {failure_reason(res.stderr)}")
    return made


@contextlib.contextmanager
def _tree_lock(root: Path) -> Iterator[None]:
    """An exclusive advisory lock of the source tree ``root`` (``flock`` on its
    setup.py; nothing where the platform has no ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    with open(root / "setup.py", "rb") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def failure_reason(stderr: str) -> str:
    """One line saying why setuptools failed, from its ``stderr``.

    setuptools' schema errors end in a dump of the schema (the last line of a
    refused ``license = "MIT"`` is ``required: ['text']``): the line naming
    the error is taken instead, and an old setuptools that cannot read a
    license string in pyproject.toml is named with the version it needs, and
    a Python without setuptools with the command that installs it.
    mbfmu's own tree sets its license in setup.py, in the form the running
    setuptools reads, so any setuptools from 61 on (65.5 in Python 3.11's
    venv) makes the distribution; the message is for a tree that was edited
    back to the PEP 639 string.
    """
    if "`project.license`" in stderr:
        try:
            have = f"setuptools {metadata.version('setuptools')}"
        except metadata.PackageNotFoundError:
            have = "this setuptools"
        return (f"{have} cannot read pyproject.toml's license string (it needs setuptools >= 77: "
                "python -m pip install --upgrade 'setuptools>=77')")
    if "No module named 'setuptools'" in stderr:
        return ("this Python has no setuptools (a venv of Python 3.12 or newer installs none): "
                "python -m pip install setuptools")
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"(?i)([\w.]*error\b|configuration error)", line)]
    return named[0] if named else (lines[-1] if lines else "(no message)")
