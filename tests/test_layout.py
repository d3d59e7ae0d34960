"""The layout's promises that a reader of docs/layout.md relies on: no import circle among
kafkarec's and spark_udfs' modules, lazy (function-level) imports included: a layer asks
the layers under it, never the other way round; ``import kafkarec`` loads no compiled core, and
the boot room (kafkarec/_boot/) is the one loader of it, importing nothing else of kafkarec."""
import ast
import os
import re

import pytest

from support.paths import ROOT


def _modules():
    mods = {}
    for pkg in ("kafkarec", "spark_udfs"):
        for folder, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(folder, f)
                    name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    mods[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return mods


def _imports(name, path, mods):
    out = set()
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.add(full if full in mods else node.module)
    # a module importing its own package (kafkarec.log.x -> kafkarec) is not a circle of layers
    return {m for m in out if m in mods and m != name and not name.startswith(m + ".")}


def _circles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    mods = _modules()
    graph = {name: _imports(name, path, mods) for name, path in mods.items()}
    assert graph["spark_udfs.read.datasource"] and "kafkarec.table" in graph["spark_udfs.read.datasource"]
    assert _circles(graph) == []


def _spark_udfs_imports(path):
    """Every import of spark_udfs in the file at ``path``, as ``line: what``: import statements
    anywhere (function-level ones included) and ``importlib.import_module("spark_udfs...")`` /
    ``__import__("spark_udfs...")`` strings."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if callee in ("import_module", "__import__"):
                names = [node.args[0].value]
        found += [f"{node.lineno}: {n}" for n in names if n == "spark_udfs" or n.startswith("spark_udfs.")]
    return found


def test_kafkarec_never_imports_spark_udfs():
    """The library never needs its Spark add-on: spark_udfs imports kafkarec, never the reverse."""
    found = {os.path.relpath(path, ROOT): hits for name, path in _modules().items()
             if name.split(".")[0] == "kafkarec" and (hits := _spark_udfs_imports(path))}
    assert found == {}


def test_the_spark_udfs_check_sees_lazy_and_dynamic_imports(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import importlib\n"
                    "def f():\n    from spark_udfs import _runtime\n"
                    "def g():\n    return importlib.import_module('spark_udfs.shipping')\n"
                    "import spark_udfsx\n")
    assert _spark_udfs_imports(str(path)) == ["3: spark_udfs", "5: spark_udfs.shipping"]


def test_the_check_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layout_md_names_every_module_and_nothing_removed():
    """docs/layout.md is true: every module of kafkarec (and every part of the core) is named
    there, and every kafkarec path it names exists."""
    import re
    text = open(os.path.join(ROOT, "docs", "layout.md"), encoding="utf-8").read()
    missing = []
    for folder, _, files in os.walk(os.path.join(ROOT, "kafkarec")):
        rel = os.path.relpath(folder, ROOT)
        if "schemas" in rel.split(os.sep) or "__pycache__" in rel:
            continue                     # the generated message schemas, named as one folder
        for f in files:
            if f == "__init__.py" or not f.endswith((".py", ".pxi", ".h", ".pxd")):
                continue
            if f"`{f}`" not in text and f"{rel}/{f}".replace(os.sep, "/") not in text:
                missing.append(os.path.join(rel, f))
    assert not missing, f"docs/layout.md does not name {missing}"
    named = set(re.findall(r"`(kafkarec/[A-Za-z0-9_/]+\.(?:py|pyx|pxi|pyi))`", text))
    gone = [p for p in named if not os.path.exists(os.path.join(ROOT, p))]
    assert not gone, f"docs/layout.md names {gone}, which do not exist"


def _python(code):
    """``code`` in a fresh Python that imports kafkarec from this checkout."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd="/", timeout=120)


def test_import_kafkarec_does_not_load_the_core():
    """``import kafkarec`` is lazy (PEP 562): the compiled core, and the modules that need it, load
    on first use of a name that needs them; every public name is still there and in ``dir()``."""
    run = _python("import sys, kafkarec\n"
                  "assert 'kafkarec._core' not in sys.modules, 'import kafkarec loaded the core'\n"
                  "loaded = sorted(m for m in sys.modules if m.startswith('kafkarec'))\n"
                  "assert set(kafkarec.__all__) <= set(dir(kafkarec)), 'names missing from dir()'\n"
                  "assert 'kafkarec._core' not in sys.modules, 'dir(kafkarec) loaded the core'\n"
                  "kafkarec.KafkaRecError, kafkarec.Compression\n"
                  "assert 'kafkarec._core' not in sys.modules, 'the errors or enums loaded the core'\n"
                  "data = kafkarec.build_batch([b'x'])\n"
                  "assert [r.value for b in kafkarec.iter_batches(data) for r in b] == [b'x']\n"
                  "assert 'kafkarec._core' in sys.modules\n"
                  "missing = [n for n in kafkarec.__all__ if getattr(kafkarec, n, None) is None]\n"
                  "assert not missing, missing\n"
                  "print(*loaded)")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["kafkarec", "kafkarec._boot", "kafkarec._boot.loader"]


def _type_checking_imports(tree):
    """What the ``if TYPE_CHECKING:`` block of ``tree`` imports under public names, as
    ``{module: [name, ...]}``, and the names it imports otherwise than as ``X as X`` (the explicit
    re-export type checkers take without an ``__all__`` of literals)."""
    block = [n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.Name)
             and n.test.id == "TYPE_CHECKING"]
    assert len(block) == 1, "one TYPE_CHECKING block"
    imported, not_reexported = {}, []
    for node in ast.walk(block[0]):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                bound = a.asname or a.name
                if not bound.startswith("_"):
                    imported.setdefault(node.module, []).append(a.name)
                    if a.asname != a.name:
                        not_reexported.append(a.name)
    return imported, not_reexported


def test_the_public_names_are_listed_once():
    """kafkarec/__init__.py's table (``_HOMES``) is the one list of the public names: ``__all__``
    and ``dir(kafkarec)`` are derived from it, and the TYPE_CHECKING block that type checkers read
    imports exactly its names from their homes, each as ``X as X`` (issue 70)."""
    import kafkarec
    probe = ast.parse("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Any as _Any\n"
                      "    from a import (X as X, Y)\n    from b import Z as Z\n")
    assert _type_checking_imports(probe) == ({"a": ["X", "Y"], "b": ["Z"]}, ["Y"])
    with open(os.path.join(ROOT, "kafkarec", "__init__.py"), encoding="utf-8") as fh:
        imported, not_reexported = _type_checking_imports(ast.parse(fh.read()))
    assert not_reexported == []
    assert imported == {home: list(names) for home, names in kafkarec._HOMES.items()}
    assert sorted(kafkarec.__all__) == sorted([*kafkarec._LAZY, "iter_arrow", "to_arrow"])
    assert len(set(kafkarec.__all__)) == len(kafkarec.__all__)


@pytest.mark.parametrize("first", ["import kafkarec.convert", "from kafkarec.convert import ConversionResult",
                                   "kafkarec.convert"])
def test_a_lazy_name_stays_itself_when_its_namesake_submodule_loads(first):
    """``kafkarec.convert`` is the function, also when the submodule kafkarec.convert is imported
    first (the import system binds a submodule onto its package when it first loads)."""
    run = _python(f"import kafkarec\n{first}\nimport kafkarec.convert\n"
                  "from kafkarec.convert import convert\n"
                  "assert kafkarec.convert is convert, kafkarec.convert\n"
                  "assert kafkarec.convert(kafkarec.build_batch([b'x']), 1).data\n"
                  "print(type(__import__('sys').modules['kafkarec.convert']).__name__)")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["module"]


@pytest.mark.parametrize("route", ["from kafkarec._core import encode_control_value, parse_control_value",
                                   "from kafkarec.log import segment\n"
                                   "from kafkarec._core import encode_control_value, parse_control_value"])
def test_the_control_codec_is_registered_by_the_cores_first_load(route):
    """Whichever import loads the core first (not only ``kafkarec.<name>``), its first load registers
    the codec of KRaft control values (kafkarec.control) that the core asks for."""
    run = _python(f"import sys\n{route}\n"
                  "value = {'version': 0, 'leaderId': 1, 'voters': [{'voterId': 1}], "
                  "'grantingVoters': [{'voterId': 1}]}\n"
                  "assert parse_control_value(2, encode_control_value(2, value)) == value\n"
                  "print('kafkarec.control' in sys.modules)")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True"]


def _python_files(*folders):
    for top in folders:
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            yield from (os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))


def _sys_modules_writes(path):
    """``sys.modules[...] = ...`` (and ``del``, ``setdefault``, ``update``, ``pop``) in the file at
    ``path``, as ``line``."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())

    def is_sys_modules(node):
        return (isinstance(node, ast.Attribute) and node.attr == "modules"
                and isinstance(node.value, ast.Name) and node.value.id == "sys")
    def entries(target):
        """The ``sys.modules[...]`` a target binds (not ``sys.modules[...].attr``, the module's own)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            return [e for t in target.elts for e in entries(t)]
        if isinstance(target, ast.Starred):
            return entries(target.value)
        return [target] if isinstance(target, ast.Subscript) and is_sys_modules(target.value) else []
    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        found += [node.lineno for t in targets for _ in entries(t)]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("setdefault", "update", "pop", "__setitem__")
                and is_sys_modules(node.func.value)):
            found.append(node.lineno)
    return sorted(found)


def test_nothing_writes_sys_modules_or_loads_a_module_by_path():
    """The one loader of the native core (kafkarec/_boot/loader.py) hands the import system a
    spec; nothing else in kafkarec, spark_udfs or scripts loads a module by path or edits
    ``sys.modules``: with ``import kafkarec`` lazy, they import ``kafkarec._boot`` as it is."""
    by_path = ("spec_from_file_location", "module_from_spec", "SourceFileLoader", "load_module")
    found = {}
    for path in _python_files("kafkarec", "spark_udfs", "scripts"):
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        hits = [f"{line}: sys.modules" for line in _sys_modules_writes(path)]
        hits += [f"{n.lineno}: {n.attr}" for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute) and n.attr in by_path]
        if rel == os.path.join("kafkarec", "_boot", "loader.py"):
            assert [h for h in hits if h.endswith("spec_from_file_location")], "the loader's spec"
            hits = [h for h in hits if not h.endswith("spec_from_file_location")]
        if hits:
            found[rel] = hits
    assert found == {}


# What walks or lists the log: the log layer's planners and walkers of a segment's bytes and
# batches, the core's framing of a buffer, a segment file opened, a log directory or storage
# listed.  Only kafkarec/scan (the one reader: LogScan, its batch-level door PartitionWalk, its
# listing kafkarec.scan.listings, and its file-level door for a local log dir, partition_folders
# and FileWalk) and kafkarec/log (the layer it reads through) call them; anything else that does is
# named in _OTHER_WALKERS with why, so that a new walker of the log fails test_one_walk_of_the_log.
_WALKERS = ("read_arrow", "read_records", "iter_selected", "iter_range_pieces", "plan_partition",
            "partition_batches", "partition_records", "snapshot_batches", "read_committed_spans", "iter_batches",
            "iter_remote_batches", "iter_pieces", "open_segment", "Segment", "find_partition_dirs",
            "scan_partition_dir", "is_partition_dir", "find_segment_files", "list_files", "scan_history", "_resolve")

_ROOMS_OF_THE_LOG = ("scan", "log")

# module -> why it may: the one walker of the log is kafkarec.scan; the named single-file exception
# (kafka-dump-log's job); what frames buffers that are not the log; and the registry, below the scan
_OTHER_WALKERS = {
    # the one named exception: kafka-dump-log's job, a single file dumped as it is -- an index checked
    # entry by entry against its sibling .log (a log dir is listed through kafkarec.scan.partition_folders,
    # its .log and .checkpoint files walked by kafkarec.scan.FileWalk)
    "kafkarec/cli/dump.py": "dump of a single file (kafka-dump-log's job): an index against its .log",
    # the public names (the core's iter_batches among them)
    "kafkarec/__init__.py": "the public names",
    # buffers that are not the log: a record set given in memory or in a column
    "kafkarec/convert.py": "a buffer's batches converted (not the log)",
    "spark_udfs/functions.py": "a binary column's record sets (not the log)",
    "spark_udfs/ship/shipping.py": "a shipped archive's self-check on a built batch (not the log)",
    # the registry's folder of schema files is a listing of files, not of a log
    "kafkarec/registry/_sources.py": "a folder of schema files (not the log)",
    # the registry sits below the scan (a typed read loads its registry: scan -> registry would be a
    # circle), so its _schemas replay and its test of a log dir read the layer under both: the
    # listing every read makes and the one record walk PartitionWalk.records opens
    "kafkarec/registry/_topic.py": "below the scan: the log layer's listing and its one record walk",
    "kafkarec/registry/__init__.py": "below the scan: the log layer's listing (does a log dir hold _schemas)",
}


def _walker_calls(path):
    """``line: name`` of each use of a walker of :data:`_WALKERS` in the file at ``path`` (an
    attribute, a name, or a name imported), and each ``layout.scan`` (the layout's listing;
    ``scan`` alone names too much else)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = []
    for n in ast.walk(tree):
        name = (n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None)
        if name in _WALKERS:
            out.append(f"{n.lineno}: {name}")
        if (isinstance(n, ast.Attribute) and n.attr == "scan" and isinstance(n.value, ast.Name)
                and n.value.id in ("layout", "_layout")):
            out.append(f"{n.lineno}: layout.scan")
        if isinstance(n, ast.ImportFrom):
            out += [f"{n.lineno}: {a.name}" for a in n.names if a.name in _WALKERS]
            if n.module == "kafkarec.log.layout":
                out += [f"{n.lineno}: layout.scan" for a in n.names if a.name == "scan"]
    return sorted(out, key=lambda h: int(h.split(":")[0]))


def _walkers_outside():
    inside = tuple(os.path.join("kafkarec", room) + os.sep for room in _ROOMS_OF_THE_LOG)
    return {rel.replace(os.sep, "/"): hits for rel, hits in ((os.path.relpath(p, ROOT), _walker_calls(p))
                                                            for p in _python_files("kafkarec", "spark_udfs", "scripts"))
            if hits and not rel.startswith(inside)}


def test_one_walk_of_the_log(tmp_path):
    """Every read of the log walks it through kafkarec.scan (LogScan's pieces, or its batch-level
    PartitionWalk: the audit, the hand-off point, a stream's committed view, the internal topics'
    and the registry's replays): outside kafkarec/scan and kafkarec/log nothing plans segment
    ranges, frames, opens or lists the log, but the modules named in _OTHER_WALKERS (each with why,
    and each still walking: a module that stops leaves the list)."""
    probe = tmp_path / "m.py"       # the check sees what it forbids
    probe.write_text("from kafkarec.log.committed import partition_batches\n"
                     "from kafkarec.log import committed, selection, layout\n"
                     "committed.partition_batches(s, p)\nselection.plan_partition(p, 0, 1, r)\n"
                     "committed.aborted_spans(b)\nkafkarec.iter_batches(data)\nlayout.scan(st, root)\n"
                     "storage._resolve(uri)\nwith Segment(path) as seg: pass\nscan.pieces()\n")
    assert _walker_calls(str(probe)) == ["1: partition_batches", "3: partition_batches", "4: plan_partition",
                                         "6: iter_batches", "7: layout.scan", "8: _resolve", "9: Segment"]
    found = _walkers_outside()
    assert {rel: hits for rel, hits in found.items() if rel not in _OTHER_WALKERS} == {}
    # the list stays current: a module that no longer walks the log leaves it
    assert sorted(set(_OTHER_WALKERS) - set(found)) == []


def test_the_internal_topics_and_the_registry_replay_through_the_one_walk():
    """The replays of the log's own records (issue 70) walk it by the one batch walk: the internal
    topics' analyses and ``__cluster_metadata`` through LogScan.partition_walks, the registry's
    ``_schemas`` (below the scan) through the log layer's record walk that PartitionWalk.records
    opens; the second reader they used (``selection.read_arrow``/``read_records``/``iter_selected``)
    is gone, and kafkarec/log's replay of ``__remote_log_metadata`` (below the layout, which asks
    it) opens no storage by the private ``_resolve``."""
    from kafkarec.log import selection
    for gone in ("read_arrow", "read_records", "iter_selected"):
        assert not hasattr(selection, gone), gone
    for rel in ("kafkarec/cluster/coordinators.py", "kafkarec/cluster/metadata.py"):
        path = os.path.join(ROOT, *rel.split("/"))
        assert _walker_calls(path) == [], rel
        with open(path, encoding="utf-8") as fh:
            assert "partition_walks()" in fh.read(), rel
    registry = _walker_calls(os.path.join(ROOT, "kafkarec", "registry", "_topic.py"))
    assert [h.split(": ")[1] for h in registry] == ["scan_history", "partition_records"]
    assert "_resolve" not in " ".join(_walker_calls(os.path.join(ROOT, "kafkarec", "log", "remote_metadata.py")))


# each rule written once, in the room that owns it (issue 70): what names the rule, and where it may be
# written -- the typed rows' parse modes, the last stable offset read off the transaction rule, Kafka's
# ListOffsets and the admin client that asks it
_ONE_HOME = {
    "TypedRows": {os.path.join("kafkarec", "scan", "typed.py")},
    "aborted_batches": {os.path.join("kafkarec", "transactions.py"), os.path.join("kafkarec", "log", "committed.py"),
                        os.path.join("kafkarec", "scan", "_walk.py")},
    "list_offsets": {os.path.join("kafkarec", "_client.py")},
    "AdminClient": {os.path.join("kafkarec", "_client.py")},
}


def _rule_uses(path):
    """``name: line`` of each place the file at ``path`` writes a rule of :data:`_ONE_HOME`: a class
    ``TypedRows`` defined; the transaction rule (``aborted_batches`` of kafkarec.transactions or the
    core, not :func:`kafkarec.log.local.aborted_batches`) called or imported; a client's
    ``list_offsets`` called with ``isolation_level`` (confluent-kafka's, not kafkarec's wrappers of
    it); an ``AdminClient`` named."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef) and n.name == "TypedRows":
            out.append(f"TypedRows: {n.lineno}")
        elif isinstance(n, ast.ImportFrom) and n.module in ("kafkarec.transactions", "kafkarec._core"):
            out += [f"aborted_batches: {n.lineno}" for a in n.names if a.name == "aborted_batches"]
        elif (isinstance(n, ast.Attribute) and n.attr == "aborted_batches" and isinstance(n.value, ast.Name)
              and n.value.id in ("transactions", "_core")):
            out.append(f"aborted_batches: {n.lineno}")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "list_offsets" and any(k.arg == "isolation_level" for k in n.keywords):
                out.append(f"list_offsets: {n.lineno}")
        if (isinstance(n, ast.Attribute) and n.attr == "AdminClient") or (isinstance(n, ast.Name) and n.id == "AdminClient"):
            out.append(f"AdminClient: {n.lineno}")
    return sorted(out, key=lambda h: int(h.split(": ")[1]))


def test_each_rule_is_written_once(tmp_path):
    """One TypedRows (kafkarec/scan/typed.py: Spark's parse modes, which spark_udfs' typed reads
    apply through it); one computation of the last stable offset (PartitionWalk.committed_view, off
    the transaction rule that only it and committed.aborted_spans call); one ListOffsets client and
    one maker of admin clients (kafkarec/_client.py, for the restore and the lakehouse)."""
    probe = tmp_path / "m.py"       # the check sees what it forbids
    probe.write_text("from kafkarec import transactions\nfrom kafkarec.log import local\n"
                     "class TypedRows:\n    pass\n"
                     "transactions.aborted_batches(b)\nlocal.aborted_batches(f)\n"
                     "a = admin.AdminClient(c)\na.list_offsets(r, isolation_level=i)\nbroker.list_offsets(b, p)\n")
    assert _rule_uses(str(probe)) == ["TypedRows: 3", "aborted_batches: 5", "AdminClient: 7", "list_offsets: 8"]
    found = {}
    for path in _python_files("kafkarec", "spark_udfs", "scripts"):
        rel = os.path.relpath(path, ROOT)
        hits = [h for h in _rule_uses(path) if rel not in _ONE_HOME[h.split(":")[0]]]
        if hits:
            found[rel] = hits
    assert found == {}


def test_the_sys_modules_check_sees_every_write(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import sys\nsys.modules['a'] = 1\nsys.modules.setdefault('b', 2)\n"
                    "x = sys.modules['c']\ndel sys.modules['d']\nsys.modules[1], y = 2, 3\n"
                    "sys.modules['e'].attr = 4\n")
    assert _sys_modules_writes(str(path)) == [2, 3, 5, 6]


def test_the_boot_room_imports_nothing_of_kafkarec_outside_itself():
    """kafkarec/_boot/ is what loads before the core (and what spark_udfs and scripts/wheelhouse.py
    use where the core cannot load): it imports no other kafkarec module, lazily or not."""
    mods = _modules()
    found = {name: sorted(m for m in _imports(name, path, mods)
                          if m.split(".")[0] == "kafkarec" and not m.startswith("kafkarec._boot"))
             for name, path in mods.items() if name.startswith("kafkarec._boot")}
    assert set(found) == {"kafkarec._boot", "kafkarec._boot.loader", "kafkarec._boot.wheels",
                          "kafkarec._boot.files"}
    assert {name: m for name, m in found.items() if m} == {}


# The codec of Kafka's internal topics (kafkarec/internal/) sits under the log layer and the reader that
# use it: what it may import of kafkarec, lazily or not.  The replays that read the log through
# kafkarec.scan are a room above it, kafkarec/cluster/ (issue 70: in one folder they made the codec's
# room point up at the reader).
_CODEC_FLOOR = ("kafkarec.errors", "kafkarec.enums", "kafkarec._extras", "kafkarec.internal")


def _outside_floor(name, path, mods, floor):
    """The kafkarec modules the module ``name`` (at ``path``) imports, lazily or not, that are not
    in ``floor`` (rooms and modules, a room's modules included)."""
    return sorted(m for m in _imports(name, path, mods) if m.split(".")[0] == "kafkarec"
                  and not any(m == f or m.startswith(f + ".") for f in floor))


def test_the_internal_topics_codec_imports_nothing_above_it(tmp_path):
    """kafkarec/internal/ is the codec (schemas, records, kafka-dump-log's lines, Arrow columns): it
    imports the core, the errors, the enums and the extras only -- not the reader (kafkarec.scan), the
    log layer, or kafkarec.cluster, the room of the replays that read the log and decode through it."""
    mods = _modules()
    probe = tmp_path / "m.py"       # the check sees what it forbids: a lazy import of the reader
    probe.write_text("from kafkarec.errors import DecodeError\nfrom kafkarec.internal import topics\n"
                     "def f():\n    from kafkarec.scan import LogScan\n    from kafkarec.cluster import replay\n"
                     "    import kafkarec.log.remote_metadata\n")
    assert _outside_floor("kafkarec.internal.probe", str(probe), mods, _CODEC_FLOOR) == \
        ["kafkarec.cluster", "kafkarec.log.remote_metadata", "kafkarec.scan"]
    found = {name: _outside_floor(name, path, mods, _CODEC_FLOOR) for name, path in mods.items()
             if name == "kafkarec.internal" or name.startswith("kafkarec.internal.")}
    assert {"kafkarec.internal.topics", "kafkarec.internal.dumplog", "kafkarec.internal.columns"} <= set(found)
    assert {name: m for name, m in found.items() if m} == {}


# --- the tests' own layout: every helper in tests/support/, the import path edited only by scripts ---

TESTS = os.path.join(ROOT, "tests")
SUPPORT = os.path.join(TESTS, "support")
#: A helper module that edits the import path, and why: protoc's generated modules import one another by
#: their own package names (kr.common_pb2), from the folder protoc wrote them to.
SYS_PATH_HELPERS = {os.path.join("tests", "support", "oracles", "protos.py")}


def _kind(path):
    """``test``, ``conftest``, ``support`` or ``script`` (a file run on its own: a spark-submit job,
    a Connect client, a script run by hand): what a file under tests/ is."""
    name = os.path.basename(path)
    if name.startswith("test_"):
        return "test"
    if name == "conftest.py":
        return "conftest"
    return "support" if path.startswith(SUPPORT + os.sep) else "script"


def _imported_names(tree):
    """Every module name an import in ``tree`` asks for (absolute imports), as written."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def _outside_helpers(tree, scripts):
    """The imports in ``tree`` that reach a module under tests/ outside tests/support/: a script or
    a test module by its bare name (pytest puts a test's folder on the path) or by its folder
    (``from cdc.x import``, tests/ being on the path)."""
    found = set()
    for name in _imported_names(tree):
        parts = name.split(".")
        if len(parts) == 1 and (name in scripts or name.startswith("test_")):
            found.add(name)
        elif parts[0] != "support" and os.path.isdir(os.path.join(TESTS, parts[0])) \
                and os.path.exists(os.path.join(TESTS, *parts) + ".py"):
            found.add(name)
    return found


def _import_path_edits(tree):
    """The lines of ``tree`` that change the import path (``sys``'s ``path``): an assignment to it or to an item or slice of
    it, or a call of one of its list methods that change it."""
    def is_the_import_path(node):
        return (isinstance(node, ast.Attribute) and node.attr == "path"
                and isinstance(node.value, ast.Name) and node.value.id == "sys")
    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(is_the_import_path(t) or (isinstance(t, ast.Subscript) and is_the_import_path(t.value)) for t in targets):
            found.append(node.lineno)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_the_import_path(node.func.value)
                and node.func.attr in ("insert", "append", "extend", "remove", "pop", "clear", "reverse", "sort")):
            found.append(node.lineno)
    return sorted(found)


def _tests_files():
    out = {}
    for path in _python_files("tests"):
        with open(path, encoding="utf-8") as fh:
            out[path] = ast.parse(fh.read())
    return out


def test_every_test_helper_lives_in_tests_support():
    """Tests, conftests and support modules import the suite's helpers from tests/support/ only:
    no module of a test folder, no script (jobs/, a Connect client) and no other test module."""
    files = _tests_files()
    scripts = {os.path.basename(p)[:-3] for p in files if _kind(p) == "script"}
    found = {os.path.relpath(p, ROOT): sorted(_outside_helpers(tree, scripts))
             for p, tree in files.items() if _kind(p) != "script"}
    assert {p: names for p, names in found.items() if names} == {}


def test_only_scripts_edit_the_import_path():
    """pyproject's ``pythonpath`` puts tests/ on the import path for the test session: only a file
    run on its own (a spark-submit job, a script run by hand) puts it there itself."""
    found = {os.path.relpath(p, ROOT): _import_path_edits(tree) for p, tree in _tests_files().items()
             if _kind(p) != "script" and os.path.relpath(p, ROOT) not in SYS_PATH_HELPERS}
    assert {p: lines for p, lines in found.items() if lines} == {}


def test_the_tests_layout_checks_see_what_they_forbid(tmp_path):
    p = "sys" + ".path"      # spelt apart: the tests' count of that name stays the scripts' own
    tree = ast.parse("import sys\nimport produce\nfrom cdc.cdc_job import X\nfrom support.paths import ROOT\n"
                     f"import test_typed\nimport typing\n{p}.insert(0, 'x')\n{p}[:0] = ['y']\n"
                     f"{p} += ['z']\n{p} = []\nprint({p}[0])\n{p}.index('x')\n")
    assert _outside_helpers(tree, {"produce"}) == {"produce", "cdc.cdc_job", "test_typed"}
    assert _import_path_edits(tree) == [7, 8, 9, 10]


#: tests/support/'s rooms, each a package whose ``__init__.py`` docstring says what it holds ...
SUPPORT_ROOMS = {"brokers", "spark", "logs", "oracles", "registry", "servers"}
#: ... and the modules flat beside them: the plumbing every room uses (where things are, free ports,
#: process groups, the xdist lanes, Java compiled once, the jvm/ class paths, the pinned versions).
SUPPORT_FLAT = {"__init__.py", "paths.py", "net.py", "procs.py", "lanes.py", "java.py", "jvm.py", "versions.py"}


def test_tests_support_is_rooms():
    """A helper goes into the room of what it holds, not flat into tests/support/: only the plumbing
    of :data:`SUPPORT_FLAT` lies beside the rooms, a room is a package that says what it holds and
    has no folders of its own, and every tests/support/ path docs/layout.md names exists."""
    entries = {e for e in os.listdir(SUPPORT) if e != "__pycache__" and not e.startswith(".")}
    rooms = {e for e in entries if os.path.isdir(os.path.join(SUPPORT, e))}
    assert entries - rooms == SUPPORT_FLAT
    assert rooms == SUPPORT_ROOMS
    for room in sorted(rooms):
        init = os.path.join(SUPPORT, room, "__init__.py")
        with open(init, encoding="utf-8") as fh:
            assert ast.get_docstring(ast.parse(fh.read())), f"{init}: say what the room holds"
        assert [e for e in os.listdir(os.path.join(SUPPORT, room)) if e != "__pycache__"
                and os.path.isdir(os.path.join(SUPPORT, room, e))] == [], room
    with open(os.path.join(ROOT, "docs", "layout.md"), encoding="utf-8") as fh:
        named = set(re.findall(r"tests/support/[\w/]+\.py", fh.read()))
    assert named and [p for p in sorted(named) if not os.path.exists(os.path.join(ROOT, p))] == []


@pytest.mark.parametrize("first", ["rooms", "names"])
def test_no_room_of_spark_udfs_hides_a_public_name(first):
    """spark_udfs' rooms (read/, ship/, _census, _restore, _tasks, functions, lakehouse) loaded before or after its public
    names are asked for: each name is still the function or class it documents.  The room
    ``spark_udfs.ship`` shares its name with the public function ``spark_udfs.ship``, which the
    import system would replace with the room on the room's first import; the package binds the
    function in its place (as kafkarec does for ``kafkarec.convert``), and the room's modules
    import by name."""
    run = _python("import importlib, inspect, pkgutil, types\n"
                  "import spark_udfs\n"
                  f"names_first = {first == 'names'!r}\n"
                  "before = {n: getattr(spark_udfs, n) for n in spark_udfs.__all__} if names_first else {}\n"
                  "rooms = [m.name for m in pkgutil.walk_packages(spark_udfs.__path__, 'spark_udfs.')]\n"
                  "for name in rooms:\n"
                  "    importlib.import_module(name)\n"
                  "hidden = [n for n in spark_udfs.__all__ if isinstance(getattr(spark_udfs, n), types.ModuleType)]\n"
                  "assert not hidden, hidden\n"
                  "assert all(getattr(spark_udfs, n) is v for n, v in before.items())\n"
                  "assert inspect.isfunction(spark_udfs.ship), spark_udfs.ship\n"
                  "assert spark_udfs.ship.__module__ == 'spark_udfs.ship.shipping'\n"
                  "from spark_udfs.ship import connect, runtime, shipping\n"
                  "assert shipping.ship is spark_udfs.ship and connect.__name__ == 'spark_udfs.ship.connect'\n"
                  "print(*sorted(r for r in rooms if r.count('.') == 1))")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["spark_udfs._census", "spark_udfs._restore", "spark_udfs._tasks",
                                  "spark_udfs.functions",
                                  "spark_udfs.lakehouse",
                                  "spark_udfs.read",
                                  "spark_udfs.ship"]


def _private_scan_imports(tree):
    """``line: module`` of each import of kafkarec.scan's private modules (``kafkarec.scan._*``) in
    ``tree``: ``import kafkarec.scan._read``, ``from kafkarec.scan._read import ...`` or
    ``from kafkarec.scan import _read``."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out += [f"{n.lineno}: {a.name}" for a in n.names if a.name.startswith("kafkarec.scan._")]
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            if n.module.startswith("kafkarec.scan._"):
                out.append(f"{n.lineno}: {n.module}")
            elif n.module == "kafkarec.scan":
                out += [f"{n.lineno}: kafkarec.scan.{a.name}" for a in n.names if a.name.startswith("_")]
    return out


# tests that reach into scan/'s private modules because nothing public can stand in: each patches a
# module-level setting where the code reading it looks it up
_SCAN_PRIVATE_TESTS = {
    os.path.join("tests", "spark", "test_planning.py"): ["kafkarec.scan._read"],         # READ_AHEAD_RANGES
    # READ_AHEAD_RANGES; Read.decode_ahead patched to hold a window's thread after its first batch;
    # the pool's AHEAD_MAX read; the threads kept between reads counted and ended (_threads)
    os.path.join("tests", "scan", "test_scan_threads.py"): ["kafkarec.scan._pool", "kafkarec.scan._read",
                                                            "kafkarec.scan._threads"],
}


def test_scan_is_used_through_its_public_names():
    """What other rooms use of kafkarec/scan/ is exported from kafkarec/scan/__init__.py or lives in
    its public modules (config.py, typed.py, decode.py): nothing outside kafkarec/scan/ imports its
    private modules (``kafkarec.scan._*``), and tests only where they read or patch a private setting
    (:data:`_SCAN_PRIVATE_TESTS`)."""
    probe = ast.parse("import kafkarec.scan._read as r\nfrom kafkarec.scan._pool import X\n"
                      "from kafkarec.scan import _decode, LogScan\nfrom kafkarec.scan import bounds\n"
                      "import kafkarec.scan\nfrom kafkarec.scan.predicate import exact\n")
    assert _private_scan_imports(probe) == ["1: kafkarec.scan._read", "2: kafkarec.scan._pool",
                                            "3: kafkarec.scan._decode"]
    inside = os.path.join("kafkarec", "scan") + os.sep
    found = {}
    for path in _python_files("kafkarec", "spark_udfs", "scripts"):
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as fh:
            hits = _private_scan_imports(ast.parse(fh.read()))
        if hits and not rel.startswith(inside):
            found[rel] = hits
    assert found == {}
    tests = {os.path.relpath(path, ROOT): [hit.split(": ", 1)[1] for hit in _private_scan_imports(tree)]
             for path, tree in _tests_files().items()}
    assert {path: hits for path, hits in tests.items() if hits} == _SCAN_PRIVATE_TESTS


def _class_members(rel, name):
    """The fields and defs of the class ``name`` in the module at ``rel`` (read, not imported)."""
    with open(os.path.join(ROOT, *rel.split("/")), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return ({n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
            | {n.name for n in cls.body if isinstance(n, ast.FunctionDef)})


def test_one_piece_type():
    """A read's unit of work is one piece type (issue 70): a local Slice and a ListedRange each have
    every member of scan._plan.SegmentPiece, and the read loop, the pool and ScanPiece ask the piece,
    never which kind it is (no isinstance of either, no is_local)."""
    wanted = _class_members("kafkarec/scan/_plan.py", "SegmentPiece")
    assert {"topic", "where", "size", "windows", "parts", "open", "release"} <= wanted
    for rel, name in (("kafkarec/log/local.py", "Slice"), ("kafkarec/scan/_plan.py", "ListedRange")):
        assert wanted - _class_members(rel, name) == set(), name
    for rel in ("kafkarec/scan/_read.py", "kafkarec/scan/_pool.py", "kafkarec/scan/__init__.py"):
        with open(os.path.join(ROOT, *rel.split("/")), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        asked = [f"{n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree) if isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Name) and n.func.id == "isinstance" and len(n.args) == 2
             and {"Slice", "ListedRange"} & {x.id for x in ast.walk(n.args[1]) if isinstance(x, ast.Name)})
            or ast.unparse(n.func).endswith("is_local"))]
        assert asked == [], rel


def _py_files(*rooms):
    for room in rooms:
        for d, _, names in os.walk(os.path.join(ROOT, room)):
            for n in names:
                if n.endswith(".py"):
                    path = os.path.join(d, n)
                    yield os.path.relpath(path, ROOT).replace(os.sep, "/"), path


def test_a_piece_answers_for_itself():
    """A piece of work answers for itself (issue 79): ScanPiece's ``storage``, ``range``, ``share``
    and ``where``, of both kinds of piece (scan._plan.SegmentPiece names them); nothing outside
    kafkarec/scan/ opens ``piece.item`` to ask them."""
    assert {"storage", "range", "share"} <= _class_members("kafkarec/scan/_plan.py", "SegmentPiece")
    assert {"storage", "range", "share", "where", "skip"} <= _class_members("kafkarec/scan/__init__.py", "ScanPiece")
    opened = []
    for rel, path in _py_files("kafkarec", "spark_udfs"):
        if rel.startswith("kafkarec/scan/"):
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        opened += [f"{rel}:{n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree)
                   if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "item"]
    assert opened == []


def test_the_selection_exports_public_names_only():
    """kafkarec.log.selection re-exports no private name (the stream reads its offsets JSON and its
    start offset by public ones: ``json_offsets``, ``spec_offset``), and no room imports one of it."""
    with open(os.path.join(ROOT, "kafkarec", "log", "selection", "__init__.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    private = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names if a.name.startswith("_")]
    assert private == []
    asked = []
    for rel, path in _py_files("kafkarec", "spark_udfs"):
        if rel.startswith("kafkarec/log/selection/"):
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        asked += [f"{rel}: {m}" for m in re.findall(r"selection\._[a-z]\w*", text)]
    assert asked == []


def test_dlq_imports_nothing_above_it():
    """kafkarec/dlq.py (which the census uses) imports nothing of kafkarec/restore/: what both need
    (``ranges``, offsets written as runs) lives below both, in kafkarec/runs.py."""
    with open(os.path.join(ROOT, "kafkarec", "dlq.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    up = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
          and "kafkarec.restore" in ast.unparse(n)]
    assert up == []


def test_find_lives_in_the_module_named_for_it():
    """The census's search, ``find``, is defined in kafkarec/census/find.py."""
    with open(os.path.join(ROOT, "kafkarec", "census", "find.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    assert "find" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not os.path.exists(os.path.join(ROOT, "kafkarec", "census", "search.py"))


def _range_walks(tree):
    """``line: call`` of each framing of a piece of a file at its file position in ``tree``: an
    ``iter_batches`` call given ``origin=`` or a piece's ``.data`` (the loop over a byte range's
    batches)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == "iter_batches" and (
                any(k.arg == "origin" for k in n.keywords)
                or (n.args and isinstance(n.args[0], ast.Attribute) and n.args[0].attr == "data")):
            out.append(f"{n.lineno}: {ast.unparse(n.func)}")
    return out


# what frames at file positions and is no walk of a range's batches: the writer's windows of a file
# it rewrites (their spans, each window's bytes rewritten in place)
_NOT_A_RANGE_WALK = {"kafkarec/log/writer.py": 1}


def test_one_loop_walks_a_ranges_batches():
    """A byte range's batches are walked by one loop (issue 79): kafkarec.log.storage.BatchWalk frames
    each piece at its file position; the transaction rule's walk and a replay (log/committed.py), a
    remote range's batches, the scan's framed pieces and its offset-order rule all walk through it,
    and no second copy frames a piece (``iter_batches(piece.data, ..., origin=...)``) elsewhere."""
    probe = ast.parse("kafkarec.iter_batches(piece.data, o, origin=piece.position)\n"
                      "k.iter_batches(buf, origin=pos)\niter_batches(p.data)\nkafkarec.iter_batches(data)\n")
    assert _range_walks(probe) == ["1: kafkarec.iter_batches", "2: k.iter_batches", "3: iter_batches"]
    found = {}
    for rel, path in _py_files("kafkarec", "spark_udfs", "scripts"):
        with open(path, encoding="utf-8") as fh:
            hits = _range_walks(ast.parse(fh.read()))
        if hits:
            found[rel] = len(hits)
    assert found == {"kafkarec/log/storage.py": 1, **_NOT_A_RANGE_WALK}
    with open(os.path.join(ROOT, "kafkarec", "log", "storage.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    walk = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BatchWalk")
    assert len(_range_walks(walk)) == 1


def _package_faces():
    """``(rel, tree)`` of each package's ``__init__.py`` in kafkarec/ and spark_udfs/."""
    for rel, path in _py_files("kafkarec", "spark_udfs"):
        if rel.endswith("/__init__.py"):
            with open(path, encoding="utf-8") as fh:
                yield rel, ast.parse(fh.read())


def _private_reexports(rel, tree):
    """``line: name`` of each private name (``_name``) a package's ``__init__.py`` (at ``rel``)
    re-exports: listed in ``__all__``, or imported from another module under its own private name
    (the package's own private submodules, which the face itself reads, and a public name the face
    keeps to itself, ``ModuleType as _ModuleType``, are no re-export)."""
    package = rel[:-len("/__init__.py")].replace("/", ".")
    out = []
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and n.module not in (package, "__future__"):
            out += [f"{n.lineno}: {a.asname or a.name}" for a in n.names if a.name.startswith("_")]
        targets = (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            out += [f"{n.lineno}: {e.value}" for e in ast.walk(n.value)
                    if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.startswith("_")]
    return out


def _patched_settings():
    """The names tests patch (``monkeypatch.setattr(module, "NAME", ...)`` or
    ``setattr("a.module.NAME", ...)``): settings read where they live, which a face's copy of them
    would not follow."""
    out = set()
    for tree in _tests_files().values():
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("setattr") and n.args:
                first = n.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str) and "." in first.value:
                    out.add(first.value.rsplit(".", 1)[1])
                elif len(n.args) > 1 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                    out.add(n.args[1].value)
    return out


def test_faces_reexport_no_private_name_and_no_test_knob():
    """A package's face (its ``__init__.py``) re-exports no private name (issue 79): none in its
    ``__all__``, none imported from another module; and kafkarec.scan's face exports no setting a
    test patches (the patch reaches the home module, not the face's copy: ``ROWS_PER_BATCH`` is
    read from config.py), nor what only tests read (``READ_AHEAD_RANGES``, ``MAX_DEFAULT_THREADS``,
    ``usable_cpus``, imported from their home modules), and what a room needs of scan/'s insides lives in a public module (config.py, typed.py,
    decode.py) or is asked of the piece (``ScanPiece.topic_key``)."""
    probe = ast.parse("from kafkarec.scan._read import _knob, READ\nfrom kafkarec.scan import _plan\n"
                      "from types import ModuleType as _ModuleType\n"
                      "__all__ = ['LogScan', '_knob']\n__all__ += ['_other']\n")
    assert _private_reexports("kafkarec/scan/__init__.py", probe) == ["1: _knob", "4: _knob", "5: _other"]
    found = {rel: hits for rel, tree in _package_faces() if (hits := _private_reexports(rel, tree))}
    assert found == {}
    import kafkarec.scan
    knobs = sorted(name for name in _patched_settings() & set(kafkarec.scan.__all__) if name.isupper())
    assert knobs == []
    for gone in ("READ_AHEAD_RANGES", "MAX_DEFAULT_THREADS", "usable_cpus", "topic_key", "decode_range", "Errors"):
        assert gone not in kafkarec.scan.__all__, gone


def _core_defined(text):
    """The names a part of the core defines at its top level: functions (``def``, ``cdef``,
    ``cpdef``), classes, structs and fused types."""
    out = set()
    for line in text.splitlines():
        m = (re.match(r"(?:cdef|cpdef) (?:class|struct|enum) (\w+)", line)
             or re.match(r"ctypedef fused (\w+)", line)
             or re.match(r"(?:def|cdef|cpdef) [^=(]*?(\w+)\(", line))
        if m:
            out.add(m.group(1))
    return out


#: the most lines a part of the core holds (_protobuf.pxi's interpreter is the largest room)
_CORE_PART_LINES = 1400
#: the rooms of records into Arrow columns (issue 79), each with what it alone defines
_ARROW_ROOMS = {
    "_arrow_schema.pxi": {"arrow_schema", "is_lean", "meta_walk"},
    "_key_table.pxi": {"checked_keys", "key_table_has", "_KeySet"},
    "_row_columns.pxi": {"_ArrowColumns", "add_headers", "commit_rows"},
    "_full_rows.pxi": {"full_rows", "full_rows_loop", "full_row_gil", "put_field", "add_v2_records",
                       "full_rows_open", "full_rows_commit"},
    "_batch_columns.pxi": {"batch_rows", "put_batch_columns"},
    "_meta_rows.pxi": {"meta_rows", "scanned_meta", "add_v2_meta"},
    "_runs.pxi": {"take_run", "run_batches", "run_batch_size"},
    "_arrow_iter.pxi": {"ArrowBatchIterator", "iter_arrow", "_arrow_batches", "to_arrow", "error_record"},
    "_rows.pxd": {"FullRows", "MetaRows", "BatchRows", "V2Run", "KeyTable"},
}


def test_the_cores_record_loops_live_in_rooms_by_job():
    """The core's parts are rooms a reader takes in whole (issue 79): none over
    ``_CORE_PART_LINES`` lines, and records into Arrow columns in a room per job (schema, key
    table, row columns, full rows, batch columns, meta rows, runs, iterator), each defining what
    its job is and nothing of that defined elsewhere; the structs the loops fill without the GIL
    live in ``_rows.pxd``, which the rooms share; a run's batch loop is one for both layouts (no
    ``full_rows_run``/``meta_rows_run`` pair)."""
    probe = _core_defined("cdef struct S:\ncdef inline always_inline_int f(int a) noexcept nogil:\n"
                          "def g(x, /):\ncdef class _C:\nctypedef fused R:\ncdef int (*P)(int)\n"
                          "cdef Py_ssize_t h(_C c) except -1:\n    cdef int inner(\n")
    assert probe == {"S", "f", "g", "_C", "R", "h"}
    src = os.path.join(ROOT, "kafkarec", "_core_src")
    parts = {f: open(os.path.join(src, f), encoding="utf-8").read() for f in sorted(os.listdir(src))
             if f.endswith((".pxi", ".pxd"))}
    assert {f: n for f, text in parts.items() if (n := text.count("\n")) > _CORE_PART_LINES} == {}
    assert not os.path.exists(os.path.join(src, "_columns.pxi"))
    defined = {f: _core_defined(text) for f, text in parts.items()}
    for room, names in _ARROW_ROOMS.items():
        assert names - defined[room] == set(), room
        elsewhere = {f: names & d for f, d in defined.items() if f != room and names & d}
        assert elsewhere == {}, room
    assert not {"full_rows_run", "meta_rows_run"} & set().union(*defined.values())
    with open(os.path.join(ROOT, "kafkarec", "_core.pyx"), encoding="utf-8") as fh:
        pyx = fh.read()
    assert re.search(r"^from _rows cimport", pyx, re.M)
    included = re.findall(r'^include "_core_src/(\w+\.pxi)"', pyx, re.M)
    assert {r for r in _ARROW_ROOMS if r.endswith(".pxi")} <= set(included)


#: the longest body (without its docstring) of a function of the read rooms
_READ_FUNCTION_LINES = 40


def _nested_functions(tree):
    """``outer: inner`` of each function defined inside another function in ``tree``."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += [f"{n.name}: {m.name}" for m in ast.walk(n)
                    if m is not n and isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def test_a_read_is_an_object_and_the_pool_asks_it_narrowly():
    """A read of pieces (kafkarec/scan/_read.py) and its decode pool (kafkarec/scan/_pool.py) are
    objects with methods (issue 79): no function of theirs defines closures (``decoded`` and
    ``decoded_ahead`` held six each), none runs past ``_READ_FUNCTION_LINES`` lines; the pool asks
    the read only what ``_pool.Decodes`` names (``cut``, ``decode_ahead``, ``depth``), which
    ``_read.Read`` answers, and imports nothing of the read."""
    probe = ast.parse("def f():\n    def g():\n        pass\n    class C:\n        def h(self):\n            pass\n")
    assert _nested_functions(probe) == ["f: g", "f: h"]
    trees = {}
    for rel in ("kafkarec/scan/_read.py", "kafkarec/scan/_pool.py"):
        with open(os.path.join(ROOT, *rel.split("/")), encoding="utf-8") as fh:
            trees[rel] = tree = ast.parse(fh.read())
        assert _nested_functions(tree) == [], rel
        long = []
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef):
                body = n.body[1:] if ast.get_docstring(n) is not None else n.body
                if body and n.end_lineno - body[0].lineno + 1 > _READ_FUNCTION_LINES:
                    long.append(n.name)
        assert long == [], rel
    pool = trees["kafkarec/scan/_pool.py"]
    narrow = _class_members("kafkarec/scan/_pool.py", "Decodes")
    assert narrow == {"cut", "decode_ahead", "depth"}
    asked = {n.attr for n in ast.walk(pool) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Attribute) and n.value.attr == "read"}
    assert asked <= narrow, asked
    assert narrow <= _class_members("kafkarec/scan/_read.py", "Read")
    assert not [ast.unparse(n) for n in ast.walk(pool) if isinstance(n, (ast.Import, ast.ImportFrom))
                and "_read" in ast.unparse(n)]


#: the functions given the core (or the package holding it) as an argument, and why: the loader
#: hands the core over on its first load (nothing registers by an import), and Spark's shipping
#: handles the package as the archive it ships, fingerprints and describes
_CORE_HANDED = {
    "kafkarec/__init__.py": {"_core_loaded"},
    "kafkarec/control.py": {"_register"},
    "spark_udfs/ship/runtime.py": {"_core_path", "fingerprint", "describe"},
    "spark_udfs/ship/shipping.py": {"find_wheels", "build_pyfiles_zip"},
}


def _core_taken(tree):
    """``line: name`` of each function of ``tree`` with a parameter named for the core
    (``kafkarec``, ``core``, ``_core``), and of each call given ``kafkarec`` or ``_core`` itself."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = n.args
            if {"kafkarec", "core", "_core"} & {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}:
                out.append(f"{n.lineno}: {getattr(n, 'name', 'lambda')}")
        elif isinstance(n, ast.Call) and any(
                isinstance(x, ast.Name) and x.id in ("kafkarec", "_core")
                for x in list(n.args) + [k.value for k in n.keywords]):
            out.append(f"{n.lineno}: {ast.unparse(n.func)}()")
    return out


def test_the_core_is_imported_where_it_is_used():
    """A module that uses the core imports it (``from kafkarec._core import ...``, where it is
    used) and passes it to no function (issue 79: ``decode_range``, ``OffsetOrder``, the read and
    ``ScanConfig.read_options`` took it as an argument); only the loader's hand-over and Spark's
    shipping (``_CORE_HANDED``) take it."""
    probe = ast.parse("def f(kafkarec, x):\n    g(kafkarec, 1)\n    h(x, m=_core)\n    k(core)\n")
    assert _core_taken(probe) == ["1: f", "2: g()", "3: h()"]
    found = {}
    for rel, path in _py_files("kafkarec", "spark_udfs"):
        with open(path, encoding="utf-8") as fh:
            hits = _core_taken(ast.parse(fh.read()))
        if rel in _CORE_HANDED:     # (and its calls of the handed-to functions)
            handed = set().union(*_CORE_HANDED.values())
            hits = [h for h in hits if h.split(": ", 1)[1].rstrip("()").split(".")[-1] not in handed]
        if hits:
            found[rel] = hits
    assert found == {}
