"""The stubs describe the compiled core well enough for mypy --strict, and
`import kafkarec` pulls in neither pyspark nor pyarrow."""
from support.paths import ROOT
import os
import subprocess
import sys



def test_stubs_type_check_examples():
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
         "tests/typing/examples.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success" in run.stdout


def test_stub_names_match_the_core():
    import ast
    import kafkarec._core as core
    tree = ast.parse(open(os.path.join(ROOT, "kafkarec", "_core.pyi")).read())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    public = {n for n in dir(core) if not n.startswith("_") and callable(getattr(core, n))
              and getattr(getattr(core, n), "__module__", None) == "kafkarec._core"}
    assert public - stubbed == set(), "compiled names without a stub"
    assert stubbed - set(dir(core)) == set(), "stubs for names the core does not have"


def test_import_is_light():
    code = ("import sys, kafkarec; "
            "print(sorted(m for m in ('pyspark', 'pyarrow', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
