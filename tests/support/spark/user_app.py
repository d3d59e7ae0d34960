"""One user-way Spark application for the local bare-executor checks.

A test module that checks Spark as a user runs it (``spark-submit --master local[2] --py-files
<kafkarec wheel>`` from a bare Python: pyspark, pyarrow and pandas only) declares its job at module
level::

    JOB = UserAppJob("typed", "tests/spark/jobs/typed_job.py", prepare)

where ``prepare(request, work)`` writes the job's inputs under ``work`` and returns
``(args, facts)``, and the job file's ``run(spark, *args)`` returns the job's result (a JSON
object).  Its module fixture asks the session fixture :func:`user_app` for the outcome::

    result, facts = user_app.outcome(JOB)

On first use, :func:`user_app` prepares the jobs of every collected module that has a test using
it (``pytest -k typed`` prepares one job, the whole suite all of them), and submits
``tests/support/spark/user_app_main.py`` once with a plan of them: every job runs in that one
application, one after another, each writing its own JSON.  A job that raises fails only its
own tests, with its traceback; an application that times out or dies fails every job's tests
with the end of its log.  This saves each job the JVM start, the shipping and the unpack of the
dependency wheels (a separate application for each costs 25-35 s before any work); the checks
whose evidence is the process boundary itself stay separate applications (docs/layout.md).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from support.spark import spark_helpers as H
from support.procs import kill_group
from support.spark.spark_submit import spark_submit

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_app_main.py")
# the time of the JVM start, the shipping and the unpack, then of each job (alone, each was
# given 600-900 s; they take 20-90 s on an idle machine)
STARTUP_SECONDS = 300
SECONDS_PER_JOB = 300
LOG_TAIL_CHARS = 8000


@dataclass(frozen=True)
class UserAppJob:
    """A job of the one application: ``script``'s ``run(spark, *args)`` over the inputs that
    ``prepare(request, work)`` made (it returns ``(args, facts)``).  ``kafka_source``: the job
    needs Spark's Kafka source and spark-avro on the class path; ``driver_memory_gb``: what the
    job needs of the driver (the application gets the largest)."""
    name: str
    script: str
    prepare: Callable[[Any, Any], tuple]
    kafka_source: bool = False
    driver_memory_gb: int = 1


def _collected_jobs(session) -> dict:
    """The jobs declared by the modules of the collected tests that use :func:`user_app`."""
    jobs = {}
    for item in session.items:
        module = getattr(item, "module", None)
        if module is None or "user_app" not in item.fixturenames:
            continue
        for value in vars(module).values():
            if isinstance(value, UserAppJob):
                jobs[value.name] = value
    return jobs


class UserApp:
    """The one application of a session: run on the first :meth:`outcome`."""

    def __init__(self, request, tmp_path_factory):
        self._request = request
        self._tmp = tmp_path_factory
        self._work = tmp_path_factory.mktemp("user-app")
        self._jobs: dict = {}
        self._facts: dict = {}
        self._not_run: dict = {}       # job name -> why it did not run: ("skip" | "fail", text)
        self._ran = False
        self.bare = self.wheel = None

    def outcome(self, job: UserAppJob):
        """``(result, facts)`` of ``job``: what its ``run`` returned, what its ``prepare`` gave."""
        if not self._ran:
            self._ran = True
            self._jobs = _collected_jobs(self._request.session)
            self._jobs.setdefault(job.name, job)
            try:
                self._run()
            except (Exception, pytest.fail.Exception):
                why = f"the user-way application could not be started:\n{traceback.format_exc()}"
                for name in self._jobs:
                    self._not_run.setdefault(name, ("fail", why))
        assert job.name in self._jobs, f"job {job.name} was not in the application's plan"
        if job.name in self._not_run:
            how, why = self._not_run[job.name]
            if how == "skip":
                pytest.skip(why)
            pytest.fail(why, pytrace=False)
        error = self._work / f"{job.name}.error.txt"
        if error.exists():
            pytest.fail(f"job {job.name} raised in the user-way application:\n{error.read_text()}",
                        pytrace=False)
        result = self._work / f"{job.name}.json"
        if not result.exists():
            pytest.fail(f"job {job.name} wrote no result (log {self._work / 'user-app.log'})", pytrace=False)
        with open(result) as fh:
            return json.load(fh), self._facts[job.name]

    def _prepare(self) -> list:
        plan = []
        for name, job in sorted(self._jobs.items()):
            work = self._tmp.mktemp(f"user-app-{name}")
            try:
                args, self._facts[name] = job.prepare(self._request, work)
            except pytest.skip.Exception as exc:
                self._not_run[name] = ("skip", f"preparing job {name}: {exc.msg}")
                continue
            except (Exception, pytest.fail.Exception):
                self._not_run[name] = ("fail", f"preparing job {name} failed:\n{traceback.format_exc()}")
                continue
            plan.append({"name": name, "script": job.script, "args": [str(a) for a in args],
                         "out": str(self._work / f"{name}.json"),
                         "error": str(self._work / f"{name}.error.txt")})
        return plan

    def _run(self):
        plan = self._prepare()
        if not plan:
            return
        self.wheel = H.wheelhouse(sys.executable)
        self.bare = H.bare_python(sys.executable)
        planned = [self._jobs[p["name"]] for p in plan]
        jars = H.kafka_source_jars(self.bare) if any(j.kafka_source for j in planned) else []
        plan_file = self._work / "plan.json"
        plan_file.write_text(json.dumps({"jobs": plan}, indent=1))
        log_path = self._work / "user-app.log"
        # one native cache for the application's driver and executors: the dependency wheels are
        # unpacked once (cold, as a user's first run: the cold unpack itself is what
        # tests/spark/test_spark_submit.py checks); a session's own, so that the Protobuf schemas
        # typed_formats_job compiles on the planner are compiled there, not found from a former run
        cmd, env = spark_submit(self.bare, RUNNER, [plan_file],
                                driver_memory=f"{max(j.driver_memory_gb for j in planned)}g",
                                conf={"spark.sql.session.timeZone": "UTC"}, jars=jars or (), py_files=self.wheel,
                                env={"KAFKAREC_NATIVE_CACHE": str(self._work / "native-cache"),
                                     "KAFKAREC_SPARK_CACHE": str(self._work / "spark-cache")})
        timeout = STARTUP_SECONDS + SECONDS_PER_JOB * len(plan)
        started = time.monotonic()
        with open(log_path, "wb") as log:
            # its own process group: a timeout ends the JVM and its Python workers with it
            proc = subprocess.Popen(cmd, cwd=self._work, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                proc.wait(timeout=timeout)
                ended = f"exited with status {proc.returncode}"
            except subprocess.TimeoutExpired:
                ended = f"was killed after its timeout of {timeout} s"
            finally:
                # the whole group: all of it after a timeout or an interrupt, else any Python
                # worker that outlived the JVM
                kill_group(proc)
        sys.stderr.write(f"user-way application ({', '.join(p['name'] for p in plan)}): "
                         f"{time.monotonic() - started:.0f} s, log {log_path}\n")
        if ended != "exited with status 0":
            with open(log_path, errors="replace") as fh:
                tail = fh.read()[-LOG_TAIL_CHARS:]
            for p in plan:
                self._not_run[p["name"]] = ("fail", f"the user-way application {ended} "
                                                    f"(log {log_path}); its end:\n{tail}")


@pytest.fixture(scope="session")
def user_app(request, tmp_path_factory):
    """The session's one user-way application (:class:`UserApp`); run on first use."""
    return UserApp(request, tmp_path_factory)
