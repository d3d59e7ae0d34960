"""Compiling ``.proto`` text: protoc as ``grpcio-tools`` bundles it, found installed or activated from the
wheels beside the kafkarec wheel (:func:`_toolchain`), run over the texts and the given descriptors
(:func:`_compile`)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from typing import Any

from kafkarec.errors import ProtobufSchemaError


_TOOLCHAIN_LOCK = threading.Lock()
_TOOLCHAIN_FOLDERS: list | None = None       # where grpc_tools and google.protobuf were found


def _toolchain() -> list:
    """Make ``google.protobuf`` and ``grpc_tools`` importable, or raise a one-line ProtobufSchemaError naming
    what to install where.  When they are not installed, their wheels are taken from next to the kafkarec
    wheel this process imported kafkarec from (Spark ships them there with kafkarec's other dependencies),
    ``$KAFKAREC_WHEELHOUSE`` or ``sys.path`` (by :mod:`kafkarec._boot.wheels`, imported only then).  Returns the
    folders that hold them (for protoc's own Python)."""

    def folders() -> list:
        global _TOOLCHAIN_FOLDERS
        import google.protobuf.descriptor_pb2  # noqa: F401
        import grpc_tools
        _TOOLCHAIN_FOLDERS = [
            os.path.dirname(os.path.dirname(grpc_tools.__file__)),
            os.path.dirname(os.path.dirname(os.path.dirname(google.protobuf.descriptor_pb2.__file__)))]
        return list(_TOOLCHAIN_FOLDERS)

    with _TOOLCHAIN_LOCK:
        if _TOOLCHAIN_FOLDERS is not None:
            return list(_TOOLCHAIN_FOLDERS)
        # Imported only once their distributions are on sys.path: a failed import would leave namespace
        # packages behind (google, and google.protobuf when a zip on sys.path holds such a folder, as
        # Spark's spark-core jar does in its Python workers) that the wheels' packages cannot replace.
        if _compiler_installed():
            try:
                return folders()
            except ImportError:
                pass
        from kafkarec._boot.files import cache_root
        from kafkarec._boot import wheels as _wheels
        from kafkarec._boot.loader import kafkarec_archive
        res = _wheels.activate_projects(_wheels.PROTOBUF_COMPILER, kafkarec_archive(), cache_root())
        try:
            return folders()
        except ImportError as exc:
            where = f"{sys.executable} (pid {os.getpid()})"
            why = " | ".join(res.problems) or f"{type(exc).__name__}: {exc}"
            raise ProtobufSchemaError(
                f"compiling Protobuf schema text needs grpcio-tools and protobuf in {where}: {why}. Install them "
                f"there (pip install 'kafkarec[registry]'), or put their wheels next to the kafkarec wheel "
                f"({_wheels.FIX_COMMAND.split('   ')[0].replace('PYTHON', sys.executable)}) and, where Spark plans "
                f"the column away from the driver's wheelhouse (a Connect server), ship them: "
                f"spark_udfs.register(spark, extras=['registry'])") from None


def _compiler_installed() -> bool:
    """Are grpcio-tools and protobuf installed (or activated) here?  Asked of their distributions'
    metadata, which imports neither."""
    import importlib.metadata as md
    try:
        md.distribution("protobuf")
        md.distribution("grpcio-tools")
    except md.PackageNotFoundError:
        return False
    return True


def _wkt_include() -> str:
    import grpc_tools
    return os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


def _compile(texts: dict[str, str], given: dict[str, bytes], main_name: str) -> bytes:
    """protoc over the .proto texts (imports from the texts, the given descriptors and the well-known types)
    -> one FileDescriptorSet with every file the main one needs, imports first."""
    paths = _toolchain()
    from google.protobuf import descriptor_pb2
    out = descriptor_pb2.FileDescriptorSet()
    have: dict[str, Any] = {}
    for fname, raw in given.items():
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
        fdp.name = fname
        have[fname] = fdp
    with tempfile.TemporaryDirectory(prefix="kafkarec-proto-") as tmp:
        for fname, text in texts.items():
            path = os.path.join(tmp, "src", fname)
            if os.path.isabs(fname) or ".." in fname.split("/"):
                raise ProtobufSchemaError(f"import name {fname!r} is not a relative path")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        # What protoc must compile: the texts, and the imports of given descriptors it cannot find elsewhere.
        targets = list(texts)
        for fdp in have.values():
            targets += [d for d in fdp.dependency if d not in have and d not in texts]
        if targets:
            args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{os.path.join(tmp, 'src')}",
                    f"-I{_wkt_include()}", "--include_imports",
                    f"--descriptor_set_out={os.path.join(tmp, 'out.pb')}"]
            if have:
                given_set = descriptor_pb2.FileDescriptorSet(file=list(have.values()))
                with open(os.path.join(tmp, "given.pb"), "wb") as fh:
                    fh.write(given_set.SerializeToString())
                args.append(f"--descriptor_set_in={os.path.join(tmp, 'given.pb')}")
            # protoc's Python sees the packages where this process found them (maybe unpacked wheels)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                paths + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
            proc = subprocess.run(args + sorted(set(targets)), capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise ProtobufSchemaError(f"protoc: {(proc.stderr or proc.stdout).strip()}")
            compiled = descriptor_pb2.FileDescriptorSet()
            with open(os.path.join(tmp, "out.pb"), "rb") as fh:
                compiled.ParseFromString(fh.read())
            for fdp in compiled.file:
                have.setdefault(fdp.name, fdp)
    # Dependency order, main file last.
    seen: set[str] = set()

    def visit(fname: str) -> None:
        if fname in seen:
            return
        seen.add(fname)
        fdp = have.get(fname)
        if fdp is None:
            raise ProtobufSchemaError(f"import {fname!r} is neither a reference nor a well-known type")
        for d in fdp.dependency:
            visit(d)
        out.file.append(fdp)

    visit(main_name)
    return out.SerializeToString()
