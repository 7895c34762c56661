#!/usr/bin/env python3
"""Writes seed inputs into the fuzzers' corpora ($FUZZ_WORK/corpus/<target>/seed-*, outside
the repository) from what the tests recorded of the real tools and from drydock's own files,
in each target's input shape (src/fuzz_targets.rs). Run once per new kind of recording; the
campaign grows the corpus from there (scripts/fuzz.sh), and the few worth keeping for good
go in fuzz/seeds/<target>."""

import glob
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(
    os.environ.get("FUZZ_WORK", os.path.expanduser("~/.cache/drydock-fuzz")), "corpus"
)
PROJECT = "/fuzz/odd päth/project".encode()
MAX = 4096  # the campaign's -max_len: longer seeds are cut there anyway


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    with open(os.path.join(folder, f"seed-{name}-{digest}"), "wb") as f:
        f.write(data[:MAX])


def recorded_runs(folder):
    """stdout NUL stderr of each recorded run, its project root made the fuzzers' one."""
    for stdout in sorted(glob.glob(os.path.join(ROOT, folder, "*.stdout"))):
        base = stdout[: -len(".stdout")]
        root = read(base + ".root").strip()
        data = read(stdout) + b"\0" + read(base + ".stderr")
        yield os.path.basename(base), data.replace(root, PROJECT)


def tail(data, size):
    """The end of a long output: where the summaries and failures are."""
    return data[-size:]


def main():
    for name, data in recorded_runs("tests/fixtures/cargo"):
        write("cargo_output", name, data)
        stdout, _, stderr = data.partition(b"\0")
        write("cargo_output", name + "-tail", tail(stdout, 2000) + b"\0" + tail(stderr, 2000))
    for folder in ["tests/fixtures/mix", "tests/fixtures/dialyzer"]:
        for name, data in recorded_runs(folder):
            write("mix_output", name, data)
            stdout, _, stderr = data.partition(b"\0")
            write("mix_output", name + "-tail", tail(stdout, 2000) + b"\0" + tail(stderr, 2000))
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/mix/newer/*.txt"))):
        write("mix_output", os.path.basename(path), read(path) + b"\0" + read(path))

    for path in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/agents/recorded-raw/*/*"))):
        raw = read(path)
        name = os.path.basename(os.path.dirname(path))
        for at in range(0, min(len(raw), 64 * MAX), 4 * MAX):
            write("terminal_output", f"{name}-{at}", bytes([40, 120, 63]) + raw[at : at + MAX - 3])
    write("terminal_output", "osc", bytes([5, 20, 3]) + b"\x1b]133;A\x07$ \x1b]133;B\x07ls\r\n"
          b"\x1b]133;C\x07out\r\n\x1b]133;D;1\x07\x1b]7501;state=waiting:kind=permission\x07"
          b"\x1b]0;title\x07\x1b[6n\x1b[c\x1b[?1049h\x1b[2J\x1b[5;5Hx\x1b[?1049l")

    write("tmux_control", "notifications",
          b"%begin 1700000000 12 1\n%end 1700000000 12 1\n%output %1 a\\033[31mred\\015\\012\n"
          b"%window-add @3\n%window-close @3\n%unlinked-window-close @4\n%layout-change @1 b25f,80x24,0,0,1\n"
          b"%pane-mode-changed %1\n%session-changed $1 drydock-task-ab12\n%sessions-changed\n"
          b"%subscription-changed cmd $1 @1 1 %1 : ls\n%exit\n%exit detached\n")

    screens = glob.glob(os.path.join(ROOT, "tests/fixtures/agents/recorded/*/*.txt"))
    screens += glob.glob(os.path.join(ROOT, "tests/fixtures/agents/transcribed/*/*.txt"))
    heads = [b"\xe2\x9c\xb3 Claude Code\nstate=working:app=claude\nPreToolUse Bash\n",
             b"codex\nstate=waiting:kind=permission:message=Run ls?\nStop\n"]
    for n, path in enumerate(sorted(screens)):
        name = os.path.basename(os.path.dirname(path)) + "-" + os.path.basename(path)
        write("agent_screen", name, heads[n % 2] + read(path))

    for path in sorted(glob.glob(os.path.join(ROOT, "src/agents/profiles/*.toml"))):
        write("agent_profile", os.path.basename(path), read(path))

    write("config_file", "example", read(os.path.join(ROOT, "drydock.example.toml")))
    write("config_file", "tasks",
          b'[tasks]\nstore = "postgres://u:p@127.0.0.1:5432/q"\nhost = "a"\nlease_s = 5\n'
          b'repositories = ["https://github.com/org/*"]\n[history]\noff = ["~/secret"]\n')

    for data in [b"https://github.com/org/* git@github.com:org/*\nhttps://github.com/org/repo.git",
                 b"file:///srv/git/*\nfile:///srv/git/%2e%2e/etc",
                 b"ssh://git@host/**\nssh://git@host:22/a/b.git",
                 b"**\ndrydock-task-0f3a-2"]:
        write("remote_url", "url", data)

    html = glob.glob(os.path.expanduser(
        "~/.rustup/toolchains/*/share/doc/rust/html/std/option/enum.Option.html"))
    html += glob.glob(os.path.expanduser(
        "~/.rustup/toolchains/*/share/doc/rust/html/book/ch0[1-3]-0[12]-*.html"))
    for path in sorted(html)[:6]:
        write("docs_html", os.path.basename(path), b"how do I unwrap an option\n" + read(path))
    for path in sorted(glob.glob(os.path.join(ROOT, "*.md")) + glob.glob(os.path.join(ROOT, "docs/*.md"))):
        write("docs_markdown", os.path.basename(path), b"how do tasks land\n" + read(path))
    write("docs_markdown", "front-matter",
          b"useEffect\n---\ntitle: useEffect\n---\n# Hooks\n\nSetext\n======\n\n```js\nx\n```\n")
    for path in ["src/docs/testdata/process.rs.txt", "src/bounded.rs", "src/supervise.rs"]:
        write("docs_rust_source", os.path.basename(path), b"Bounded::new\n" + read(os.path.join(ROOT, path)))
    entry = {"app": "mix_errors", "vsn": "0.1.0", "module": "MixErrors", "kind": "function",
             "name": "hello", "arity": 1, "signature": ["hello(name)"], "line": 3,
             "doc": "Says hello.\n\n## Examples\n\n    iex> MixErrors.hello(:a)\n", "source": "lib/mix_errors.ex",
             "deprecated": None}
    write("docs_elixir", "fetch-docs", b"hello\n" + json.dumps(entry).encode() + b"\n")
    for path in sorted(glob.glob(os.path.join(ROOT, "test-projects/*/lib/*.ex")))[:8]:
        write("docs_elixir", os.path.basename(path), b"hello\n" + read(path))

    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {
            "name": "task_add", "arguments": {"tasks": [{"title": "t", "description": "d", "timeout_s": 60,
                                                         "priority": -3, "project_path": "/p"}]}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "terminal_wait", "arguments": {"session": "s", "timeout_ms": 1000, "until": "x"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "test", "arguments": {"project_path": "/p", "filter": "a b", "timeout_ms": 5}}},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "drydock://history/%2Fp%20q"}},
        {"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {
            "name": "fix_failing_test", "arguments": {"project_path": "/p", "test_name": "t"}}},
        {"jsonrpc": "2.0", "id": 6, "result": {}},
    ]
    for n, call in enumerate(calls):
        origin = [b"http://localhost:5173", b"", b"https://evil.example"][n % 3]
        write("json_rpc", str(n), origin + b"\n" + json.dumps(call).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
