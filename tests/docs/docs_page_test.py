#!/usr/bin/python3
"""The API page ({base}/docs) in Debian's headless Chromium, driven by Debian's python3-selenium,
against the real binary: it loads with no console errors and no failed requests, lists every
operation of the served document, creates, lists, reads and deletes a plant through its "Try it"
panels, shows a wrong token's 401 Error body, carries a strict Content-Security-Policy that
nothing violates, stays within 100 KB and fits a phone-sized screen. Writes docs-page.png (and
docs-page-phone.png) to WORK_DIR. Usage: docs_page_test.py PLANTSTORE WORK_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as wait_for
from selenium.webdriver.support.ui import WebDriverWait

binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
os.makedirs(work, exist_ok=True)
data = tempfile.mkdtemp(prefix="docs-data-", dir=work)
failures = []


def check(condition, what):
    print(("ok: " if condition else "FAILED: ") + what, flush=True)
    if not condition:
        failures.append(what)


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


token = subprocess.run([binary, "token", "--data-dir", data, "create", "--name", "docs-test"],
                       check=True, capture_output=True, text=True).stdout.strip()
log = open(os.path.join(work, "server.log"), "w+")
server = subprocess.Popen([binary, "serve", "--data-dir", data, "--listen", "127.0.0.1:0"],
                          stdout=log, stderr=log)
driver = None
try:
    base = None
    for _ in range(300):  # at most 30 s
        log.seek(0)
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read())
        if found:
            base = found.group(1)
            break
        if server.poll() is not None:
            break
        time.sleep(0.1)
    if base is None:
        raise SystemExit("the server did not start")

    status, headers, page = fetch(base + "/docs")
    csp = headers.get("Content-Security-Policy", "")
    check(status == 200 and headers.get("Content-Type", "").startswith("text/html"),
          "GET /docs is an HTML page without a token")
    check("script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe" not in csp,
          "the page carries a strict Content-Security-Policy: " + csp)
    total = len(page) + len(fetch(base + "/docs/docs.js")[2]) + len(fetch(base + "/docs/docs.css")[2])
    check(total < 100 * 1024, f"the page and its files weigh {total:,} bytes (under 100 KB)")
    document = json.loads(fetch(base + "/openapi.json")[2])
    methods = {"get", "post", "put", "patch", "delete", "options", "head"}
    expected = sorted(f"{m.upper()} {p}" for p, item in document["paths"].items() for m in item
                      if m in methods)

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-", dir=work),
                 "--window-size=1280,2400"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    driver.get(base + "/docs")
    wait = WebDriverWait(driver, 20)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "details.operation"))
    listed = sorted(f"{e.get_attribute('data-method').upper()} {e.get_attribute('data-path')}"
                    for e in driver.find_elements(By.CSS_SELECTOR, "details.operation"))
    check(listed == expected, f"every operation of the document is listed ({len(listed)})")
    check(bool(driver.find_elements(By.CSS_SELECTOR, "#webhooks:not([hidden]) details.webhook")),
          "the document's webhook is shown")
    check("bearerAuth" in driver.find_element(By.ID, "security").text,
          "the security scheme is shown")
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    check(not errors, f"the page loaded with no console errors or failed requests {errors}")

    def operation(method, path):
        section = driver.find_element(
            By.CSS_SELECTOR, f'details.operation[data-method="{method}"][data-path="{path}"]')
        if section.get_attribute("open") is None:
            section.find_element(By.TAG_NAME, "summary").click()
        return section

    def send(section, fields=None, body=None):
        for name, value in (fields or {}).items():
            field = section.find_element(By.CSS_SELECTOR, f'form.try input[name="{name}"]')
            field.clear()
            field.send_keys(value)
        if body is not None:
            area = section.find_element(By.CSS_SELECTOR, "form.try textarea")
            area.clear()
            area.send_keys(body)
        old = section.find_elements(By.CSS_SELECTOR, ".result .status")
        section.find_element(By.CSS_SELECTOR, "form.try button[type=submit]").click()
        if old:
            wait.until(wait_for.staleness_of(old[0]))
        status = wait.until(lambda d: section.find_element(By.CSS_SELECTOR, ".result .status"))
        return status.text, section.find_element(By.CSS_SELECTOR, ".result .response-body").text

    token_field = driver.find_element(By.ID, "token")
    check(driver.find_element(By.CSS_SELECTOR, 'label[for="token"]').is_displayed(),
          "the token field has a label")
    token_field.send_keys(token)
    create = operation("post", "/plants")
    prefilled = create.find_element(By.CSS_SELECTOR, "form.try textarea").get_attribute("value")
    check('"name"' in prefilled and '"id"' in prefilled, "the create body is pre-filled from the schema")
    status, body = send(create, body='{"id": 7, "name": "Fern", "tag": "green"}')
    check(status.startswith("Status 200") and '"Fern"' in body,
          f"creating a plant through the panel shows 200 and the plant ({status})")
    check("curl -i -X POST" in create.find_element(By.CSS_SELECTOR, ".result .curl").text,
          "the equivalent curl command is shown")
    status, body = send(operation("get", "/plants"), {"limit": "10"})
    check(status.startswith("Status 200") and '"Fern"' in body, "listing shows the plant")
    status, body = send(operation("get", "/plants/{id}"), {"id": "7"})
    check(status.startswith("Status 200") and '"green"' in body, "reading it shows the plant")
    status, body = send(operation("delete", "/plants/{id}"), {"id": "7"})
    check(status.startswith("Status 204"), f"deleting it shows 204 ({status})")
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    check(not errors, f"no console errors while using the panels {errors}")

    token_field.clear()
    token_field.send_keys("ps_wrong")
    status, body = send(operation("get", "/plants"), {"limit": "10"})
    check(status.startswith("Status 401") and '"error": 401' in body,
          f"a wrong token shows the 401 Error body ({status})")
    entries = driver.get_log("browser")
    violations = [e for e in entries if "Content Security Policy" in e["message"]]
    check(not violations, f"nothing violated the Content-Security-Policy {violations}")
    unexpected = [e for e in entries if e["level"] == "SEVERE" and "401" not in e["message"]]
    check(not unexpected, f"the only console error is the deliberate 401 {unexpected}")
    stored = driver.execute_script(
        "return JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage), document.cookie])")
    check(stored == '[[],[],""]', "the token is in no storage and no cookie " + stored)
    driver.save_screenshot(os.path.join(work, "docs-page.png"))

    driver.set_window_size(390, 844)
    time.sleep(0.3)
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    check(overflow <= 0, f"nothing is wider than a phone-sized screen ({overflow} px over)")
    driver.save_screenshot(os.path.join(work, "docs-page-phone.png"))
finally:
    if driver is not None:
        driver.quit()
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(data, ignore_errors=True)
print(f"screenshots: {work}/docs-page.png, {work}/docs-page-phone.png")
sys.exit(1 if failures else 0)
