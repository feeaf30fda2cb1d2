#!/usr/bin/env python3
"""The public surface of a Rust crate (from rustdoc's JSON output) or of a C header (from
clang's JSON AST), one item per line, for tools/compat/surface.sh to diff.

    surface.py rust CRATE.json            # every public item reachable from the crate root
    surface.py c HEADER.h                 # functions, types, struct fields, enum constants, macros

Each line is `KEY<TAB>SIGNATURE`: the key names the item (kind and path), the signature is what
must match. Lifetimes and parameter names are left out (they do not change what compiles),
paths are shortened to their last segment.
"""

import json
import os
import re
import subprocess
import sys


# ---------------------------------------------------------------- Rust (rustdoc JSON)

class Rust:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc.get("paths", {})
        self.lines = {}

    # -- types --------------------------------------------------------------------------------

    def path_name(self, p):
        name = p.get("path") or p.get("name") or ""
        return name.split("::")[-1]

    def args(self, args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            ab = args["angle_bracketed"]
            parts = []
            for a in ab.get("args", []):
                if "type" in a:
                    parts.append(self.ty(a["type"]))
                elif "const" in a:
                    parts.append(str(a["const"].get("expr", "")))
                # lifetimes are left out
            for c in ab.get("constraints", ab.get("bindings", [])):
                binding = c.get("binding", {})
                if "equality" in binding:
                    eq = binding["equality"]
                    val = self.ty(eq["type"]) if "type" in eq else str(eq)
                    parts.append("%s=%s" % (c["name"], val))
                elif "constraint" in binding:
                    parts.append("%s: %s" % (c["name"], self.bounds(binding["constraint"])))
            return "<%s>" % ", ".join(parts) if parts else ""
        if "parenthesized" in args:
            pa = args["parenthesized"]
            ins = ", ".join(self.ty(t) for t in pa.get("inputs", []))
            out = pa.get("output")
            return "(%s)%s" % (ins, " -> " + self.ty(out) if out else "")
        return ""

    def path(self, p):
        return self.path_name(p) + self.args(p.get("args"))

    def bound(self, b):
        if "trait_bound" in b:
            tb = b["trait_bound"]
            mod = tb.get("modifier", "none")
            prefix = "?" if mod == "maybe" else ""
            return prefix + self.path(tb["trait"])
        if "outlives" in b:
            return None
        if "use" in b:
            return None
        return json.dumps(b, sort_keys=True)

    def bounds(self, bs):
        parts = [x for x in (self.bound(b) for b in bs) if x]
        return " + ".join(sorted(parts))

    def ty(self, t):
        if t is None:
            return "()"
        (kind, v), = t.items()
        if kind == "resolved_path":
            return self.path(v)
        if kind == "primitive":
            return v
        if kind == "generic":
            return v
        if kind == "borrowed_ref":
            return "&" + ("mut " if v.get("is_mutable", v.get("mutable")) else "") + self.ty(v["type"])
        if kind == "raw_pointer":
            return "*" + ("mut " if v.get("is_mutable", v.get("mutable")) else "const ") + self.ty(v["type"])
        if kind == "slice":
            return "[%s]" % self.ty(v)
        if kind == "array":
            return "[%s; %s]" % (self.ty(v["type"]), v["len"])
        if kind == "tuple":
            return "(%s)" % ", ".join(self.ty(x) for x in v)
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "dyn_trait":
            traits = sorted(self.path(x["trait"]) for x in v["traits"])
            return "dyn " + " + ".join(traits)
        if kind == "qualified_path":
            self_ty = self.ty(v["self_type"])
            trait = v.get("trait")
            if trait and self.path_name(trait):
                return "<%s as %s>::%s" % (self_ty, self.path(trait), v["name"])
            return "%s::%s" % (self_ty, v["name"])
        if kind == "function_pointer":
            sig = v["sig"]
            ins = ", ".join(self.ty(x[1]) for x in sig["inputs"])
            out = sig.get("output")
            return "fn(%s)%s" % (ins, " -> " + self.ty(out) if out else "")
        if kind == "infer":
            return "_"
        return json.dumps(t, sort_keys=True)

    def generics(self, g, skip=()):
        """`<T: Bound>` for the type and const parameters, and the where clause."""
        params = []
        for p in g.get("params", []):
            k = p["kind"]
            if "type" in k:
                tk = k["type"]
                if tk.get("is_synthetic", tk.get("synthetic")) or p["name"] in skip:
                    continue
                s = p["name"]
                b = self.bounds(tk.get("bounds", []))
                if b:
                    s += ": " + b
                if tk.get("default"):
                    s += " = " + self.ty(tk["default"])
                params.append(s)
            elif "const" in k:
                params.append("const %s: %s" % (p["name"], self.ty(k["const"]["type"])))
        where = []
        for w in g.get("where_predicates", []):
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                b = self.bounds(bp["bounds"])
                if b:
                    where.append("%s: %s" % (self.ty(bp["type"]), b))
            elif "eq_predicate" in w:
                ep = w["eq_predicate"]
                where.append("%s = %s" % (self.ty(ep["lhs"]), json.dumps(ep["rhs"], sort_keys=True)))
        gen = "<%s>" % ", ".join(params) if params else ""
        wh = " where " + ", ".join(sorted(where)) if where else ""
        return gen, wh

    def fn_sig(self, f, skip_generics=()):
        sig = f["sig"]
        ins = []
        for name, t in sig["inputs"]:
            if name == "self":
                rendered = self.ty(t)
                rendered = rendered.replace("Self", "self") if rendered in ("&Self", "&mut Self", "Self") else "self: " + rendered
                ins.append(rendered)
            else:
                ins.append(self.ty(t))
        out = sig.get("output")
        gen, wh = self.generics(f.get("generics", {}), skip_generics)
        header = f.get("header", {})
        quals = ""
        if header.get("is_const", header.get("const")):
            quals += "const "
        if header.get("is_unsafe", header.get("unsafe")):
            quals += "unsafe "
        abi = header.get("abi")
        if abi and abi != "Rust":
            quals += "extern %s " % (json.dumps(abi) if not isinstance(abi, str) else abi)
        ret = " -> " + self.ty(out) if out is not None else ""
        return "%sfn%s(%s)%s%s" % (quals, gen, ", ".join(ins), ret, wh)

    # -- items --------------------------------------------------------------------------------

    def add(self, key, sig):
        self.lines[key] = sig

    def is_public(self, item):
        return item.get("visibility") == "public"

    def walk_module(self, mid, prefix, seen):
        if (mid, prefix) in seen:
            return
        seen.add((mid, prefix))
        module = self.index[str(mid)]["inner"]["module"]
        for cid in module["items"]:
            item = self.index.get(str(cid))
            if item is None or not self.is_public(item):
                continue
            inner = item["inner"]
            if "use" in inner or "import" in inner:
                use = inner.get("use", inner.get("import"))
                target = use.get("id")
                if target is None or str(target) not in self.index:
                    # A re-export from another crate: listed by name only.
                    if not use.get("is_glob", use.get("glob")):
                        self.add("reexport %s::%s" % (prefix, use["name"]), use["source"].split("::")[-1])
                    continue
                titem = self.index[str(target)]
                if use.get("is_glob", use.get("glob")):
                    if "module" in titem["inner"]:
                        self.walk_module(target, prefix, seen)
                    continue
                self.item(titem, "%s::%s" % (prefix, use["name"]), seen)
            else:
                self.item(item, "%s::%s" % (prefix, item["name"]), seen)

    def item(self, item, path, seen):
        (kind, v), = item["inner"].items()
        if kind == "module":
            self.add("mod " + path, "")
            self.walk_module(item["id"], path, seen)
        elif kind == "function":
            self.add("fn " + path, self.fn_sig(v))
        elif kind == "struct":
            self.struct(item, v, path)
        elif kind == "enum":
            self.enum(item, v, path)
        elif kind == "union":
            self.add("union " + path, "")
        elif kind == "trait":
            self.trait(item, v, path)
        elif kind in ("type_alias", "typedef"):
            gen, wh = self.generics(v.get("generics", {}))
            self.add("type " + path, "%s = %s%s" % (gen, self.ty(v["type"]), wh))
        elif kind == "constant":
            self.add("const " + path, self.ty(v["type"]))
        elif kind == "static":
            self.add("static " + path, self.ty(v["type"]))
        elif kind in ("macro", "proc_macro"):
            self.add("macro " + path, "")
        else:
            self.add("%s %s" % (kind, path), "")

    def type_generics(self, v):
        gen, wh = self.generics(v.get("generics", {}))
        return gen + wh

    def struct(self, item, v, path):
        k = v["kind"]
        self.add("struct " + path, self.type_generics(v))
        if isinstance(k, dict) and "plain" in k:
            for fid in k["plain"]["fields"]:
                f = self.index[str(fid)]
                if self.is_public(f):
                    self.add("field %s::%s" % (path, f["name"]), self.ty(f["inner"]["struct_field"]))
        elif isinstance(k, dict) and "tuple" in k:
            for i, fid in enumerate(k["tuple"]):
                if fid is None:
                    continue
                f = self.index[str(fid)]
                if self.is_public(f):
                    self.add("field %s::%d" % (path, i), self.ty(f["inner"]["struct_field"]))
        self.impls(v.get("impls", []), path)

    def enum(self, item, v, path):
        self.add("enum " + path, self.type_generics(v))
        for vid in v["variants"]:
            var = self.index[str(vid)]
            kind = var["inner"]["variant"]["kind"]
            sig = ""
            if isinstance(kind, dict) and "tuple" in kind:
                sig = "(%s)" % ", ".join(
                    self.ty(self.index[str(f)]["inner"]["struct_field"]) if f is not None else "_"
                    for f in kind["tuple"])
            elif isinstance(kind, dict) and "struct" in kind:
                sig = "{%s}" % ", ".join(
                    "%s: %s" % (self.index[str(f)]["name"], self.ty(self.index[str(f)]["inner"]["struct_field"]))
                    for f in kind["struct"]["fields"])
            self.add("variant %s::%s" % (path, var["name"]), sig)
        self.impls(v.get("impls", []), path)

    def trait(self, item, v, path):
        gen, wh = self.generics(v.get("generics", {}))
        sup = self.bounds(v.get("bounds", []))
        self.add("trait " + path, gen + (": " + sup if sup else "") + wh)
        for iid in v["items"]:
            it = self.index[str(iid)]
            (kind, iv), = it["inner"].items()
            key = "%s::%s" % (path, it["name"])
            if kind == "function":
                provided = " (provided)" if iv.get("has_body") else ""
                self.add("trait-fn " + key, self.fn_sig(iv) + provided)
            elif kind == "assoc_type":
                self.add("trait-type " + key, self.bounds(iv.get("bounds", [])))
            elif kind == "assoc_const":
                self.add("trait-const " + key, self.ty(iv["type"]))

    def impls(self, impl_ids, path):
        for iid in impl_ids:
            imp = self.index.get(str(iid))
            if imp is None:
                continue
            v = imp["inner"]["impl"]
            if v.get("blanket_impl") is not None:
                continue
            trait = v.get("trait")
            for_ty = self.ty(v["for"])
            if trait is None:
                skip = [p["name"] for p in v["generics"].get("params", [])]
                for mid in v["items"]:
                    m = self.index[str(mid)]
                    if not self.is_public(m):
                        continue
                    (kind, mv), = m["inner"].items()
                    key = "%s::%s" % (path, m["name"])
                    if kind == "function":
                        self.add("method " + key, self.fn_sig(mv, skip))
                    elif kind == "assoc_const":
                        self.add("assoc-const " + key, self.ty(mv["type"]))
                continue
            tname = self.path_name(trait)
            if v.get("is_synthetic", v.get("synthetic")) and tname not in ("Send", "Sync"):
                continue
            assoc = []
            for mid in v["items"]:
                m = self.index[str(mid)]
                (kind, mv), = m["inner"].items()
                if kind == "assoc_type" and mv.get("type") is not None:
                    assoc.append("%s=%s" % (m["name"], self.ty(mv["type"])))
            neg = "!" if v.get("is_negative", v.get("negative")) else ""
            tr = neg + self.path(trait)
            if assoc:
                tr += " {%s}" % ", ".join(sorted(assoc))
            self.add("impl %s for %s" % (tr, re.sub(r"<.*", "", path)), for_ty)

    def run(self):
        root = self.index[str(self.doc["root"])]
        name = root["name"]
        self.add("mod " + name, "")
        self.walk_module(root["id"], name, set())
        return self.lines


# ---------------------------------------------------------------- C (clang JSON AST)

def c_surface(header):
    """Functions, typedefs, structs with their fields, enums with their constants, and the
    object-like macros the header defines."""
    hdr = os.path.abspath(header)
    ast = json.loads(subprocess.run(
        ["clang", "-x", "c", "-std=gnu99", "-fsyntax-only", "-Xclang", "-ast-dump=json",
         "-I" + os.path.dirname(hdr), hdr],
        check=True, capture_output=True, text=True).stdout)
    lines = {}
    current_file = [None]

    def in_header(node):
        loc = node.get("loc", {})
        f = loc.get("file") or loc.get("expansionLoc", {}).get("file")
        if f:
            current_file[0] = f
        return current_file[0] is not None and os.path.abspath(current_file[0]) == hdr

    def norm(t):
        t = re.sub(r"\s+", " ", t)
        t = t.replace("struct ", "")
        t = re.sub(r"\s*\*", " *", t)
        return t.strip()

    records = {}
    for node in ast.get("inner", []):
        here = in_header(node)
        kind = node.get("kind")
        if kind == "RecordDecl" and node.get("completeDefinition"):
            records[node.get("id")] = node
        if not here:
            continue
        if kind == "FunctionDecl":
            lines["c-fn " + node["name"]] = norm(node["type"]["qualType"])
        elif kind == "TypedefDecl":
            lines["c-type " + node["name"]] = norm(node["type"]["qualType"])
        elif kind == "RecordDecl" and node.get("name"):
            lines["c-struct " + node["name"]] = "" if node.get("completeDefinition") else "(opaque)"
            for f in node.get("inner", []):
                if f.get("kind") == "FieldDecl":
                    lines["c-field %s.%s" % (node["name"], f["name"])] = norm(f["type"]["qualType"])
        elif kind == "EnumDecl":
            value = -1
            for c in node.get("inner", []):
                if c.get("kind") == "EnumConstantDecl":
                    explicit = enum_value(c)
                    value = int(explicit) if explicit is not None else value + 1
                    lines["c-const " + c["name"]] = str(value)
    # Typedefs of anonymous structs: their fields under the typedef's name.
    for node in ast.get("inner", []):
        if node.get("kind") == "TypedefDecl" and "c-type " + node["name"] in lines:
            owned = node.get("inner", [{}])[0].get("ownedTagDecl") or \
                node.get("inner", [{}])[0].get("inner", [{}])[0].get("decl")
            if owned and owned.get("id") in records and not records[owned["id"]].get("name"):
                for f in records[owned["id"]].get("inner", []):
                    if f.get("kind") == "FieldDecl":
                        lines["c-field %s.%s" % (node["name"], f["name"])] = norm(f["type"]["qualType"])
    macros = subprocess.run(
        ["clang", "-x", "c", "-std=gnu99", "-E", "-dD", hdr], check=True, capture_output=True,
        text=True).stdout
    in_hdr = False
    for line in macros.splitlines():
        m = re.match(r'# \d+ "([^"]*)"', line)
        if m:
            in_hdr = os.path.abspath(m.group(1)) == hdr
            continue
        m = re.match(r"#define (\w+) (.+)$", line)
        if in_hdr and m and not m.group(1).startswith("QUICHE_H") and "(" not in m.group(1):
            lines["c-macro " + m.group(1)] = m.group(2).strip()
    return lines


def enum_value(c):
    for i in c.get("inner", []):
        if "value" in i:
            return i["value"]
        v = enum_value(i)
        if v is not None:
            return v
    return None


def main():
    mode, src = sys.argv[1], sys.argv[2]
    if mode == "rust":
        with open(src) as f:
            lines = Rust(json.load(f)).run()
    else:
        lines = c_surface(src)
    for k in sorted(lines):
        print("%s\t%s" % (k, lines[k]))


if __name__ == "__main__":
    main()
