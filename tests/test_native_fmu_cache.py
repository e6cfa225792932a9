"""The tests' cache of native FMUs (``native_fmu_cache``, the ``native_fmus``
fixture): what it returns is what a fresh build gives, and any change to what
goes into an FMU builds it again."""
from __future__ import annotations

import re
import threading
import time
import zipfile
from pathlib import Path

from native_fmu_cache import PACKAGE, NativeFmuCache, build_key, source_files


def _members(fmu: Path) -> dict[str, bytes]:
    """The FMU's files, the description's build time left out (it is the only field
    that depends on when the FMU was built)."""
    with zipfile.ZipFile(fmu) as z:
        files = {name: z.read(name) for name in z.namelist()}
    files["modelDescription.xml"], n = re.subn(rb' generationDateAndTime="[^"]*"', b"", files["modelDescription.xml"])
    assert n == 1
    return files


def test_the_cached_fmu_is_bit_identical_to_a_fresh_build(native_fmus, tmp_path):
    from mbfmu.fmu.builder import build_fmu
    cached = native_fmus("rigid_arm", platforms=("linux64",))
    fresh = build_fmu("rigid_arm", tmp_path, runtime="native", platforms=("linux64",))
    got, want = _members(cached), _members(fresh)
    assert sorted(got) == sorted(want)
    for name in want:  # the binary, the description, the sources: byte for byte
        assert got[name] == want[name], name
    assert "binaries/linux64/rigid_arm.so" in want


class _CountingBuild:
    """A stand-in for the compiler: writes an 'FMU' naming the build number."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay
        self.lock = threading.Lock()

    def __call__(self, plant: str, dest: Path, **build_args) -> Path:
        with self.lock:
            self.calls += 1
            n = self.calls
        time.sleep(self.delay)
        out = Path(dest) / f"{plant}.fmu"
        out.write_text(f"{plant} {build_args} build {n}")
        return out


def test_a_hit_builds_nothing_and_returns_the_same_bytes(tmp_path):
    src = tmp_path / "src" / "kernel.c"
    src.parent.mkdir()
    src.write_text("double f(double x) { return x; }\n")
    build = _CountingBuild()
    first = NativeFmuCache(tmp_path / "cache", build, lambda: [src])
    a = first.get("rigid_arm", tmp_path / "a", platforms=("linux64",))
    again = NativeFmuCache(tmp_path / "cache", build, lambda: [src])  # a later run, same folder
    b = again.get("rigid_arm", tmp_path / "b", platforms=("linux64",))
    assert build.calls == 1 and again.builds == 0
    assert a.read_bytes() == b.read_bytes() and a != b  # each caller its own copy


def test_a_changed_source_or_build_argument_builds_again(tmp_path):
    src = tmp_path / "kernel.c"
    src.write_text("double f(double x) { return x; }\n")
    build = _CountingBuild()
    cache = NativeFmuCache(tmp_path / "cache", build, lambda: [src])
    before = cache.get("rigid_arm", tmp_path / "a", platforms=("linux64",)).read_bytes()
    src.write_text("double f(double x) { return 2 * x; }\n")  # one character of one source
    after = NativeFmuCache(tmp_path / "cache", build, lambda: [src]).get("rigid_arm", tmp_path / "b",
                                                                        platforms=("linux64",)).read_bytes()
    assert build.calls == 2 and after != before
    NativeFmuCache(tmp_path / "cache", build, lambda: [src]).get("rigid_arm", tmp_path / "c",
                                                                platforms=("linux64",), fmi_version=3)
    assert build.calls == 3


def test_entries_unused_for_a_week_are_removed_when_a_new_one_is_built(tmp_path):
    import os
    src = tmp_path / "kernel.c"
    src.write_text("int x;\n")
    cache = NativeFmuCache(tmp_path / "cache", _CountingBuild(), lambda: [src])
    stale = cache.path("arm")
    fresh_enough = cache.path("arm", fmi_version=3)
    week = 7 * 86400
    os.utime(stale, (time.time() - week - 60,) * 2)
    os.utime(fresh_enough, (time.time() - week + 3600,) * 2)
    cache.path("arm", fmi_version=2)  # a new key: built, then the clean-up
    assert not stale.exists() and fresh_enough.exists()


def test_two_workers_asking_at_once_build_once(tmp_path):
    src = tmp_path / "kernel.c"
    src.write_text("int x;\n")
    build = _CountingBuild(delay=0.3)
    paths = []

    def worker(k: int) -> None:  # each worker process of pytest-xdist has its own cache object
        paths.append(NativeFmuCache(tmp_path / "cache", build, lambda: [src]).get("arm", tmp_path / f"w{k}"))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert build.calls == 1
    assert len(paths) == 2 and paths[0].read_bytes() == paths[1].read_bytes()
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith("build-")]  # no leftovers


def test_the_key_covers_every_input_of_a_native_fmu():
    files = set(source_files())
    native = PACKAGE / "fmu" / "native"
    for must in [native / "toolchain.py",  # compiler flags and platforms
                 native / "description.py", native / "build.py",  # the description and the data file
                 *sorted((native / "csrc").glob("*.c")), *sorted((PACKAGE / "dynamics" / "csrc").glob("*.[ch]")),
                 PACKAGE.parent / "models" / "rigid_arm.py"]:  # the plant itself
        assert must in files, must
    assert build_key("rigid_arm", {"platforms": ("linux64",)}, []) != \
        build_key("rigid_arm", {"platforms": ("linux64",), "fmi_version": 3}, [])
