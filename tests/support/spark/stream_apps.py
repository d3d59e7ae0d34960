"""The user-way stream checks' applications, shared by tests/spark/test_streaming_user.py and
tests/spark/test_typed_stream.py: ``spark-submit --py-files <kafkarec cp312 wheel>
tests/spark/jobs/streams_job.py`` from the bare Python 3.12 on the session's standalone cluster,
twice (phase 1, then phase 2: a new application restarts every stream from its checkpoint), each
running the plain stream (stream_job.py), the typed stream (typed_stream_job.py), minPartitions'
cut (stream_job.py's phase 3, in phase 1), every batch path of tests/spark/test_cluster.py's
bare-3.12 check (paths_job.py over a sample log directory, in phase 1: the same deployment, so no
application of its own) and the control without register()'s link (stream_job.py's phase 0, last
in phase 2) one after another, each in its own folder.

One deployment, :func:`stream_apps_cluster`, run on first use: the planner's Python
(python_streaming_source_runner) on the driver and the tasks on the two workers' executors, the
wheel reaching each only as the user ships it.  The same pair of applications also ran in local
mode (``local[2]``, the venv's Python 3.11): two JVMs more, proving nothing the cluster's pair
does not (the planner looks for the same files in the same driver folder; the cp311 wheel on bare
executors is the user-way application's, support/spark/user_app.py, and test_spark_submit's).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.spark import spark_helpers as H
from support.paths import TESTS
from support.procs import kill_group
from support.spark.spark_submit import spark_submit
from support.registry.typed_stream_log import build_steps

JOB = os.path.join(TESTS, "spark", "jobs", "streams_job.py")
#: each part alone was given 600 s an application; they take 20-90 s on an idle machine
SECONDS_PER_APPLICATION = 900
#: the parts each phase's application runs, in order (``control`` removes the link: last)
PHASE_PARTS = {1: ("stream", "typed", "split", "paths"), 2: ("stream", "typed", "control")}
#: the seed of the sample log directory the ``paths`` part reads (WORK/logs: kafkarec.sample)
PATHS_SEED = 11


class StreamApps:
    """One deployment's two applications and what each part left: ``works`` (part -> folder),
    ``typed_log``/``typed_ids`` (the typed stream's input, support.registry.typed_stream_log), and
    :meth:`result`."""

    def __init__(self, python: str, wheel: str, master: str, base: str, parts):
        self.python, self.wheel, self.master = python, wheel, master
        self.works = {}
        for part in parts:
            self.works[part] = os.path.join(base, part)
            os.makedirs(self.works[part])
        self.typed_log, self.typed_ids = build_steps(self.works["typed"])
        self.typed_log.work = self.works["typed"]
        if "paths" in self.works:
            from kafkarec.sample import generate
            generate(os.path.join(self.works["paths"], "logs"), seed=PATHS_SEED, scale=1)
        self.failures = {}           # phase -> why its application failed as a whole

    def run(self):
        for phase in (1, 2):
            parts = [p for p in PHASE_PARTS[phase] if p in self.works]
            self.failures[phase] = self._submit(phase, parts)

    def _submit(self, phase: int, parts) -> str | None:
        log_path = os.path.join(os.path.dirname(self.works["stream"]), f"streams-{phase}.log")
        base = os.path.dirname(self.works["stream"])
        cmd, env = spark_submit(
            self.python, JOB, ["--phase", phase, *(f"{p}={self.works[p]}" for p in parts)], master=self.master,
            conf={"spark.executor.memory": "768m", "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                  "spark.sql.shuffle.partitions": 2, "spark.sql.session.timeZone": "UTC"},
            py_files=self.wheel, env={"KAFKAREC_NATIVE_CACHE": os.path.join(base, "native-cache"),
                                      "KAFKAREC_SPARK_CACHE": os.path.join(base, "spark-cache")})
        # the user's shell: a fresh folder, no source tree on any path
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, cwd=base, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
            try:
                proc.wait(timeout=SECONDS_PER_APPLICATION)
                ended = None if proc.returncode == 0 else f"exited with status {proc.returncode}"
            except subprocess.TimeoutExpired:
                ended = f"was killed after its timeout of {SECONDS_PER_APPLICATION} s"
            finally:
                kill_group(proc)     # the application's whole process group (JVM, driver Python, workers)
        if ended is None:
            return None
        with open(log_path, errors="replace") as fh:
            return f"the streams application of phase {phase} {ended} (log {log_path}); its end:\n{fh.read()[-8000:]}"

    def paths(self) -> tuple:
        """The ``paths`` part's (sample log directory, output folder) (paths_job.py), once it
        ran without raising; fails the test with its traceback or the application's log."""
        work = self.works["paths"]
        error = os.path.join(work, "error-1.txt")
        if os.path.exists(error):
            with open(error) as fh:
                pytest.fail(f"paths raised in the streams application of phase 1:\n{fh.read()}", pytrace=False)
        out = os.path.join(work, "out")
        if not os.path.exists(os.path.join(out, "decode")):
            pytest.fail(self.failures.get(1) or "paths wrote no output in phase 1", pytrace=False)
        return os.path.join(work, "logs"), out

    def result(self, part: str, phase: int) -> dict:
        """What ``part`` wrote in the application of ``phase`` (the job's phase 3 for ``split``, 0
        for ``control``);
        fails the test with the part's traceback or the application's log where it wrote nothing."""
        job_phase = {"split": 3, "control": 0}.get(part, phase)
        work = self.works[part]
        error = os.path.join(work, f"error-{job_phase}.txt")
        if os.path.exists(error):
            with open(error) as fh:
                pytest.fail(f"{part} raised in the streams application of phase {phase}:\n{fh.read()}",
                            pytrace=False)
        path = os.path.join(work, f"result-{job_phase}.json")
        if not os.path.exists(path):
            pytest.fail(self.failures.get(phase) or f"{part} wrote no result in phase {phase}", pytrace=False)
        with open(path) as fh:
            return json.load(fh)


@pytest.fixture(scope="session")
def stream_apps_cluster(spark_cluster, wheel312, tmp_path_factory) -> StreamApps:
    """The session's standalone cluster (master and two workers from the bare Python 3.12): the
    plain and typed streams, minPartitions' cut, every batch path and the control; the streaming
    runner, the planner and the executors each find the wheel."""
    apps = StreamApps(spark_cluster.python, wheel312, spark_cluster.master_url,
                      str(tmp_path_factory.mktemp("streams-cluster")), ("stream", "typed", "split", "paths", "control"))
    apps.run()
    return apps
