"""Write tests/data/tiered/aiven: segments stored by Aiven's tiered-storage plugin's own code.

    .venv/bin/python scripts/aiven_rsm_fixtures.py PLUGIN_CHECKOUT [--out DIR] [--tag v1.0.0]

PLUGIN_CHECKOUT: a git checkout (or bare repository) of Aiven-Open/tiered-storage-for-apache-kafka.
The plugin is not published on Maven Central, so its source at ``--tag`` (modules core, commons,
storage/core, storage/filesystem) is compiled here with javac against jvm/aiven-rsm's classpath
(its dependencies, from Maven Central, resolved by scripts/jvm.sh), and
tests/java/AivenRsmWrite.java drives its RemoteStorageManager with the filesystem backend, as a
broker copies closed segments.  The objects are checked in (CI has no copy of the plugin's
source); this script is how they were made and how to make them again.

Inputs (the originals the tests compare with): ``txn-0``, a real broker's partition
(tests/data/broker/stopped/txn-0: a transaction, an abort, a .txnindex), and ``clicks-0``
(tests/support/logs/logdir.py: every codec, several segments with offset and time index entries, a leader
epoch change), copied to DIR/input.  Key pairs ``k1`` (RSA 2048) and ``k2`` (RSA 3072) in
DIR/keys.  One folder per variant under DIR, each with the plugin config it was written with
(``rsm.properties``, the broker's ``rsm.config.`` prefix kept, key files relative) and the
objects under ``objects/`` (the backend's ``storage.root``):

    plain      chunk.size 4096, no compression, no encryption (fixed chunk index, byte copies)
    zstd       chunk.size 4096, compression (variable chunk index)
    aes        chunk.size 4096, encryption with k1 (fixed chunk index, chunks 28 bytes longer)
    both       chunk.size 1000, both, key.prefix "tenant/rsm_", txn-0 wrapped with k1 and
               clicks-0 with k2 (a key rotation: the config names both pairs, k2 active)
    small      chunk.size 100, both
    large      chunk.size 4 MiB (one chunk per segment), both

``DIR/fixtures.json`` lists each variant's segments: topic id, partition folder, base offset,
segment id and end offset, as the plugin's copy printed them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ("core/src/main", "commons/src/main", "storage/core/src/main", "storage/filesystem/src/main")
BACKEND = "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage"
VARIANTS = {
    "plain": dict(chunk=4096, compression=False, encryption=None),
    "zstd": dict(chunk=4096, compression=True, encryption=None),
    "aes": dict(chunk=4096, compression=False, encryption={"txn-0": "k1", "clicks-0": "k1"}),
    "both": dict(chunk=1000, compression=True, encryption={"txn-0": "k1", "clicks-0": "k2"},
                 prefix="tenant/rsm_"),
    "small": dict(chunk=100, compression=True, encryption={"txn-0": "k2", "clicks-0": "k2"}),
    "large": dict(chunk=4 << 20, compression=True, encryption={"txn-0": "k1", "clicks-0": "k1"}),
}
# Topic ids in Kafka's text form, chosen to hold the characters base64url adds ("-" and "_").
TOPIC_IDS = {"txn-0": "-_815o2ZH57GCKVHnvxDzQ", "clicks-0": "q3_Yx0-lTnWb5T0aN8Jw_A"}


def compile_plugin(checkout: str, tag: str, work: str) -> str:
    src = os.path.join(work, "src")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", checkout, "archive", "--format=tar", tag, *MODULES],
                             check=True, capture_output=True).stdout
    with tempfile.TemporaryFile() as fh:
        fh.write(archive)
        fh.seek(0)
        with tarfile.open(fileobj=fh) as tar:
            tar.extractall(src)
    sources = [os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".java")]
    classes = os.path.join(work, "classes")
    os.makedirs(classes)
    subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", classpath(), *sources], check=True)
    return classes


def classpath() -> str:
    return subprocess.run(["bash", os.path.join(ROOT, "scripts", "jvm.sh"), "jvm/aiven-rsm"], check=True,
                          capture_output=True, text=True).stdout.strip()


def inputs(out: str) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from support.logs import logdir
    dest = os.path.join(out, "input")
    shutil.copytree(os.path.join(ROOT, "tests", "data", "broker", "stopped", "txn-0"), os.path.join(dest, "txn-0"))
    w = logdir.PartitionWriter(dest, "clicks", 0, segment_bytes=8192, index_interval_bytes=1024)
    for k in range(36):
        if k == 13:
            w.set_leader_epoch(3)
        w.append(logdir.v2_batch(logdir.sample_records(12 + k, start_ts=logdir.T0 + 1000 * k),
                                 codec=logdir.CODECS[k % 5]))
    w.close()


def keys(out: str) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    os.makedirs(os.path.join(out, "keys"))
    for name, bits in (("k1", 2048), ("k2", 3072)):
        key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        with open(os.path.join(out, "keys", f"{name}-private.pem"), "wb") as fh:
            fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
        with open(os.path.join(out, "keys", f"{name}-public.pem"), "wb") as fh:
            fh.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))


def properties(v: dict, root: str, key_dir: str, active: str = None) -> str:
    lines = [f"storage.backend.class={BACKEND}", f"storage.root={root}", f"chunk.size={v['chunk']}",
             f"compression.enabled={'true' if v['compression'] else 'false'}",
             "compression.heuristic.enabled=false",
             f"encryption.enabled={'true' if v['encryption'] else 'false'}"]
    if v.get("prefix"):
        lines.append(f"key.prefix={v['prefix']}")
    if v["encryption"]:
        pairs = sorted(set(v["encryption"].values()))
        lines.append(f"encryption.key.pair.id={active or pairs[-1]}")
        lines.append(f"encryption.key.pairs={','.join(pairs)}")
        for p in pairs:
            for which in ("public", "private"):
                lines.append(f"encryption.key.pairs.{p}.{which}.key.file={key_dir}/{p}-{which}.pem")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "tiered", "aiven"))
    ap.add_argument("--tag", default="v1.0.0")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    work = tempfile.mkdtemp(prefix="aiven-rsm-")
    try:
        classes = compile_plugin(args.checkout, args.tag, work)
        inputs(out)
        keys(out)
        cp = classes + os.pathsep + classpath()
        driver = os.path.join(ROOT, "tests", "java", "AivenRsmWrite.java")
        listing: dict = {}
        for name, v in VARIANTS.items():
            vdir = os.path.join(out, name)
            objects = os.path.join(vdir, "objects")
            os.makedirs(objects)
            # The committed config: the broker's rsm.config. prefix, key files relative to it.
            with open(os.path.join(vdir, "rsm.properties"), "w") as fh:
                fh.write("# The plugin's settings this variant was written with (scripts/aiven_rsm_fixtures.py)\n")
                fh.write("".join(f"rsm.config.{line}\n" for line in
                                 properties(v, "objects", "../keys").splitlines()))
            listing[name] = []
            for part in ("txn-0", "clicks-0"):
                active = v["encryption"][part] if v["encryption"] else None
                run_props = os.path.join(work, f"{name}-{part}.properties")
                with open(run_props, "w") as fh:
                    fh.write(properties(v, objects, os.path.join(out, "keys"), active))
                proc = subprocess.run(["java", "-cp", cp, driver, run_props, os.path.join(out, "input", part),
                                       TOPIC_IDS[part]], capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"{name} {part}: the plugin's copy failed:\n{proc.stderr[-4000:]}")
                for line in proc.stdout.splitlines():
                    if line.startswith("copied "):
                        _, base, seg_id, end = line.split()
                        listing[name].append({"partition": part, "topic_id": TOPIC_IDS[part],
                                              "base_offset": int(base), "segment_id": seg_id,
                                              "end_offset": int(end)})
            print(f"{name}: {len(listing[name])} segments", file=sys.stderr)
        with open(os.path.join(out, "fixtures.json"), "w") as fh:
            json.dump(listing, fh, indent=1)
            fh.write("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
