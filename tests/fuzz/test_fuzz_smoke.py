"""Every fuzz target runs briefly on its seed corpus without a finding (the long runs
are `bash scripts/fuzz.sh TARGET SECONDS`), each in a process of its own forked from one that
instrumented kafkarec once (fuzz/_forkserver.py)."""
import glob
import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from support.paths import ROOT
from support.procs import kill_group

TARGETS = sorted(os.path.basename(p)[5:-3] for p in glob.glob(os.path.join(ROOT, "fuzz", "fuzz_*.py")))


def test_every_target_has_a_seed_corpus():
    assert set(TARGETS) >= {"batches", "arrow", "sidefiles", "convert", "builder", "cli", "internal"}
    for t in TARGETS:
        assert glob.glob(os.path.join(ROOT, "fuzz", "corpus", t, "*")), t


#: How long one target may take, its few seconds of fuzzing included, before it counts as hung.
TARGET_TIMEOUT = 120


class ForkServer:
    """fuzz/_forkserver.py: every kafkarec module imported and instrumented once (~10 CPU-s a
    process), each target then run in a child forked from there, its own process as
    ``python fuzz/fuzz_TARGET.py`` would be."""

    def __init__(self):
        fuzz_dir = os.path.join(ROOT, "fuzz")
        self.proc = subprocess.Popen([sys.executable, os.path.join(fuzz_dir, "_forkserver.py")], cwd=fuzz_dir,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.answers: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put("")            # the server ended

    def run(self, target: str, args: list, out_dir) -> subprocess.CompletedProcess:
        """``python fuzz/fuzz_TARGET.py ARGS...`` as a forked child: its status and output."""
        out, err = os.path.join(out_dir, "fuzz.stdout"), os.path.join(out_dir, "fuzz.stderr")
        self.proc.stdin.write(json.dumps({"target": target, "args": args, "stdout": out, "stderr": err}) + "\n")
        self.proc.stdin.flush()
        try:
            answer = self.answers.get(timeout=TARGET_TIMEOUT)
        except queue.Empty:
            kill_group(self.proc)       # the server and the hung child: the next target gets a new one
            pytest.fail(f"fuzz target {target} did not end within {TARGET_TIMEOUT} s:\n{_tail(err)}")
        if not answer:
            pytest.fail(f"the fuzz fork server ended while running {target} "
                        f"(status {self.proc.wait(timeout=30)}):\n{_tail(err)}")
        with open(out, errors="replace") as fo, open(err, errors="replace") as fe:
            return subprocess.CompletedProcess(args, json.loads(answer)["returncode"], fo.read(), fe.read())

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            kill_group(self.proc)


def _tail(path) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read()[-3000:]
    except OSError:
        return "(no output)"


@pytest.fixture(scope="module")
def fork_server():
    servers = [ForkServer()]
    yield servers
    servers[-1].close()


@pytest.mark.slow          # a fuzzer process per target: the full suite runs them, the fast tier does not
@pytest.mark.parametrize("target", TARGETS)
def test_target_runs_without_a_finding(target, tmp_path, fork_server):
    corpus = tmp_path / "corpus"          # new inputs go here, not into the repository
    corpus.mkdir()
    seeds = os.path.join(ROOT, "fuzz", "corpus", target)
    if fork_server[-1].proc.poll() is not None:      # ended after a hung target
        fork_server.append(ForkServer())
    # a fixed seed: the gate runs the same inputs every time (the campaigns, scripts/fuzz.sh, vary it)
    run = fork_server[-1].run(target, [str(corpus), seeds, "-seed=1", "-max_total_time=1", "-rss_limit_mb=2048",
                                       "-timeout=20", f"-artifact_prefix={tmp_path}/crash-"], tmp_path)
    log = run.stdout[-2000:] + run.stderr[-3000:]
    assert run.returncode == 0, log
    assert "Done" in run.stderr, log
    assert not glob.glob(str(tmp_path / "crash-*")), log
