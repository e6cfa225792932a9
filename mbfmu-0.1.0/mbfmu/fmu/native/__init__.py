"""The native FMU runtime: plant FMUs whose binary is C only (no Python at run time).

``build_fmu(plant, runtime="native")`` / ``mbfmu build PLANT --runtime native``
compile the engine's kernels, the runtime (``csrc/``) and the plant's packed
model, force elements, input matrix and output sensors into one binary per
platform (linux64 with gcc, win64 with mingw-w64, FMI 3's aarch64-linux with
gcc-aarch64-linux-gnu), from the FMU's own ``sources/`` (:mod:`.sources`), which
build it on any other platform too. See :mod:`.build` and :mod:`.pack` (what a
plant must be made of).
"""
from .build import DEFAULT_PLATFORMS, build_native_fmu, native_parameter_report
from .pack import NativeUnsupported, check_supported

__all__ = ["build_native_fmu", "native_parameter_report", "NativeUnsupported", "check_supported",
           "DEFAULT_PLATFORMS"]
