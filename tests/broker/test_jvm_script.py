"""scripts/jvm.sh: a module's pom resolved once, its classpath cached by the pom's hash."""
import os
import shutil
import stat
import subprocess

from support import jvm
from support.paths import ROOT
from support.versions import KAFKA


def _fake_maven(tmp_path):
    """A PATH whose ``mvn`` fails loudly: a run that reaches Maven fails."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text("#!/bin/sh\necho 'mvn was run' >&2\nexit 97\n")
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_second_run_reads_the_cache_without_maven(tmp_path):
    cp = jvm.classpath(jvm_module := "jvm/kafka")
    jars = cp.split(":")
    assert all(os.path.isfile(j) for j in jars)
    names = {os.path.basename(j) for j in jars}
    for want in (f"kafka_2.13-{KAFKA}.jar", f"kafka-tools-{KAFKA}.jar", f"kafka-clients-{KAFKA}.jar",
                 f"kafka-storage-{KAFKA}.jar", "log4j-slf4j2-impl-2.26.1.jar", "slf4j-api-2.0.17.jar"):
        assert want in names
    assert all(j.startswith(os.path.join(ROOT, ".cache", "m2")) for j in jars) or os.environ.get("KAFKAREC_M2_REPO")
    env = dict(os.environ, PATH=_fake_maven(tmp_path))
    again = subprocess.run(["bash", jvm.SCRIPT, jvm_module], capture_output=True, text=True, env=env,
                           timeout=60, cwd=str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == cp and "mvn was run" not in again.stderr


def test_a_changed_pom_is_resolved_again(tmp_path):
    """The cache is keyed by the pom's hash: another pom is not answered from it (here Maven
    is the failing stand-in, so the run fails instead of printing a stale classpath)."""
    jvm.classpath("jvm/kafka")
    module = tmp_path / "kafka"
    module.mkdir()
    pom = open(os.path.join(ROOT, "jvm", "kafka", "pom.xml")).read()
    (module / "pom.xml").write_text(pom.replace("<version>0</version>", "<version>1</version>", 1))
    env = dict(os.environ, PATH=_fake_maven(tmp_path))
    proc = subprocess.run(["bash", jvm.SCRIPT, str(module)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode != 0 and "mvn was run" in proc.stderr


def test_usage_errors():
    proc = subprocess.run(["bash", jvm.SCRIPT], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "usage" in proc.stderr
    proc = subprocess.run(["bash", jvm.SCRIPT, "no/such/module"], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0


def test_missing_tools_skip_or_fail(monkeypatch):
    import pytest
    monkeypatch.setattr(shutil, "which", lambda name: None)
    for ci, outcome in (("", pytest.skip.Exception), ("true", pytest.fail.Exception)):
        monkeypatch.setenv("CI", ci)
        monkeypatch.delenv("KAFKAREC_REQUIRE_SHARED", raising=False)
        with pytest.raises(outcome, match="java and mvn not installed"):
            jvm.require_tools()
