#!/usr/bin/python3
"""The API page ({base}/docs) in Debian's headless Chromium, driven by Debian's python3-selenium,
against the real binary: it loads with no console errors and no failed requests; it renders the
document's Markdown (no backticks or ** left as typed) and shows a hostile description's HTML as
text without running it; it has a section per tag holding each of that tag's operations once
(CORS preflights folded into one line per path) and a sidebar whose links land on their
sections; it creates, lists, reads, PATCHes with If-Match (and a stale one's 412), long-polls
the change feed and deletes through its "Try it" panels, with curl examples that never show the
pasted token (only $TOKEN); it shows a wrong token's 401 Error body, carries a strict Content-Security-Policy that
nothing violates, stays within 150 KB and fits a phone-sized screen with its contents folded.
Writes docs-page.png and docs-page-phone.png to WORK_DIR. Usage: docs_page_test.py PLANTSTORE
WORK_DIR"""
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
    total = len(page) + sum(len(fetch(base + "/docs/" + name)[2])
                            for name in ("docs.js", "docs.css", "marked.js"))
    check(total < 150 * 1024, f"the page and its files weigh {total:,} bytes (under 150 KB)")
    document = json.loads(fetch(base + "/openapi.json")[2])
    methods = {"get", "post", "put", "patch", "delete", "head"}
    # A HEAD beside a GET is shown on the GET's card ("GET, HEAD"), not as a card of its own.
    expected = sorted(f"{m.upper()} {p}" for p, item in document["paths"].items() for m in item
                      if m in methods and not (m == "head" and "get" in item))
    twins = sorted(p for p, item in document["paths"].items() if "get" in item and "head" in item)
    check(len(twins) >= 5, f"the document declares HEAD beside GET ({len(twins)} paths)")
    check(re.search(r'<details id="toc"(?! open)[^>]*>', page.decode()) is not None,
          "the contents start folded, before any script runs")
    preflights = sorted(p for p, item in document["paths"].items() if "options" in item)

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
    wait = WebDriverWait(driver, 20)

    # A hostile description: the page is handed a document whose texts hold HTML and a
    # javascript: link (a script the browser runs before the page's own changes what fetch
    # returns). All of it must show as text or vanish, and nothing may run.
    hostile = ('Hostile <script>window.__ran = 1</script> <img src=x onerror="window.__ran = 2"> '
               '[a link](javascript:window.__ran=3) and **bold**')
    injected = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
      const original = window.fetch;
      window.fetch = async (...args) => {
        const response = await original(...args);
        if (!String(args[0]).endsWith("/openapi.json")) return response;
        const doc = await response.json();
        doc.info.description = %s + "\\n\\n" + doc.info.description;
        doc.paths["/plants"].post.description = %s;
        return new Response(JSON.stringify(doc), {status: 200, headers: {"Content-Type": "application/json"}});
      };""" % (json.dumps(hostile), json.dumps(hostile))})
    driver.get(base + "/docs")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "details.operation"))
    summary = driver.find_element(By.ID, "summary")
    check('<script>window.__ran = 1</script>' in summary.text and 'onerror="window.__ran = 2"' in summary.text,
          "HTML in a description is shown as text")
    check(driver.execute_script("return window.__ran === undefined"), "nothing in a description ran")
    check(not driver.find_elements(By.CSS_SELECTOR, "#content img, #content script, a[href^='javascript']"),
          "no image, script or javascript: link came from a description")
    check([e.text for e in summary.find_elements(By.TAG_NAME, "strong")] == ["bold"],
          "Markdown emphasis is rendered")
    violations = [e for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]
    check(not violations, f"the hostile text violated no Content-Security-Policy {violations}")
    driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", injected)

    driver.get(base + "/docs")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "details.operation"))
    listed = sorted(f"{e.get_attribute('data-method').upper()} {e.get_attribute('data-path')}"
                    for e in driver.find_elements(By.CSS_SELECTOR, "details.operation"))
    check(listed == expected, f"every operation but the preflights and HEAD twins is listed once ({len(listed)})")
    shown_twins = sorted(e.get_attribute("data-path") for e in driver.find_elements(
        By.CSS_SELECTOR, "details.operation[data-methods='get head']"))
    check(shown_twins == twins, f"each HEAD twin is shown with its GET ({len(shown_twins)})")
    labels = {e.find_element(By.CSS_SELECTOR, "summary .method").text for e in driver.find_elements(
        By.CSS_SELECTOR, "details.operation[data-methods='get head']")}
    check(labels == {"GET, HEAD"}, f"a twin's card says GET, HEAD ({labels})")
    toc_twins = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#toc-list .method-text")
                 if e.text == "GET, HEAD"]
    check(len(toc_twins) == len(twins), f"the contents list them as GET, HEAD ({len(toc_twins)})")
    check(driver.find_element(By.ID, "toc").get_attribute("open") is not None,
          "at 1280 px the contents are open beside the text")
    folded = sorted(e.text.split(" ")[1].rstrip(":")
                    for e in driver.find_elements(By.CSS_SELECTOR, ".preflights li"))
    check(folded == preflights, f"each CORS preflight is one line ({len(folded)} paths)")
    misplaced = driver.execute_script("""
      return [...document.querySelectorAll("details.operation")].filter((op) => {
        const section = op.closest("section.tag");
        return !section;
      }).length""")
    for tag in document["tags"]:
        section = driver.find_elements(By.ID, "tag-" + tag["name"])
        tagged = sorted(f"{m.upper()} {p}" for p, item in document["paths"].items()
                        for m, o in item.items() if m in methods and o.get("tags", [None])[0] == tag["name"]
                        and not (m == "head" and "get" in item))
        inside = sorted(f"{e.get_attribute('data-method').upper()} {e.get_attribute('data-path')}"
                        for e in (section[0].find_elements(By.CSS_SELECTOR, "details.operation") if section else []))
        check(bool(section) and inside == tagged, f"the tag {tag['name']} has a section with its {len(tagged)} operations")
    check(misplaced == 0, "every operation sits in its tag's section")
    text = driver.execute_script("""
      const copy = document.getElementById("content").cloneNode(true);
      copy.querySelectorAll("pre, textarea, input, script").forEach((node) => node.remove());
      return copy.textContent""")
    check("`" not in text and "**" not in text, "no Markdown syntax is left as typed (` or **)")
    check(bool(driver.find_elements(By.CSS_SELECTOR, "#summary code")) and
          bool(driver.find_elements(By.CSS_SELECTOR, "details.operation .prose code")),
          "code spans in descriptions are rendered as code")
    marks = driver.execute_script("""
      const marks = {};
      const list = document.querySelector('details.operation[data-method="get"][data-path="/plants"]');
      for (const term of list.querySelectorAll("dl.headers dt")) {
        const name = term.querySelector("code").textContent;
        marks[name] = term.querySelector(".required") !== null;
      }
      return marks""")
    check(marks.get("WWW-Authenticate") is True and marks.get("Link") is False,
          f"a header the document marks required is marked, and one it does not is not ({marks})")
    for link in driver.find_elements(By.CSS_SELECTOR, "#toc-list a.tag-link"):
        target = link.get_attribute("href").split("#")[1]
        link.click()
        top, at_end = driver.execute_script(f"""
          const box = document.getElementById('{target}').getBoundingClientRect();
          const end = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1;
          return [box.top, end && box.top < window.innerHeight]""")
        check(-2 <= top <= 40 or at_end,
              f"the sidebar's link to {target} lands on it ({top:.0f} px from the top)")
    sidebar = driver.execute_script("return document.getElementById('toc').getBoundingClientRect().top")
    check(-2 <= sidebar <= 40, f"the sidebar follows the scroll ({sidebar:.0f} px from the top)")
    driver.execute_script("window.scrollTo(0, 0)")
    check(bool(driver.find_elements(By.CSS_SELECTOR, "#events:not([hidden]) details.webhook")),
          "the document's webhooks are shown")
    for event in ("plant.created", "plant.updated", "plant.deleted"):
        block = driver.find_elements(By.ID, "event-" + event.replace(".", "-"))
        example = block[0].find_element(By.CSS_SELECTOR, "pre.example").get_attribute("textContent") if block else ""
        check(f'"type": "{event}"' in example, f"the event {event} has an example envelope")
    events_text = driver.find_element(By.ID, "events").get_attribute("textContent")
    check("openssl dgst -sha256 -mac HMAC" in events_text, "how to verify a signature is shown")
    check("application/json" in events_text and "text/event-stream" in events_text,
          "the change feed's two representations are shown")
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
    example = create.find_element(By.CSS_SELECTOR, "pre.curl-example").text
    check(token not in example and "Authorization: Bearer $TOKEN" in example,
          "the curl example never shows the pasted token in clear, only $TOKEN")
    prefilled = create.find_element(By.CSS_SELECTOR, "form.try textarea").get_attribute("value")
    check('"name"' in prefilled and '"id"' in prefilled, "the create body is pre-filled from the schema")
    status, body = send(create, body='{"id": 7, "name": "Fern", "tag": "green"}')
    check(status.startswith("Status 200") and '"Fern"' in body,
          f"creating a plant through the panel shows 200 and the plant ({status})")
    shown = create.find_element(By.CSS_SELECTOR, ".result .curl").text
    check("curl -i -X POST" in shown and token not in shown,
          "the equivalent curl command is shown, without the token")
    status, body = send(operation("get", "/plants"), {"limit": "10"})
    check(status.startswith("Status 200") and '"Fern"' in body, "listing shows the plant")
    read = operation("get", "/plants/{id}")
    status, body = send(read, {"id": "7"})
    check(status.startswith("Status 200") and '"green"' in body, "reading it shows the plant")
    etag = re.search(r"^etag: (.+)$", read.find_element(By.CSS_SELECTOR, ".result .response-headers").text,
                     re.MULTILINE)
    check(etag is not None, "the read shows its ETag")
    patch = operation("patch", "/plants/{id}")
    status, body = send(patch, {"id": "7", "If-Match": etag.group(1) if etag else ""}, '{"tag": "blue"}')
    check(status.startswith("Status 200") and '"blue"' in body, f"a PATCH with If-Match shows 200 ({status})")
    status, body = send(patch, {"id": "7", "If-Match": etag.group(1) if etag else ""}, '{"tag": "red"}')
    check(status.startswith("Status 412"), f"the same If-Match again shows 412 ({status})")
    status, body = send(operation("get", "/events"), {"after": "0", "wait": "2"})
    check(status.startswith("Status 200") and '"plant.updated"' in body,
          f"a long poll of the change feed shows the events ({status})")
    status, body = send(operation("delete", "/plants/{id}"), {"id": "7"})
    check(status.startswith("Status 204"), f"deleting it shows 204 ({status})")
    errors = [entry for entry in driver.get_log("browser")
              if entry["level"] == "SEVERE" and "412" not in entry["message"]]
    check(not errors, f"no console errors while using the panels but the deliberate 412 {errors}")

    token_field.clear()
    token_field.send_keys("ps_wrong")
    status, body = send(operation("get", "/plants"), {"limit": "10"})
    check(status.startswith("Status 401") and '"error": 401' in body,
          f"a wrong token shows the 401 Error body ({status})")
    entries = driver.get_log("browser")
    violations = [e for e in entries if "Content Security Policy" in e["message"]]
    check(not violations, f"nothing violated the Content-Security-Policy {violations}")
    unexpected = [e for e in entries if e["level"] == "SEVERE" and "401" not in e["message"]
                  and "412" not in e["message"]]
    check(not unexpected, f"the only console errors are the deliberate 401 and 412 {unexpected}")
    stored = driver.execute_script(
        "return JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage), document.cookie])")
    check(stored == '[[],[],""]', "the token is in no storage and no cookie " + stored)
    driver.save_screenshot(os.path.join(work, "docs-page.png"))

    driver.set_window_size(390, 844)
    time.sleep(0.3)
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    check(overflow <= 0, f"nothing is wider than a phone-sized screen ({overflow} px over)")
    driver.get(base + "/docs")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "details.operation"))
    check(driver.find_element(By.ID, "toc").get_attribute("open") is None,
          "on a phone the contents are folded away")
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    check(overflow <= 0, f"the freshly loaded page fits a phone-sized screen ({overflow} px over)")
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
