"""Build script for the compiled dynamics kernels (plain C, CPython binding)."""
from setuptools import Extension, setup

kernels = Extension(
    "mbfmu.dynamics._kernels",
    sources=[
        "mbfmu/dynamics/csrc/binding.c",
        "mbfmu/dynamics/csrc/spatial.c",
        "mbfmu/dynamics/csrc/algorithms.c",
    ],
    include_dirs=["mbfmu/dynamics/csrc"],
    extra_compile_args=["-O3", "-std=c99", "-fno-math-errno", "-Wall", "-Wno-unused-function"],
)

setup(ext_modules=[kernels])
