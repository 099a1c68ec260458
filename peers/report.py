#!/usr/bin/env python3
"""The verdicts, counts and tables of scripts/peers.sh (which runs this; see its header).

  report.py compiled CHECK_JSON EXAMPLES_DIR   the examples that compiled, one a line
  report.py split-console CONSOLE DIR          the VM's PEER-OUT/PEER-EXIT lines, one file a program
  report.py report OUT USE_VM                  verdicts, tables, comparison with peers/expected.tsv
  report.py ui-tests                           typed-verbs' compile-time programs against its UI tests
"""
import json
import os
import re
import subprocess
import sys

PEERS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(PEERS)
CRATES = ["typed-verbs", "sideway-0.4.3", "ibverbs-0.9.2"]
TITLES = {"typed-verbs": "typed-verbs", "sideway-0.4.3": "sideway 0.4.3", "ibverbs-0.9.2": "ibverbs 0.9.2"}
# The registry packages whose source a "no API" cell is checked against.
UPSTREAM = {"sideway-0.4.3": ("sideway", "0.4.3"), "ibverbs-0.9.2": ("ibverbs", "0.9.2")}
CELL = {
    "compile-error": "compile error",
    "unsafe-required": "needs `unsafe`",
    "runtime-error": "run-time error",
    "panic": "panic",
    "kept-alive": "kept alive",
    "silent": "**silent**",
    "crash": "**crash**",
    "hangs": "**hangs**",
    "setup-failed": "set-up failed",
    "no-api": "no API",
    "not-run": "not run",
}


def examples(d):
    return sorted(f[:-3] for f in os.listdir(d) if f.endswith(".rs"))


def check_results(check_json, examples_dir):
    """{example: None if it compiled, else its error messages (rendered)}."""
    errors, built = {}, set()
    with open(check_json) as f:
        for line in f:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            target = m.get("target") or {}
            if "example" not in target.get("kind", []):
                continue
            name = target["name"]
            if m.get("reason") == "compiler-artifact":
                built.add(name)
            elif (m.get("reason") == "compiler-message" and m["message"]["level"] == "error"
                  and not m["message"]["message"].startswith("aborting due to")):
                errors.setdefault(name, []).append(m["message"])
    out = {}
    for ex in examples(examples_dir):
        if ex in errors:
            out[ex] = errors[ex]
        elif ex in built:
            out[ex] = None
        else:
            sys.exit(f"peers: {examples_dir}/{ex}.rs was neither compiled nor refused (see the check's log)")
    return out


def split_console(console, outdir):
    """One file a program, as the runs on the host write them: its output, then PEER-TIMEOUT
    (the watchdog killed it) and PEER-TIME lines, then its exit status."""
    files = {}
    with open(console, errors="replace") as f:
        for line in f:
            m = re.search(r"PEER-(OUT|EXIT|TIMEOUT|TIME) (\S+) (\S+) ?(.*)$", line.rstrip("\n"))
            if not m:
                continue
            kind, crate, name, rest = m.groups()
            text = {"OUT": rest, "EXIT": f"EXIT {rest}"}.get(kind, f"PEER-{kind} {rest}")
            files.setdefault((crate, name), []).append(text)
    for (crate, name), lines in files.items():
        os.makedirs(os.path.join(outdir, crate), exist_ok=True)
        with open(os.path.join(outdir, crate, name), "w") as f:
            f.write("\n".join(lines) + "\n")


def relative(text):
    """Paths into cargo's registry as the crate's own (`ibverbs-0.9.2/src/lib.rs:803:13`)."""
    return re.sub(r"/\S*/registry/src/[^/\s]+/", "", text)


def run_verdict(path):
    """(verdict, what) of one program's run, or None if it did not run."""
    if not os.path.exists(path):
        return None
    lines = relative(open(path, errors="replace").read()).splitlines()
    if not lines or not lines[-1].startswith("EXIT "):
        return ("not-run", "no exit status")
    rc, body = int(lines[-1].split()[1]), lines[:-1]
    timeout = [line.split()[1] for line in body if line.startswith("PEER-TIMEOUT ")]
    body = [line for line in body if not line.startswith(("PEER-TIMEOUT ", "PEER-TIME "))]
    # Stopped at its time limit: by the VM's watchdog or the host's `timeout` (peers.sh).
    if timeout:
        return ("hangs", f"no end within {timeout[0]} s (the program's time limit)")
    # A step before the misuse failed: no verdict.
    for line in body:
        if line.startswith("SETUP-FAILED "):
            return ("setup-failed", line)
    for line in body:
        if line.startswith("PEER-VERDICT ") and rc == 0:
            verdict, _, what = line[len("PEER-VERDICT "):].partition(" ")
            return (verdict, what)
    if rc == 0:
        return ("ok", body[-1] if body else "")
    if rc == 101:
        for i, line in enumerate(body):
            if "panicked at" in line:
                msg = body[i + 1] if i + 1 < len(body) else ""
                return ("panic", f"{msg} ({line.split('panicked at ')[1].rstrip(':')})")
        return ("panic", body[-1] if body else "")
    if rc > 128:
        # A panic that cannot unwind (e.g. a failed precondition check) aborts: its message is
        # the line after "panicked at".
        why = where = ""
        for i, line in enumerate(body):
            if "panicked at" in line:
                where = line.split("panicked at ")[1].rstrip(":")
                why = body[i + 1] if i + 1 < len(body) else ""
                break
        return ("crash", f"killed by signal {rc - 128}" + (f" after the panic `{why}` ({where})" if where else ""))
    return ("runtime-error", body[-1] if body else f"exit {rc}")


def run_time(path):
    """How long a program ran in the VM (seconds), or None."""
    if not os.path.exists(path):
        return None
    for line in open(path, errors="replace"):
        if line.startswith("PEER-TIME "):
            return float(line.split()[1])
    return None


def environment(out, use_vm):
    """The versions the run-time cells were measured with: the VM's kernel (from its console),
    this machine's rdma-core (the VM's libibverbs and rxe provider), rustc."""
    kernel = "?"
    console = os.path.join(out, "console.log")
    if use_vm and os.path.exists(console):
        for line in open(console, errors="replace"):
            m = re.search(r"PEERS: kernel (\S+)", line)
            if m:
                kernel = m.group(1)
    try:
        rdma = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libibverbs1"], capture_output=True, text=True).stdout
    except OSError:
        rdma = ""
    rdma = re.sub(r"-.*", "", rdma.strip()) or "?"
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.split()
    rustc = rustc[1] if len(rustc) > 1 else "?"
    return (f"Recorded by the run that wrote this list: Linux {kernel} in the VM, rdma-core {rdma} "
            f"(libibverbs and the rxe provider), rustc {rustc}, debug builds.")


def first_line(msg):
    return msg["rendered"].splitlines()[0] if msg.get("rendered") else msg["message"]


def crate_sources():
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--locked", "--format-version", "1", "--manifest-path", os.path.join(PEERS, "Cargo.toml")],
        cwd=ROOT))
    dirs = {}
    for crate, (name, version) in UPSTREAM.items():
        for p in meta["packages"]:
            if p["name"] == name and p["version"] == version:
                dirs[crate] = os.path.join(os.path.dirname(p["manifest_path"]), "src")
    return dirs


def source_has(src_dir, pattern):
    rx = re.compile(pattern)
    for base, _, files in os.walk(src_dir):
        for f in files:
            if f.endswith(".rs") and rx.search(open(os.path.join(base, f), errors="replace").read()):
                return True
    return False


def count(path):
    """Lines that are neither blank nor comments, and `unsafe` keywords, of a program."""
    lines = unsafe = 0
    for line in open(path):
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        lines += 1
        unsafe += len(re.findall(r"\bunsafe\b", s.split("//")[0]))
    return lines, unsafe


def read_tsv(name):
    rows = []
    for line in open(os.path.join(PEERS, name)):
        if line.strip() and not line.startswith("#"):
            rows.append(line.rstrip("\n").split("\t"))
    return rows


def matrix(cases, verdict_of):
    out = ["| Misuse | " + " | ".join(TITLES[c] for c in CRATES) + " |", "|---|" + "---|" * len(CRATES)]
    for case, what in cases:
        out.append(f"| {what} | " + " | ".join(CELL.get(verdict_of(case, c), verdict_of(case, c)) for c in CRATES) + " |")
    return out


def costs_table(cost_of):
    out = ["| First program | " + " | ".join(TITLES[c] for c in CRATES) + " |", "|---|" + "---|" * len(CRATES)]
    for key, label in [("lines", "lines (not blank, not comments)"), ("unsafe", "`unsafe` keywords"),
                       ("write", "RDMA write"), ("runs", "runs")]:
        out.append(f"| {label} | " + " | ".join(cost_of(c)[key] for c in CRATES) + " |")
    return out


def replace_block(text, name, lines):
    begin, end = f"<!-- peers.sh:{name} -->", f"<!-- /peers.sh:{name} -->"
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0:
        return None
    return text[: i + len(begin)] + "\n" + "\n".join(lines) + "\n" + text[j:]


def report(out, use_vm):
    cases = [(r[0], r[1]) for r in read_tsv("cases.tsv")]
    expected = {(r[0], r[1]): (r[2], r[3] if len(r) > 3 else "-") for r in read_tsv("expected.tsv")}
    cell_notes = {(r[0], r[1]): r[4] for r in read_tsv("expected.tsv") if len(r) > 4 and r[4].strip()}
    sources = crate_sources()
    observed, evidence, problems, notes = {}, {}, [], []
    compiled = {c: check_results(os.path.join(out, f"{c}.check.json"), os.path.join(PEERS, c, "examples")) for c in CRATES}
    devices = ["sw0", "rxe0"] if use_vm else ["sw0"]

    for case, _ in cases:
        for crate in CRATES:
            exp, check = expected.get((case, crate), (None, "-"))
            if exp is None:
                problems.append(f"{case} {crate}: no row in peers/expected.tsv")
            res = compiled[crate].get(case, "absent")
            if res == "absent":
                verdict = "no-api"
                if crate not in sources:
                    what = "no program"
                elif check == "-" or source_has(sources[crate], check):
                    verdict, what = "no-api?", f"the crate's source contains /{check}/: write the program"
                else:
                    what = f"no `{check}` in {TITLES[crate]}'s source"
            elif res:
                codes = {(m.get("code") or {}).get("code") for m in res}
                verdict = "unsafe-required" if codes == {"E0133"} else "compile-error"
                what = first_line(res[0])
                # Every error must be the expected one: an unrelated error would fail the build
                # as well.
                for m in res:
                    if check != "-" and not re.search(check, m["rendered"]):
                        problems.append(f"{case} {crate}: a compile error does not match /{check}/: {first_line(m)}")
            else:
                runs = {}
                for dev in devices:
                    if crate == "typed-verbs" or dev == "rxe0":
                        r = run_verdict(os.path.join(out, "runs", dev, crate, case))
                        runs[dev] = r or ("not-run", "not run")
                if not runs:
                    verdict, what = "not-run", "needs a device that libibverbs opens (the VM)"
                else:
                    kinds = {v for v, _ in runs.values()}
                    if len(kinds) == 1:
                        verdict = kinds.pop()
                        details = {w for _, w in runs.values()}
                        what = "; ".join(f"{d}: {w}" for d, (_, w) in runs.items()) if len(details) > 1 else details.pop()
                    else:
                        verdict = "differs"
                        what = "; ".join(f"{d}: {v} {w}" for d, (v, w) in runs.items())
                    if check != "-" and verdict == exp and not re.search(check, what):
                        problems.append(f"{case} {crate}: /{check}/ not in: {what}")
            observed[(case, crate)], evidence[(case, crate)] = verdict, what
            if exp is not None and verdict != exp:
                if verdict == "not-run" and not use_vm:
                    notes.append(f"{case} {crate}: not run (expected {exp}): no VM")
                else:
                    problems.append(f"{case} {crate}: expected {exp}, observed {verdict}: {what}")

    # The first program.
    costs = {}
    for crate in CRATES:
        lines, unsafe = count(os.path.join(PEERS, crate, "examples", "first.rs"))
        write = "no (no API)" if observed.get(("write_out_of_bounds", crate)) == "no-api" else "yes"
        ran = []
        for dev in (["sw0"] if crate == "typed-verbs" else []) + (["rxe0"] if use_vm else []):
            r = run_verdict(os.path.join(out, "runs", dev, crate, "first"))
            if not r or r[0] != "ok":
                problems.append(f"first {crate}: does not run on {dev}: {r}")
            ran.append(dev)
        costs[crate] = {"lines": str(lines), "unsafe": str(unsafe), "write": write,
                        "runs": ", ".join(ran) if ran else "not run"}
        exp = expected.get(("first", crate), (None,))[0]
        got = f"{lines} lines, {unsafe} unsafe"
        if exp != got:
            problems.append(f"first {crate}: expected {exp}, counted {got}")

    # Tables: observed (printed) and expected (docs/peers.md).
    def cost_expected(crate):
        exp = expected.get(("first", crate), ("? lines, ? unsafe",))[0]
        m = re.match(r"(\d+) lines, (\d+) unsafe", exp)
        c = dict(costs[crate])
        c["lines"], c["unsafe"] = (m.group(1), m.group(2)) if m else ("?", "?")
        c["runs"] = ", ".join((["sw0"] if crate == "typed-verbs" else []) + ["rxe0"])
        return c

    got_matrix = matrix(cases, lambda case, c: observed[(case, c)])
    exp_matrix = matrix(cases, lambda case, c: expected.get((case, c), ("?",))[0])
    exp_costs = costs_table(cost_expected)
    ev = [environment(out, use_vm), ""]
    for case, what in cases:
        ev.append(f"- **{case}**: {what}")
        for crate in CRATES:
            # Compiler and program output as code (rustdoc reads `error[E0277]` as a link).
            text = evidence[(case, crate)]
            if not text.startswith("no `") and "``" not in text:
                text = f"`` {text} ``"
            ev.append(f"  - {TITLES[crate]}: {CELL.get(observed[(case, crate)], observed[(case, crate)])}: {text}")
            if (case, crate) in cell_notes:
                ev.append(f"    ({cell_notes[(case, crate)]})")

    print("\n## Misuse matrix (observed)\n")
    print("\n".join(got_matrix))
    print("\n## First program (observed)\n")
    print("\n".join(costs_table(lambda c: costs[c])))
    if use_vm:
        times = sorted(((run_time(os.path.join(out, "runs", "rxe0", c, case)) or 0.0, f"{c} {case}")
                        for c in CRATES for case in ["first"] + [k for k, _ in cases]), reverse=True)
        print(f"peers: the slowest programs in the VM (seconds): " + ", ".join(f"{w} {t:.2f}" for t, w in times[:3]))
    print("\n## Evidence\n")
    print("\n".join(ev))
    print()

    doc_path = os.path.join(ROOT, "docs", "peers.md")
    doc = open(doc_path).read()
    new = doc
    for name, lines in [("matrix", exp_matrix), ("costs", exp_costs)] + ([("evidence", ev)] if use_vm else []):
        new = replace_block(new, name, lines)
        if new is None:
            problems.append(f"docs/peers.md: no <!-- peers.sh:{name} --> block")
            new = doc
    # README.md's copy of the tables, where it has one (its blocks hold what docs/peers.md's do).
    readme_path = os.path.join(ROOT, "README.md")
    readme = open(readme_path).read()
    for name, lines in [("matrix", exp_matrix), ("costs", exp_costs)]:
        if f"<!-- peers.sh:{name} -->" in readme and replace_block(readme, name, lines) != readme:
            problems.append(f"README.md: its {name} table is not the one peers/expected.tsv gives (docs/peers.md's)")
    if os.environ.get("PEERS_WRITE_DOCS") == "1":
        if new != doc:
            open(doc_path, "w").write(new)
            print("peers: docs/peers.md's tables rewritten")
    elif new != doc:
        # The matrix and the costs must be the expected ones; the evidence text (compiler
        # messages) may differ on another toolchain, and is reported, not failed.
        strict = doc
        for name, lines in [("matrix", exp_matrix), ("costs", exp_costs)]:
            strict = replace_block(strict, name, lines) or strict
        if strict != doc:
            problems.append("docs/peers.md: its matrix or costs table is not the one peers/expected.tsv gives (PEERS_WRITE_DOCS=1 rewrites it)")
        else:
            notes.append("docs/peers.md: the evidence differs from this run's (another toolchain?); PEERS_WRITE_DOCS=1 rewrites it")

    for n in notes:
        print(f"peers: NOTE {n}")
    for p in problems:
        print(f"peers: FAIL {p}")
    total = len(cases) * len(CRATES)
    ran = sum(1 for v in observed.values() if v != "not-run")
    print(f"peers: {total} cells, {ran} checked, {len(problems)} differ from peers/expected.tsv or docs/peers.md")
    return 1 if problems else 0


def rustfmt(path):
    """The file in rustfmt's default layout (read from stdin: its `mod` items are not followed)."""
    with open(path) as f:
        r = subprocess.run(["rustfmt", "--edition", "2021"], stdin=f, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"peers: rustfmt failed on {path}: {r.stderr.strip()}")
    return r.stdout


def ui_tests():
    """typed-verbs' compile-time programs are its UI tests' fail cases (peers/typed-verbs/ui-tests.tsv):
    each must be its UI test, after rustfmt; and every compile-time cell of typed-verbs has one."""
    pairs = {r[0]: r[1] for r in read_tsv(os.path.join("typed-verbs", "ui-tests.tsv"))}
    problems = []
    for case, crate, verdict, *_ in read_tsv("expected.tsv"):
        if crate == "typed-verbs" and verdict == "compile-error" and case not in pairs:
            problems.append(f"{case}: a compile-time cell with no UI test in peers/typed-verbs/ui-tests.tsv")
    for case, ui in sorted(pairs.items()):
        mine = os.path.join(PEERS, "typed-verbs", "examples", f"{case}.rs")
        theirs = os.path.join(ROOT, "ui-tests", "fail", f"{ui}.rs")
        if not os.path.exists(theirs):
            problems.append(f"{case}: no ui-tests/fail/{ui}.rs")
        elif rustfmt(mine) != rustfmt(theirs):
            problems.append(f"peers/typed-verbs/examples/{case}.rs differs from ui-tests/fail/{ui}.rs (after rustfmt): copy it again")
    for p in problems:
        print(f"peers: FAIL {p}", file=sys.stderr)
    return 1 if problems else 0


def main():
    cmd = sys.argv[1]
    if cmd == "compiled":
        for ex, errs in check_results(sys.argv[2], sys.argv[3]).items():
            if errs is None:
                print(ex)
    elif cmd == "split-console":
        split_console(sys.argv[2], sys.argv[3])
    elif cmd == "ui-tests":
        sys.exit(ui_tests())
    elif cmd == "report":
        sys.exit(report(sys.argv[2], sys.argv[3] == "1"))


if __name__ == "__main__":
    main()
