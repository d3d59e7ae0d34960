"""Every fuzz target runs briefly on its seed corpus without a finding (the long runs
are `bash scripts/fuzz.sh TARGET SECONDS`)."""
import glob
import os
import subprocess
import sys

import pytest

from support.paths import ROOT

TARGETS = sorted(os.path.basename(p)[5:-3] for p in glob.glob(os.path.join(ROOT, "fuzz", "fuzz_*.py")))


def test_every_target_has_a_seed_corpus():
    assert set(TARGETS) >= {"batches", "arrow", "sidefiles", "convert", "builder", "cli", "internal"}
    for t in TARGETS:
        assert glob.glob(os.path.join(ROOT, "fuzz", "corpus", t, "*")), t


@pytest.mark.slow          # a fuzzer process per target: the full suite runs them, the fast tier does not
@pytest.mark.parametrize("target", TARGETS)
def test_target_runs_without_a_finding(target, tmp_path):
    corpus = tmp_path / "corpus"          # new inputs go here, not into the repository
    corpus.mkdir()
    seeds = os.path.join(ROOT, "fuzz", "corpus", target)
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "fuzz", f"fuzz_{target}.py"), str(corpus), seeds,
         "-max_total_time=3", "-rss_limit_mb=2048", "-timeout=20",
         f"-artifact_prefix={tmp_path}/crash-"],
        cwd=os.path.join(ROOT, "fuzz"), capture_output=True, text=True, timeout=120)
    log = run.stdout[-2000:] + run.stderr[-3000:]
    assert run.returncode == 0, log
    assert "Done" in run.stderr, log
    assert not glob.glob(str(tmp_path / "crash-*")), log
