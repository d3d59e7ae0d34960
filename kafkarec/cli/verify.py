"""``kafkarec verify``: check log segments, their indexes and the partition's side files.

The checks are :func:`kafkarec.log.checks.check_partition` (one pass over each segment:
batches, records with ``--deep``, and the side files fed from the same scan); this
command prints what they find, as text lines or JSON objects, and sums it up.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, List, Optional

from kafkarec.cli.common import (EXIT_OK, EXIT_PROBLEMS, Progress, human, jdump, problem_dict, problem_line,
                                 read_options)
from kafkarec.log.checks import check_partition
from kafkarec.log.directory import PartitionDir
from kafkarec.log.staging import Staging

__all__ = ["run"]


# --- the command ------------------------------------------------------------------------

def run(pdirs: List[PartitionDir], args, out, err, *,
        staging_of: Callable[[PartitionDir], Optional[Staging]] = lambda pdir: None) -> int:
    """``kafkarec verify``: problems on ``out`` as they are found, then a summary.
    ``staging_of(pdir)``: the :class:`kafkarec.log.staging.Staging` a partition folder was
    mirrored by (its files are staged one at a time and reported by their URIs), or None."""
    progress = Progress(sum(p.log_bytes() for p in pdirs), err, enabled=not args.no_progress,
                        label="verifying")
    counts = {"error": 0, "warning": 0, "note": 0}
    totals = {"partitions": 0, "segments": 0, "batches": 0, "records": 0, "bytes": 0, "skipped_bytes": 0}

    def show(problems, staging):
        for p in problems:
            if staging is not None:
                p = p._replace(path=staging.to_uri(p.path), reason=staging.rename(p.reason))
            counts[p.severity] += 1
            if p.severity == "note" and not args.verbose:
                continue
            progress.close()
            if args.json:
                out.write(jdump(problem_dict(p)) + "\n")
            else:
                out.write(problem_line(p) + "\n")

    done = 0
    try:
        for pdir in pdirs:
            totals["partitions"] += 1
            staging = staging_of(pdir)
            for check, problems in check_partition(
                    pdir, deep=args.deep, resync=args.resync,
                    options=read_options(args),
                    progress=lambda n, b=done: progress.update(b + n),
                    stage=staging.stage if staging is not None else (lambda path: nullcontext())):
                if check is not None:
                    totals["segments"] += 1
                    totals["batches"] += check.batches
                    totals["records"] += check.records
                    totals["bytes"] += check.segment.size
                    totals["skipped_bytes"] += check.skipped_bytes
                show(problems, staging)
            done += pdir.log_bytes()
    finally:
        progress.close()
    if args.json:
        out.write(jdump(dict(type="summary", errors=counts["error"], warnings=counts["warning"],
                             notes=counts["note"], **totals)) + "\n")
    else:
        out.write(f"checked {totals['partitions']} partition(s), {totals['segments']} segment(s), "
                  f"{totals['batches']} batches, " + (f"{totals['records']} records, " if args.deep else "")
                  + f"{human(totals['bytes'])}: {counts['error']} error(s), {counts['warning']} warning(s)\n")
    return EXIT_PROBLEMS if counts["error"] else EXIT_OK
