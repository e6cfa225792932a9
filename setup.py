"""Build script for the compiled dynamics kernels (plain C, CPython binding)."""
import numpy
from setuptools import Extension, setup

kernels = Extension(
    "mbfmu.dynamics._kernels",
    sources=[
        "mbfmu/dynamics/csrc/binding.c",
        "mbfmu/dynamics/csrc/algorithms.c",
        "mbfmu/dynamics/csrc/flexible.c",
        "mbfmu/dynamics/csrc/adaptive.c",
    ],
    # a header change must rebuild the extension (the structs are shared)
    depends=["mbfmu/dynamics/csrc/mb.h", "mbfmu/dynamics/csrc/spatial.h",
             "mbfmu/dynamics/csrc/flexible.h", "mbfmu/dynamics/csrc/adaptive.h"],
    include_dirs=["mbfmu/dynamics/csrc", numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    extra_compile_args=["-O3", "-std=c99", "-fno-math-errno", "-Wall", "-Wno-unused-function"],
)

setup(ext_modules=[kernels])
