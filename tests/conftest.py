"""Project-wide test configuration."""
import os
import re
import sys

HERE = os.path.dirname(__file__)
# helpers shared by test folders (tooling, random trees, small plants) live next to the tests
sys.path.insert(0, os.path.join(HERE, "dynamics"))
sys.path.insert(0, HERE)

import pytest  # noqa: E402

from native_fmu_cache import NativeFmuCache  # noqa: E402
from tooling import SKIP_PREFIX  # noqa: E402

_TOOL_SKIP = re.compile(re.escape(SKIP_PREFIX) + r" (\S+) \(.*\): apt-get install (\S+)")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line: the tests skipped for a missing system tool, and the apt-get
    command that enables them."""
    tools, packages = {}, []
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        m = _TOOL_SKIP.search(reason)
        if m:
            tools[m.group(1)] = tools.get(m.group(1), 0) + 1
            if m.group(2) not in packages:
                packages.append(m.group(2))
    if tools:
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(tools.items()))
        terminalreporter.write_line(
            f"skipped for missing system tools: {listed}; to run them: "
            f"sudo apt-get install {' '.join(packages)}" + (" (and add /usr/lib/wine to PATH)"
                                                            if "wine64" in tools else ""))



@pytest.fixture(scope="session")
def native_fmus(request, tmp_path_factory):
    """``native_fmus(plant, **build_args)``: a private copy of the native FMU of library
    plant ``plant`` (``build_fmu(plant, runtime="native", **build_args)``), compiled at
    most once per change of its sources, in pytest's cache folder (:mod:`native_fmu_cache`;
    a temporary folder of the run under ``-p no:cacheprovider``)."""
    cache = getattr(request.config, "cache", None)
    folder = cache.mkdir("mbfmu-native-fmus") if cache is not None else tmp_path_factory.mktemp("native-fmu-cache")
    store = NativeFmuCache(folder)

    def get(plant: str, **build_args):
        return store.get(plant, tmp_path_factory.mktemp(f"native_{plant}"), **build_args)
    return get
