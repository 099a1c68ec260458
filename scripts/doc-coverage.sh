#!/usr/bin/env bash
# Documentation coverage of the typed-verbs crate's public API: how many public items have an
# example (a Rust code block in their docs, `compile_fail` and `ignore` blocks not counted), and
# how many public functions that return a `Result` have an `# Errors` section.
#
# Needs a nightly toolchain (rustdoc's JSON output is unstable) and python3. Prints one summary
# line per measure, then, with `-v`, every item that lacks one. Exits 0 whatever the numbers
# (a measure, not a gate); exits 1 only if the JSON cannot be produced.
#
#   bash scripts/doc-coverage.sh        # the two numbers
#   bash scripts/doc-coverage.sh -v     # and the items missing an example or `# Errors`
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

verbose=0
[ "${1:-}" = "-v" ] && verbose=1

if ! rustup run nightly rustc -V >/dev/null 2>&1; then
    echo "doc-coverage: SKIP: no nightly toolchain (rustdoc --output-format json is unstable)"
    exit 0
fi

# A target directory of its own, so the nightly build does not invalidate the stable one.
target=target/doc-coverage
CARGO_TARGET_DIR=$target cargo +nightly rustdoc -q -p typed-verbs --lib -- \
    -Z unstable-options --output-format json >/dev/null
json=$target/doc/typed_verbs.json

VERBOSE=$verbose python3 - "$json" <<'PY'
import json, os, re, sys

doc = json.load(open(sys.argv[1]))
index, paths = doc["index"], doc["paths"]
verbose = os.environ.get("VERBOSE") == "1"

def has_example(docs):
    """A Rust code block that is run or compiled: ``` , ```rust, ```no_run, ```should_panic."""
    for m in re.finditer(r"^\s*```([^\n]*)$", docs or "", re.M):
        info = [t.strip() for t in m.group(1).split(",") if t.strip()]
        if any(t in ("text", "sh", "console", "c", "toml", "ignore", "compile_fail") for t in info):
            continue
        if all(t in ("rust", "no_run", "should_panic", "edition2021") or t.startswith("edition")
               for t in info):
            return True
    return False

def returns_result(item):
    f = item["inner"].get("function")
    if not f:
        return False
    out = f["sig"].get("output") if "sig" in f else f["decl"].get("output")
    rp = (out or {}).get("resolved_path")
    if not rp:
        return False
    name = rp.get("path") or rp.get("name") or ""
    return name.split("::")[-1] == "Result"

# Public items of this crate that are reachable: everything rustdoc put in the index that belongs
# to crate 0 and is public, walking down from the root module (so private modules' items and
# trait-impl methods, whose docs are the trait's, do not count). The guide module (docs/ as
# pages) is prose, not API, and is left out.
root = index[str(doc["root"])]
seen, public, guide_pages = set(), [], []
def walk(iid, owner):
    iid = str(iid)
    if iid in seen or iid not in index:
        return
    seen.add(iid)
    it = index[iid]
    if it.get("crate_id") != 0:
        return
    kind = next(iter(it["inner"]))
    if kind == "use":
        tgt = it["inner"]["use"].get("id")
        if tgt is not None:
            walk(tgt, owner)
        return
    if kind == "impl":
        imp = it["inner"]["impl"]
        if imp.get("trait") is not None or imp.get("is_synthetic") or imp.get("blanket_impl"):
            return
        for c in imp["items"]:
            walk(c, owner)
        return
    if it.get("visibility") not in ("public", "default"):
        return
    if kind == "module" and owner == "typed_verbs" and it.get("name") == "guide":
        # The guide (docs/ rendered as modules): pages of prose, not API; not counted.
        guide_pages.extend(it["inner"]["module"]["items"])
        return
    public.append((kind, iid, owner))
    inner = it["inner"][kind]
    if kind == "module":
        for c in inner["items"]:
            walk(c, it.get("name"))
    elif kind in ("struct", "enum", "union"):
        for c in inner.get("impls", []):
            walk(c, it.get("name"))
        for c in inner.get("variants", []):
            walk(c, it.get("name"))
    elif kind == "trait":
        for c in inner.get("items", []):
            walk(c, it.get("name"))

walk(doc["root"], "typed_verbs")

def name(iid, owner):
    it = index[iid]
    span = it.get("span") or {}
    loc = f'{span.get("filename", "?")}:{(span.get("begin") or [0])[0]}'
    return f'{owner}::{it.get("name")} ({loc})'

# An example is asked of types, traits, modules, macros and free functions; methods count too.
example_kinds = {"struct", "enum", "union", "trait", "type_alias", "function", "macro", "module"}
items = [p for p in public if p[0] in example_kinds]
with_ex = [p for p in items if has_example(index[p[1]].get("docs"))]
types = [p for p in items if p[0] in ("struct", "enum", "union", "trait", "type_alias")]
types_ex = [p for p in types if has_example(index[p[1]].get("docs"))]
fallible = [p for p in public if p[0] == "function" and returns_result(index[p[1]])]
errors = [p for p in fallible if re.search(r"^#+ Errors", index[p[1]].get("docs") or "", re.M)]

pct = lambda a, b: f"{100 * len(a) / max(len(b), 1):.1f}%"
print(f"items with an example: {len(with_ex)}/{len(items)} ({pct(with_ex, items)})")
print(f"  of which types and traits: {len(types_ex)}/{len(types)} ({pct(types_ex, types)})")
print(f"fallible functions with # Errors: {len(errors)}/{len(fallible)} ({pct(errors, fallible)})")
print(f"not counted: typed_verbs::guide and its {len(guide_pages)} pages (the guide, not API)")
if verbose:
    print("\nno example:")
    for p in items:
        if p not in with_ex:
            print("  ", p[0], name(p[1], p[2]))
    print("\nno # Errors:")
    for p in fallible:
        if p not in errors:
            print("  ", name(p[1], p[2]))
PY
