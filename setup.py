"""Build script for the compiled dynamics kernels (plain C, CPython binding)."""
import re

import numpy
import setuptools
from setuptools import Extension, find_namespace_packages, setup

# the native runtime's files that mbfmu.dynamics.tangents calls: its packer (runtime.c, with the
# flexible tables, the step rule and the expression tape it links) and its exact tangents (dirder.c
# and the element tangents), so Python's linearization and the native FMU share one implementation
NATIVE_TANGENT_SOURCES = ("runtime", "flex_runtime", "steplimit", "spectral_radius", "tape", "dirder", "contact_dirder",
                          "ballspring_dirder", "flex_dirder")
NATIVE_TANGENT_HEADERS = ("native", "tape", "contact_dirder", "ballspring_dirder", "flex_dirder")

kernels = Extension(
    "mbfmu.dynamics._kernels",
    sources=[
        "mbfmu/dynamics/csrc/binding.c",
        "mbfmu/dynamics/csrc/algorithms.c",
        "mbfmu/dynamics/csrc/flexible.c",
        "mbfmu/dynamics/csrc/flexsensors.c",
        "mbfmu/dynamics/csrc/sensors.c",
        "mbfmu/dynamics/csrc/adaptive.c",
        "mbfmu/dynamics/csrc/drives.c",
        "mbfmu/dynamics/csrc/pack.c",
        "mbfmu/dynamics/csrc/element.c",
        # the exact tangents: the native runtime's one implementation (native_tangents)
        "mbfmu/dynamics/csrc/tangent_binding.c",
        *(f"mbfmu/fmu/native/csrc/{name}.c" for name in NATIVE_TANGENT_SOURCES),
    ],
    # a header change must rebuild the extension (the structs are shared)
    depends=["mbfmu/dynamics/csrc/mb.h", "mbfmu/dynamics/csrc/spatial.h",
             "mbfmu/dynamics/csrc/flexible.h",
             "mbfmu/dynamics/csrc/sensors.h", "mbfmu/dynamics/csrc/adaptive.h",
             "mbfmu/dynamics/csrc/flexsensors.h", "mbfmu/dynamics/csrc/drives.h",
             "mbfmu/dynamics/csrc/glibc_baseline.h", "mbfmu/dynamics/csrc/tangent_binding.h",
             "mbfmu/dynamics/csrc/element.h",
             *(f"mbfmu/fmu/native/csrc/{name}.h" for name in NATIVE_TANGENT_HEADERS)],
    include_dirs=["mbfmu/dynamics/csrc", "mbfmu/fmu/native/csrc", numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    # -fno-wrapv: Python's own CFLAGS carry -fwrapv, which keeps gcc from
    # simplifying the kernels' index arithmetic (the native FMU's flags have none)
    extra_compile_args=["-O3", "-std=c99", "-fno-math-errno", "-fno-wrapv", "-Wall",
                        "-Wno-unused-function"],
)

# the FMI 2.0 and 3.0 standard's headers, shipped with their license in the package
FMI_HEADERS = "mbfmu/fmu/native/fmi_headers"

# the compiled co-simulation loop (loaded with ctypes by mbfmu.cosim.master.fast_loop),
# with the controller evaluator the native controller FMUs carry (it steps
# ControlUnit's LTI systems and PIDs in the loop); no FMA contraction: its time
# points must equal the Python loop's bit for bit
fastloop = Extension(
    "mbfmu.cosim._fastloop",
    sources=["mbfmu/cosim/csrc/fastloop.c", "mbfmu/fmu/native/ctrl/controller.c", "mbfmu/fmu/native/csrc/tape.c"],
    include_dirs=[FMI_HEADERS, "mbfmu/fmu/native/ctrl", "mbfmu/fmu/native/csrc", "mbfmu/dynamics/csrc"],
    extra_compile_args=["-O2", "-std=c99", "-ffp-contract=off", "-Wall"],
    extra_link_args=["-pthread"],
)

# a Model Exchange unit's CVODE callbacks and integration interval (loaded with ctypes by
# mbfmu.cosim.fmi.me_solver; SUNDIALS is fmpy's, reached through function pointers)
mestep = Extension(
    "mbfmu.cosim._mestep",
    sources=["mbfmu/cosim/csrc/me_step.c"],
    include_dirs=[FMI_HEADERS],
    extra_compile_args=["-O2", "-std=c99", "-Wall"],
    libraries=["m"],
)

# every folder under mbfmu/ (data folders such as dynamics/csrc included), plus
# the plant library in models/, installed as mbfmu.models (package-dir in pyproject.toml)
packages = find_namespace_packages(include=["mbfmu", "mbfmu.*"], exclude=["*.__pycache__"]) + ["mbfmu.models"]

# The license, MIT, in the form the running setuptools reads: setuptools >= 77
# takes the SPDX expression (PEP 639) and deprecates the older free-text field,
# while setuptools < 77 (65.5 in Python 3.11's venv, the one a pythonfmu FMU's
# copy of mbfmu is made with: mbfmu.fmu.sdist) refuses `license = "MIT"` in
# pyproject.toml. So pyproject.toml declares the license dynamic.
_SETUPTOOLS = tuple(int(part) for part in re.match(r"(\d+)\.(\d+)", setuptools.__version__).groups())
LICENSE = {"license_expression": "MIT"} if _SETUPTOOLS >= (77, 0) else {"license": "MIT"}

setup(ext_modules=[kernels, fastloop, mestep], packages=packages, **LICENSE)
