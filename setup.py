"""Build kafkarec._core, the single compiled extension.

Environment switches:
  KAFKAREC_DEBUG=1     annotate HTML, line tracing, -O0 -g
  KAFKAREC_SANITIZE=1  AddressSanitizer + UBSan (run with LD_PRELOAD=libasan)
"""
import os
import sysconfig

from Cython.Build import cythonize
from setuptools import Extension, setup

debug = os.environ.get("KAFKAREC_DEBUG") == "1"
sanitize = os.environ.get("KAFKAREC_SANITIZE") == "1"

# -g0: release builds carry no debug info (the extension is 5x smaller, and it
# is shipped to every Spark executor); symbols stay for profilers.
compile_args = ["-O0", "-g"] if debug else ["-O3", "-g0"]
if not debug and "clang" not in (sysconfig.get_config_var("CC") or "") + os.environ.get("CC", ""):
    # gcc: let functions declared inline (the record scanner) inline into the
    # decode loops although they are large.
    # The growth limits are raised too: the decode loops are large already, and
    # gcc otherwise keeps the scanner out of line (measured: 21 -> 18.5 ns per
    # record in to_arrow; benchmarks/bench_decode.py).
    compile_args += ["--param=max-inline-insns-single=1000", "--param=large-function-growth=2000",
                     "--param=inline-unit-growth=200"]
link_args = []
macros = []
if debug:
    macros += [("CYTHON_TRACE", "1"), ("KAFKAREC_DEBUG", "1")]
if sanitize:
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    compile_args += flags
    link_args += flags

extensions = [
    Extension(
        "kafkarec._core",
        ["kafkarec/_core.pyx"],
        include_dirs=["kafkarec/_core_src"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=macros,
    )
]

setup(
    ext_modules=cythonize(
        extensions,
        # the .pxi/.pxd/.h parts of _core live in their own folder
        include_path=["kafkarec/_core_src"],
        compiler_directives={
            "language_level": 3,
            "embedsignature": True,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "linetrace": debug,
        },
        annotate=debug,
    ),
)
