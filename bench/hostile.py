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
  hanging-receivers
                the attacker's 20 webhook subscriptions point at a receiver that accepts
                connections and never answers, and it creates 40 plants (800 deliveries that
                each hang until --webhook-timeout-ms); the victim subscribes once to a receiver
                that answers at once, and creates a plant every 100 ms one at a time: its row
                shows how late each of its deliveries arrived (from the 200 of its create)
  alone         no attack: the victim's own figures, what the rows below compare with
  create-flood  the attacker's wrk with 256 connections of creates (issue 65: a tenant's share)
  alone-paced, create-flood-paced
                the same two, with a paced victim instead: one connection creating a plant
                every 10 ms (100 a second), and its p99 latency
  list-flood    the attacker's wrk with 256 connections of GET /plants pages of 100 large plants
  large-pages   the attacker creates 200 plants whose name and tag are 1,024 control characters
                (a page of them is 2.4 MB of JSON) and 40 connections each read one page and stay
                open while the victim works: the row shows what the server still holds after
  stale-streams the attacker creates 1,000 such plants and opens 20 event streams from seq 0
                that never read: the row shows what the server holds while they wait for the
                write time-out
  feed-burst    the attacker creates 12,000 such plants (an event of about 12 KB each) and
                reads its whole change feed as one stream from seq 0, then closes it: what the
                server holds after, 6 s later
  rename-flood  the attacker renames its 16 plants over and over with the longest names (a name
                and a tag of 1,024 four-byte characters each: an event of about 8 KiB each) from
                8 connections while the victim works (issue 65: the disk): the row shows how much
                the data directory grew and what the attacker's event log holds (GET /quota)
  delivery-flood
                the same renames, the attacker having 20 subscriptions to plant.updated at a
                receiver that answers 500 to every delivery (issue 65: each delivery keeps its own
                copy of the plant until it ends, and for --webhook-retention-hours after): the
                row adds the deliveries pending at the end (GET /webhooks)
  endless-answers
                the attacker's 2 webhook subscriptions point at a receiver whose every answer
                is a chunked head and then a chunk-size line of zeros that never ends (up to
                1 GiB a connection), and it creates 20 plants: how much of that the server read
                shows as its memory and as what the receiver managed to send (issue 63)

Usage: bench/hostile.py --binary build/release/plantstore [--baseline OLD] [--duration 8]
It starts and kills only its own processes, talks only to 127.0.0.x, and every wait is bounded.
"""

import argparse
import http.client
import http.server
import json
import os
import re
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
FLAGS = {}  # the server's extra flags, by build label


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
        self.answers, self.sockets, self.threads, self.wrk = [], [], [], None
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
        elif kind in ("create-flood", "create-flood-paced", "list-flood"):
            mode = "list" if kind == "list-flood" else "post"
            if mode == "list":  # 100 plants of long names to page through, 26 KB a page
                for i in range(1, 101):
                    call(port, token, "POST", "/plants", {"id": i, "name": "n" * 120,
                                                          "tag": "t" * 120})
            self.wrk = subprocess.Popen(
                ["wrk", "-t1", "-c256", f"-d{duration + 2}s", "--timeout", "10s", "-s", bench.LUA,
                 f"http://127.0.0.1:{port}", "--", mode, str(10**13 if mode == "post" else 1),
                 "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                env=dict(os.environ, PLANTSTORE_TOKEN=token))
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
        if self.wrk is not None:
            out = self.wrk.communicate(timeout=60)[0]
            result = json.loads(re.search(r"^RESULT (\{.*\})$", out, re.M).group(1))
            self.answers = [f"{result['requests'] / (result['duration_us'] / 1e6):,.0f}/s, "
                            f"{result['non200']} not 2xx"]
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


class Silent:
    """A webhook receiver that accepts connections and never answers (reads and drops)."""

    def __init__(self, address):
        self.listener = socket.create_server((address, 0), backlog=1024)
        self.port = self.listener.getsockname()[1]
        self.connections, self.stopped = [], False
        self.thread = threading.Thread(target=self.accept, daemon=True)
        self.thread.start()

    def accept(self):
        self.listener.settimeout(0.2)
        while not self.stopped:
            try:
                connection, _ = self.listener.accept()
                self.connections.append(connection)
            except OSError:
                continue

    def stop(self):
        self.stopped = True
        self.thread.join(timeout=5)
        for c in self.connections:
            c.close()
        self.listener.close()


class Recorder:
    """A webhook receiver that answers `status` (204) at once and records when each plant's event
    arrived."""

    def __init__(self, status=204):
        arrivals = self.arrivals = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                # A subscription to creations alone gets the plant itself, others the envelope.
                document = json.loads(body)
                arrivals.setdefault(document.get("data", document)["id"], time.monotonic())
                self.send_response(status)
                if status != 204:  # a 204 has no body, and says no length (RFC 9110 §8.6)
                    self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Endless:
    """A webhook receiver whose every answer never ends: a chunked head, then a chunk-size line
    of zeros (`pattern`) for as long as the client reads, up to `limit` bytes a connection.
    Counts what it managed to send."""

    def __init__(self, pattern=b"0" * 65536, limit=1 << 30):
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.listener.getsockname()[1]
        self.pattern, self.limit = pattern, limit
        self.sent, self.stopped, self.lock = 0, False, threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        self.listener.settimeout(0.2)
        while not self.stopped:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self.answer, args=(connection,), daemon=True).start()

    def answer(self, connection):
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                request += chunk
            connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            sent = 0
            while sent < self.limit and not self.stopped:
                sent += connection.send(self.pattern)
                with self.lock:
                    self.sent += len(self.pattern)
        except OSError:
            pass
        finally:
            connection.close()

    def stop(self):
        self.stopped = True
        self.listener.close()


def endless_answers(binary, label, duration, workdir):
    """Two subscriptions of the attacker to a receiver whose answers never end, and the
    attacker's creates for `duration` while the victim creates at 16 connections: the server's
    resident memory before and at its peak, and what the receiver managed to send."""
    data_dir = tempfile.mkdtemp(dir=workdir)
    victim = mint(binary, data_dir, "victim", "victim")
    attacker = mint(binary, data_dir, "attacker", "attacker")
    server = bench.start_plantstore(binary, data_dir, ["--webhook-allow-http", "on",
                                                       "--webhook-allow-private-addresses", "on",
                                                       "--webhook-timeout-ms", "15000"],
                                    name=label)
    receiver = Endless()
    try:
        pids = server.pids()
        before = bench.memory_kib(pids, "VmRSS")
        statuses = [call(server.port, attacker, "POST", "/webhooks",
                         {"url": f"http://127.0.0.1:{receiver.port}/?n={i}"}) for i in range(2)]
        statuses += [call(server.port, attacker, "POST", "/plants", {"id": i, "name": "Flood"})
                     for i in range(1, 21)]
        row = bench.run_wrk(server, 16, duration, victim, 1)
        peak = bench.memory_kib(pids, "VmHWM")
        counts = {}
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        return {"build": label, "attack": "endless-answers",
                "attacker": ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))
                + f"; the receiver sent {receiver.sent / 2**20:,.0f} MiB",
                "growth_mib": (peak - before) / 1024, "victim_rps": row["requests_per_s"],
                "victim_errors": row["non200"] + row["socket_errors"],
                "victim_p99_ms": row["p99_ms"]}
    finally:
        server.stop()
        receiver.stop()


LARGE_TEXT = "\u0001" * 1024


def large_creates(port, token, count, connections=8):
    """`count` plants of the longest name and tag, each 1,024 control characters."""
    def create(first):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(first, count, connections):
            connection.request("POST", "/plants",
                               body=json.dumps({"id": i + 1, "name": LARGE_TEXT,
                                                "tag": LARGE_TEXT}),
                               headers={"Authorization": f"Bearer {token}",
                                        "Content-Type": "application/json"})
            connection.getresponse().read()
        connection.close()
    threads = [threading.Thread(target=create, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def memory_burst(binary, label, kind, duration, workdir):
    """large-pages and feed-burst: the server's anonymous memory before, at its peak and after."""
    data_dir = tempfile.mkdtemp(dir=workdir)
    victim = mint(binary, data_dir, "victim", "victim")
    attacker = mint(binary, data_dir, "attacker", "attacker")
    server = bench.start_plantstore(binary, data_dir, FLAGS.get(label, []), name=label)
    held = []  # connections (large-pages) or sockets (stale-streams) the attacker keeps open
    try:
        pids = server.pids()
        large_creates(server.port, attacker,
                      {"large-pages": 200, "stale-streams": 1000}.get(kind, 12000))
        before = bench.memory_kib(pids, "RssAnon")
        before_rss = bench.memory_kib(pids, "VmRSS")
        if kind == "large-pages":
            for _ in range(40):
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                connection.request("GET", "/plants?limit=200",
                                   headers={"Authorization": f"Bearer {attacker}"})
                connection.getresponse().read()
                held.append(connection)
            what = "40 pages of 2.4 MB read, the connections held"
        elif kind == "stale-streams":
            for _ in range(20):
                stream = socket.socket()
                stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                stream.connect(("127.0.0.1", server.port))
                stream.sendall(f"GET /events?after=0 HTTP/1.1\r\nHost: x\r\nAuthorization: "
                               f"Bearer {attacker}\r\nAccept: text/event-stream\r\n\r\n"
                               .encode())
                held.append(stream)
            time.sleep(2)
            during = bench.memory_kib(pids, "RssAnon")
            served = 0
            for stream in held:  # each one's status line (64 bytes of it read)
                stream.settimeout(5)
                try:
                    served += stream.recv(64).startswith(b"HTTP/1.1 200")
                except OSError:
                    pass
            what = (f"20 streams from seq 0 that never read, held ({served} served, the others "
                    f"refused); anonymous memory {during / 1024:,.0f} MiB with them open")
        else:
            stream = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            stream.sendall(f"GET /events?after=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                           f"{attacker}\r\nAccept: text/event-stream\r\n\r\n".encode())
            read = 0
            try:
                while read < 12000 * 11000:
                    chunk = stream.recv(1 << 20)
                    if not chunk:
                        break
                    read += len(chunk)
            except socket.timeout:
                pass
            stream.close()
            what = f"a stream of {read / 1e6:,.0f} MB read from seq 0 and closed"
        row = bench.run_wrk(server, 16, duration, victim, 1)
        time.sleep(6 if kind == "feed-burst" else 1)
        after = bench.memory_kib(pids, "RssAnon")
        peak = bench.memory_kib(pids, "VmHWM")
        return {"build": label, "attack": kind,
                "attacker": f"{what}; anonymous memory {before / 1024:,.0f} MiB before, "
                            f"{after / 1024:,.0f} MiB after",
                "growth_mib": (peak - before_rss) / 1024, "victim_rps": row["requests_per_s"],
                "victim_errors": row["non200"] + row["socket_errors"],
                "victim_p99_ms": row["p99_ms"]}
    finally:
        for connection in held:
            connection.close()
        server.stop()


HERB = "\U0001f33f" * 1024  # four bytes each in UTF-8


def directory_mib(path):
    """What the files under `path` take on disk, MiB."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total / (1 << 20)


def pending_deliveries(port, token):
    """The deliveries pending at the tenant's subscriptions (GET /webhooks), summed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/webhooks", headers={"Authorization": f"Bearer {token}"})
        listed = json.loads(connection.getresponse().read())
    finally:
        connection.close()
    items = listed.get("items", listed) if isinstance(listed, dict) else listed
    return sum(item.get("deliveries", {}).get("pending", 0) for item in items)


def rename_flood(binary, label, duration, workdir, subscriptions=0):
    """rename-flood (and delivery-flood, with subscriptions to a failing receiver): the data
    directory's growth under renames with the longest names."""
    data_dir = tempfile.mkdtemp(dir=workdir)
    victim = mint(binary, data_dir, "victim", "victim")
    attacker = mint(binary, data_dir, "attacker", "attacker")
    flags = FLAGS.get(label, [])
    if subscriptions:
        flags = flags + ["--webhook-allow-http", "on", "--webhook-allow-private-addresses", "on"]
    server = bench.start_plantstore(binary, data_dir, flags, name=label)
    receiver = Recorder(status=500) if subscriptions else None  # every delivery fails
    stop = threading.Event()
    renames = [0] * 8

    def rename(k):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        n = 0
        while not stop.is_set() and n < 1_000_000:
            n += 1
            body = json.dumps({"name": f"{n % 1000:03d}" + HERB[3:], "tag": HERB},
                              ensure_ascii=False).encode()
            connection.request("PATCH", f"/plants/{(n * 8 + k) % 16 + 1}", body=body,
                               headers={"Authorization": f"Bearer {attacker}",
                                        "Content-Type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            if answer.status == 200:
                renames[k] += 1
        connection.close()

    try:
        for i in range(subscriptions):
            call(server.port, attacker, "POST", "/webhooks",
                 {"url": f"http://127.0.0.1:{receiver.port}/?n={i}", "events": ["plant.updated"]})
        for i in range(16):
            call(server.port, attacker, "POST", "/plants", {"id": i + 1, "name": "p"})
        before = directory_mib(data_dir)
        threads = [threading.Thread(target=rename, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        row = bench.run_wrk(server, 16, duration, victim, 1)
        stop.set()
        for thread in threads:
            thread.join()
        time.sleep(3)  # the pruner's second, and a checkpoint
        grown = directory_mib(data_dir) - before
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("GET", "/quota", headers={"Authorization": f"Bearer {attacker}"})
        log = json.loads(connection.getresponse().read()).get("event_log_bytes")
        connection.close()
        held = "?" if log is None else f"{log['used'] / (1 << 20):,.1f} MiB"
        pending = (f"; {pending_deliveries(server.port, attacker):,} deliveries pending"
                   if subscriptions else "")
        return {"build": label, "attack": "delivery-flood" if subscriptions else "rename-flood",
                "attacker": f"{sum(renames):,} renames (~{sum(renames) * 8.2 / 1024:,.0f} MiB of "
                            f"events); data directory +{grown:,.0f} MiB; its log holds {held}"
                            + pending,
                "growth_mib": 0, "victim_rps": row["requests_per_s"],
                "victim_errors": row["non200"] + row["socket_errors"],
                "victim_p99_ms": row["p99_ms"]}
    finally:
        stop.set()
        server.stop()
        if receiver:
            receiver.stop()


def call(port, token, method, path, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=json.dumps(body),
                           headers={"Authorization": f"Bearer {token}",
                                    "Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def hanging_receivers(binary, label, duration, workdir):
    data_dir = tempfile.mkdtemp(dir=workdir)
    victim = mint(binary, data_dir, "victim", "victim")
    attacker = mint(binary, data_dir, "attacker", "attacker")
    server = bench.start_plantstore(binary, data_dir, ["--webhook-allow-http", "on",
                                                       "--webhook-allow-private-addresses", "on"],
                                    name=label)
    silent, recorder = Silent(f"127.0.{next(RUNS)}.1"), Recorder()
    try:
        statuses = [call(server.port, attacker, "POST", "/webhooks",
                         {"url": f"http://{silent.listener.getsockname()[0]}:{silent.port}/?n={i}"})
                    for i in range(20)]
        statuses += [call(server.port, attacker, "POST", "/plants", {"id": i, "name": "Hang"})
                     for i in range(1, 41)]
        statuses.append(call(server.port, victim, "POST", "/webhooks",
                             {"url": f"http://127.0.0.1:{recorder.port}/hook"}))
        time.sleep(1)  # the attacker's deliveries hang in their slots
        answered, errors = {}, 0
        deadline = time.monotonic() + duration
        plant = 0
        while time.monotonic() < deadline:
            plant += 1
            if call(server.port, victim, "POST", "/plants", {"id": plant, "name": "Victim"}) == 200:
                answered[plant] = time.monotonic()
            else:
                errors += 1
            time.sleep(0.1)
        wait_until = time.monotonic() + 60
        while len(recorder.arrivals) < len(answered) and time.monotonic() < wait_until:
            time.sleep(0.1)
        delays = sorted(recorder.arrivals[p] - t if p in recorder.arrivals else float("inf")
                        for p, t in answered.items())
        counts = {}
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        return {"build": label, "attack": "hanging-receivers",
                "attacker": ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())),
                "growth_mib": 0.0, "victim_rps": len(answered) / duration,
                "victim_errors": errors + sum(d == float("inf") for d in delays),
                "victim_p99_ms": None,
                "victim_delivery_ms": {"p50": delays[len(delays) // 2] * 1e3,
                                       "p99": delays[min(len(delays) - 1,
                                                         int(len(delays) * 0.99))] * 1e3,
                                       "max": delays[-1] * 1e3,
                                       "delivered": sum(d != float("inf") for d in delays),
                                       "created": len(delays)}}
    finally:
        server.stop()
        silent.stop()
        recorder.stop()


def paced_victim(port, token, duration, interval=0.01):
    """Creates a plant every `interval` seconds on one connection for `duration`: its rate, errors
    and p99 latency (ms), as run_wrk reports them."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    latencies, errors = [], 0
    start = time.monotonic()
    next_at = start
    plant = 0
    while time.monotonic() - start < duration:
        plant += 1
        sent = time.monotonic()
        connection.request("POST", "/plants", body=json.dumps({"id": plant, "name": "Paced"}),
                           headers={"Authorization": f"Bearer {token}",
                                    "Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        latencies.append(time.monotonic() - sent)
        errors += answer.status != 200
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    connection.close()
    latencies.sort()
    return {"requests_per_s": len(latencies) / (time.monotonic() - start), "non200": errors,
            "socket_errors": 0,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3}


def run_one(binary, label, kind, duration, workdir):
    if kind == "hanging-receivers":
        return hanging_receivers(binary, label, duration, workdir)
    if kind == "endless-answers":
        return endless_answers(binary, label, duration, workdir)
    if kind == "rename-flood":
        return rename_flood(binary, label, duration, workdir)
    if kind == "delivery-flood":
        return rename_flood(binary, label, duration, workdir, subscriptions=20)
    if kind in ("large-pages", "stale-streams", "feed-burst"):
        return memory_burst(binary, label, kind, duration, workdir)
    data_dir = tempfile.mkdtemp(dir=workdir)
    victim = mint(binary, data_dir, "victim", "victim")
    attacker = mint(binary, data_dir, "attacker", "attacker")
    extra = ["--max-connections", "300"] if kind == "streams" else []
    server = bench.start_plantstore(binary, data_dir, extra + FLAGS.get(label, []), name=label)
    try:
        pids = server.pids()
        before = bench.memory_kib(pids, "VmRSS")
        attack = Attack(kind, server.port, attacker, duration)
        time.sleep(2)  # the attack's steady state: what the victim meets after the first moment
        if kind.endswith("-paced"):
            row = paced_victim(server.port, victim, duration)
        else:
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
    parser.add_argument("--baseline-flags", default="",
                        help="flags for the baseline's server (the same binary with a setting "
                             "off, e.g. --baseline-flags='--writes-per-tenant 0')")
    parser.add_argument("--flags", default="",
                        help="flags for this build's server (e.g. --flags='--event-retention-mib "
                             "64')")
    parser.add_argument("--duration", type=int, default=8, help="seconds of victim load")
    parser.add_argument("--attacks", default="alone,create-flood,alone-paced,create-flood-paced,"
                                              "list-flood,large-pages,"
                                              "stale-streams,feed-burst,chunk-line,chunk-zeros,"
                                              "trailer,idle-flood,streams,hanging-receivers,"
                                              "endless-answers,rename-flood,delivery-flood")
    args = parser.parse_args()
    # 10,000 attacking connections here, and as many for the server (which inherits the limit).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    FLAGS["baseline"] = args.baseline_flags.split()
    FLAGS["this build"] = args.flags.split()
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
              f"{r['victim_rps']:.0f} | {r['victim_errors']} | "
              + ("-" if r["victim_p99_ms"] is None else f"{r['victim_p99_ms']:.1f}") + " |")
    for r in rows:
        if "victim_delivery_ms" in r:
            d = r["victim_delivery_ms"]
            print(f"\nhanging-receivers, {r['build']}: the victim's {d['delivered']} of "
                  f"{d['created']} deliveries arrived {d['p50']:.0f} ms (p50), {d['p99']:.0f} ms "
                  f"(p99), {d['max']:.0f} ms (max) after its create's 200, beside the attacker's "
                  "hanging deliveries")


if __name__ == "__main__":
    main()
