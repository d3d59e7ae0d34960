"""kafkarec's optional dependencies are imported in one place (kafkarec._extras.require): a missing
one is ONE MissingExtraError line naming the extra of pyproject.toml that installs it.  The base
install itself is tests/test_release.py's (a virtualenv without pyarrow or numpy)."""
from __future__ import annotations

import ast
import glob
import os
import pickle
import re
import sys
import tomllib

import pytest

import kafkarec
from kafkarec._extras import EXTRAS, require
from kafkarec.errors import MissingExtraError
from support.paths import ROOT


class _NotInstalled:
    """A meta path finder that finds ``tops`` nowhere, as Python's own finders do where they are not
    installed (a ``None`` in sys.modules would fail ``import pyarrow.fs`` differently)."""

    def __init__(self, tops):
        self.tops = tops

    def find_spec(self, name, path=None, target=None):
        if name in self.tops:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def hide(monkeypatch, *tops: str) -> None:
    """Make ``tops`` (and their submodules) unimportable, as where they are not installed."""
    for name in [m for m in sys.modules if m.partition(".")[0] in tops]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NotInstalled(tops)] + sys.meta_path)


def test_require_gives_the_module():
    import pyarrow.compute
    assert require("pyarrow.compute") is pyarrow.compute


@pytest.mark.parametrize("name, top", [("pyarrow", "pyarrow"), ("pyarrow.fs", "pyarrow"), ("numpy", "numpy")])
def test_a_missing_module_names_its_extra_in_one_line(monkeypatch, name, top):
    hide(monkeypatch, top)
    with pytest.raises(MissingExtraError) as info:
        require(name)
    e = info.value
    assert str(e) == f"{top} is not installed: pip install 'kafkarec[arrow]'"
    assert (e.name, e.distribution, e.extra) == (top, top, "arrow")
    assert isinstance(e, ImportError) and isinstance(e, kafkarec.KafkaRecError)
    again = pickle.loads(pickle.dumps(e))           # raised on a Spark worker, shown on the driver
    assert (type(again), str(again), again.name, again.extra) == (MissingExtraError, str(e), top, "arrow")


def test_a_broken_install_is_not_called_a_missing_extra():
    """A module missing inside an installed package is that package's failure, not an extra to install."""
    with pytest.raises(ModuleNotFoundError) as info:
        require("pyarrow.no_such_module")
    assert not isinstance(info.value, MissingExtraError)


def test_each_extra_named_installs_the_module():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]

    def names(requirements):
        return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower() for r in requirements}
    base = names(project["dependencies"])
    for module, (distribution, extra) in EXTRAS.items():
        assert distribution not in base, f"{distribution} is a base dependency: {module} needs no extra"
        assert distribution in names(project["optional-dependencies"][extra]), (module, extra)


def _sources():
    for path in sorted(glob.glob(os.path.join(ROOT, "kafkarec", "**", "*.*"), recursive=True)):
        if path.endswith((".py", ".pyx", ".pxi")):
            with open(path, encoding="utf-8") as fh:
                yield os.path.relpath(path, ROOT), fh.read()


def test_every_optional_import_goes_through_require():
    optional = "|".join(map(re.escape, EXTRAS))
    direct = re.compile(rf"^\s*(?:import|from)\s+(?:{optional})\b", re.M)
    called = re.compile(r"\brequire\(\s*[\"']([\w.]+)[\"']")
    found = 0
    for path, text in _sources():
        if path.endswith(".py"):
            imported = [n.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Import)
                        for n in node.names] + \
                       [node.module for node in ast.walk(ast.parse(text))
                        if isinstance(node, ast.ImportFrom) and node.module and not node.level]
            assert not [m for m in imported if m.partition(".")[0] in EXTRAS], path
        else:                       # Cython: the core's own pyarrow() calls require
            assert not direct.search(text), path
        for name in called.findall(text):
            assert name.partition(".")[0] in EXTRAS, (path, name)
            found += 1
    assert found > 50      # the scan sees the call sites


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    from support.logs.logdir import build_log_dir
    root = str(tmp_path_factory.mktemp("logs"))
    build_log_dir(root)
    return root


@pytest.mark.parametrize("command", [
    ["table"], ["dump", "--topics", "orders", "--start-offset", "5"], ["stats", "--end-offset", "10"]])
def test_the_command_line_says_the_extra_in_one_line(logroot, command, monkeypatch, capfd):
    from kafkarec.cli import main
    hide(monkeypatch, "pyarrow", "numpy")
    assert main(command + [logroot]) == 2
    out, err = capfd.readouterr()
    assert (out, err) == ("", f"kafkarec {command[0]}: error: pyarrow is not installed: "
                              f"pip install 'kafkarec[arrow]'\n")


def test_verify_of_a_uri_says_the_extra(logroot, monkeypatch, capfd):
    from kafkarec.cli import main
    hide(monkeypatch, "pyarrow")
    assert main(["verify", "--no-progress", "file://" + logroot]) == 2
    assert capfd.readouterr().err == ("kafkarec verify: error: pyarrow is not installed: "
                                      "pip install 'kafkarec[arrow]'\n")


def test_confluent_kafka_missing_names_the_extra_of_the_caller(monkeypatch):
    """confluent-kafka is the restore's and the lakehouse's: the backfill's --bootstrap still names
    the lakehouse extra, as before the restore's extra existed."""
    import sys
    from kafkarec._extras import require
    from kafkarec.errors import MissingExtraError
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'kafkarec\[lakehouse\]'"):
        require("confluent_kafka", extra="lakehouse")
    with pytest.raises(MissingExtraError, match=r"pip install 'kafkarec\[restore\]'"):
        require("confluent_kafka")


def test_a_shipped_wheel_that_does_not_fit_says_why(monkeypatch):
    """kafkarec from its wheel (a bare executor) where the client's wheel shipped beside it is for
    another Python: the line says what did not fit, not that none was shipped."""
    import sys
    from kafkarec import _extras
    from kafkarec._boot import wheels
    from kafkarec.errors import MissingExtraError

    class Resolution:
        problems = ["kafkarec's confluent-kafka: no wheel fits: confluent_kafka-2.16.1-cp312-cp312-"
                    "manylinux_2_28_x86_64.whl (not this Python's tag)"]

    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    monkeypatch.setattr(_extras, "kafkarec_archive", lambda: "/executor/kafkarec-0.1.0-cp311.whl.zip")
    monkeypatch.setattr(_extras, "_looked_for", {})
    monkeypatch.setattr(wheels, "activate_projects", lambda *a, **k: Resolution())
    with pytest.raises(MissingExtraError) as info:
        require("confluent_kafka")
    text = str(info.value)
    assert "the wheel of it shipped beside that one does not fit (kafkarec's confluent-kafka: no wheel fits: " \
           "confluent_kafka-2.16.1-cp312" in text, text
    assert "spark_udfs.ship(spark, wheelhouse=DIR, projects=['confluent-kafka'])" in text
    assert str(pickle.loads(pickle.dumps(info.value))) == text


def test_a_module_another_thread_is_importing_is_waited_for(tmp_path, monkeypatch):
    """require() of a module another thread is still importing returns it whole, as ``import``
    does (it is in sys.modules half made meanwhile): two threads decoding at once in a fresh
    process once met "partially initialized module 'pyarrow'"."""
    import sys
    import threading
    from kafkarec._extras import require
    started, release = threading.Event(), threading.Event()
    (tmp_path / "slow_to_import_kafkarec_test.py").write_text(
        "import sys\n"
        "_gate = sys.modules['kafkarec_test_gate']\n"
        "_gate.started.set()\n"
        "_gate.release.wait(10)\n"
        "VALUE = 42\n")
    gate = type(sys)("kafkarec_test_gate")
    gate.started, gate.release = started, release
    monkeypatch.setitem(sys.modules, "kafkarec_test_gate", gate)
    monkeypatch.syspath_prepend(str(tmp_path))
    first = threading.Thread(target=require, args=("slow_to_import_kafkarec_test",))
    first.start()
    assert started.wait(10)
    got = []
    second = threading.Thread(target=lambda: got.append(require("slow_to_import_kafkarec_test").VALUE))
    second.start()
    second.join(0.3)
    assert second.is_alive() and not got       # waiting for the first import, not handed half a module
    release.set()
    first.join(10)
    second.join(10)
    assert got == [42]
    sys.modules.pop("slow_to_import_kafkarec_test", None)
