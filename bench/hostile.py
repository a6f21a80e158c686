#!/usr/bin/env python3
"""A hostile tenant beside a working one: each attack of issue 54 against plantstore, with a
victim tenant creating plants through wrk (16 connections) all along, and, with --baseline,
the same against another build, interleaved attack by attack on the same machine.

For each attack and build it reports what the attacker got (the statuses of its refusals), how
much the server's resident memory grew (VmHWM over the RSS before the attack), and the victim's
creates per second, its errors (non-2xx answers and socket errors) and its p99 latency.

Attacks:
  chunk-line    64 connections each send a chunked create whose chunk-size line never ends
                ("1;" then up to 256 MiB of "a")
  chunk-zeros   the same with a chunk size padded with zeros
  trailer       the same with a trailer line that never ends
  idle-flood    10,000 connections that send nothing, from one address (127.0.0.3)
  streams       300 event streams of one tenant, from 300 addresses (127.0.1.x, so that no
                per-client limit helps), on a server with --max-connections 300

Usage: bench/hostile.py --binary build/release/plantstore [--baseline OLD] [--duration 8]
It starts and kills only its own processes, talks only to 127.0.0.x, and every wait is bounded.
"""

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the benchmark's helpers: servers, wrk, /proc)

# The attacker's addresses: loopback addresses of its own per run (127.0.<run>.1; for streams
# 127.1-2.<run>.x), so that a run never meets the TIME_WAIT ports of the one before it; the
# victim (wrk) is 127.0.0.1.
RUNS = iter(range(10, 250))


def mint(binary, data_dir, name, tenant):
    return subprocess.run([binary, "token", "create", "--name", name, "--tenant", tenant,
                           "--data-dir", data_dir], check=True, capture_output=True,
                          text=True).stdout.strip()


def status_of(answer):
    if not answer:
        return "none"
    line = answer.split(b"\r\n", 1)[0].split()
    return line[1].decode() if len(line) > 1 else "garbled"


def flood(port, source, head, filler, total, answers, deadline):
    """One attacking connection: `head`, then `filler` until `total` bytes or the server stops
    reading; records the status of its answer."""
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=15,
                                      source_address=(source, 0)) as s:
            s.sendall(head)
            block = filler * 65536
            sent = 0
            try:
                while sent < total and time.monotonic() < deadline:
                    s.sendall(block)
                    sent += len(block)
            except OSError:
                pass
            s.settimeout(15)
            try:
                answer = s.recv(200)
            except OSError:
                pass
    except OSError:
        pass
    answers.append(status_of(answer))


def framing_attack(kind, token):
    head = (f"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    if kind == "chunk-line":
        return head + b"1;", b"a"
    if kind == "chunk-zeros":
        return head, b"0"
    return head + b'5\r\n{"id"\r\n0\r\nX-Trailer: ', b"a"


class Attack:
    """Runs an attack in the background while the victim works; stop() ends it."""

    def __init__(self, kind, port, token, duration):
        self.kind, self.port, self.token = kind, port, token
        self.answers, self.sockets, self.threads = [], [], []
        self.deadline = time.monotonic() + duration + 5
        run = next(RUNS)
        network = f"127.0.{run}."
        if kind in ("chunk-line", "chunk-zeros", "trailer"):
            head, filler = framing_attack(kind, token)
            for _ in range(64):
                t = threading.Thread(target=flood, args=(port, network + "1", head, filler,
                                                         256 << 20, self.answers, self.deadline))
                t.start()
                self.threads.append(t)
        elif kind == "idle-flood":
            for _ in range(10000):
                try:
                    s = socket.socket()
                    s.bind((network + "1", 0))
                    s.setblocking(False)
                    s.connect_ex(("127.0.0.1", port))
                    self.sockets.append(s)
                except OSError:
                    break
            time.sleep(2)
            self.held_early = self.held()
        elif kind == "streams":
            request = (f"GET /events?after=now HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                       f"{token}\r\nAccept: text/event-stream\r\n\r\n").encode()
            for i in range(300):
                try:
                    source = f"127.{1 + i // 250}.{run}.{1 + i % 250}"
                    s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                                 source_address=(source, 0))
                    s.sendall(request)
                    s.settimeout(5)
                    self.answers.append(status_of(s.recv(200)))
                    self.sockets.append(s)
                except OSError:
                    self.answers.append("none")

    def held(self):
        """How many of the attack's connections the server still holds open (what they were
        sent is read and dropped)."""
        held = 0
        for s in self.sockets:
            s.setblocking(False)
            try:
                while s.recv(65536):
                    pass
            except BlockingIOError:
                held += 1
            except OSError:
                pass
        return held

    def stop(self):
        for t in self.threads:
            t.join(timeout=max(1, self.deadline - time.monotonic() + 20))
        if self.kind == "idle-flood":
            self.answers = [f"{len(self.sockets)} opened, {self.held_early} held after 2 s, "
                            f"{self.held()} at the end"]
        elif self.kind == "streams":
            self.answers.append(f"{self.held()} held at the end")
        for s in self.sockets:
            s.close()

    def summary(self):
        counts = {}
        for a in self.answers:
            counts[a] = counts.get(a, 0) + 1
        return ", ".join(f"{k} x{v}" if v > 1 else k for k, v in sorted(counts.items()))


def run_one(binary, label, kind, duration, workdir):
    data_dir = tempfile.mkdtemp(dir=workdir)
    victim = mint(binary, data_dir, "victim", "victim")
    attacker = mint(binary, data_dir, "attacker", "attacker")
    extra = ["--max-connections", "300"] if kind == "streams" else []
    server = bench.start_plantstore(binary, data_dir, extra, name=label)
    try:
        pids = server.pids()
        before = bench.memory_kib(pids, "VmRSS")
        attack = Attack(kind, server.port, attacker, duration)
        time.sleep(2)  # the attack's steady state: what the victim meets after the first moment
        row = bench.run_wrk(server, 16, duration, victim, 1)
        attack.stop()
        peak = bench.memory_kib(pids, "VmHWM")
        return {"build": label, "attack": kind, "attacker": attack.summary(),
                "growth_mib": (peak - before) / 1024, "victim_rps": row["requests_per_s"],
                "victim_errors": row["non200"] + row["socket_errors"],
                "victim_p99_ms": row["p99_ms"]}
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--baseline", help="another build, measured attack by attack beside it")
    parser.add_argument("--duration", type=int, default=8, help="seconds of victim load")
    parser.add_argument("--attacks", default="chunk-line,chunk-zeros,trailer,idle-flood,streams")
    args = parser.parse_args()
    # 10,000 attacking connections here, and as many for the server (which inherits the limit).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    builds = [("this build", os.path.abspath(args.binary))]
    if args.baseline:
        builds.insert(0, ("baseline", os.path.abspath(args.baseline)))
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for kind in args.attacks.split(","):
            for label, binary in builds:
                row = run_one(binary, label, kind, args.duration, workdir)
                rows.append(row)
                print(f"{row['attack']} {row['build']}: {row}", file=sys.stderr)
    print("| attack | build | attacker got | RSS growth (MiB) | victim creates/s | "
          "victim errors | victim p99 (ms) |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['attack']} | {r['build']} | {r['attacker']} | {r['growth_mib']:.0f} | "
              f"{r['victim_rps']:.0f} | {r['victim_errors']} | {r['victim_p99_ms']:.1f} |")


if __name__ == "__main__":
    main()
