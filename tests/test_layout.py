"""The layout's promises that a reader of docs/layout.md relies on: no import circle among
kafkarec's and spark_udfs' modules, lazy (function-level) imports included: a layer asks
the layers under it, never the other way round."""
import ast
import os

from paths import ROOT


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
    assert graph["spark_udfs._datasource"] and "kafkarec.table" in graph["spark_udfs._datasource"]
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
                    "def g():\n    return importlib.import_module('spark_udfs._shipping')\n"
                    "import spark_udfsx\n")
    assert _spark_udfs_imports(str(path)) == ["3: spark_udfs", "5: spark_udfs._shipping"]


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
