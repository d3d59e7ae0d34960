"""Add this Python's compiled modules to pyspark's ``python/lib/pyspark.zip`` (run it with the
Python whose pyspark it is: ``PYTHON scripts/pyspark_zip_pyc.py``).

Spark puts that zip first on every Python process's PYTHONPATH it starts (the driver under
spark-submit, the daemons, the streaming planner, the data source workers), so they import
pyspark from the zip, where Python keeps no compiled module: each process compiles every pyspark
module it imports, about a CPU-second more per process than from site-packages.  A Python that
Spark starts must connect back within a fixed 10 s (PythonWorkerFactory); on a loaded 2-core
machine that second made the streaming planner miss it.  zipimport reads ``module.pyc`` beside
``module.py`` in the zip; these are unchecked hash-based pycs (PEP 552), valid as long as the zip
is pyspark's own, which pip replaces whole with a new version.  Nothing else changes; run again,
it does nothing.
"""
from __future__ import annotations

import importlib.util
import marshal
import os
import sys
import tempfile
import zipfile


def main() -> int:
    import pyspark
    zip_path = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib", "pyspark.zip")
    if not os.path.isfile(zip_path):
        return 0                                # a pyspark without the zip: nothing to do
    with zipfile.ZipFile(zip_path) as src:
        names = src.namelist()
        if any(n.endswith(".pyc") for n in names):
            return 0
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(zip_path), suffix=".zip.part")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
                for info in src.infolist():
                    data = src.read(info)
                    out.writestr(info, data)
                    if not info.filename.endswith(".py") or "/tests/" in info.filename:
                        continue
                    try:   # the file name zipimport gives a module it compiles from this zip
                        code = compile(data, os.path.join(zip_path, info.filename), "exec", dont_inherit=True)
                    except SyntaxError:
                        continue                # not for this Python: imported (and failing) as before
                    flags = (0b01).to_bytes(4, "little")          # hash-based, unchecked
                    pyc = importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(data) + marshal.dumps(code)
                    out.writestr(zipfile.ZipInfo(info.filename[:-3] + ".pyc", info.date_time), pyc,
                                 zipfile.ZIP_DEFLATED)
            os.replace(tmp, zip_path)
        except BaseException:
            os.unlink(tmp)
            raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
