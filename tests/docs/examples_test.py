#!/usr/bin/python3
"""Every shell example of the README, CONTRIBUTING.md and docs/ runs, against the real binary.

Usage: examples_test.py PLANTSTORE_BINARY SOURCE_DIR WORK_DIR

Written by hand: Debian 12 packages no runner of Markdown examples (mdsh, byexample, cram's
Markdown mode are not in it), and the rules below are this project's.

What runs, and how:
- Each ```sh block runs, unless the line before it is `<!-- example: not run (REASON) -->`.
  Those are listed with their reasons at the end, so that their number stays visible.
- A page's runnable blocks run in order, in one bash (`set -euo pipefail`), in a fresh
  directory, against a fresh `plantstore serve` of the binary under test (SQLite, webhooks to
  127.0.0.1 allowed) with a token of every scope in $TOKEN; `plantstore` is on PATH (and the
  tree's build/tools: promtool), and the directory has `scripts/`, `deploy/` and
  `build/release/plantstore` from the tree.
- The block runs as written, except that `127.0.0.1:8080` becomes the test server's address,
  every other `127.0.0.1:PORT` a free port of its own (the same one throughout a page), the
  placeholder `ps_...` the token, and `/tmp/plantstore-` a directory of the test's.
- Lines `#> TEXT` after commands are their expected output: each must match a line that
  those commands printed (stdout), in order; `...` in TEXT matches anything. Lines in between
  may print more.
- A block after `<!-- example: runs until stopped, N s -->` (a loop that follows a feed) is
  stopped after N seconds; its output so far is checked.
- Every process a page starts is killed when the page ends (its own process group).
"""

import fcntl
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

binary, source_dir, work_dir = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
PAGE_TIMEOUT_S = 180

NOT_RUN = re.compile(r"^<!-- example: not run \((.+)\) -->$")
STOPPED = re.compile(r"^<!-- example: runs until stopped, (\d+) s -->$")


def pages():
    paths = ["README.md", "CONTRIBUTING.md"]
    paths += sorted(os.path.relpath(p, source_dir)
                    for p in glob.glob(os.path.join(source_dir, "docs", "**", "*.md"),
                                       recursive=True))
    return paths


def blocks(text):
    """(line number, info string, body lines, the line before the block) of each fence; a
    fence may be indented (inside a list item), and its body loses that indent."""
    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        m = re.match(r"^( *)```(\S*)\s*$", lines[i])
        if m:
            indent, start, j = m.group(1), i, i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            before = next((lines[k].strip() for k in range(start - 1, -1, -1)
                           if lines[k].strip()), "")
            body = [line[len(indent):] if line.startswith(indent) else line
                    for line in lines[start + 1:j]]
            found.append((start + 1, m.group(2), body, before))
            i = j + 1
        else:
            i += 1
    return found


HELD_PORT_LOCKS = []  # open until this process exits


def free_port():
    """A port for a server a page starts itself: below the kernel's ephemeral range (so no
    outgoing connection takes it), free now, and reserved among the tests running beside this one
    by a lock on /tmp/plantstore-ports/PORT (the C++ tests' free_port() takes the same locks)."""
    os.makedirs("/tmp/plantstore-ports", exist_ok=True)
    for _ in range(200):
        port = random.randint(20000, 32000)
        lock = open("/tmp/plantstore-ports/%d" % port, "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                lock.close()
                continue
        HELD_PORT_LOCKS.append(lock)
        return port
    raise RuntimeError("no free port between 20000 and 32000")


def matches(expected, line):
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, line) is not None


def start_server(root):
    data = os.path.join(root, "data")
    token = subprocess.run([binary, "token", "create", "--name", "docs", "--data-dir", data],
                           check=True, capture_output=True, text=True).stdout.strip()
    log = open(os.path.join(root, "server.log"), "w")
    server = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--webhook-allow-http",
         "on", "--webhook-allow-private-addresses", "on"],
        stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    line = server.stdout.readline()
    m = re.search(r"listening on http://(\S+)", line)
    if not m:
        server.kill()
        raise RuntimeError("the server did not start: " + line)
    return server, m.group(1), token


def run_page(path, runnable, failures):
    root = tempfile.mkdtemp(prefix="ex-", dir=work_dir)
    for name in ("scripts", "deploy"):
        os.symlink(os.path.join(source_dir, name), os.path.join(root, name))
    os.makedirs(os.path.join(root, "build", "release"))
    os.makedirs(os.path.join(root, "bin"))
    for link in (os.path.join(root, "build", "release", "plantstore"),
                 os.path.join(root, "bin", "plantstore")):
        os.symlink(os.path.abspath(binary), link)
    server, address, token = start_server(root)
    ports = {}

    def port(m):
        if m.group(1) == "8080":
            return address
        return "127.0.0.1:%d" % ports.setdefault(m.group(1), free_port())

    def substitute(text):
        text = re.sub(r"127\.0\.0\.1:(\d{4,5})\b", port, text).replace("ps_...", token)
        return text.replace("/tmp/plantstore-", os.path.join(root, "plantstore-"))

    # One script: each segment of commands, then a marker, so that each segment's output is
    # known; expected lines per segment.
    script = ["set -euo pipefail", "export TOKEN=%s" % token, "export PATH=%s:%s:$PATH" %
              (os.path.join(root, "bin"), os.path.join(source_dir, "build", "tools"))]
    expectations = []  # (line of the page, [expected lines])
    for line_no, body, stop_after in runnable:
        segment, expected, seg_line = [], [], line_no
        parts = []
        for k, line in enumerate(body):
            if line.startswith("#> ") or line == "#>":
                expected.append(line[3:])
            else:
                if expected:
                    parts.append((seg_line, segment, expected))
                    segment, expected, seg_line = [], [], line_no + k + 1
                segment.append(line)
        parts.append((seg_line, segment, expected))
        for seg_line, segment, expected in parts:
            text = substitute("\n".join(segment))
            if stop_after:
                block_file = os.path.join(root, "block-%d.sh" % seg_line)
                with open(block_file, "w") as f:
                    f.write(text + "\n")
                text = ("timeout -s TERM %d bash -uo pipefail %s || [ $? -eq 124 ]" %
                        (stop_after, block_file))
            script.append(text)
            script.append("printf '\\n@@segment %d@@\\n'" % len(expectations))
            expectations.append((seg_line, [substitute(e) for e in expected]))
    # Output to files, not pipes: a server the page leaves in the background keeps them open.
    out_path, err_path = os.path.join(root, "stdout"), os.path.join(root, "stderr")
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        page = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=root, text=True,
                                stdout=out_file, stderr=err_file, start_new_session=True)
    try:
        code = page.wait(timeout=PAGE_TIMEOUT_S)
        timed_out = ""
    except subprocess.TimeoutExpired:
        code, timed_out = -1, "\ntimed out after %d s" % PAGE_TIMEOUT_S
    finally:
        cluster = os.path.join(root, "plantstore-pg")
        if os.path.isdir(cluster):
            subprocess.run([os.path.join(source_dir, "scripts", "pg-cluster.sh"), "remove",
                            cluster, "immediate"], check=False, capture_output=True)
        for group in (page.pid, server.pid):  # what the page left running in the background
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        server.wait()
    with open(out_path) as f:
        out = f.read()
    with open(err_path) as f:
        err = f.read() + timed_out
    outputs = re.split(r"\n?@@segment \d+@@\n", out)
    for n, (seg_line, expected) in enumerate(expectations):
        if n >= len(outputs) - 1:
            failures.append("%s:%d: did not run to here (exit %s)\n--- stderr ---\n%s" %
                            (path, seg_line, code, err[-3000:]))
            return
        got = outputs[n].split("\n")
        k = 0
        for e in expected:
            while k < len(got) and not matches(e, got[k]):
                k += 1
            if k == len(got):
                failures.append("%s:%d: expected the line\n  %s\nin the output\n  %s" %
                                (path, seg_line, e, "\n  ".join(outputs[n].split("\n"))))
                return
            k += 1
    if code != 0:
        failures.append("%s: exit %d\n--- stderr ---\n%s" % (path, code, err[-3000:]))
        return
    with open(os.path.join(root, "server.log")) as f:
        log = f.read()
    for report in ("ERROR: AddressSanitizer", "WARNING: ThreadSanitizer", "runtime error:",
                   "ERROR: LeakSanitizer"):
        if report in log:
            failures.append("%s: the server reported %s (see %s)" % (path, report, root))
            return
    shutil.rmtree(root, ignore_errors=True)


def main():
    os.makedirs(work_dir, exist_ok=True)
    failures, not_run, ran = [], [], 0
    for path in pages():
        with open(os.path.join(source_dir, path)) as f:
            text = f.read()
        runnable = []
        for line_no, info, body, before in blocks(text):
            if info != "sh":
                continue
            m = NOT_RUN.match(before)
            if m:
                not_run.append("%s:%d: %s" % (path, line_no, m.group(1)))
                continue
            s = STOPPED.match(before)
            runnable.append((line_no + 1, body, int(s.group(1)) if s else 0))
        if runnable:
            started = time.monotonic()
            run_page(path, runnable, failures)
            ran += len(runnable)
            print("%-40s %2d blocks  %5.1f s" % (path, len(runnable), time.monotonic() - started))
    print("\n%d blocks run; %d marked as not run:" % (ran, len(not_run)))
    for n in not_run:
        print("  " + n)
    if failures:
        print("\nFAILED:\n" + "\n\n".join(failures))
        sys.exit(1)


main()
