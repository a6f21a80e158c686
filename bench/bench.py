#!/usr/bin/env python3
"""plantstore's benchmark: durable POST /plants against nginx answering a fixed body.

Both servers run on 127.0.0.1 and are measured alternately with wrk (-t1) at each connection
count, so every ratio comes from one run on the same (shared, noisy) machine. For each row it
reports requests/s, p50 and p99 latency, non-200 answers, server CPU time per request and
resident memory (and, on PostgreSQL, the CPU time of the database's processes per request). With
--scaling it also measures creates on stores preloaded with 1 and 10 million plants (on SQLite,
and with --postgres on PostgreSQL too, the table grown behind one running instance), a get and
a tag-filtered list at 10 million, start-up time, and the memory of 1,000 and 10,000 idle
connections.

It starts and kills only its own processes, talks only to 127.0.0.1, and every wait is bounded.
Run it through bench/run.sh, which installs wrk and nginx-light and builds the Release binary.
"""

import argparse
import http.client
import json
import os
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(BENCH_DIR, "plants.lua")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, limit_s=30.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def process_tree(pid):
    """pid and its children (nginx's workers)."""
    pids = [pid]
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    except OSError:
        pass
    return pids


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
        except OSError:
            pass
    return total


def context_switches(pids):
    """Voluntary and involuntary context switches of every thread of `pids` so far."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    for line in f:
                        key, _, value = line.partition(":")
                        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                            total += int(value)
            except (OSError, ValueError):
                pass
    return total


def start_syscall_count(pids):
    """`perf stat` counting the system calls of `pids` (every thread) until stopped; None when
    perf is missing or not allowed (linux-perf, kernel.perf_event_paranoid <= 1 or root)."""
    if not pids or shutil.which("perf") is None:
        return None
    try:
        return subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p",
                                 ",".join(str(p) for p in pids)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except OSError:
        return None


def stop_syscall_count(perf):
    if perf is None:
        return None
    perf.send_signal(signal.SIGINT)
    try:
        err = perf.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        perf.kill()
        return None
    match = re.search(r"^(\d+),,raw_syscalls:sys_enter", err, re.M)
    return int(match.group(1)) if match else None


def memory_kib(pids, key):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class Server:
    """A server process of ours: started here, stopped here, measured through /proc."""

    def __init__(self, name, argv, port, env=None, cwd=None):
        self.name, self.port = name, port
        self.log = tempfile.TemporaryFile()
        started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log, env=env, cwd=cwd,
                                     start_new_session=True)
        if not wait_for_port(port):
            self.stop()
            self.log.seek(0)
            sys.exit(f"{name} did not start: {self.log.read().decode(errors='replace')}")
        self.ready_seconds = time.monotonic() - started

    def pids(self):
        return process_tree(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def start_nginx(workdir):
    port = free_port()
    prefix = os.path.join(workdir, "nginx")
    os.makedirs(os.path.join(prefix, "tmp"), exist_ok=True)
    with open(os.path.join(BENCH_DIR, "nginx.conf")) as f:
        config = f.read().replace("@PORT@", str(port))
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(config)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    return Server("nginx", [nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"),
                            "-g", "daemon off;"], port)


def mint_token(binary, data_dir=None, url=None):
    """A fresh token of `binary`'s store: the data directory, or the PostgreSQL database `url`."""
    where = ["--database-url", url] if url else ["--data-dir", data_dir]
    return subprocess.run([binary, "token", "create", "--name", f"bench-{time.time_ns()}",
                           *where], check=True, capture_output=True, text=True).stdout.strip()


def supports_patch(server, token, plant_id):
    """Whether `server` renames plant `plant_id` with PATCH (builds before 308b8ba cannot)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("PATCH", f"/plants/{plant_id}", body='{"name":"probe"}',
                           headers={"Authorization": f"Bearer {token}",
                                    "Content-Type": "application/merge-patch+json"})
        return connection.getresponse().status == 200
    finally:
        connection.close()


def start_plantstore(binary, data_dir, extra=(), name="plantstore"):
    port = free_port()
    return Server(name, [binary, "serve", "--listen", f"127.0.0.1:{port}",
                         "--data-dir", data_dir, *extra], port)


PG_CLUSTER = os.path.join(BENCH_DIR, "..", "scripts", "pg-cluster.sh")


class Postgres:
    """A throwaway PostgreSQL 15 cluster (scripts/pg-cluster.sh: a Unix socket in a short
    directory of its own, fsync and synchronous_commit on), measured with the instances that use
    it."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "postgres")
        self.url = subprocess.run([PG_CLUSTER, "start", self.dir], check=True,
                                  capture_output=True, text=True).stdout.strip()

    def database(self, name):
        subprocess.run(["psql", self.url, "-qc", f"CREATE DATABASE {name}"], check=True,
                       capture_output=True)
        return f"{self.url} dbname={name}"

    def pids(self):
        try:
            with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
                return process_tree(int(f.readline()))
        except (OSError, ValueError):
            return []

    def stop(self):
        subprocess.run([PG_CLUSTER, "remove", self.dir, "fast"], capture_output=True)


class Group:
    """Instances measured together with their database: one row's name, every process's CPU."""

    def __init__(self, name, instances, postgres):
        self.name, self.instances, self.postgres = name, instances, postgres
        self.port = instances[0].port

    def pids(self):
        return [p for i in self.instances for p in i.pids()] + self.postgres.pids()


def postgres_rows(args, binary, workdir, ids, connection_counts):
    """POST rows for one instance on PostgreSQL, two instances on the same database (the load
    split between them), and one instance committing each request alone (--max-batch-writes 1:
    what a one-transaction-per-request server does with one connection); with --baseline, one
    and two instances of the baseline build on a database of their own."""
    postgres = Postgres(workdir)
    rows, started = [], []
    try:
        url = postgres.database("bench")
        token = mint_token(binary, url=url)
        unused = os.path.join(workdir, "unused")  # --data-dir is not used with a database URL
        one = start_plantstore(binary, unused, ["--database-url", url], "pg")
        two = start_plantstore(binary, unused, ["--database-url", url], "pg 2nd")
        alone = start_plantstore(binary, unused,
                                 ["--database-url", url, "--max-batch-writes", "1"], "pg batch=1")
        started = [one, two, alone]
        groups = [(Group("plantstore-pg", [one], postgres), [one], token),
                  (Group("2 × plantstore-pg", [one, two], postgres), [one, two], token),
                  (Group("plantstore-pg 1 write/txn", [alone], postgres), [alone], token)]
        if args.baseline:
            base_url = postgres.database("bench_baseline")
            base_token = mint_token(args.baseline, url=base_url)
            base = start_plantstore(args.baseline, unused, ["--database-url", base_url],
                                    "pg baseline")
            base_two = start_plantstore(args.baseline, unused, ["--database-url", base_url],
                                        "pg baseline 2nd")
            started += [base, base_two]
            groups.insert(1, (Group(f"plantstore-pg ({args.baseline_name})", [base], postgres),
                              [base], base_token))
            groups.insert(3, (Group(f"2 × plantstore-pg ({args.baseline_name})", [base, base_two],
                                    postgres), [base, base_two], base_token))
        for conns in connection_counts:
            for group, targets, group_token in groups:
                row = run_wrk(group, conns, args.duration, group_token, ids.take(),
                              targets=targets)
                rows.append(row)
                print(f"{group.name:>26} c={conns:<4} {row['requests_per_s']:>9,.0f} req/s",
                      file=sys.stderr)
    finally:
        for server in started:
            server.stop()
        postgres.stop()
    return rows


class IdRanges:
    """Each wrk run gets its own id range so that every create is new."""

    def __init__(self, start):
        self.next = start

    def take(self):
        first = self.next
        self.next += 10**12
        return first


def store_counters(server):
    """plantstore's commit counters from its /metrics (no credentials needed); {} for nginx."""
    if server.name == "nginx":
        return {}
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    wanted = {"plantstore_store_commit_duration_seconds_sum": "commit_seconds",
              "plantstore_store_commit_duration_seconds_count": "commits",
              "plantstore_store_batch_size_sum": "rows"}
    counters = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            counters[wanted[name]] = float(value)
    return counters


def run_wrk(server, connections, duration, token, first_id, workload="POST", mode="post",
            count=1, targets=None):
    """One wrk run against `server` (its name labels the row; its processes are measured), or
    against several instances at once (`targets`), the connections split evenly between them."""
    targets = targets or [server]
    env = dict(os.environ, PLANTSTORE_TOKEN=token)
    pids = server.pids()
    database = getattr(server, "postgres", None)
    db_pids = database.pids() if database else []
    counters_before = [store_counters(t) for t in targets]
    ticks_before = cpu_ticks(pids)
    db_ticks_before = cpu_ticks(db_pids)
    switches_before = context_switches(pids)
    perf = start_syscall_count(pids)
    runs = [subprocess.Popen(
        ["wrk", "-t1", f"-c{connections // len(targets)}", f"-d{duration}s", "--timeout", "10s",
         "-s", LUA, f"http://127.0.0.1:{t.port}", "--", mode,
         str(first_id + i * 10**11 if mode == "post" else first_id), str(count)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        for i, t in enumerate(targets)]
    outs = [run.communicate(timeout=duration + 60)[0] for run in runs]
    syscalls = stop_syscall_count(perf)
    switches = context_switches(pids) - switches_before
    ticks = cpu_ticks(pids) - ticks_before
    db_ticks = cpu_ticks(db_pids) - db_ticks_before
    counters = {}
    for t, before in zip(targets, counters_before):
        for k, v in store_counters(t).items():
            counters[k] = counters.get(k, 0) + v - before.get(k, 0)
    results = []
    for out in outs:
        match = re.search(r"^RESULT (\{.*\})$", out, re.M)
        if not match:
            sys.exit(f"wrk printed no result against {server.name}:\n{out}")
        results.append(json.loads(match.group(1)))
    r = {"requests": sum(x["requests"] for x in results),
         "duration_us": max(x["duration_us"] for x in results),
         # Several instances: the slower one's percentiles (the load balancer's worst case).
         "p50_us": max(x["p50_us"] for x in results),
         "p99_us": max(x["p99_us"] for x in results),
         "non200": sum(x["non200"] for x in results),
         "socket_errors": sum(x["socket_errors"] for x in results)}
    requests = max(r["requests"], 1)
    return {
        "server": server.name,
        "workload": workload,
        "first_id": first_id,
        "requests": r["requests"],
        "connections": connections,
        "requests_per_s": r["requests"] / (r["duration_us"] / 1e6),
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "non200": r["non200"],
        "socket_errors": r["socket_errors"],
        "cpu_us_per_request": ticks / CLK_TCK * 1e6 / requests,
        # The server's system calls and context switches (all threads) per request.
        "syscalls_per_request": syscalls / requests if syscalls is not None else None,
        "switches_per_request": switches / requests,
        # PostgreSQL's share (every process of the cluster: user + system), on PostgreSQL rows.
        "db_cpu_us_per_request": db_ticks / CLK_TCK * 1e6 / requests if database else None,
        # Cores the server kept busy on average: its CPU time over the run's wall time.
        "cores_busy": ticks / CLK_TCK / max(r["duration_us"] / 1e6, 1e-9),
        "rss_mib": memory_kib(pids, "VmRSS") / 1024,
        "peak_rss_mib": memory_kib(pids, "VmHWM") / 1024,
        # Group commit, from plantstore's own metrics: rows per commit, commits per second, and
        # the share of the run the writer spent committing (near 1: the writer is the limit).
        "commits": counters.get("commits", 0),
        "rows_per_commit": counters.get("rows", 0) / max(counters.get("commits", 0), 1),
        "commits_per_s": counters.get("commits", 0) / (r["duration_us"] / 1e6),
        "writer_busy": counters.get("commit_seconds", 0) / (r["duration_us"] / 1e6),
    }


def db_cpu(row):
    value = row.get("db_cpu_us_per_request")
    return "" if value is None else f"{value:.1f}"


def median_rows(rows):
    """Of the rows of each (server, workload, connections), the one with the median req/s (all
    of its figures from that one run); `rounds` says how many there were."""
    groups = {}
    for row in rows:
        groups.setdefault((row["server"], row["workload"], row["connections"]), []).append(row)
    result = []
    for group in groups.values():
        ranked = sorted(group, key=lambda r: r["requests_per_s"])
        chosen = dict(ranked[(len(ranked) - 1) // 2])
        chosen["rounds"] = len(group)
        chosen["requests_per_s_all"] = [r["requests_per_s"] for r in group]
        result.append(chosen)
    return result


def per_request(row, key):
    value = row.get(key)
    return "" if value is None else f"{value:.2f}"


def markdown_table(rows):
    lines = ["| workload | conns | server | req/s | p50 ms | p99 ms | non-200 | CPU µs/req | "
             "PG CPU µs/req | syscalls/req | ctx sw/req | cores busy | RSS MiB (peak) | "
             "against nginx |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by_conns = {}
    for row in rows:
        by_conns.setdefault((row["workload"], row["connections"]), {})[row["server"]] = row
    for (workload, conns), pair in by_conns.items():
        for name, row in pair.items():
            ratio = ""
            if name != "nginx" and "nginx" in pair:
                n = pair["nginx"]
                ratio = (f"{row['requests_per_s'] / n['requests_per_s']:.0%} req/s, "
                         f"{row['p99_ms'] / max(n['p99_ms'], 1e-9):.2f}× p99, "
                         f"{row['cpu_us_per_request'] / max(n['cpu_us_per_request'], 1e-9):.2f}× "
                         "CPU/req")
            lines.append(
                f"| {workload} | {conns} | {name} | {row['requests_per_s']:,.0f} | {row['p50_ms']:.2f} | "
                f"{row['p99_ms']:.2f} | {row['non200'] + row['socket_errors']} | "
                f"{row['cpu_us_per_request']:.1f} | {db_cpu(row)} | "
                f"{per_request(row, 'syscalls_per_request')} | "
                f"{per_request(row, 'switches_per_request')} | "
                f"{row.get('cores_busy', 0):.2f} | "
                f"{row['rss_mib']:.1f} "
                f"({row['peak_rss_mib']:.1f}) | {ratio} |")
    return "\n".join(lines)


def scaling_table(rows):
    lines = ["| engine | plants | workload | req/s | p99 ms | CPU µs/req | PG CPU µs/req |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['preloaded']:,} | {r['workload']} | "
                     f"{r['requests_per_s']:,.0f} | {r['p99_ms']:.2f} | "
                     f"{r['cpu_us_per_request']:.1f} | {db_cpu(r)} |")
    return "\n".join(lines)


def commit_table(rows):
    """Group commit per POST row of plantstore, and a least-squares fit of its CPU time per
    request as a per-request part plus a per-commit part (cpu/req = a + b / rows_per_commit)."""
    every = [r for r in rows if r["server"] != "nginx" and r["workload"] == "POST"
             and r.get("commits", 0) > 0]
    if not every:
        return ""
    lines = ["| server | conns | rows/commit | commits/s | writer busy | CPU µs/req |",
             "|---|---|---|---|---|---|"]
    for r in every:
        lines.append(f"| {r['server']} | {r['connections']} | {r['rows_per_commit']:.1f} | "
                     f"{r['commits_per_s']:,.0f} | {r['writer_busy']:.0%} | "
                     f"{r['cpu_us_per_request']:.1f} |")
    posts = [r for r in every if r["server"] == "plantstore"]
    points = [(1 / r["rows_per_commit"], r["cpu_us_per_request"]) for r in posts]
    if len(points) >= 2:
        n = len(points)
        mx = sum(x for x, _ in points) / n
        my = sum(y for _, y in points) / n
        sxx = sum((x - mx) ** 2 for x, _ in points)
        if sxx > 0:
            b = sum((x - mx) * (y - my) for x, y in points) / sxx
            a = my - b * mx
            lines.append("")
            lines.append(f"Fit over the SQLite rows: about {a:.1f} µs per request plus {b:.0f} "
                         "µs per commit.")
    return "\n".join(lines)


# Preloaded plants: ids from 0, tenant "default" (the bench token's), one of 100 tags each, so
# that a list filtered by tag finds a page among 1% of the plants.
PRELOAD_SQL = ("SELECT 'default', {i}, 'preloaded-' || {i}, 'tag-' || ({i} % 100), 0")


def preload(binary, data_dir, count):
    """Fills a fresh store with `count` plants straight through SQLite (schema via the CLI)."""
    mint_token(binary, data_dir)  # creates the database and applies migrations
    db = sqlite3.connect(os.path.join(data_dir, "plantstore.db"))
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    step = 1_000_000
    for start in range(0, count, step):
        db.execute(
            "WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2) "
            "INSERT INTO plants (tenant, id, name, tag, created_at) " +
            PRELOAD_SQL.format(i="i") + " FROM n",
            (start, min(start + step, count) - 1))
        db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def preload_postgres(url, start, end):
    """Adds plants start..end-1 to the PostgreSQL database `url` behind the server's back,
    1,000,000 per transaction, then checkpoints (so that the run does not pay for it)."""
    for first in range(start, end, 1_000_000):
        last = min(first + 1_000_000, end) - 1
        subprocess.run(["psql", url, "-qc", "INSERT INTO plants " + PRELOAD_SQL.format(i="g") +
                        f" FROM generate_series({first}, {last}) g"], check=True,
                       capture_output=True)
    subprocess.run(["psql", url, "-qc", "CHECKPOINT"], check=True, capture_output=True)


def open_idle_connections(port, count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1000), hard))
    sockets = []
    for _ in range(count):
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    return sockets


def scaling_sizes(args):
    return sorted({0, min(1_000_000, args.preload), args.preload})


def size_runs(group, token, plants, largest, ids, args, engine):
    """At one store size: creates (64 connections) and, at the largest size, a get and a
    tag-filtered list of preloaded plants."""
    runs = [("POST /plants", "post", ids.take(), 1)]
    if plants == largest and plants > 0:
        runs += [("GET /plants/{id}", "get", 0, plants),
                 ("GET /plants?tag=&limit=100", "tagged", 0, plants)]
    rows = []
    for workload, mode, first, count in runs:
        row = run_wrk(group, 64, args.duration, token, first, workload, mode, count)
        row.update(engine=engine, preloaded=plants)
        rows.append(row)
        print(f"{engine:>10} {plants:>11,} {workload:<28} {row['requests_per_s']:>9,.0f} req/s",
              file=sys.stderr)
    return rows


def postgres_scaling(args, binary, workdir, ids):
    """One instance on PostgreSQL, started on an empty database, then measured as the table
    grows to each size behind its back. Autovacuum is off for `plants`, so the statistics never
    change: the plans the instance built on the empty table serve every size (issue 25)."""
    postgres = Postgres(workdir)
    server = None
    rows = []
    try:
        url = postgres.database("scaling")
        token = mint_token(binary, url=url)
        subprocess.run(["psql", url, "-qc",
                        "ALTER TABLE plants SET (autovacuum_enabled = off)"], check=True,
                       capture_output=True)
        server = start_plantstore(binary, os.path.join(workdir, "unused"),
                                  ["--database-url", url], "plantstore-pg")
        group = Group("plantstore-pg", [server], postgres)
        loaded = 0
        sizes = scaling_sizes(args)
        for plants in sizes:
            if plants > loaded:
                started = time.monotonic()
                preload_postgres(url, loaded, plants)
                print(f"preloaded PostgreSQL to {plants:,} plants in "
                      f"{time.monotonic() - started:.0f} s", file=sys.stderr)
                loaded = plants
            rows += size_runs(group, token, plants, sizes[-1], ids, args, "PostgreSQL")
    finally:
        if server:
            server.stop()
        postgres.stop()
    return rows


def tag_list_rows(args, binary, workdir):
    """Tag-filtered lists (64 connections, pages of 100 from random preloaded plants, one tag in
    100) on stores of --preload plants, this build and the baseline side by side, two rounds
    interleaved; with --postgres on PostgreSQL too (a database per build, vacuumed after the
    preload as autovacuum would: an index-only scan needs the visibility map)."""
    builds = [(binary, "plantstore")]
    if args.baseline:
        builds.append((args.baseline, f"plantstore ({args.baseline_name})"))
    workload = f"GET /plants?tag=&limit=100 at {args.preload:,}"
    servers, tokens, rows = [], {}, []
    postgres = Postgres(workdir) if args.postgres else None
    try:
        for index, (build, name) in enumerate(builds):
            data_dir = os.path.join(workdir, f"tagged{index}")
            started = time.monotonic()
            preload(build, data_dir, args.preload)
            print(f"{name}: preloaded {args.preload:,} plants in "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr)
            tokens[name] = mint_token(build, data_dir)
            servers.append(start_plantstore(build, data_dir, ["--access-log", "off"], name))
            if postgres:
                url = postgres.database(f"tagged{index}")
                pg_name = name.replace("plantstore", "plantstore-pg")
                tokens[pg_name] = mint_token(build, url=url)
                started = time.monotonic()
                preload_postgres(url, 0, args.preload)
                subprocess.run(["psql", url, "-qc", "VACUUM ANALYZE plants"], check=True,
                               capture_output=True)
                print(f"{pg_name}: preloaded and vacuumed in {time.monotonic() - started:.0f} s",
                      file=sys.stderr)
                server = start_plantstore(build, os.path.join(workdir, "unused"),
                                          ["--database-url", url, "--access-log", "off"], pg_name)
                servers.append(Group(pg_name, [server], postgres))
        for _ in range(2):
            for server in servers:
                row = run_wrk(server, 64, args.duration, tokens[server.name], 0, workload,
                              "tagged", args.preload)
                rows.append(row)
                print(f"{server.name:>26} {workload} {row['requests_per_s']:>9,.0f} req/s",
                      file=sys.stderr)
    finally:
        for server in servers:
            for instance in getattr(server, "instances", [server]):
                instance.stop()
        if postgres:
            postgres.stop()
    return rows


def scaling(args, binary, workdir, ids):
    results = {}
    # Throughput on an empty store and on preloaded ones, same run; reads at the largest.
    sizes = scaling_sizes(args)
    rows = []
    for plants in sizes:
        data_dir = os.path.join(workdir, f"scaling-{plants}")
        if plants:
            started = time.monotonic()
            preload(binary, data_dir, plants)
            print(f"preloaded {plants:,} plants in {time.monotonic() - started:.0f} s",
                  file=sys.stderr)
        token = mint_token(binary, data_dir)
        server = start_plantstore(binary, data_dir)
        try:
            size_rows = size_runs(server, token, plants, sizes[-1], ids, args, "SQLite")
        finally:
            server.stop()
        size_rows[0]["ready_seconds"] = server.ready_seconds
        results[f"throughput_{plants}"] = size_rows[0]
        rows += size_rows
        shutil.rmtree(data_dir, ignore_errors=True)
    base, big = results["throughput_0"], results[f"throughput_{args.preload}"]
    results["throughput_ratio"] = big["requests_per_s"] / base["requests_per_s"]
    if args.postgres:
        rows += postgres_scaling(args, binary, workdir, ids)
    results["rows"] = rows

    # Memory of idle keep-alive connections.
    data_dir = os.path.join(workdir, "idle")
    mint_token(binary, data_dir)
    server = start_plantstore(binary, data_dir, ["--max-connections", "20000",
                                                 "--max-connections-per-client", "20000"])
    try:
        pids = server.pids()
        before = memory_kib(pids, "VmRSS")
        for count in (1000, 10000):
            sockets = open_idle_connections(server.port, count)
            time.sleep(1.0)
            results[f"idle_{count}_added_mib"] = (memory_kib(pids, "VmRSS") - before) / 1024
            for s in sockets:
                s.close()
            time.sleep(0.5)
    finally:
        server.stop()
    return results


def logging_cost(args, binary, workdir, ids):
    """Create throughput with access logs on and off (to a file), alternating, same run."""
    data_dir = os.path.join(workdir, "logging")
    token = mint_token(binary, data_dir)
    servers = {
        "access log on": start_plantstore(binary, data_dir, ["--access-log", "on"],
                                          "access log on"),
        "access log off": start_plantstore(binary, data_dir, ["--access-log", "off"],
                                           "access log off"),
    }
    rates = {name: [] for name in servers}
    try:
        for _ in range(3):
            for name, server in servers.items():
                row = run_wrk(server, 64, args.duration, token, ids.take())
                rates[name].append(row["requests_per_s"])
                print(f"{name:>15} {row['requests_per_s']:>9,.0f} req/s", file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    on = sum(rates["access log on"]) / len(rates["access log on"])
    off = sum(rates["access log off"]) / len(rates["access log off"])
    return {"access_log_on_requests_per_s": on, "access_log_off_requests_per_s": off,
            "access_log_cost": 1 - on / off}


def tracing_cost(args, binary, workdir, ids, baseline=None):
    """Creates at 64 connections with tracing off, and exporting to a collector (nginx answering
    POST /v1/traces) at ratio 0.01 and 1.0, interleaved, three rounds (the median shown); with a
    baseline binary (the first --baseline), that build beside them."""
    nginx = start_nginx(workdir)
    collector = f"http://127.0.0.1:{nginx.port}"
    setups = [("tracing off", binary, []),
              ("ratio 0.01", binary, ["--otlp-endpoint", collector, "--trace-sample-ratio", "0.01"]),
              ("ratio 1.0", binary, ["--otlp-endpoint", collector, "--trace-sample-ratio", "1"])]
    if baseline:
        setups.insert(0, (args.baseline_name, baseline, []))
    servers, tokens = {}, {}
    for name, program, extra in setups:
        data_dir = os.path.join(workdir, "tracing-" + str(len(servers)))
        tokens[name] = mint_token(program, data_dir)
        servers[name] = start_plantstore(program, data_dir, ["--access-log", "off"] + extra, name)
    rows = {name: [] for name in servers}
    try:
        for _ in range(3):
            for name, server in servers.items():
                row = run_wrk(server, 64, args.duration, tokens[name], ids.take())
                rows[name].append(row)
                print(f"{name:>15} {row['requests_per_s']:>9,.0f} req/s "
                      f"{row['cpu_us_per_request']:.1f} us CPU/req", file=sys.stderr)
        spans = {name: (metric(server, "plantstore_trace_spans_exported_total"),
                        metric(server, "plantstore_trace_spans_dropped_total"))
                 for name, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()
        nginx.stop()
    result = {}
    for name, runs in rows.items():
        middle = sorted(runs, key=lambda r: r["requests_per_s"])[1]
        result[name] = {"requests_per_s": middle["requests_per_s"],
                        "requests_per_s_all": [r["requests_per_s"] for r in runs],
                        "cpu_us_per_request": middle["cpu_us_per_request"],
                        "spans_exported": spans[name][0], "spans_dropped": spans[name][1]}
    return {"tracing": result}


SLOW_RECEIVER = """
import http.server, sys, time
class Slow(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(float(sys.argv[2]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
"""


def metric(server, name):
    """The value of one metric line (name with labels) of a plantstore's /metrics, or 0."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
    return 0.0


def subscribe(server, token, url):
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/webhooks", method="POST",
        data=json.dumps({"url": url}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        assert r.status == 201, r.status


WEBHOOK_RECEIVER_CONF = """
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
    # Each request's arrival (seconds, to the millisecond), path and webhook-id: the id begins
    # with its event's commit time in hex milliseconds, so every event's time from its commit to
    # its receiver is read from here.
    log_format hooks '$msec $uri $http_webhook_id';
    access_log @LOG@ hooks buffer=256k flush=1s;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    server {
        listen 127.0.0.1:@PORT@;
        listen 127.0.0.1:@TLS_PORT@ ssl;
        ssl_certificate @CERT@;
        ssl_certificate_key @KEY@;
        location / { return 204; }
    }
}
"""


def webhook_pki(workdir):
    """A test CA, a certificate for 127.0.0.1 signed by it, and a trust store as large as the
    system's with the CA added (what SSL_CERT_FILE points at, as a deployment whose receivers'
    authority is in Debian's store runs)."""
    pki = os.path.join(workdir, "pki")
    os.makedirs(pki, exist_ok=True)
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True, cwd=pki)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(pki, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    bundle = os.path.join(pki, "system-and-bench-ca.pem")
    with open(bundle, "wb") as out:
        with open("/etc/ssl/certs/ca-certificates.crt", "rb") as system:
            out.write(system.read())
        with open(os.path.join(pki, "ca.pem"), "rb") as ca:
            out.write(ca.read())
    return os.path.join(pki, "server.pem"), os.path.join(pki, "server.key"), bundle


def start_webhook_receiver(workdir, cert, key):
    """nginx answering every request 204, on a plain and a TLS port (one worker: the receiver
    is not what is measured, and it leaves the server a core)."""
    port, tls_port = free_port(), free_port()
    prefix = os.path.join(workdir, "receiver")
    os.makedirs(os.path.join(prefix, "tmp"), exist_ok=True)
    config = (WEBHOOK_RECEIVER_CONF.replace("@PORT@", str(port))
              .replace("@TLS_PORT@", str(tls_port)).replace("@CERT@", cert)
              .replace("@KEY@", key).replace("@LOG@", os.path.join(prefix, "hooks.log")))
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(config)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    receiver = Server("receiver", [nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"),
                                   "-g", "daemon off;"], port)
    if not wait_for_port(tls_port):
        receiver.stop()
        sys.exit("the receiver's TLS port did not open")
    return receiver, port, tls_port


DELIVERED = 'plantstore_webhook_attempts_total{outcome="delivered"}'


def metric_sum(servers, prefix):
    """The sum of every sample whose name (with labels) starts with `prefix`, over `servers`."""
    total = 0.0
    for server in servers:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(prefix):
                    total += float(line.split()[-1])
    return total


def arrivals(log_path, path):
    """{webhook-id: first arrival (Unix ms)} of the receiver's log lines for `path`."""
    first = {}
    try:
        with open(log_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[1] == path and parts[2].startswith("msg_"):
                    at = float(parts[0]) * 1000
                    if parts[2] not in first or at < first[parts[2]]:
                        first[parts[2]] = at
    except OSError:
        pass
    return first


def percentile(values, share):
    values = sorted(values)
    return values[min(len(values) - 1, int(share * len(values)))] if values else 0.0


def webhook_rows(args, binary, workdir, ids):
    """Creates at 64 connections for --webhook-seconds with no subscription, and with one
    subscription to an https:// receiver whose authority is in a trust store the size of the
    system's (and, on SQLite, one to a receiver that answers after a second), on SQLite and, with
    --postgres, on two instances sharing a PostgreSQL database; the first --baseline beside this
    build, interleaved. For each: the events delivered while the creates ran (from the receiver's
    log: each event's first arrival), the backlog when they ended and how long it took to drain
    (watched for --webhook-seconds more), each event's time from its commit to its receiver (p50,
    p99, max), the server's CPU per event (create and delivery) and the outbox's bookkeeping
    transactions a second (this build's metric)."""
    rows, results = [], []
    cert, key, bundle = webhook_pki(workdir)
    receiver, port, tls_port = start_webhook_receiver(workdir, cert, key)
    hooks_log = os.path.join(workdir, "receiver", "hooks.log")
    slow_port = free_port()
    slow = Server("slow receiver", [sys.executable, "-c", SLOW_RECEIVER, str(slow_port), "1"],
                  slow_port)
    builds = [(binary, "plantstore")]
    if args.baseline:
        builds.append((args.baseline, f"plantstore ({args.baseline_name})"))
    engines = ["sqlite"] + (["postgres"] if args.postgres else [])
    environment = dict(os.environ, SSL_CERT_FILE=bundle)
    seconds = args.webhook_seconds
    postgres = Postgres(workdir) if args.postgres else None
    key_file = os.path.join(workdir, "webhook.key")
    with open(key_file, "w") as f:
        f.write("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=\n")
    try:
        for engine in engines:
            setups = [(binary, "plantstore, no webhook", None)]
            for program, label in builds:
                setups.append((program, f"{label}, https:// webhook (system store)", "tls"))
            if engine == "sqlite":
                setups.append((binary, "plantstore, webhook to a 1 s receiver", "slow"))
            for program, name, kind in setups:
                index = len(results)
                path = f"/hook-{index}"
                url = {None: None, "tls": f"https://127.0.0.1:{tls_port}{path}",
                       "slow": f"http://127.0.0.1:{slow_port}{path}"}[kind]
                flags = ["--access-log", "off", "--webhook-allow-http", "on",
                         "--webhook-allow-private-addresses", "on"]
                if engine == "sqlite":
                    data_dir = os.path.join(workdir, f"webhooks-{index}")
                    token = mint_token(program, data_dir)
                    instances = [Server(name, [program, "serve", "--listen",
                                               f"127.0.0.1:{p}", "--data-dir", data_dir, *flags],
                                        p, env=environment) for p in [free_port()]]
                else:
                    database = postgres.database(f"hooks{index}")
                    token = mint_token(program, url=database)
                    instances = []
                    for suffix in ("", " 2nd"):
                        p = free_port()
                        instances.append(Server(
                            name + suffix,
                            [program, "serve", "--listen", f"127.0.0.1:{p}", "--data-dir",
                             os.path.join(workdir, "unused"), "--database-url", database,
                             "--webhook-key-file", key_file, *flags], p, env=environment))
                label = f"{engine}{', 2 instances' if engine == 'postgres' else ''}: {name}"
                try:
                    if url:
                        subscribe(instances[0], token, url)
                    group = Group(label, instances, postgres) if postgres and engine == "postgres" \
                        else None
                    target = group or instances[0]
                    instance_pids = lambda: [p for i in instances for p in i.pids()]
                    before = sum(store_counters(i).get("rows", 0) for i in instances)
                    ticks_before = cpu_ticks(instance_pids())
                    db_before = cpu_ticks(postgres.pids()) if group else 0
                    tx_before = (metric_sum(instances, "plantstore_webhook_outbox_transactions_total")
                                 if url and program == binary else None)
                    started = time.time()
                    row = run_wrk(target, 64, seconds, token, ids.take(), targets=instances)
                    ended = time.time()
                    row["workload"] = "POST /plants, webhooks"
                    rows.append(row)
                    # Plants the server stored (each one event), from its own counter: wrk does
                    # not count the answers still in flight when its time is up.
                    created = int(sum(store_counters(i).get("rows", 0) for i in instances)
                                  - before)
                    result = {"name": label, "engine": engine,
                              "creates_per_s": row["requests_per_s"], "created": created}
                    if group and not url:
                        result["db_cpu_us_per_create"] = (
                            (cpu_ticks(postgres.pids()) - db_before) / CLK_TCK * 1e6
                            / max(created, 1))
                    if url:
                        deadline = ended + seconds
                        drained_at = None
                        while time.time() < deadline:
                            time.sleep(0.25)
                            seen = arrivals(hooks_log, path) if kind == "tls" else None
                            count = (len(seen) if seen is not None else
                                     metric_sum(instances, DELIVERED))
                            if count >= created:
                                drained_at = time.time()
                                break
                            if kind == "slow":
                                break  # 4 at a time: it never drains; what was sent is enough
                        time.sleep(1.2)  # the receiver's log is flushed every second
                        finished = time.time()
                        ticks = cpu_ticks(instance_pids()) - ticks_before
                        if kind == "tls":
                            seen = arrivals(hooks_log, path)
                            during = [at for at in seen.values() if at <= ended * 1000]
                            waits = [at - int(i[4:16], 16) for i, at in seen.items()]
                            result.update({
                                "delivered_during_creates": len(during),
                                "ratio_during_creates": len(during) / max(created, 1),
                                "backlog_at_end": created - len(during),
                                "delivered": len(seen),
                                "drain_s": (drained_at - ended) if drained_at else None,
                                "left": created - len(seen),
                                "latency_p50_ms": percentile(waits, 0.5),
                                "latency_p99_ms": percentile(waits, 0.99),
                                "latency_max_ms": max(waits) if waits else 0.0,
                                "cpu_us_per_event": ticks / CLK_TCK * 1e6 / max(created, 1)})
                            if group:
                                result["db_cpu_us_per_event"] = (
                                    (cpu_ticks(postgres.pids()) - db_before) / CLK_TCK * 1e6
                                    / max(created, 1))
                            if tx_before is not None:
                                result["bookkeeping_per_s"] = (
                                    (metric_sum(instances,
                                                "plantstore_webhook_outbox_transactions_total")
                                     - tx_before) / (finished - started))
                        else:
                            result["delivered_during_creates"] = metric_sum(instances, DELIVERED)
                    results.append(result)
                    print(f"{label:>70} {row['requests_per_s']:>9,.0f} creates/s"
                          + (f", {result.get('ratio_during_creates', 0):.2f} delivered while "
                             "creating" if kind == "tls" else ""), file=sys.stderr)
                finally:
                    for instance in instances:
                        instance.stop()
        for engine in engines:
            alone = next(r for r in results if r["engine"] == engine
                         and r["name"].endswith("no webhook"))
            alone_row = next(row for row, r in zip(rows, results) if r is alone)
            alone["cpu_us_per_create"] = alone_row["cpu_us_per_request"]
            alone_db = alone.get("db_cpu_us_per_create", 0.0)
            for r in results:
                if r["engine"] == engine and "cpu_us_per_event" in r:
                    # The server's and the database's CPU per event, less a create's alone.
                    r["outbox_cpu_us_per_event"] = (
                        r["cpu_us_per_event"] + r.get("db_cpu_us_per_event", 0.0)
                        - alone["cpu_us_per_create"] - alone_db)
    finally:
        receiver.stop()
        slow.stop()
        if postgres:
            postgres.stop()
    return rows, {"webhooks": results, "webhook_seconds": seconds}


def webhook_table(extra):
    lines = ["| setup | creates/s | delivered while creating | backlog at the end | drained "
             "after | commit to receiver p50 / p99 / max | server CPU per event | the outbox's "
             "(server and database, beyond a create's) | bookkeeping transactions/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in extra["webhooks"]:
        if "delivered_during_creates" not in r:
            db = (f" (+{r['db_cpu_us_per_create']:.1f} µs PostgreSQL)"
                  if "db_cpu_us_per_create" in r else "")
            lines.append(f"| {r['name']} | {r['creates_per_s']:,.0f} | | | | | "
                         f"{r['cpu_us_per_create']:.1f} µs{db} (create alone) | | |")
            continue
        if "backlog_at_end" not in r:  # the slow receiver
            lines.append(f"| {r['name']} | {r['creates_per_s']:,.0f} | "
                         f"{r['delivered_during_creates']:,.0f} of {r['created']:,} | | | | | | |")
            continue
        drained = (f"{r['drain_s']:.1f} s" if r["drain_s"] is not None
                   else f"not in {extra['webhook_seconds']} s ({r['left']:,.0f} left)")
        db = (f" (+{r['db_cpu_us_per_event']:.1f} µs PostgreSQL)"
              if "db_cpu_us_per_event" in r else "")
        lines.append(
            f"| {r['name']} | {r['creates_per_s']:,.0f} | "
            f"{r['delivered_during_creates']:,.0f} of {r['created']:,} "
            f"({r['ratio_during_creates']:.2f}) | {r['backlog_at_end']:,.0f} | {drained} | "
            f"{r['latency_p50_ms']:,.0f} / {r['latency_p99_ms']:,.0f} / "
            f"{r['latency_max_ms']:,.0f} ms | {r['cpu_us_per_event']:.1f} µs{db} | "
            f"{r.get('outbox_cpu_us_per_event', 0):.1f} µs | "
            + (f"{r['bookkeeping_per_s']:.1f}" if "bookkeeping_per_s" in r else "") + " |")
    return "\n".join(lines)


def build_feed_tail(workdir):
    """The SSE client (bench/feed_tail.cpp), compiled for this run."""
    path = os.path.join(workdir, "feed_tail")
    subprocess.run(["c++", "-O2", "-std=c++20", "-o", path,
                    os.path.join(BENCH_DIR, "feed_tail.cpp")], check=True)
    return path


def start_tails(tail, server, token, streams, polls, seconds):
    """feed_tail holding `streams` SSE streams and `polls` waiting long polls; returns once all
    are open (the process keeps reading for `seconds`)."""
    process = subprocess.Popen([tail, str(server.port), token, str(streams), str(polls),
                                str(seconds)], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("OPEN"):
        sys.exit(f"feed_tail did not open its connections: {line}")
    return process


def tails_result(process, seconds):
    out = process.communicate(timeout=seconds + 60)[0]
    match = re.search(r"^RESULT (\{.*\})$", out, re.M)
    if not match:
        sys.exit(f"feed_tail printed no result:\n{out}")
    return json.loads(match.group(1))


def feed_rows(args, binary, workdir, ids):
    """Creates at 64 connections with no reader, then while 100 SSE clients tail the same tenant
    (what they received, and how long after each event's timestamp); with --baseline, the same
    rows on the baseline build, and with --postgres on PostgreSQL too, interleaved round by round
    (the CPU per create is the instance's own: PostgreSQL's is not counted here); then 1,000 idle streams and 1,000
    waiting long polls: memory, CPU while idle, and reads of plants meanwhile."""
    rows, extra = [], {}
    tail = build_feed_tail(workdir)
    builds = [(binary, "plantstore")]
    if args.baseline:
        builds.append((args.baseline, f"plantstore ({args.baseline_name})"))
    servers, tokens = [], {}
    postgres = Postgres(workdir) if args.postgres else None
    try:
        for index, (build, name) in enumerate(builds):
            data_dir = os.path.join(workdir, f"feed{index}")
            tokens[name] = mint_token(build, data_dir)
            servers.append(start_plantstore(build, data_dir, ["--access-log", "off"], name))
            if postgres:  # the same on PostgreSQL, a database per build
                url = postgres.database(f"feed{index}")
                pg_name = name.replace("plantstore", "plantstore-pg")
                tokens[pg_name] = mint_token(build, url=url)
                servers.append(start_plantstore(
                    build, data_dir + "-pg", ["--access-log", "off", "--database-url", url],
                    pg_name))
    except BaseException:
        for started in servers:
            started.stop()
        if postgres:
            postgres.stop()
        raise
    server, token = servers[0], tokens[servers[0].name]
    try:
        for round_, tails in enumerate((0, 100, 0, 100)):
            # Interleaved: neither the tailing rows nor either build always gets the warmer machine.
            for tailed in (servers if round_ % 2 == 0 else list(reversed(servers))):
                process = None
                if tails:
                    process = start_tails(tail, tailed, tokens[tailed.name], tails, 0,
                                          args.duration + 3)
                    time.sleep(1)
                row = run_wrk(tailed, 64, args.duration, tokens[tailed.name], ids.take())
                row["workload"] = f"POST /plants, {tails} SSE clients tailing"
                if process:
                    seen = tails_result(process, args.duration + 3)
                    row["feed"] = seen
                    print(f"  {tailed.name} {tails} tails: {seen}", file=sys.stderr)
                rows.append(row)
                print(f"{tailed.name:>24} {row['workload']:>40} {row['requests_per_s']:>9,.0f} "
                      f"req/s {row['cpu_us_per_request']:.1f} µs/req", file=sys.stderr)
        # Idle readers: memory and CPU with 1,000 streams and 1,000 long polls open.
        rss_before = memory_kib(server.pids(), "VmRSS") / 1024
        reads_alone = run_wrk(server, 16, 5, token, rows[0]["first_id"], "GET /plants/{id}",
                              "get", 100)
        process = start_tails(tail, server, token, 1000, 1000, 30)
        time.sleep(2)
        ticks = cpu_ticks(server.pids())
        time.sleep(10)
        idle_cpu_s = (cpu_ticks(server.pids()) - ticks) / CLK_TCK
        rss_open = memory_kib(server.pids(), "VmRSS") / 1024
        reads_beside = run_wrk(server, 16, 5, token, rows[0]["first_id"], "GET /plants/{id}",
                               "get", 100)
        held = tails_result(process, 30)
        extra.update({
            "idle_streams": 1000, "idle_long_polls": 1000,
            "idle_rss_before_mib": rss_before, "idle_rss_open_mib": rss_open,
            "idle_cpu_seconds_per_10s": idle_cpu_s,
            "reads_alone_per_s": reads_alone["requests_per_s"],
            "reads_alone_p99_ms": reads_alone["p99_ms"],
            "reads_beside_idle_per_s": reads_beside["requests_per_s"],
            "reads_beside_idle_p99_ms": reads_beside["p99_ms"],
            "idle_clients_closed": held["closed"]})
        print(f"idle: {extra}", file=sys.stderr)
    finally:
        for started in servers:
            started.stop()
        if postgres:
            postgres.stop()
    return rows, extra


def quota_rows(args, binary, workdir, ids):
    """Creates at 64 connections without a quota and with one no create reaches
    (--max-plants-per-tenant 10^12, so every create is checked against it and none is refused),
    interleaved, on SQLite and, with --postgres, on PostgreSQL."""
    quota = ["--max-plants-per-tenant", str(10**12)]
    rows = []
    engines = [("sqlite", None)]
    postgres = Postgres(workdir) if args.postgres else None
    started = []
    try:
        if postgres:
            engines.append(("pg", postgres.database("quota")))
        for engine, url in engines:
            servers = []
            for name, extra in (("no quota", []), ("quota", quota)):
                data_dir = os.path.join(workdir, f"quota-{engine}-{name.replace(' ', '-')}")
                store = ["--database-url", url] if url else []
                token = mint_token(binary, data_dir) if not url else mint_token(binary, url=url)
                server = start_plantstore(binary, data_dir, ["--access-log", "off", *store, *extra],
                                          f"{engine} {name}")
                started.append(server)
                servers.append((server, token))
            for _ in range(3):  # interleaved: neither always gets the warmer machine
                for server, token in servers:
                    row = run_wrk(server, 64, args.duration, token, ids.take())
                    row["workload"] = f"POST /plants, {server.name}"
                    rows.append(row)
                    print(f"{row['workload']:>40} {row['requests_per_s']:>9,.0f} req/s "
                          f"{row['cpu_us_per_request']:.1f} µs/req", file=sys.stderr)
            for server, _ in servers:
                server.stop()
    finally:
        for server in started:
            server.stop()
        if postgres:
            postgres.stop()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", default="1,16,64,256")
    parser.add_argument("--scaling", action="store_true",
                        help="also measure stores of 1M and 10M plants (with --postgres, on "
                             "PostgreSQL too) and idle connections")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of the POST, GET and PATCH rows (servers interleaved in "
                             "each); the table shows each row's median round")
    parser.add_argument("--preload", type=int, default=10_000_000)
    parser.add_argument("--tag-lists", action="store_true",
                        help="also measure tag-filtered lists on stores of --preload plants, "
                             "beside the baseline (on PostgreSQL too with --postgres)")
    parser.add_argument("--tracing", action="store_true",
                        help="also measure the cost of tracing (off, ratio 0.01 and 1.0 to a "
                             "collector, 64 conns; the first --baseline beside them)")
    parser.add_argument("--logging", action="store_true",
                        help="also measure the cost of access logging (on vs off, 64 conns)")
    parser.add_argument("--postgres", action="store_true",
                        help="also measure instances on a throwaway PostgreSQL (one, two, and "
                             "one committing each request alone)")
    parser.add_argument("--webhooks", action="store_true",
                        help="also measure creates with one webhook subscription (http://, "
                             "https:// trusted through a system-size store, a 1 s receiver; the "
                             "first --baseline beside them): the backlog at the end, how long it "
                             "takes to drain, deliveries/s and the server's CPU per delivery")
    parser.add_argument("--webhook-seconds", type=int, default=60,
                        help="how long the --webhooks rows create, and watch the backlog after")
    parser.add_argument("--feed", action="store_true",
                        help="also measure creates while 100 SSE clients tail the change feed, "
                             "and 1,000 idle streams plus 1,000 waiting long polls")
    parser.add_argument("--quota", action="store_true",
                        help="also measure creates with a quota of plants per tenant set against "
                             "none (on PostgreSQL too with --postgres)")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another plantstore binary (an older build) measured beside this "
                             "one, interleaved, in the same rows (not with --scaling); repeat it "
                             "to bisect: the main rows then hold every baseline, the --postgres, "
                             "--webhooks, --quota and --feed rows the first")
    parser.add_argument("--baseline-name", action="append", default=[],
                        help="how the baseline's rows are labelled (e.g. its commit), one per "
                             "--baseline in the same order")
    parser.add_argument("--out", default=os.path.join(BENCH_DIR, "results", "latest.json"))
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    if len(args.baseline_name) > len(args.baseline):
        parser.error("more --baseline-name than --baseline")
    baselines = [(os.path.abspath(path), args.baseline_name[i] if i < len(args.baseline_name)
                  else f"baseline {i + 1}" if len(args.baseline) > 1 else "baseline")
                 for i, path in enumerate(args.baseline)]
    # The other sections compare with the first baseline.
    args.baseline, args.baseline_name = baselines[0] if baselines else (None, None)
    # SIGTERM (e.g. from timeout) unwinds like Ctrl-C, so the finally below stops our servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1:] * 2)
    workdir = tempfile.mkdtemp(prefix="plantstore-bench-")
    ids = IdRanges(10**12)
    rows, extra = [], {}
    servers = []
    try:
        data_dir = os.path.join(workdir, "data")
        token = mint_token(binary, data_dir)
        # Each server is listed as soon as it runs, so that the finally below stops it even when
        # the next one fails to start (nginx missing left plantstore running).
        plantstore = start_plantstore(binary, data_dir)
        servers.append(plantstore)
        nginx = start_nginx(workdir)
        servers.append(nginx)
        tokens = {plantstore.name: token, nginx.name: token}
        for index, (base_binary, base_name) in enumerate(baselines):
            base_dir = os.path.join(workdir, f"baseline{index}")
            base_token = mint_token(base_binary, base_dir)
            baseline = start_plantstore(base_binary, base_dir, name=f"plantstore ({base_name})")
            servers.insert(1 + index, baseline)
            tokens[baseline.name] = base_token
        post_rows = []
        for round_index in range(args.rounds):
            for conns in [int(c) for c in args.connections.split(",")]:
                # Alternate which goes first, so none always gets the warmer machine.
                order = servers if (conns + round_index) % 2 == 0 else list(reversed(servers))
                for server in order:
                    post_rows.append(run_wrk(server, conns, args.duration, tokens[server.name],
                                             ids.take()))
                    print(f"{server.name:>10} c={conns:<4} "
                          f"{post_rows[-1]['requests_per_s']:>9,.0f} req/s", file=sys.stderr)
        rows += median_rows(post_rows)
        # Reads of plants the c=1 row created (all of them exist), then pages of a listing.
        readers = [server for server in servers if server.name != "nginx"]
        firsts = {server.name: next(r for r in rows if r["server"] == server.name)
                  for server in readers}
        created = min(r["requests"] - r["non200"] for r in firsts.values())
        if created > 0:
            # Like the POST rows: --rounds rounds, the servers' order alternating, each row the
            # median round (a single pass in a fixed order favoured whoever ran first).
            patching = [server for server in servers
                        if server.name == "nginx" or supports_patch(
                            server, tokens[server.name], firsts[server.name]["first_id"] + 1)]
            read_rows = []
            for round_index in range(args.rounds):
                for workload, mode in (("GET /plants/{id}", "get"),
                                       ("GET /plants?limit=100", "list"),
                                       ("PATCH /plants/{id}", "patch")):
                    # An older build without PATCH /plants/{id} has no PATCH row.
                    measured = patching if mode == "patch" else servers
                    order = measured if round_index % 2 == 0 else list(reversed(measured))
                    for server in order:
                        first = firsts.get(server.name, firsts[plantstore.name])
                        row = run_wrk(server, 64, args.duration, tokens[server.name],
                                      first["first_id"], workload, mode, created)
                        read_rows.append(row)
                        print(f"{server.name:>10} {workload} {row['requests_per_s']:>9,.0f} "
                              "req/s", file=sys.stderr)
            rows += median_rows(read_rows)
        for server in servers:
            server.stop()
        servers = []
        if args.postgres:
            rows += postgres_rows(args, binary, workdir, ids,
                                  [int(c) for c in args.connections.split(",") if int(c) > 1])
        if args.tag_lists:
            rows += tag_list_rows(args, binary, workdir)
        if args.scaling:
            extra = scaling(args, binary, workdir, ids)
        if args.logging:
            extra.update(logging_cost(args, binary, workdir, ids))
        if args.tracing:
            extra.update(tracing_cost(args, binary, workdir, ids, args.baseline))
        if args.webhooks:
            webhook_measured, webhook_extra = webhook_rows(args, binary, workdir, ids)
            rows += webhook_measured
            extra.update(webhook_extra)
        if args.quota:
            rows += quota_rows(args, binary, workdir, ids)
        if args.feed:
            feed_table, feed_extra = feed_rows(args, binary, workdir, ids)
            rows += feed_table
            extra.update(feed_extra)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    machine = f"{os.cpu_count()} cores, {os.uname().release}"
    print(f"\nMachine: {machine}; wrk -t1, {args.duration} s per row, POST /plants with unique "
          "bodies; plantstore durable (WAL, fsync before 200).\n")
    print(markdown_table(rows))
    if args.rounds > 1:
        print(f"\nPOST, GET and PATCH rows: the median of {args.rounds} rounds (each row's figures "
              "from that round); req/s of every round in the JSON (requests_per_s_all).")
    commits = commit_table(rows)
    if commits:
        print("\nGroup commit (plantstore's /metrics during each POST row):\n")
        print(commits)
    if "tracing" in extra:
        off = extra["tracing"]["tracing off"]
        print("\nTracing (64 connections, creates, median of three interleaved rounds; spans to "
              "nginx answering POST /v1/traces):\n")
        print("| setup | req/s | vs off | CPU µs/req | spans exported | spans dropped |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, row in extra["tracing"].items():
            print(f"| {name} | {row['requests_per_s']:,.0f} | "
                  f"{row['requests_per_s'] / off['requests_per_s']:.2f} | "
                  f"{row['cpu_us_per_request']:.1f} | {row['spans_exported']:,.0f} | "
                  f"{row['spans_dropped']:,.0f} |")
    if "access_log_cost" in extra:
        print(f"\nAccess logging (64 connections, three rounds each, logs to a file): on "
              f"{extra['access_log_on_requests_per_s']:,.0f} req/s, off "
              f"{extra['access_log_off_requests_per_s']:,.0f} req/s: costs "
              f"{extra['access_log_cost']:.1%} of throughput.")
    if "throughput_ratio" in extra:
        print(f"\nScaling (64 connections): empty store {extra['throughput_0']['requests_per_s']:,.0f}"
              f" req/s; {args.preload:,} plants {extra[f'throughput_{args.preload}']['requests_per_s']:,.0f}"
              f" req/s ({extra['throughput_ratio']:.0%}); ready to serve in "
              f"{extra[f'throughput_{args.preload}']['ready_seconds']:.2f} s with {args.preload:,} "
              f"plants. Idle connections add {extra['idle_1000_added_mib']:.1f} MiB (1,000) and "
              f"{extra['idle_10000_added_mib']:.1f} MiB (10,000).")
    if "rows" in extra:
        print("\nBy store size (64 connections; the plants preloaded, then each workload "
              f"{args.duration} s):\n")
        print(scaling_table(extra["rows"]))
    if "webhooks" in extra:
        print(f"\nWebhooks (creates at 64 connections for {extra['webhook_seconds']} s, one "
              "subscription; the backlog watched as long again):\n")
        print(webhook_table(extra))
    for name in dict.fromkeys(r["server"] for r in rows if "feed" in r):
        tailed = [r for r in rows if "feed" in r and r["server"] == name]
        alone = [r for r in rows if r["workload"].startswith("POST /plants, 0 SSE")
                 and r["server"] == name]
        mean = lambda rs: sum(r["requests_per_s"] for r in rs) / len(rs)
        print(f"\nChange feed ({name}): creates at 64 connections {mean(alone):,.0f}/s alone, "
              f"{mean(tailed):,.0f}/s while 100 SSE clients tail the tenant "
              f"({mean(tailed) / mean(alone):.0%}); event timestamp to client p50 "
              + ", ".join(f"{r['feed']['p50_ms']:.1f}" for r in tailed) + " ms, p99 "
              + ", ".join(f"{r['feed']['p99_ms']:.1f}" for r in tailed) + " ms; each client got "
              + ", ".join(f"{r['feed']['least_per_stream']:,}-{r['feed']['most_per_stream']:,}"
                          for r in tailed) + " events.")
    if "idle_streams" in extra:
        print(f"\nIdle feed readers: 1,000 SSE streams and 1,000 long polls open take RSS from "
              f"{extra['idle_rss_before_mib']:.1f} to {extra['idle_rss_open_mib']:.1f} MiB and "
              f"{extra['idle_cpu_seconds_per_10s']:.2f} s of CPU per 10 s; reads of plants "
              f"(16 connections) {extra['reads_alone_per_s']:,.0f}/s p99 "
              f"{extra['reads_alone_p99_ms']:.2f} ms alone, {extra['reads_beside_idle_per_s']:,.0f}/s "
              f"p99 {extra['reads_beside_idle_p99_ms']:.2f} ms beside them.")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"machine": machine, "duration_s": args.duration, "rows": rows,
                   "scaling": extra}, f, indent=2)
    print(f"\nJSON: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
