#!/usr/bin/python3
"""The Prometheus rules that ship (deploy/prometheus/plantstore.rules.yml) are valid, fire and
stay silent as their tests say, and use only metrics the real binary serves.

Usage: rules_test.py PLANTSTORE_BINARY SOURCE_DIR PROMTOOL WORK_DIR

promtool is Debian's (the `prometheus` package's), unpacked by scripts/install-deps.sh --tests
rather than installed, since installing the package would start a system-wide Prometheus.
"""

import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.request

binary, source_dir, promtool, work = sys.argv[1:5]
rules_dir = os.path.join(source_dir, "deploy", "prometheus")
failures = []


def run(*args):
    result = subprocess.run([promtool, *args], cwd=rules_dir, capture_output=True, text=True,
                            timeout=120)
    print(result.stdout + result.stderr)
    if result.returncode != 0:
        failures.append("promtool " + " ".join(args))


if not os.access(promtool, os.X_OK):
    sys.exit("no promtool at %s: run scripts/install-deps.sh --tests" % promtool)
run("check", "rules", "plantstore.rules.yml")
run("test", "rules", "plantstore.rules.test.yml")

# Every metric the rules read is one the server exposes (after a create, so that each family
# has its samples): a renamed metric would leave an alert that can never fire. The server speaks
# TLS (a certificate made here) and exports spans (to a port nobody listens on), so that the
# families those add are there too.
with open(os.path.join(rules_dir, "plantstore.rules.yml")) as f:
    used = {name for name in re.findall(r"\b(plantstore_[a-z_]+|process_[a-z_]+)\b", f.read())}
os.makedirs(work, exist_ok=True)
data = tempfile.mkdtemp(prefix="rules-", dir=work)
token = subprocess.run([binary, "token", "create", "--name", "rules", "--data-dir", data],
                       check=True, capture_output=True, text=True).stdout.strip()
cert, key = os.path.join(data, "cert.pem"), os.path.join(data, "key.pem")
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1", "-days", "1",
                "-keyout", key, "-out", cert], check=True, capture_output=True)
with socket.socket() as unused:  # a port nobody listens on, for the span exports
    unused.bind(("127.0.0.1", 0))
    collector = "http://127.0.0.1:%d" % unused.getsockname()[1]
server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data,
                           "--tls-cert", cert, "--tls-key", key, "--otlp-endpoint", collector],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
try:
    address = re.search(r"listening on (https://\S+)", server.stdout.readline()).group(1)
    tls = ssl.create_default_context(cafile=cert)
    request = urllib.request.Request(address + "/plants", data=b'{"id":1,"name":"Fern"}',
                                     headers={"Authorization": "Bearer " + token,
                                              "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10, context=tls).read()
    exposed = urllib.request.urlopen(address + "/metrics", timeout=10, context=tls).read().decode()
finally:
    server.terminate()
    server.wait(timeout=30)
families = set(re.findall(r"^# TYPE (\S+) ", exposed, re.MULTILINE))
for name in sorted(used):
    family = re.sub(r"_(bucket|sum|count)$", "", name)
    if name not in families and family not in families:
        failures.append("the rules read %s, which /metrics does not expose" % name)
print("%d metrics the rules read, all exposed" % len(used) if not failures else "")
if failures:
    print("FAILED:\n" + "\n".join(failures))
    sys.exit(1)
