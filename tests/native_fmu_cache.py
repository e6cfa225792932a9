"""Native FMUs built once and kept in pytest's cache folder, keyed by everything
that goes into them.

Compiling a native FMU takes seconds to tens of seconds on a loaded machine, and
many test modules need the same ones (the rigid arm above all). The key is a
SHA-256 over the build's arguments, the content of every file of the ``mbfmu``
package and of the plant library (``models/``: the C sources, the Python that
writes the description and the plant data), the compiler's path and version per
platform, the ``CC`` environment variable, and the machine and Python version.
A change to any of them is a new key, hence a fresh build.

Safe for parallel workers (pytest-xdist): one lock file per key
(``fcntl.flock``) makes the other workers wait for the build instead of
repeating it, and the FMU enters the cache by an atomic rename, so a reader
never sees half a file. Every caller gets its own copy.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform as _platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import mbfmu

PACKAGE = Path(mbfmu.__file__).resolve().parent
MODELS = PACKAGE.parent / "models"
SOURCE_SUFFIXES = {".py", ".c", ".h", ".xml", ".json", ".toml", ".urdf", ".txt"}
UNUSED_DAYS = 7  # entries no run has used for this long are removed (every source edit makes new keys)


def source_files(roots: Iterable[Path] = (PACKAGE, MODELS)) -> list[Path]:
    """Every file under ``roots`` that can shape a native FMU, sorted (build
    products, caches and compiled extensions left out)."""
    files = []
    for root in roots:
        if root.is_dir():
            files += [p for p in root.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES
                      and "__pycache__" not in p.parts]
    return sorted(files)


def _compiler_identity(platforms: Iterable[str]) -> list[str]:
    from mbfmu.errors import ModelError
    from mbfmu.fmu.native import toolchain
    ident = []
    for name in platforms:
        try:
            cc = toolchain.compiler(name)
        except ModelError as exc:  # the build will say so; the key only needs to differ
            ident.append(f"{name}: {exc}")
            continue
        version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
        ident.append(f"{name}: {cc} {version} {toolchain.CFLAGS} {toolchain.PLATFORMS[name][2]}")
    return ident


def build_key(plant: str, build_args: dict[str, Any], files: Iterable[Path] | None = None) -> str:
    """The cache key of ``build_fmu(plant, runtime="native", **build_args)``."""
    h = hashlib.sha256()
    args = dict(build_args)
    platforms = tuple(args.get("platforms") or ("linux64",))
    h.update(json.dumps({"plant": plant, "args": args, "compilers": _compiler_identity(platforms),
                         "CC": os.environ.get("CC"), "machine": _platform.machine(),
                         "python": sys.version}, sort_keys=True, default=str).encode())
    for path in (source_files() if files is None else files):
        h.update(str(path.name).encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:32]


class NativeFmuCache:
    """``cache.get(plant, dest_dir, **build_args)``: the native FMU of library plant
    ``plant`` copied to ``dest_dir``, built at most once per key into ``folder``.

    Parameters
    ----------
    folder : Path
        The cache folder (pytest's ``config.cache.mkdir(...)``).
    build : callable, optional
        ``build(plant, dest, **build_args) -> Path``; default :func:`mbfmu.fmu.build_fmu`
        with ``runtime="native"``.
    files : callable, optional
        Returns the source files the key covers (default :func:`source_files`).
    """

    def __init__(self, folder: Path, build: Callable[..., Path] | None = None,
                 files: Callable[[], list[Path]] | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._build = build or _build_native
        self._files = files or source_files
        self._keys: dict[str, str] = {}
        self.builds = 0  # builds this object made (the rest were cache hits)

    def path(self, plant: str, **build_args: Any) -> Path:
        """The cached FMU (built now if missing); never to be written to."""
        memo = json.dumps([plant, build_args], sort_keys=True, default=str)
        if memo not in self._keys:  # hashing the sources once per object and build
            self._keys[memo] = build_key(plant, build_args, self._files())
        key = self._keys[memo]
        final = self.folder / f"{plant}-{key}.fmu"
        if final.is_file():
            os.utime(final)  # used: kept by the clean-up below
            return final
        with open(self.folder / f"{plant}-{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker building the same key: wait for it
            if not final.is_file():
                work = Path(tempfile.mkdtemp(prefix="build-", dir=self.folder))
                try:
                    built = self._build(plant, work, **build_args)
                    os.replace(built, final)
                    self.builds += 1
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                self._remove_unused()
        return final

    def _remove_unused(self) -> None:
        old = time.time() - UNUSED_DAYS * 86400
        for entry in self.folder.glob("*.fmu"):
            try:
                if entry.stat().st_mtime < old:
                    entry.unlink()
                    entry.with_suffix(".lock").unlink(missing_ok=True)
            except OSError:  # another worker removed it first
                pass

    def get(self, plant: str, dest_dir: Path, **build_args: Any) -> Path:
        """A copy of the cached FMU in ``dest_dir`` (named ``<plant>.fmu``)."""
        dest_dir = Path(dest_dir)
        dest_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copyfile(self.path(plant, **build_args), dest_dir / f"{plant}.fmu"))


def _build_native(plant: str, dest: Path, **build_args: Any) -> Path:
    from mbfmu.fmu.builder import build_fmu
    return build_fmu(plant, dest, runtime="native", **build_args)
