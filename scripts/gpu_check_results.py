"""Results of scripts/gpu-check.sh: one JSON per stage, rewritten after each
test so that a stage cut off still leaves what it had, and the stage's
closing line. Standard library only (it runs under any Python).

A stage's JSON: {"stage", "mode", "status": running|passed|failed, "parts":
{name: {"passed", "failed", "skipped", "failures": [...], "skips": [...],
"figures": [...], ...}}, "problems": [...]}. A problem (a crash, an
unexpected skip, an error the script found) counts as a failure.

Skips: a skip counts as skipped only when its test and reason match an
entry of GPU_CHECK_EXPECTED_SKIPS (lines "TEST-GLOB|REASON", set by
gpu-check.sh); any other skip is a failure.

  gpu_check_results.py begin JSON STAGE MODE [DEVICE [BUNDLE_JSON]]
  gpu_check_results.py gtest JSON PART [EXIT_CODE_FILE] < gtest output
  gpu_check_results.py set JSON PART KEY VALUE
  gpu_check_results.py pass|fail|skip JSON PART NAME [REASON]
  gpu_check_results.py problem JSON TEXT
  gpu_check_results.py close JSON      (prints the closing line; exit 1 on failure)
"""
import fnmatch
import json
import os
import re
import sys
import time


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def part(data, name):
    return data["parts"].setdefault(name, {
        "passed": 0, "failed": 0, "skipped": 0, "failures": [], "skips": [],
        "figures": []})


def expected_skips():
    out = []
    for line in os.environ.get("GPU_CHECK_EXPECTED_SKIPS", "").splitlines():
        if "|" in line:
            test, reason = line.split("|", 1)
            out.append((test.strip(), reason.strip()))
    return out


def skip_is_expected(test, reason):
    return any(fnmatch.fnmatchcase(test, t) and reason == r
               for t, r in expected_skips())


def record(data, part_name, name, outcome, reason=""):
    """outcome: passed, failed or skipped (an unexpected skip fails)."""
    p = part(data, part_name)
    if outcome == "skipped":
        if skip_is_expected(name, reason):
            p["skipped"] += 1
            p["skips"].append({"test": name, "reason": reason})
            return
        p["failed"] += 1
        p["failures"].append({"test": name, "why": f"unexpected skip: {reason!r}"})
        return
    p[outcome] += 1
    if outcome == "failed":
        p["failures"].append({"test": name, "why": reason})


def update(path, fn):
    data = load(path)
    fn(data)
    save(path, data)


# --- GoogleTest output, line by line ----------------------------------------
RUN = re.compile(r"^\[ RUN      \] (\S+)")
# "[  FAILED  ] All/X.Y/z, where GetParam() = ... (3 ms)" for parameterized
# tests; the name ends at a comma or a space.
DONE = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] ([^\s,]+)")
FIGURE = re.compile(r"^\[ figures  \] (.*)")


def parse_gtest(path, part_name, lines, exit_code_file=None):
    """Counts gtest's results as they stream by, saving after each one.
    A test that started and never ended (a crash, a timeout) fails."""
    data = load(path)
    part(data, part_name)
    save(path, data)
    current, skip_reason, in_skip = None, [], False
    for line in lines:
        sys.stdout.write(line)
        sys.stdout.flush()
        line = line.rstrip("\n")
        m = RUN.match(line)
        if m:
            if current:
                record(data, part_name, current, "failed", "no result line")
                save(path, data)
            current, skip_reason, in_skip = m.group(1), [], False
            continue
        if current and line.endswith(": Skipped"):
            in_skip = True
            continue
        if in_skip:
            if line.strip() and not line.startswith("["):
                skip_reason.append(line.strip())
            else:
                in_skip = False
        m = DONE.match(line)
        if m and m.group(2) == current:
            outcome = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[m.group(1)]
            record(data, part_name, current, outcome,
                   " ".join(skip_reason) if outcome == "skipped" else "see the log")
            current = None
            save(path, data)
            continue
        m = FIGURE.match(line)
        if m:
            part(data, part_name)["figures"].append(m.group(1))
            save(path, data)
    if current:
        record(data, part_name, current, "failed", "started and never finished "
               "(crashed or cut off)")
    code = None
    if exit_code_file and os.path.exists(exit_code_file):
        with open(exit_code_file) as f:
            text = f.read().strip()
        code = int(text) if text else None
    p = part(data, part_name)
    p["exit_code"] = code
    if code in (124, 137):
        data["problems"].append(f"{part_name}: stopped at the stage's time limit "
                                f"(timeout, exit code {code})")
    elif code not in (None, 0) and p["failed"] == 0:
        data["problems"].append(f"{part_name}: exit code {code} with no failed test "
                                "reported (crash, timeout or a test binary error)")
    if p["passed"] + p["failed"] + p["skipped"] == 0:
        data["problems"].append(f"{part_name}: no test ran")
    save(path, data)


def totals(data):
    n = {"passed": 0, "failed": 0, "skipped": 0}
    for p in data["parts"].values():
        for k in n:
            n[k] += p[k]
    n["failed"] += len(data["problems"])
    return n


def main(argv):
    cmd, path = argv[1], argv[2]
    if cmd == "begin":
        bundle = {}
        if len(argv) > 6 and os.path.exists(argv[6]):
            b = load(argv[6])
            bundle = {k: b.get(k) for k in ("commit", "uncommitted_changes", "torch",
                                            "nvcc", "cuda_architectures")}
        save(path, {"stage": argv[3], "mode": argv[4],
                    "device": argv[5] if len(argv) > 5 else "", "bundle": bundle,
                    "status": "running",
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "parts": {}, "problems": []})
    elif cmd == "gtest":
        parse_gtest(path, argv[3], sys.stdin, argv[4] if len(argv) > 4 else None)
    elif cmd == "set":
        def f(d):
            part(d, argv[3])[argv[4]] = argv[5]
        update(path, f)
    elif cmd in ("pass", "fail", "skip"):
        outcome = {"pass": "passed", "fail": "failed", "skip": "skipped"}[cmd]
        update(path, lambda d: record(d, argv[3], argv[4], outcome,
                                      argv[5] if len(argv) > 5 else ""))
    elif cmd == "problem":
        update(path, lambda d: d["problems"].append(argv[3]))
    elif cmd == "close":
        data = load(path)
        n = totals(data)
        data.update(n)
        data["status"] = "failed" if n["failed"] or not (n["passed"] + n["skipped"]) \
            else "passed"
        data["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        save(path, data)
        for p, v in data["parts"].items():
            for f in v["failures"][:20]:
                print(f"  FAILED {p}: {f['test']}: {f['why']}")
            if len(v["failures"]) > 20:
                print(f"  ... and {len(v['failures']) - 20} more failures ({path})")
            for s in v["skips"][:5]:
                print(f"  skipped {p}: {s['test']}: {s['reason']}")
            if len(v["skips"]) > 5:
                print(f"  ... and {len(v['skips']) - 5} more expected skips")
        for pr in data["problems"]:
            print(f"  PROBLEM: {pr}")
        print(f"gpu-check {data['stage']}: {n['passed']} passed, {n['failed']} failed, "
              f"{n['skipped']} skipped")
        return 1 if data["status"] == "failed" else 0
    else:
        sys.exit(f"gpu_check_results.py: unknown command {cmd!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
