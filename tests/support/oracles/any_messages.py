"""Random messages with google.protobuf.Any fields for tests/protobuf/test_any_json.py, and Java's JsonFormat
(tests/java/AnyJsonOracle.java) run over them: what Spark's from_protobuf prints with
convert.any.fields.to.json."""
from __future__ import annotations

import glob
import math
import os
import random
import re
import struct
import subprocess
import tempfile

from support.paths import ROOT
from support.java import compiled, jdk

ORACLE = os.path.join(ROOT, "tests", "java", "AnyJsonOracle.java")

ANY_PROTO = """
syntax = "proto3";
package kr.any;
import "google/protobuf/any.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/empty.proto";
import "kranyjson/legacy2.proto";

enum Color { RED = 0; GREEN = 1; BLUE = 2; CYAN = 2 [deprecated = true]; option allow_alias = true; }

message Inner {
  message Deep { string note = 1; repeated int32 xs = 2; google.protobuf.Any any = 3; }
  string s = 1;
  int64 i64 = 2;
  uint64 u64 = 3;
  sint32 z32 = 4;
  fixed32 f32 = 5;
  float fl = 6;
  double db = 7;
  bytes raw = 8;
  bool ok = 9;
  Color color = 10;
  repeated int32 packed = 11;
  repeated string strs = 12;
  map<int32, string> by_int = 13;
  map<bool, double> by_bool = 14;
  map<string, Deep> deeps = 15;
  optional int32 maybe = 16;
  oneof pick { string name = 17; Deep deep = 18; sfixed64 big = 19; }
  google.protobuf.Any any = 20;
  repeated google.protobuf.Any anys = 21;
  google.protobuf.Timestamp at = 22;
  google.protobuf.Duration took = 23;
  google.protobuf.Struct st = 24;
  google.protobuf.Value val = 25;
  google.protobuf.FieldMask mask = 26;
  google.protobuf.Int64Value w_i64 = 27;
  google.protobuf.FloatValue w_fl = 28;
  google.protobuf.Empty nothing = 29;
  repeated float fls = 30;
  repeated Color colors = 31;
  uint32 u32 = 32;
  map<uint64, Color> by_u64 = 33;
  google.protobuf.ListValue list = 34;
  map<string, google.protobuf.Any> any_map = 35;
}

message Holder {
  string event = 1;
  google.protobuf.Any details = 2;
  repeated google.protobuf.Any many = 3;
  map<string, google.protobuf.Any> by = 4;
  Inner inner = 5;
}
"""

LEGACY_PROTO = """
syntax = "proto2";
package kr.legacy2;
enum Closed { ZERO = 0; ONE = 1; TWO = 2; }
message Old {
  optional string text = 1;
  required int32 must = 2;
  optional Closed closed = 3;
  repeated Closed closeds = 4;
  optional group Grp = 5 { optional int32 g = 6; optional string gs = 7; }
  optional int64 dflt = 8 [default = -7];
  optional bytes blob = 9;
  map<string, Closed> by_name = 10;
}
"""

FILES = {"kranyjson/legacy2.proto": LEGACY_PROTO, "kranyjson/any.proto": ANY_PROTO}

STRINGS = ["", "plain", "<b>&amp;'=\"</b>", "back\\slash", "\x00\x01\x1f\x7f", "tab\tnl\nret\rff\fbs\b",
           "\u2028\u2029", "é ü ß ǅ İ", "😀 \U0010ffff", "\ud7ff\ue000\ufffd", "snake_case_path", "a__b_",
           "_Lead.trail_", "ﬀ_ǳ_ŉ"]
WKT_NAMES = ["google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Struct",
             "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.FieldMask",
             "google.protobuf.Int64Value", "google.protobuf.UInt32Value", "google.protobuf.FloatValue",
             "google.protobuf.DoubleValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
             "google.protobuf.BoolValue", "google.protobuf.Empty", "google.protobuf.Any"]


class Maker:
    """Random Holder payloads (bytes) whose Any fields hold messages of the schema itself, well-known types,
    Any in Any, unknown type URLs and bytes that do not parse."""

    def __init__(self, modules: dict, seed: int) -> None:
        from google.protobuf import any_pb2, duration_pb2, empty_pb2, field_mask_pb2, struct_pb2, \
            timestamp_pb2, wrappers_pb2
        self.m = modules["kranyjson/any.proto"]
        self.old = modules["kranyjson/legacy2.proto"]
        self.any_pb2, self.ts, self.du, self.st = any_pb2, timestamp_pb2, duration_pb2, struct_pb2
        self.fm, self.wr, self.empty = field_mask_pb2, wrappers_pb2, empty_pb2
        self.r = random.Random(seed)

    # -- values

    def text(self) -> str:
        r = self.r
        if r.random() < 0.6:
            return r.choice(STRINGS)
        return "".join(chr(r.choice([r.randint(0, 0x7F), r.randint(0x80, 0xD7FF), r.randint(0xE000, 0x10FFFF)]))
                       for _ in range(r.randint(0, 6)))

    def double(self) -> float:
        r = self.r
        pick = r.random()
        if pick < 0.3:
            return struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
        if pick < 0.5:
            return r.choice([0.0, -0.0, 1.0, 0.1, 1e7, 9999999.0, 1e-3, 9.999e-4, 5e-324, 1e23, 2e-3,
                             1.7976931348623157e308, math.inf, -math.inf, math.nan, 100.0, -1.5e-300])
        return r.randint(-10 ** 7, 10 ** 7) / 10 ** r.randint(0, 9)

    def float32(self) -> float:
        r = self.r
        if r.random() < 0.4:
            return struct.unpack("<f", struct.pack("<I", r.getrandbits(32)))[0]
        x = self.double() if r.random() < 0.5 else r.randint(-999999, 999999) / 10 ** r.randint(0, 6)
        try:
            return struct.unpack("<f", struct.pack("<f", x))[0]
        except OverflowError:                       # past the float's range: an infinity
            return math.copysign(math.inf, x)

    def int64(self) -> int:
        return self.r.choice([0, 1, -1, 2 ** 63 - 1, -2 ** 63, self.r.randint(-2 ** 63, 2 ** 63 - 1)])

    # -- messages

    def inner(self, depth: int = 0):
        r, m = self.r, self.m
        x = m.Inner()
        if r.random() < 0.7:
            x.s = self.text()
        x.i64 = self.int64()
        x.u64 = r.choice([0, 2 ** 64 - 1, r.getrandbits(64)])
        x.z32 = r.randint(-2 ** 31, 2 ** 31 - 1)
        x.f32 = r.choice([0, 2 ** 32 - 1])
        if r.random() < 0.6:
            x.fl = self.float32()
        if r.random() < 0.6:
            x.db = self.double()
        x.raw = r.choice([b"", b"\x00\xff", bytes(r.getrandbits(8) for _ in range(r.randint(1, 7)))])
        x.ok = r.random() < 0.5
        x.color = r.choice([0, 1, 2, 7, -3])                  # 7, -3: numbers the open enum lacks
        x.packed.extend(r.sample([0, -1, 5, 2 ** 31 - 1, -2 ** 31], r.randint(0, 3)))
        x.strs.extend(self.text() for _ in range(r.randint(0, 2)))
        for _ in range(r.randint(0, 2)):
            x.by_int[r.randint(-5, 5)] = self.text()
        for _ in range(r.randint(0, 2)):
            x.by_bool[r.random() < 0.5] = self.double()
        for _ in range(r.randint(0, 2)):
            x.by_u64[r.choice([0, 2 ** 64 - 1, 7])] = r.choice([0, 2, 9])
        if r.random() < 0.4:
            x.maybe = r.choice([0, -9])
        choice = r.random()
        if choice < 0.25:
            x.name = self.text()
        elif choice < 0.5:
            x.deep.note = self.text()
        elif choice < 0.7:
            x.big = self.int64()
        if r.random() < 0.4:
            d = x.deeps[self.text()]
            d.xs.extend([1, -2])
            if depth < 2 and r.random() < 0.5:
                d.any.CopyFrom(self.any(depth + 1))
        if depth < 2 and r.random() < 0.5:
            x.any.CopyFrom(self.any(depth + 1))
        if depth < 2:
            for _ in range(r.randint(0, 2)):
                x.anys.add().CopyFrom(self.any(depth + 1))
            for _ in range(r.randint(0, 1)):
                x.any_map[self.text()].CopyFrom(self.any(depth + 1))
        if r.random() < 0.3:
            x.at.CopyFrom(self.timestamp())
        if r.random() < 0.3:
            x.took.CopyFrom(self.duration())
        if r.random() < 0.3:
            x.st.CopyFrom(self.struct())
        if r.random() < 0.3:
            x.val.CopyFrom(self.value(1))
        if r.random() < 0.2:
            x.list.CopyFrom(self.listvalue(1))
        if r.random() < 0.3:
            x.mask.paths.extend(self.text() for _ in range(r.randint(0, 3)))
        if r.random() < 0.3:
            x.w_i64.value = self.int64()
        if r.random() < 0.3:
            x.w_fl.value = self.float32()
        if r.random() < 0.2:
            x.nothing.SetInParent()
        x.fls.extend(self.float32() for _ in range(r.randint(0, 2)))
        x.colors.extend(r.choice([0, 1, 2, 11]) for _ in range(r.randint(0, 2)))
        x.u32 = r.choice([0, 2 ** 32 - 1, 2 ** 31])
        return x

    def timestamp(self):
        r = self.r
        t = self.ts.Timestamp()
        t.seconds = r.choice([0, -1, 1700000000, -62135596800, 253402300799, r.randint(-62135596800, 253402300799)])
        t.nanos = r.choice([0, 1, 1000, 1000000, 999999999, 123456789])
        if r.random() < 0.08:                        # out of Timestamp's range: Java refuses to print it
            t.seconds, t.nanos = r.choice([(-62135596801, 0), (253402300800, 0), (0, -1), (5, 1000000000)])
        return t

    def duration(self):
        r = self.r
        d = self.du.Duration()
        d.seconds = r.choice([0, 1, -1, 315576000000, -315576000000, r.randint(-10 ** 6, 10 ** 6)])
        d.nanos = r.choice([0, 5, 1000, 1000000, 999999999]) * (-1 if d.seconds < 0 or
                                                                (d.seconds == 0 and r.random() < 0.5) else 1)
        if r.random() < 0.08:                        # out of range, or nanos of the other sign
            d.seconds, d.nanos = r.choice([(315576000001, 0), (1, -5), (-1, 5), (0, 1000000000)])
        return d

    def value(self, depth: int):
        r = self.r
        v = self.st.Value()
        pick = r.randint(0, 6 if depth < 3 else 4)
        if pick == 0:
            v.null_value = 0
        elif pick == 1:
            v.number_value = self.double()
        elif pick == 2:
            v.string_value = self.text()
        elif pick == 3:
            v.bool_value = r.random() < 0.5
        elif pick == 4:
            pass                                     # no kind: null
        elif pick == 5:
            v.struct_value.CopyFrom(self.struct(depth + 1))
        else:
            v.list_value.CopyFrom(self.listvalue(depth + 1))
        return v

    def struct(self, depth: int = 1):
        s = self.st.Struct()
        for _ in range(self.r.randint(0, 3)):
            s.fields[self.text()].CopyFrom(self.value(depth))
        return s

    def listvalue(self, depth: int):
        lv = self.st.ListValue()
        for _ in range(self.r.randint(0, 3)):
            lv.values.add().CopyFrom(self.value(depth))
        return lv

    def legacy(self) -> bytes:
        """A proto2 message's bytes, sometimes without its required field or with text that is not UTF-8."""
        r = self.r
        o = self.old.Old(must=r.randint(-3, 3))
        if r.random() < 0.5:
            o.text = self.text()
        if r.random() < 0.5:
            o.closed = r.choice([0, 1, 2])
        o.closeds.extend(r.choice([0, 2]) for _ in range(r.randint(0, 2)))
        if r.random() < 0.5:
            o.grp.g = r.randint(-5, 5)
        if r.random() < 0.3:
            o.dflt = self.int64()
        for _ in range(r.randint(0, 2)):
            o.by_name[self.text()] = r.choice([0, 1, 2])
        raw = o.SerializeToString()
        if r.random() < 0.1:
            raw += b"\x52\x05\x0a\x01k\x10\x09"          # a map entry whose closed enum value is unknown
        pick = r.random()
        if pick < 0.15:
            raw += b"\x0a\x03\xffa\xc3"                # text (no UTF-8 check in proto2): Java's U+FFFD rules
        elif pick < 0.25:
            raw += b"\x18\x09" + b"\x20\x07"           # closed enum numbers it lacks: unknown fields
        elif pick < 0.35:
            raw = self.old.Old(text="no must").SerializePartialToString()      # its required field missing
        return raw

    def wkt(self, name: str):
        r = self.r
        if name == "google.protobuf.Timestamp":
            return self.timestamp()
        if name == "google.protobuf.Duration":
            return self.duration()
        if name == "google.protobuf.Struct":
            return self.struct()
        if name == "google.protobuf.Value":
            return self.value(1)
        if name == "google.protobuf.ListValue":
            return self.listvalue(1)
        if name == "google.protobuf.FieldMask":
            return self.fm.FieldMask(paths=[self.text() for _ in range(r.randint(0, 3))])
        if name == "google.protobuf.Empty":
            return self.empty.Empty()
        if name == "google.protobuf.Any":
            return self.any(2)
        cls = getattr(self.wr, name.split(".")[-1])
        w = cls()
        if r.random() < 0.8:
            w.value = {"Int64Value": self.int64(), "UInt32Value": r.choice([0, 2 ** 32 - 1]),
                       "FloatValue": self.float32(), "DoubleValue": self.double(), "StringValue": self.text(),
                       "BytesValue": b"\x00\xfe", "BoolValue": True}[cls.__name__]
        return w

    def any(self, depth: int = 0):
        r = self.r
        a = self.any_pb2.Any()
        pick = r.random()
        prefix = r.choice(["type.googleapis.com/", "type.googleapis.com/", "example.com/a/b/", "/"])
        if pick < 0.4:
            a.Pack(self.inner(depth + 1), type_url_prefix=prefix)
        elif pick < 0.75:
            a.Pack(self.wkt(r.choice(WKT_NAMES)), type_url_prefix=prefix)
        elif pick < 0.82:
            a.type_url = prefix + "kr.legacy2.Old"
            a.value = self.legacy()
        elif pick < 0.86:
            pass                                         # the empty Any
        elif pick < 0.9:
            a.type_url = r.choice(["", "/", "noslash", "kr.any.Inner/", "x/nope.Nope", "type.googleapis.com/",
                                   "a//kr.any.Inner", "type.googleapis.com/kr.any.Inner.Deep",
                                   "type.googleapis.com/kr.any.Inner.ByIntEntry"])
            a.value = self.inner(depth + 1).SerializeToString() if r.random() < 0.5 else b""
        elif pick < 0.94:
            good = self.inner(depth + 1).SerializeToString()
            a.type_url = "type.googleapis.com/kr.any.Inner"
            a.value = r.choice([good[:max(0, len(good) - r.randint(1, 3))],
                                bytes(r.getrandbits(8) for _ in range(r.randint(1, 12))),
                                good + b"\x07", b"\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"])
        else:
            # two messages in one value: they merge (scalars: the last; maps and lists: both; messages: merged)
            a.type_url = "type.googleapis.com/kr.any.Inner"
            a.value = self.inner(depth + 1).SerializeToString() + self.inner(depth + 1).SerializeToString()
        return a

    def holder(self) -> bytes:
        r, m = self.r, self.m
        h = m.Holder(event=self.text())
        if r.random() < 0.8:
            h.details.CopyFrom(self.any())
        for _ in range(r.randint(0, 2)):
            h.many.add().CopyFrom(self.any())
        for _ in range(r.randint(0, 2)):
            h.by[self.text()].CopyFrom(self.any())
        if r.random() < 0.5:
            h.inner.CopyFrom(self.inner())
        raw = h.SerializeToString()
        if r.random() < 0.05:
            raw += b"\x12\x02\x0a\x00"                      # details twice: the occurrences merge
        if r.random() < 0.03:
            raw += b"\x22\x04\x0a\x02ab"                    # a map entry without its value
        return raw


# ---------------------------------------------------------------- Java


def jdks() -> list[str]:
    """The ``java`` on PATH, then a JDK 19 or later when there is one (JAVA_HOME, /usr/lib/jvm): its
    Float.toString follows the shortest-digits rule kafkarec prints by.  Each has its javac beside it."""
    import shutil
    found = []
    path_java = shutil.which("java")
    if path_java:
        found.append(path_java)
    candidates = ([os.path.join(os.environ["JAVA_HOME"], "bin", "java")] if os.environ.get("JAVA_HOME") else [])
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    if not any(java_major(j) >= 19 for j in found):
        for c in candidates:
            if os.access(c, os.X_OK) and java_major(c) >= 19:
                found.append(c)
                break
    return found


def java_major(java: str) -> int:
    """The JDK's major version (read from its release file: no JVM), 0 for a runtime without javac."""
    try:
        return jdk(java).major
    except FileNotFoundError:
        return 0


def run_oracle(java: str, classpath: str, descriptor_set: bytes,
               runs: list[tuple[str, bool, list[bytes]]]) -> tuple[str, list[list]]:
    """All ``(message, enums_as_ints, payloads)`` runs in one JVM of ``java``: (Java's version, per run, per
    payload: ("X", error) or ("ROW", [("J", any bytes, json) | ("E", any bytes, error)]))."""
    program = compiled(ORACLE, classpath, java=java)
    with tempfile.NamedTemporaryFile(suffix=".pb", delete=False) as fh:
        fh.write(descriptor_set)
    try:
        args, data = [fh.name], bytearray()
        for message, enums_as_ints, payloads in runs:
            args += [message, str(enums_as_ints).lower()]
            data += len(payloads).to_bytes(4, "big") + b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
        proc = subprocess.run(program.command(*args, jvm_flags=["-Xss16m", "-XX:+UseSerialGC", "-Xmx512m",
                                                                "-Dfile.encoding=UTF-8"]),
                              input=bytes(data), capture_output=True, timeout=600)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise RuntimeError(f"AnyJsonOracle failed: {proc.stderr.decode(errors='replace')[-3000:]}")
    lines = proc.stdout.decode("utf-8").split("\n")
    version = lines[0].split(" ", 1)[1]
    results, i = [], 1
    for _, _, payloads in runs:
        out = []
        while len(out) < len(payloads):
            kind, _, rest = lines[i].partition(" ")
            i += 1
            if kind == "X":
                out.append(("X", rest))
                continue
            anys = []
            for _ in range(int(rest)):
                tag, hexed, text = lines[i].split(" ", 2)
                anys.append((tag, bytes.fromhex(hexed), text))
                i += 1
            out.append(("ROW", anys))
        results.append(out)
    return version, results


_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:E-?\d+)?)")


def same_but_float_digits(a: str, b: str) -> bool:
    """``a`` and ``b`` differ only in numbers that round to the same float32: where JDK 17's Float.toString
    (before JDK 19's shortest-digits rule) prints more digits than needed."""
    pa_, pb_ = _NUMBER.split(a), _NUMBER.split(b)
    if len(pa_) != len(pb_):
        return False
    for i, (x, y) in enumerate(zip(pa_, pb_)):
        if x == y:
            continue
        if i % 2 == 0:
            return False
        if struct.pack("<f", float(x)) != struct.pack("<f", float(y)):
            return False
    return True
