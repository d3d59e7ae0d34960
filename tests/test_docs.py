"""Every code block of the documentation runs, and what it prints is compared.

The rules (docs/layout.md, "Examples in the documentation", says the same for writers):

- ```` ```pycon ```` blocks are doctest sessions (``>>> `` / ``... `` prompts, the
  expected output after them), run with ELLIPSIS and NORMALIZE_WHITESPACE. The blocks
  of one file share one namespace and run in order.
- ```` ```console ```` blocks are shell sessions: each ``$ command`` (a line ending in
  ``\\`` continues on the next) runs in bash, and its stdout is compared with the lines
  after it, ``...`` matching any text (several lines too). A last line ``[exit N]``
  says the command exits with status N; without it the status must be 0.
- Every file runs in a fresh working folder of its own holding ``sample-data/``
  (``python -m kafkarec.sample sample-data``), with this checkout's ``kafkarec`` first on
  ``PYTHONPATH`` and the interpreter's ``bin`` folder (the ``kafkarec`` command) first
  on ``PATH``. Files whose examples use Spark share the test session's local SparkSession.
- Any other block fails the test unless :data:`NOT_RUN` names it with the reason.
"""
from __future__ import annotations

import doctest
import glob
import os
import re
import subprocess
import sys

import pytest

from support.paths import ROOT
from support.versions import PYSPARK, SAIL, SAIL_PYSPARK_CLIENT

FILES = ["README.md", "CHANGELOG.md", "spark_udfs/README.md", "benchmarks/README.md"] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))

#: (file, first line of the block): why the block is not run. Keep this tiny.
NOT_RUN = {
    ("docs/restore.md", "# 1. the target running"):
        "needs a target broker stopped and started between the steps: "
        "tests/broker/test_broker_same_offsets.py runs the three steps the same way",
    ("docs/restore.md", 'DIRS="--target-log-dir /k1/data'):
        "needs three target brokers stopped all at once and started between the steps: "
        "tests/broker/test_broker_same_offsets.py runs the three steps the same way on the session's 3-node cluster",
    ("docs/restore.md", "kafkarec restore --check so.json SOURCE DIR1"):
        "needs a written target's log dirs: tests/broker/test_broker_same_offsets.py and "
        "tests/restore/test_restore_same_offsets.py run --check as written",
    ("docs/restore.md", "kafkarec restore SOURCE --same-offsets groups --target-bootstrap B --target-log-dir DIR --share"):
        "needs a running target that was written with share groups' state: "
        "tests/restore/test_restore_same_offsets.py::test_share_groups_state_is_taken_as_it_was takes the "
        "state and writes the CSV through the groups step's function",
    ("docs/restore.md", "so-events-0 -> so-events-0"):
        "the write step's line: tests/broker/test_broker_same_offsets.py checks its fields",
    ("README.md", "bash scripts/main.sh"):
        "builds the wheelhouse and runs spark-submit (tests/spark/test_main_job.py runs it)",
    ("docs/spark.md", "# job.py"):
        "a spark-submit job: tests/spark/test_spark_submit.py::test_readme_spark_job_runs_as_written "
        "submits it as written, with the wheel alone in --py-files, on a bare Python",
    # the pinned pyspark: docs/spark.md's install line must name it, or the block is "not run"
    ("docs/spark.md", f'pip install "pyspark[connect]=={PYSPARK}"'):
        "installs a Spark Connect client: tests/spark/test_connect.py makes that client "
        "(spark_helpers.connect_client) the same way and runs everything from it",
    ("docs/spark.md", "# connect.py"):
        "a Spark Connect client script: tests/spark/test_connect.py::test_docs_connect_example "
        "runs it as written from a client holding pyspark[connect] and kafkarec",
    # the pinned Sail and client: docs/spark.md's install line must name them, or the block is "not run"
    ("docs/spark.md", f'pip install "pysail=={SAIL}" "pyspark-client=={SAIL_PYSPARK_CLIENT}" "pandas<3" kafkarec'):
        "installs Sail and its client: tests/support/spark/sail.py makes that venv (scripts/versions.sh's "
        "pins) and starts the server as shown",
    ("docs/spark.md", "# sail.py"):
        "a Spark Connect client script for Sail: tests/spark/test_sail.py::test_docs_sail_example runs it "
        "as written on the session's Sail server",
    ("docs/lakehouse.md", "# backfill.py: JARS=$(bash scripts/jvm.sh jvm/lakehouse-spark | tr ':' ',')"):
        "a spark-submit job on the lakehouse runtimes' Spark, not the suite's: "
        "tests/broker/test_lakehouse_spark.py makes the same calls from spark-submit and Spark Connect",
    ("docs/restore.md", 'kafkarec restore "$SOURCE_LOG_DIR"'):
        "needs two clusters: tests/broker/test_broker_restore.py runs it as written between the session's "
        "broker and a second one, and checks what it prints",
    ("docs/restore.md", 'kafkarec restore "$SOURCE_LOG_DIR" --target-bootstrap "$TARGET" --topics rs-crash '):
        "a restore with --evidence and its --check against a second cluster's log dir and bootstrap: "
        "tests/broker/test_broker_restore.py::test_evidence_checks_against_the_targets_log_dir_and_bootstrap "
        "runs it as written and checks what the checks print",
    ("docs/restore.md", 'kafkarec restore "$SOURCE_LOG_DIR" --target-bootstrap "$TARGET" --topics rs-sr-orders '):
        "a restore translating schema ids into a second cluster and its registry: "
        "tests/broker/test_broker_restore.py::test_schema_ids_translated_as_the_docs_show runs it as written "
        "and checks what it prints",
    ("docs/restore.md", 'kafka-share-groups --bootstrap-server "$TARGET"'):
        "Kafka's own tool against a second cluster: tests/broker/test_broker_restore.py runs its arguments "
        "(the file's path made absolute) with Kafka's ShareGroupCommand against the second broker",
    ("README.md", "pip install --no-index --find-links wheelhouse kafkarec"):
        "installs into the user's environment (tests/test_release.py runs scripts/release.sh, "
        "which installs every wheel and the sdist into clean venvs and decodes a batch there)",
}

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
EXIT = re.compile(r"^\[exit (\d+)\]$")


def blocks(path: str):
    """(language, line number, text) of every fenced block of ``path``."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        text = fh.read()
    for m in FENCE.finditer(text):
        yield m.group(1), text.count("\n", 0, m.start()) + 2, m.group(2)


def uses_spark(path: str) -> bool:
    return any(lang == "pycon" and "spark" in body for lang, _, body in blocks(path))


def console_steps(body: str):
    """(command, expected stdout, expected exit status) of each ``$`` command."""
    steps, lines = [], body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise AssertionError(f"console block: output before any command: {line!r}")
        cmd = [line[2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd.append(lines[i])
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        while out and not out[-1].strip():
            out.pop()
        status = 0
        if out and EXIT.match(out[-1]):
            status = int(EXIT.match(out.pop()).group(1))
        steps.append(("\n".join(cmd), "\n".join(out) + "\n" if out else "", status))
    return steps


def environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["COLUMNS"] = "100"
    return env


def prepare(folder: str, path: str) -> None:
    from kafkarec.sample import generate
    generate(os.path.join(folder, "sample-data"), seed=7, scale=1)
    if path in ("docs/typed-values.md", "README.md"):
        # a log directory as a Confluent deployment leaves it: _schemas-0 and an orders topic
        # whose Avro values confluent-kafka's AvroSerializer wrote (tests/support/registry/registry_world.py)
        from support.registry import registry_world as world
        world.build(os.path.join(folder, "registry-data"))


def _params():
    for path in FILES:
        if os.path.exists(os.path.join(ROOT, path)):
            # the session's SparkSession, reached through request.getfixturevalue
            marks = [pytest.mark.spark, pytest.mark.components("spark")] if uses_spark(path) else []
            yield pytest.param(path, id=path, marks=marks)


@pytest.mark.parametrize("path", list(_params()))
def test_examples(path, tmp_path, monkeypatch, request):
    """Every block of ``path`` in order; every difference is reported, not only the first."""
    if uses_spark(path):
        from support.spark import spark_helpers as H
        why = H.spark_available()
        if why:
            pytest.skip(why)
        # the session's own SparkSession (support/spark/spark_session.py): the examples'
        # getOrCreate() returns it
        request.getfixturevalue("spark")
    folder = str(tmp_path)
    prepare(folder, path)
    monkeypatch.chdir(folder)
    env = environment()
    for key in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(key, env[key])
    checker = doctest.OutputChecker()
    namespace: dict = {"__name__": "__docs__"}
    failures = []
    for lang, line, body in blocks(path):
        where = f"{path}:{line}"
        if lang == "pycon":
            test = doctest.DocTestParser().get_doctest(body, namespace, where, path, line - 1)
            runner = doctest.DocTestRunner(optionflags=FLAGS)
            report: list = []
            runner.run(test, out=report.append, clear_globs=False)
            namespace.update(test.globs)
            if runner.failures:
                failures.append("".join(report))
        elif lang == "console":
            for cmd, want, status in console_steps(body):
                proc = subprocess.run(["bash", "-c", cmd], cwd=folder, env=env, capture_output=True,
                                      text=True, timeout=300)
                if not checker.check_output(want, proc.stdout, FLAGS):
                    failures.append(f"{where}: $ {cmd}\n"
                                    + checker.output_difference(doctest.Example(cmd, want),
                                                                proc.stdout, FLAGS)
                                    + (f"stderr:\n{proc.stderr[-2000:]}" if proc.stderr else ""))
                elif proc.returncode != status:
                    failures.append(f"{where}: $ {cmd}\nexit status {proc.returncode}, expected "
                                    f"{status}\nstderr:\n{proc.stderr[-2000:]}")
        else:
            first = body.strip().splitlines()[0] if body.strip() else ""
            if not any(path == p and first.startswith(f) for p, f in NOT_RUN):
                failures.append(f"{where}: a ```{lang} block that is not run (write it as pycon or "
                                f"console, or list it in NOT_RUN with the reason): {first!r}")
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


def test_not_run_list_is_current():
    """Every exemption names a block that exists."""
    present = [(path, body.strip().splitlines()[0]) for path in FILES
               if os.path.exists(os.path.join(ROOT, path))
               for lang, _, body in blocks(path) if lang not in ("pycon", "console") and body.strip()]
    stale = [key for key in NOT_RUN if not any(p == key[0] and first.startswith(key[1])
                                                for p, first in present)]
    assert not stale, stale


#: Pages linked before they exist: written on other branches (issues 21 and 22); empty this
#: once they are merged.
NOT_YET_WRITTEN: set = set()

LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_readme_is_short():
    assert os.path.getsize(os.path.join(ROOT, "README.md")) <= 20 * 1024


def anchors(path: str) -> set:
    """GitHub's anchors for the headings of ``path``."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        text = FENCE.sub("", fh.read())
    return {re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            for m in re.finditer(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("path", [p for p in FILES if os.path.exists(os.path.join(ROOT, p))])
def test_links_resolve(path):
    """Relative links lead to files that exist, and to headings that exist in them."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        text = fh.read()
    missing = []
    for target, anchor in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        rel = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if rel in NOT_YET_WRITTEN:
            continue
        if not os.path.exists(os.path.join(ROOT, rel)):
            missing.append(target)
        elif anchor and rel.endswith(".md") and anchor[1:] not in anchors(rel):
            missing.append(target + anchor)
    assert not missing, missing


TEST_REFERENCE = re.compile(r"\b(tests/[\w/]+\.py)::(\w+)")


@pytest.mark.parametrize("path", [p for p in FILES if os.path.exists(os.path.join(ROOT, p))])
def test_named_tests_exist(path):
    """A test named as ``tests/<file>.py::<name>`` (docs/engines.md's table names the test behind each
    cell) is a test or class defined in that file."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        text = fh.read()
    missing = []
    for file, name in sorted(set(TEST_REFERENCE.findall(text))):
        source = os.path.join(ROOT, file)
        defined = os.path.exists(source) and re.search(
            rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{name}\b", open(source, encoding="utf-8").read(), re.M)
        if not defined:
            missing.append(f"{file}::{name}")
    assert not missing, missing
