"""Copies of the plugin's objects (tests/data/tiered/aiven) whose ``.log`` object and manifest
disagree, as a hidden corpus had them: a manifest claiming two chunks more than the object
holds (``originalFileSize`` raised), an object cut short, an object with bytes after its last
chunk.  For the Python, CLI and Spark tests of tests/tiered."""
from __future__ import annotations

import glob
import json
import os
import shutil

from support.paths import TESTS

DATA = os.path.join(TESTS, "data", "tiered", "aiven")
#: The segment every damage is done to: clicks-0's second segment (offsets 285..).
SEGMENT = "00000000000000000285-"


def lying_root(variant: str, dest: str, damage: str) -> str:
    """A copy of ``variant``'s objects and config under ``dest`` (the key files beside it, as
    the config names them), clicks-0's segment at 285 damaged: ``more chunks`` (its manifest's
    ``originalFileSize`` raised by two chunks; ``fixed`` chunk indexes only), ``short`` (its
    ``.log`` object 5 bytes shorter) or ``longer`` (5 bytes appended).  Returns the damaged
    object's path; the root is ``dest/<variant>/objects``, the config ``dest/<variant>/rsm.properties``."""
    shutil.copytree(os.path.join(DATA, variant), os.path.join(dest, variant))
    if not os.path.exists(os.path.join(dest, "keys")):
        shutil.copytree(os.path.join(DATA, "keys"), os.path.join(dest, "keys"))
    (log,) = glob.glob(os.path.join(dest, variant, "objects", "**", "*clicks-*", "0", SEGMENT + "*.log"),
                       recursive=True)
    stem = log[:-len(".log")]
    if damage == "more chunks":
        with open(stem + ".rsm-manifest") as fh:
            doc = json.load(fh)
        ci = doc["chunkIndex"]
        assert ci["type"] == "fixed", variant
        ci["originalFileSize"] += 2 * ci["originalChunkSize"]
        with open(stem + ".rsm-manifest", "w") as fh:
            json.dump(doc, fh)
    elif damage == "short":
        with open(log, "r+b") as fh:
            fh.truncate(os.path.getsize(log) - 5)
    elif damage == "longer":
        with open(log, "ab") as fh:
            fh.write(b"\0" * 5)
    else:
        raise ValueError(damage)
    return log
