"""Build kafkarec._core, the single compiled extension.

Environment switches:
  KAFKAREC_DEBUG=1     annotate HTML, line tracing, -O0 -g
  KAFKAREC_SANITIZE=1  AddressSanitizer + UBSan (run with LD_PRELOAD=libasan)

Cython's C (kafkarec/_core.c) is the same for every CPython (version checks are preprocessor
conditionals), so it is generated once and compiled by each interpreter.  It is regenerated when
what Cython reads changed by content (the .pyx, its .pxi/.pxd parts, the directives), as its last
line records; not by file times, because Cython counts its own .pxd files among the inputs and a
freshly made build environment would make the C look stale, and every interpreter's compiled core
with it (build/lib.*, compared by time with the C).  Cython's version is not among the inputs: the
checkout's .venv and each build environment may hold different ones within pyproject.toml's range,
and each would regenerate the C in turn.
"""
import glob
import hashlib
import os
import py_compile
import re
import sys
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

debug = os.environ.get("KAFKAREC_DEBUG") == "1"
sanitize = os.environ.get("KAFKAREC_SANITIZE") == "1"

# -g0: release builds carry no debug info (the extension is 5x smaller, and it
# is shipped to every Spark executor); symbols stay for profilers.
# KAFKAREC_CHECK_BUILD=1: -O0, in a build folder of its own (build-check/), for tests/test_release.py's
# wheels of the Pythons the suite keeps no wheelhouse of (3.9, 3.10, 3.13): they prove that each
# builds from the sdist or the checkout, is repaired, installs and decodes, in ~11 CPU-s a compile
# instead of ~80; a release's flags are those of the cp311 and cp312 wheels the check reuses, built
# as released (scripts/test_deps.sh).  Never for a wheel anyone installs.
check_build = os.environ.get("KAFKAREC_CHECK_BUILD") == "1"
compile_args = ["-O0", "-g"] if debug else ["-O0", "-g0"] if check_build else ["-O3", "-g0"]
gcc = "clang" not in (sysconfig.get_config_var("CC") or "") + os.environ.get("CC", "")
if not debug and gcc:
    # gcc: no inlining of functions that are not declared inline (-finline-functions; small
    # ones and those called once still inline): it made the compile dearer, and the suite
    # compiles the core for five CPythons.  The functions a hot loop needs inlined, however
    # large, are always_inline (_core_src/always_inline.h) rather than the size limit of an
    # inline function raised for the whole module (max-inline-insns-single), which inlined cold
    # code too: ~95 -> ~78 CPU-s a compile.  The decode loops are large once those are in, so
    # they may still grow by inlining the small ones (Py_DECREF and the like; without that, the
    # __consumer_offsets path took 2080 -> 2106 instructions a record).
    compile_args += ["--param=large-function-growth=2000", "--param=inline-unit-growth=200",
                     "-fno-inline-functions"]
link_args = []
# gcc, a release build: link-time optimisation, so that the one translation unit Cython makes is
# compiled by every core (-flto=auto: the LTO partitions are compiled in parallel at the link, as
# many at once as the machine has cores).  On 2 cores the core's compile takes ~34 s instead of
# ~70 s, most of the quick start's first run; the hot paths' instructions a record are the same or
# fewer (benchmarks/count_instructions.py; docs/performance.md).  The link repeats the compile's
# flags: they choose the code generated there.
lto = gcc and not debug and not check_build and not sanitize
if lto:
    compile_args += ["-flto=auto"]
    link_args += compile_args
# Python's own CFLAGS carry -Wall; its analyses cost ~9 CPU-s of a release compile of Cython's C
# (~8.9 MB), where nobody reads the warnings.  Debug and check builds keep it.
drop_flags = ("-Wall",) if not debug and not check_build else ()
macros = []
if debug:
    macros += [("CYTHON_TRACE", "1"), ("KAFKAREC_DEBUG", "1")]
if sanitize:
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    compile_args += flags
    link_args += flags

CORE_PYX = "kafkarec/_core.pyx"
CORE_C = "kafkarec/_core.c"
CORE_SRC = "kafkarec/_core_src"   # the .pxi/.pxd/.h parts of _core
DIRECTIVES = {
    "language_level": 3,
    "embedsignature": True,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "linetrace": debug,
}
INPUTS_LINE = re.compile(rb"/\* kafkarec: Cython inputs ([0-9a-f]{64}) \*/\n\Z")


def cython_inputs_digest():
    h = hashlib.sha256(repr(sorted(DIRECTIVES.items())).encode())
    for path in [CORE_PYX] + sorted(glob.glob(CORE_SRC + "/*.pxi") + glob.glob(CORE_SRC + "/*.pxd")):
        with open(path, "rb") as f:
            h.update(path.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def generated_from():
    """The inputs digest the C was generated from (None: no C, or not generated by this file)."""
    try:
        with open(CORE_C, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 100))
            match = INPUTS_LINE.search(f.read())
    except OSError:
        return None
    return match and match.group(1).decode()


def generate_core_c(digest):
    # Cython only when the C is stale: an up-to-date C builds without it.
    from Cython.Build import cythonize

    os.makedirs("build", exist_ok=True)
    # Generated beside and renamed over the C: a concurrent build sees the old C or the new, whole.
    with tempfile.TemporaryDirectory(dir="build", prefix="cython-") as tmp:
        cythonize([Extension("kafkarec._core", [CORE_PYX])], build_dir=tmp, force=True,
                  include_path=[CORE_SRC], compiler_directives=DIRECTIVES, annotate=debug)
        generated = os.path.join(tmp, CORE_C)
        with open(generated, "ab") as f:
            f.write(b"/* kafkarec: Cython inputs " + digest.encode() + b" */\n")
        if debug:
            os.replace(generated[:-2] + ".html", CORE_C[:-2] + ".html")
        os.replace(generated, CORE_C)


class build_ext_release(build_ext):
    """build_ext, less Python's compile flags in ``drop_flags`` (above).

    An editable install (scripts/env.sh's ``pip install -e``, after its in-place build) builds in
    the checkout's own build folders, not a throwaway one, so that a core the in-place build left
    current is copied, not compiled and linked again: ccache serves a compile, never a link, and
    the link is most of an LTO build (~46 CPU-s)."""

    def finalize_options(self):
        super().finalize_options()
        if self.editable_mode:
            base = self.get_finalized_command("build").build_base   # build/, or a check build's
            where = f".{sysconfig.get_platform()}-{sys.implementation.cache_tag}"
            self.build_lib = os.path.join(base, "lib" + where)
            self.build_temp = os.path.join(base, "temp" + where)

    def build_extensions(self):
        for attr in ("compiler_so", "compiler_so_cxx"):
            argv = getattr(self.compiler, attr, None)
            if argv:
                setattr(self.compiler, attr, [a for a in argv if a not in drop_flags])
        super().build_extensions()


class build_py_with_bytecode(build_py):
    """The packages' modules, each with a ``module.pyc`` beside its ``module.py`` in a wheel.

    Spark puts ``--py-files <wheel>`` on its Python processes' ``sys.path`` as a zip, and
    zipimport compiles every module it imports from a zip, in every process, unless that
    ``.pyc`` is beside it: ~0.35 CPU-s in each Spark Python worker for a read task's modules.
    They are checked hash-based pycs (PEP 552), without optimisation: used only while the ``.py``
    beside is the same bytes and the Python the one that built the wheel (its magic number),
    compiled from the source otherwise.  An installed wheel keeps its imports in ``__pycache__``
    and never reads them.  Not for an editable install, whose modules stay in the checkout.
    (spark_udfs/ship/shipping.py builds the same for the zip it makes of an installed kafkarec.)"""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for path in self.get_outputs(include_bytecode=False):
            if path.endswith(".py"):
                # the name a traceback gives: the module's path in the wheel, whose own path where
                # Spark puts it is not known here (a traceback's lines still come from the wheel)
                name = "<kafkarec archive>/" + os.path.relpath(path, self.build_lib).replace(os.sep, "/")
                py_compile.compile(path, cfile=path + "c", dfile=name, doraise=True, optimize=0,
                                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)


digest = cython_inputs_digest()
if generated_from() != digest:
    generate_core_c(digest)

setup(
    # a check build's objects never meet a release build's (setuptools compares file times, not flags)
    options={"build": {"build_base": "build-check"}} if check_build else {},
    cmdclass={"build_py": build_py_with_bytecode, "build_ext": build_ext_release},
    ext_modules=[
        Extension(
            "kafkarec._core",
            [CORE_C],
            include_dirs=[CORE_SRC],
            # the C includes the headers, and the compiler flags are set here: a change to either
            # recompiles every interpreter's core
            depends=sorted(glob.glob(CORE_SRC + "/*.h")) + ["setup.py"],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
            define_macros=macros,
        )
    ],
)
