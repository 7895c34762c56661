#!/usr/bin/env python3
"""Replays every case of history-replay.json with the real tools.

For each case: copy the project to a scratch directory, apply `break` and check
that the tool fails with `code` and `error_text` (and the failing `test`); apply
`fix` on top and check that the project builds without warnings and its tests
pass; start again from the pristine project, apply `again` and check that the
tool fails the same way (`code`, `again_error_text`, `again_test`).

    python3 test-projects/history-replay-check.py [-v] [CASE_ID_PREFIX ...]

Standard library only. Scratch copies live under $REPLAY_WORK_DIR
(default /tmp/replay-work); cargo builds into $REPLAY_TARGET_DIR/<project>
(default /tmp/replay-target/<project>), whatever CARGO_TARGET_DIR says. Prints one line per case and a
summary; exits 1 if any case fails.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "history-replay.json")
WORK = os.environ.get("REPLAY_WORK_DIR", "/tmp/replay-work")
TARGET = os.environ.get("REPLAY_TARGET_DIR", "/tmp/replay-target")
TIMEOUT = 300


class CaseError(Exception):
    pass


def fresh_copy(project):
    """A pristine copy of the project at a fixed path (so cargo's target dir is reused).

    Files get new mtimes (shutil.copy, not copy2), so cargo and mix rebuild them."""
    src = os.path.join(HERE, project)
    dst = os.path.join(WORK, project)
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=shutil.copy,
                    ignore=shutil.ignore_patterns("_build", "deps", "target"))
    return dst


def apply_edits(root, edits, step):
    for n, edit in enumerate(edits or []):
        path = os.path.join(root, edit["file"])
        where = f"{step} edit {n + 1} ({edit['file']})"
        if edit.get("delete"):
            if not os.path.exists(path):
                raise CaseError(f"{where}: file to delete does not exist")
            os.remove(path)
            continue
        if edit.get("find") is None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(edit["replace"])
            continue
        if not os.path.exists(path):
            raise CaseError(f"{where}: file does not exist")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        count = text.count(edit["find"])
        if count != 1:
            raise CaseError(f"{where}: `find` occurs {count} times, not once")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(edit["find"], edit["replace"]))


def environment(case):
    env = dict(os.environ)
    for name in ("RUST_BACKTRACE", "RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "MIX_BUILD_PATH",
                 "MIX_ENV", "MIX_EXS", "ELIXIR_ERL_OPTIONS"):
        env.pop(name, None)
    env["CARGO_TARGET_DIR"] = os.path.join(TARGET, case["project"])
    env["CARGO_TERM_COLOR"] = "never"
    env["NO_COLOR"] = "1"
    return env


def command(case, tool, mode="case"):
    """The command line and extra environment for one tool run.

    mode "case": as the case says; "strict": mix compile with --warnings-as-errors;
    "plain": mix compile without it."""
    if case["toolchain"] == "cargo":
        if tool == "compile":
            return ["cargo", "build", "--message-format=short"], {}
        return ["cargo", "test", "--no-fail-fast"], {}
    if tool == "compile":
        args = ["mix", "compile"]
        if mode == "strict" or (mode == "case" and case.get("warnings_as_errors")):
            args.append("--warnings-as-errors")
        return args, {"MIX_ENV": "dev"}
    return ["mix", "test", "--seed", "0"], {"MIX_ENV": "test"}


def run(case, root, tool, mode="case"):
    args, extra = command(case, tool, mode)
    env = environment(case)
    env.update(extra)
    try:
        proc = subprocess.run(args, cwd=root, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CaseError(f"`{' '.join(args)}` timed out after {TIMEOUT}s")
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def failed_tests(case, output):
    """Names of the tests the output reports as failed."""
    if case["toolchain"] == "cargo":
        return set(re.findall(r"^---- (.+?) stdout ----$", output, re.M))
    return set(re.findall(r"^\s+\d+\) (test .+?)$", output, re.M))


def test_report(case, output, name):
    """The part of the output that reports the failure of test `name`."""
    lines = output.splitlines()
    if case["toolchain"] == "cargo":
        start = f"---- {name} stdout ----"
        end = re.compile(r"^(---- .+ stdout ----|failures:)$")
    else:
        start_re = re.compile(r"^\s+\d+\) " + re.escape(name) + "$")
        end = re.compile(r"^(\s+\d+\) test |Finished in )")
    for i, line in enumerate(lines):
        if (line == start) if case["toolchain"] == "cargo" else start_re.match(line):
            section = [line]
            for following in lines[i + 1:]:
                if end.match(following):
                    break
                section.append(following)
            return "\n".join(section)
    return ""


def tests_ran(case, output):
    if case["toolchain"] == "cargo":
        return "test result: FAILED" in output
    return re.search(r"^(\d+ doctests?, )?\d+ tests?, \d+ failures?", output, re.M) is not None


def excerpt(output, lines=12):
    interesting = [l for l in output.splitlines()
                   if re.search(r"error|warning|panicked|FAILED|\*\*|Assertion|failure", l)]
    return "\n      ".join((interesting or output.splitlines())[:lines])


def expect_failure(case, root, step, code, text, test):
    tool = case["tool"]
    rc, out = run(case, root, tool)
    where = f"{step}: `{' '.join(command(case, tool)[0])}`"
    if rc == 0:
        raise CaseError(f"{where} passed, expected a failure")
    if tool == "test":
        if not tests_ran(case, out):
            raise CaseError(f"{where}: no test ran (build failed?)\n      {excerpt(out)}")
        failed = failed_tests(case, out)
        if not failed:
            raise CaseError(f"{where}: no failing test found in the output\n      {excerpt(out)}")
        if test and test not in failed:
            raise CaseError(f"{where}: {test!r} did not fail; failed: {sorted(failed)}")
        if test and text and text not in test_report(case, out, test):
            raise CaseError(f"{where}: the report of {test!r} lacks {text!r}\n      "
                            + test_report(case, out, test).replace("\n", "\n      "))
    if code and code not in out:
        raise CaseError(f"{where}: output lacks {code!r}\n      {excerpt(out)}")
    if text and text not in out:
        raise CaseError(f"{where}: output lacks {text!r}\n      {excerpt(out)}")
    if case["toolchain"] == "mix" and tool == "compile" and case.get("warnings_as_errors"):
        rc, out = run(case, root, tool, mode="plain")
        if rc != 0:
            raise CaseError(f"{step}: marked warnings_as_errors but plain `mix compile` fails too\n"
                            f"      {excerpt(out)}")
    return out


def expect_healthy(case, root, step):
    """The project builds without warnings and all its tests pass."""
    for tool in ("compile", "test"):
        rc, out = run(case, root, tool, mode="strict")
        args = " ".join(command(case, tool, mode="strict")[0])
        if rc != 0:
            raise CaseError(f"{step}: `{args}` failed\n      {excerpt(out)}")
        if re.search(r"^(\S+: )?warning(\[\w+\])?: ", out, re.M):
            raise CaseError(f"{step}: `{args}` warns\n      {excerpt(out)}")


def same_tree(a, b):
    """Whether two project copies hold the same files with the same contents."""
    def files(root):
        found = {}
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("_build", "deps", "target")]
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, root)] = f.read()
        return found
    return files(a) == files(b)


def validate(case):
    for key in ("id", "toolchain", "project", "tool", "kind", "break", "fix", "again",
                "error_text", "symptom"):
        if not case.get(key):
            raise CaseError(f"`{key}` is missing or empty")
    if case["toolchain"] not in ("cargo", "mix") or case["tool"] not in ("compile", "test"):
        raise CaseError(f"unknown toolchain/tool {case['toolchain']}/{case['tool']}")
    if not os.path.isdir(os.path.join(HERE, case["project"])):
        raise CaseError(f"no project {case['project']!r} beside this script")
    if case["tool"] == "test" and not case.get("test"):
        raise CaseError("tool is test but `test` is not set")


def check_case(case):
    validate(case)
    root = fresh_copy(case["project"])
    apply_edits(root, case["break"], "break")
    expect_failure(case, root, "break", case.get("code"), case.get("error_text"), case.get("test"))
    apply_edits(root, case["fix"], "fix")
    if same_tree(root, os.path.join(HERE, case["project"])):
        raise CaseError("fix: only reverts break (the fixed project is the pristine one)")
    expect_healthy(case, root, "fix")
    root = fresh_copy(case["project"])
    apply_edits(root, case["again"], "again")
    expect_failure(case, root, "again", case.get("code"), case.get("again_error_text"),
                   case.get("again_test"))


def main(argv):
    verbose = "-v" in argv
    prefixes = [a for a in argv if not a.startswith("-")]
    with open(CASES, encoding="utf-8") as f:
        cases = json.load(f)
    if prefixes:
        cases = [c for c in cases if any(c["id"].startswith(p) for p in prefixes)]
    os.makedirs(WORK, exist_ok=True)
    started = time.monotonic()
    failures = 0
    pristine = {}  # project -> None when healthy, else why not
    for case in cases:
        label = f"{case.get('id')} ({case.get('toolchain')} {case.get('tool')} {case.get('code') or '-'})"
        t0 = time.monotonic()
        try:
            project = case.get("project")
            if project not in pristine and os.path.isdir(os.path.join(HERE, str(project))):
                try:
                    expect_healthy(case, fresh_copy(project), f"pristine {project}")
                    pristine[project] = None
                except CaseError as error:
                    pristine[project] = str(error)
            if pristine.get(project):
                raise CaseError(pristine[project])
            check_case(case)
        except CaseError as error:
            failures += 1
            print(f"FAIL {label}: {error}", flush=True)
            continue
        except Exception as error:  # a crash in this script still counts as a failure
            failures += 1
            print(f"FAIL {label}: {type(error).__name__}: {error}", flush=True)
            continue
        took = f" {time.monotonic() - t0:.1f}s" if verbose else ""
        print(f"ok   {label}{took}", flush=True)
    total = time.monotonic() - started
    print(f"{len(cases) - failures} ok, {failures} failed, {len(cases)} cases in {total:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
