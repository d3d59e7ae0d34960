"""``scripts/wheelhouse.py --reuse FROM``: a wheelhouse whose stamp for this interpreter is current
for the checkout's sources gives its wheels instead of a build (the release check takes the suite's
cp311/cp312 wheelhouses: scripts/release.sh --reuse); a stamp of other sources gives nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from support.paths import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "wheelhouse.py")
DIGEST = ("import sys; sys.path.insert(0, sys.argv[1]); import wheelhouse; "
          "print(wheelhouse.source_digest(), wheelhouse.stamp_path(''))")


def _wheelhouse(folder, sources, names):
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(b"a stand-in wheel: " + name.encode())
    stamp = {"sources": sources, "python": sys.executable, "wheels": names}
    (folder / STAMP).write_text(json.dumps(stamp))


digest, STAMP = subprocess.run([sys.executable, "-c", DIGEST, os.path.dirname(SCRIPT)], capture_output=True,
                               text=True, check=True, timeout=120).stdout.split()


def test_a_current_wheelhouse_is_copied_instead_of_built(tmp_path):
    names = ["kafkarec-0.1.0-cp3-cp3-manylinux_2_17_x86_64.whl", "lz4-4.0-cp3-cp3-manylinux_2_17_x86_64.whl"]
    _wheelhouse(tmp_path / "stale", "0" * 64, ["kafkarec-0.0.1-cp3-cp3-manylinux_2_17_x86_64.whl"])
    _wheelhouse(tmp_path / "suite", digest, names)
    out = tmp_path / "release"
    out.mkdir()
    proc = subprocess.run([sys.executable, SCRIPT, "--reuse", str(tmp_path / "stale"), "--reuse",
                           str(tmp_path / "suite"), str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out / names[0])
    assert f"2 wheels of the same sources taken from {tmp_path / 'suite'}" in proc.stderr
    assert sorted(os.listdir(out)) == sorted(names + [STAMP])
    assert all((out / n).read_bytes() == (tmp_path / "suite" / n).read_bytes() for n in names)
    # the copy is current in its turn: a second run finds it so, without building or copying
    again = subprocess.run([sys.executable, "-I", "-S", SCRIPT, "--if-current", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.strip() == str(out / names[0]), again.stderr


def test_a_wheelhouse_is_current_for_the_extras_its_stamp_holds(tmp_path):
    """``--extras LIST`` (scripts/main.sh: ``none``) is answered by a wheelhouse whose stamp holds those
    extras' wheels, or more; a stamp without one of them, or an old stamp's for every extra named,
    is not current for it.  An unknown extra is one line naming the known ones."""
    names = ["kafkarec-0.1.0-cp3-cp3-manylinux_2_17_x86_64.whl"]
    _wheelhouse(tmp_path / "house", digest, names)
    stamp = json.loads((tmp_path / "house" / STAMP).read_text())
    (tmp_path / "house" / STAMP).write_text(json.dumps(dict(stamp, extras=["tiered"])))

    def current(*extras):
        proc = subprocess.run([sys.executable, "-I", "-S", SCRIPT, "--if-current", *extras, str(tmp_path / "house")],
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stderr.strip()

    assert [current(*e)[0] for e in ([], ["--extras", "none"], ["--extras", "tiered"],
                                     ["--extras", "registry,tiered"])] == [1, 0, 0, 1]
    assert current("--extras", "tiered,crypto") == (
        1, "wheelhouse: unknown extra(s) crypto: --extras takes registry, tiered, restore or none")
