"""Writer -> reader resolution (Java's ``Resolver`` rules) compiled into the flat program
that ``kafkarec._core``'s Avro interpreter (``_core_src/_avro.pxi``) runs: the reader's
columns (``_Layout``) and the ops that fill them (``_Compiler``)."""
from __future__ import annotations

import json
import math
import re
import struct
from typing import Any, Iterable, Mapping, NoReturn, Optional, Union

from kafkarec._core import encode_varlong
from kafkarec.errors import SchemaResolutionError, AvroSchemaError

from kafkarec.avro.schema import AvroSchema, _Field, _Node, _encode_default, _STRING  # noqa: F401
from kafkarec.avro.arrow_types import _arrow, _pa, _union_mode  # noqa: F401


# ----------------------------------------------------------------------------- columns

# the column kinds, numeric kinds and op codes of the core's Avro interpreter (numbered there only)
from kafkarec._core import ColumnKind as CK, AvroNumericKind as NK, AvroOp as OP  # noqa: E402

_NK = {"int": NK.NK_INT, "long": NK.NK_LONG, "float": NK.NK_FLOAT, "double": NK.NK_DOUBLE}


class _Col:
    """The reader-side position of a value: its column and how it is stored."""
    __slots__ = ("node", "col", "store", "children", "branches", "mode", "member_of", "nonnull")

    def __init__(self, node, col, store):
        self.node = node
        self.col = col
        self.store = store
        self.children: list = []
        self.branches: list = []   # union: per reader branch, _Col or None (null)
        self.mode = None
        self.nonnull: list = []


class _Layout:
    """Every column of a reader schema, in the order the core allocates them.
    specs[i] = (kind, children column ids)."""

    def __init__(self, reader: AvroSchema) -> None:
        self.specs: list = []
        self.root = self.place(reader.root, None)

    def new(self, kind: int, nullable: bool = False) -> int:
        self.specs.append([kind, [], nullable])
        return len(self.specs) - 1

    def place(self, node: _Node, col: Optional[int], store: Optional[int] = None) -> _Col:
        """Place node; `col` is given when the node shares a union's column."""
        t = node.type
        lg = node.logical["name"] if node.logical else None
        if t == "union":
            mode, nonnull, has_null = _union_mode(node)
            if mode == "struct":
                c = _Col(node, self.new(CK.CK_STRUCT, has_null), CK.CK_STRUCT)
                for b in node.branches:
                    if b.type == "null":
                        c.branches.append(None)
                    else:
                        m = self.place(b, None)
                        self.specs[m.col][2] = True       # Spark's member fields are nullable
                        self.specs[c.col][1].append(m.col)
                        c.branches.append(m)
            else:
                kind = {"null": CK.CK_NULL, "long": CK.CK_I64, "double": CK.CK_F64}.get(mode, CK.CK_STRUCT)
                if mode == "single":
                    first = self.place(node.branches[nonnull[0]], None)
                    cid, kind = first.col, first.store
                else:
                    cid = self.new(kind)
                    first = None
                self.specs[cid][2] = has_null or mode == "null"
                c = _Col(node, cid, kind)
                for i, b in enumerate(node.branches):
                    if b.type == "null":
                        c.branches.append(None)
                    elif first is not None:
                        c.branches.append(first)
                    else:
                        c.branches.append(self.place(b, cid, kind))
            c.mode = mode
            c.nonnull = nonnull
            return c
        if t == "null":
            kind = CK.CK_NULL
        elif t == "boolean":
            kind = CK.CK_BOOL
        elif t in ("int", "long", "float", "double"):
            kind = store if store is not None else {"int": CK.CK_I32, "long": CK.CK_I64, "float": CK.CK_F32,
                                                    "double": CK.CK_F64}[t]
        elif t in ("bytes", "fixed") and lg == "decimal":
            kind = CK.CK_DEC16 if node.logical["precision"] <= 38 else CK.CK_DEC32
        elif t in ("string", "bytes", "fixed", "enum"):
            kind = CK.CK_BIN
        elif t == "record":
            kind = CK.CK_STRUCT
        else:
            kind = CK.CK_LIST
        if col is None:
            col = self.new(kind, kind == CK.CK_NULL)
        c = _Col(node, col, kind)
        if t == "record":
            for f in node.fields:
                fc = self.place(f.type, None)
                self.specs[col][1].append(fc.col)
                c.children.append(fc)
        elif t == "array":
            ic = self.place(node.items, None)
            self.specs[col][1].append(ic.col)
            c.children.append(ic)
        elif t == "map":
            entries = self.new(CK.CK_STRUCT)
            keys = self.new(CK.CK_BIN)
            vc = self.place(node.values, None)
            self.specs[entries][1] += [keys, vc.col]
            self.specs[col][1].append(entries)
            c.children += [entries, keys, vc]
        return c


# ----------------------------------------------------------------------------- resolution

def _desc(node: _Node) -> str:
    return node.name if node.name else node.type


class _Compiler:
    """Writer -> reader resolution (Java's Resolver rules) emitted as ops."""

    def __init__(self, layout: _Layout, writer: AvroSchema, reader: AvroSchema, confluent: bool) -> None:
        self.layout = layout
        self.ops: list = []          # [kind, col, a, b, c, n]
        self.kids: list = []
        self.aux: list = []
        self.blobs: list = [b""]
        self.errors: list = []
        self.confluent = confluent
        # Schema.applyAliases: reader aliases rename writer types; reader field
        # aliases rename writer fields of the record that gets the reader's name
        self.type_alias: dict = {}
        self.field_alias: dict = {}
        for full, node in reader.named.items():
            for a in node.aliases:
                self.type_alias[a] = full
            if node.type == "record":
                fa = {a: f.name for f in node.fields for a in f.aliases}
                if fa:
                    self.field_alias[full] = fa
        self.reader = reader
        self.writer = writer
        self.skips: dict = {}        # id(writer record) -> its skip op

    def wname(self, w: _Node) -> str:
        """The full name of a writer's named type after the reader's aliases."""
        return "" if w.name is None else self.type_alias.get(w.name, w.name)

    def emit(self, kind, col=-1, a=0, b=0, c=0, n=0) -> int:
        self.ops.append([kind, col, a, b, c, n])
        return len(self.ops) - 1

    def kid_list(self, ids: list) -> int:
        start = len(self.kids)
        self.kids.extend(ids)
        return start

    def compile(self) -> int:
        # Confluent writes a `bytes` schema as the raw value with no length
        # prefix: the core then reads the rest of the value as that bytes datum.
        self.raw_bytes = self.confluent and self.writer.root.type == "bytes"
        return self.resolve(self.writer.root, self.layout.root, "<root>", lazy=False)

    def error(self, reason: str, path: str, lazy: bool) -> int:
        if not lazy:
            raise SchemaResolutionError(f"{path}: {reason}")
        self.errors.append(f"{path}: {reason}")
        return self.emit(OP.OP_ERROR, a=len(self.errors) - 1)

    # -- resolution (returns an op index, or raises / emits OP.OP_ERROR)
    def resolve(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        if w.type == "union":
            return self.writer_union(w, rc, path)
        if w.type == r.type:
            return self.same(w, rc, path, lazy)
        if r.type == "union":
            k = self.first_match(w, r)
            if k < 0:
                return self.error(f"found {_desc(w)}, expecting {self.union_desc(r)}: no union branch matches",
                                  path, lazy)
            return self.into_branch(w, rc, k, path, lazy)
        return self.promote(w, rc, path, lazy)

    @staticmethod
    def union_desc(r: _Node) -> str:
        return "[" + ", ".join(_desc(b) for b in r.branches) + "]"

    def writer_union(self, w: _Node, rc: _Col, path: str) -> int:
        r = rc.node
        equiv = r.type == "union" and self.union_equiv(w, r)
        ids = []
        for i, b in enumerate(w.branches):
            bpath = f"{path}<{i}:{_desc(b)}>"
            if equiv:
                ids.append(self.into_branch(b, rc, i, bpath, True))
            else:
                ids.append(self.resolve(b, rc, bpath, True))
        return self.emit(OP.OP_WUNION, a=self.kid_list(ids), b=len(ids))

    def into_branch(self, w: _Node, rc: _Col, k: int, path: str, lazy: bool) -> int:
        """w read as the reader union's branch k."""
        bc = rc.branches[k]
        if bc is None:       # the null branch
            return self.emit(OP.OP_SET_NULL, col=rc.col) if rc.mode != "null" else self.emit(OP.OP_NULL_COL, col=rc.col)
        inner = self.resolve(w, bc, path, lazy)
        if rc.mode == "struct":
            return self.emit(OP.OP_MEMBER, col=rc.col, a=inner, c=rc.nonnull.index(k))
        return inner

    def union_equiv(self, w: _Node, r: _Node) -> bool:
        if w.type != r.type:
            return False
        if w.type in ("record", "fixed", "enum") and w.name is not None:
            if self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                return False
        if w.type == "array":
            return self.union_equiv(w.items, r.items)
        if w.type == "map":
            return self.union_equiv(w.values, r.values)
        if w.type == "fixed":
            return w.size == r.size
        if w.type == "enum":
            return w.symbols == r.symbols
        if w.type == "union":
            return len(w.branches) == len(r.branches) and all(
                self.union_equiv(a, b) for a, b in zip(w.branches, r.branches))
        if w.type == "record":
            return len(w.fields) == len(r.fields) and all(
                self.wfield(w, a) == b.name and self.union_equiv(a.type, b.type)
                for a, b in zip(w.fields, r.fields))
        return True

    def wfield(self, w: _Node, f: _Field) -> str:
        fa = self.field_alias.get(self.wname(w))
        return fa.get(f.name, f.name) if fa else f.name

    def first_match(self, w: _Node, r: _Node) -> int:
        vt = w.type
        structure = -1
        for j, b in enumerate(r.branches):
            if vt == b.type:
                if vt in ("record", "enum", "fixed"):
                    if w.name is not None and self.wname(w) == b.name:
                        return j
                    if vt == "record" and not self.record_has_match_error(w, b):
                        if structure < 0 or self.wname(w).rsplit(".", 1)[-1] == b.short_name:
                            structure = j
                else:
                    return j
        if structure >= 0:
            return structure
        promo = {"int": ("long", "double", "float"), "long": ("double", "float"), "float": ("double",),
                 "string": ("bytes",), "bytes": ("string",)}.get(vt, ())
        for j, b in enumerate(r.branches):
            if b.type in promo:
                return j
        return -1

    def record_has_match_error(self, w: _Node, r: _Node) -> bool:
        """Java's hasMatchError(RecordAdjust.resolve(w, r)): a missing required
        field or a field whose own resolution is directly an error."""
        rfields = {f.name: f for f in r.fields}
        wnames = set()
        for wf in w.fields:
            name = self.wfield(w, wf)
            wnames.add(name)
            rf = rfields.get(name)
            if rf is not None and self.direct_error(wf.type, rf.type):
                return True
        return any(f.name not in wnames and not f.has_default for f in r.fields)

    def direct_error(self, w: _Node, r: _Node) -> bool:
        if w.type == "union":
            return False
        if w.type == r.type:
            if w.type in ("fixed", "enum"):
                if w.name is not None and self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                    return True
                return w.type == "fixed" and w.size != r.size
            if w.type == "record":
                return any(f.name not in {self.wfield(w, x) for x in w.fields} and not f.has_default
                           for f in r.fields)
            return False
        if r.type == "union":
            return self.first_match(w, r) < 0
        return not self.promotable(w.type, r.type)

    @staticmethod
    def promotable(wt: str, rt: str) -> bool:
        return (wt, rt) in {("int", "long"), ("int", "float"), ("long", "float"), ("int", "double"),
                            ("long", "double"), ("float", "double"), ("string", "bytes"),
                            ("bytes", "string")}

    def numeric(self, wt: str, rc: _Col) -> int:
        rt = rc.node.type
        if rc.store == CK.CK_I32 and wt == rt == "int":
            return self.emit(OP.OP_INT, col=rc.col)
        if rc.store == CK.CK_I64 and wt == rt == "long":
            return self.emit(OP.OP_LONG, col=rc.col)
        store_nk = {CK.CK_I32: NK.NK_INT, CK.CK_I64: NK.NK_LONG, CK.CK_F32: NK.NK_FLOAT, CK.CK_F64: NK.NK_DOUBLE}[rc.store]
        return self.emit(OP.OP_NUM, col=rc.col, n=_NK[wt] | (_NK[rt] << 2) | (store_nk << 4))

    def promote(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        if not self.promotable(w.type, r.type):
            return self.error(f"found {_desc(w)}, expecting {_desc(r)}", path, lazy)
        if r.type in ("long", "float", "double"):
            return self.numeric(w.type, rc)
        return self.primitive_bytes(w, rc)

    def primitive_bytes(self, w: _Node, rc: _Col) -> int:
        r = rc.node
        if rc.store in (CK.CK_DEC16, CK.CK_DEC32):
            return self.emit(OP.OP_DEC_BYTES, col=rc.col, n=16 if rc.store == CK.CK_DEC16 else 32)
        # bytes read as a string column must be UTF-8 (Arrow's string type)
        return self.emit(OP.OP_STR if r.type == "string" else OP.OP_BYTES, col=rc.col)

    def same(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        t = w.type
        if t == "null":
            return self.emit(OP.OP_NULL_COL, col=rc.col)
        if t == "boolean":
            return self.emit(OP.OP_BOOL, col=rc.col)
        if t in ("int", "long", "float", "double"):
            return self.numeric(t, rc)
        if t in ("string", "bytes"):
            return self.primitive_bytes(w, rc)
        if t == "fixed":
            if w.name is not None and self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                return self.error(f"found {w.name}, expecting {r.name}: names do not match", path, lazy)
            if w.size != r.size:
                return self.error(f"found fixed {w.name} of size {w.size}, expecting size {r.size}", path, lazy)
            if rc.store in (CK.CK_DEC16, CK.CK_DEC32):
                return self.emit(OP.OP_DEC_FIXED, col=rc.col, b=16 if rc.store == CK.CK_DEC16 else 32, n=r.size)
            return self.emit(OP.OP_FIXED, col=rc.col, n=r.size)
        if t == "enum":
            if w.name is not None and self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                return self.error(f"found {w.name}, expecting {r.name}: names do not match", path, lazy)
            default = r.symbols.index(r.enum_default) if r.enum_default is not None else -1
            table = []
            for s in w.symbols:
                j = r.symbols.index(s) if s in r.symbols else default
                table.append(j)
            # reader symbols (as UTF-8), and for writer symbols the reader lacks, their names for errors
            start = len(self.aux)
            self.aux.extend(table)
            sym = len(self.blobs)
            self.blobs.append(b"".join(s.encode() for s in r.symbols))
            offs = len(self.aux)
            o = 0
            self.aux.append(0)
            for s in r.symbols:
                o += len(s.encode())
                self.aux.append(o)
            self.errors.append(f"{path}: enum {r.name} has no symbol for writer symbols "
                               + ",".join(f"{i}={s}" for i, s in enumerate(w.symbols) if table[i] < 0)
                               + " and no default")
            return self.emit(OP.OP_ENUM, col=rc.col, a=start, b=len(table), c=offs,
                             n=sym | (len(self.errors) - 1) << 32)
        if t == "record":
            return self.record(w, rc, path, lazy)
        # an item or map value that cannot be resolved fails only the rows that hold one:
        # Java's resolver keeps such an error as an action it throws when an item is read
        if t == "array":
            item = self.resolve(w.items, rc.children[0], path + "[]", True)
            return self.emit(OP.OP_ARRAY, col=rc.col, a=item, n=0 if self.min_size(w.items) else 1)
        if t == "map":
            entries, keys, vc = rc.children
            val = self.resolve(w.values, vc, path + "{}", True)
            return self.emit(OP.OP_MAP, col=rc.col, a=val, b=entries, c=keys)
        raise AssertionError(t)

    def record(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        rpos = {f.name: i for i, f in enumerate(r.fields)}
        ids = []
        seen = set()
        renamed = set()
        for wf in w.fields:
            name = self.wfield(w, wf)
            if name in renamed:
                # Java's Schema.applyAliases renames the whole writer before resolving: two
                # writer fields under one name is its "Duplicate field" error, for every record
                return self.error(f"writer fields of {w.name} collide as {name!r} after the reader's field "
                                  "aliases (Avro's Duplicate field)", path, False)
            renamed.add(name)
            i = rpos.get(name)
            if i is None:
                ids.append(self.skip(wf.type))
            else:
                seen.add(i)
                ids.append(self.resolve(wf.type, rc.children[i], f"{path}.{name}", lazy))
        for i, rf in enumerate(r.fields):
            if i in seen:
                continue
            if not rf.has_default:
                return self.error(f"found {w.name}, expecting {r.name}, missing required field {rf.name!r} "
                                  "(the writer lacks it and the reader gives no default)", path, lazy)
            blob = len(self.blobs)
            self.blobs.append(_encode_default(rf.type, rf.default))
            saved = self.type_alias, self.field_alias
            self.type_alias, self.field_alias = {}, {}
            try:
                prog = self.resolve(rf.type, rc.children[i], f"{path}.{rf.name}", False)
            finally:
                self.type_alias, self.field_alias = saved
            ids.append(self.emit(OP.OP_DEFAULT, a=prog, b=blob))
        return self.emit(OP.OP_RECORD, col=rc.col, a=self.kid_list(ids), b=len(ids))

    def min_size(self, w: _Node, open_: Optional[set] = None) -> int:
        """Fewest bytes an encoded value of w takes (0 when it can be empty)."""
        t = w.type
        if t == "null":
            return 0
        if t == "fixed":
            return min(w.size, 1)
        if t == "record":
            open_ = set() if open_ is None else open_
            if id(w) in open_:
                return 1            # a record inside itself: only a union or collection gets there
            open_.add(id(w))
            size = min(1, sum(self.min_size(f.type, open_) for f in w.fields))
            open_.discard(id(w))
            return size
        return 1

    def skip(self, w: _Node) -> int:
        t = w.type
        if t == "record":
            # one skip op per record type: a recursive writer type skips through itself
            done = self.skips.get(id(w))
            if done is not None:
                return done
            at = self.emit(OP.OP_SKIP_RECORD)
            self.skips[id(w)] = at
            ids = [self.skip(f.type) for f in w.fields]
            self.ops[at][2], self.ops[at][3] = self.kid_list(ids), len(ids)
            return at
        if t == "null":
            return self.emit(OP.OP_NOP)
        if t == "boolean":
            return self.emit(OP.OP_SKIP_BOOL)
        if t in ("int", "enum"):
            return self.emit(OP.OP_SKIP_INT)
        if t == "long":
            return self.emit(OP.OP_SKIP_LONG)
        if t == "float":
            return self.emit(OP.OP_SKIP_N, n=4)
        if t == "double":
            return self.emit(OP.OP_SKIP_N, n=8)
        if t == "fixed":
            return self.emit(OP.OP_SKIP_N, n=w.size)
        if t in ("string", "bytes"):
            return self.emit(OP.OP_SKIP_BYTES)
        if t == "array":
            return self.emit(OP.OP_SKIP_ARRAY, a=self.skip(w.items), n=0 if self.min_size(w.items) else 1)
        if t == "map":
            return self.emit(OP.OP_SKIP_MAP, a=self.skip(w.values))
        if t == "union":
            ids = [self.skip(b) for b in w.branches]
            return self.emit(OP.OP_SKIP_UNION, a=self.kid_list(ids), b=len(ids))
        raise AssertionError(t)
