// plantstore's API page. Renders the OpenAPI document this server serves, grouped by its tags
// with a table of contents beside it: every operation with its scope, summary, parameters,
// request body, responses (headers and examples) and a curl example; the events and webhooks
// with an example of each and how to verify a signature; the security schemes. "Try it" calls
// each operation. Descriptions are Markdown (CommonMark, as OpenAPI allows): rendered by Debian's
// marked (docs/marked.js) with raw HTML shown as text, then cut down to plain markup (below), so
// no text of the document can become markup that runs. No Debian package
// ships Swagger UI, Redoc or Scalar, so the page itself is written here; it reads everything from
// the document. The token lives in a variable of this page only: never in storage, never sent
// anywhere but this API.
"use strict";

const pageUrl = new URL(window.location.href);
// The page is {base}/docs: the API's paths are under {base}.
const apiBase = pageUrl.origin + pageUrl.pathname.replace(/\/docs\/?$/, "");
const methods = ["get", "post", "put", "patch", "delete", "head", "options"];
let documentRoot = null;

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// Markdown to sanitized DOM. Raw HTML in the text is shown as text (marked's html renderer is
// replaced), and what marked makes is then kept only where it is plain markup: the elements and
// attributes below, links to http(s) or this page. Written here because Debian 12's DOMPurify
// (node-dompurify 2.4.1+dfsg-2+deb12u1) throws "shadowNode is not defined" from every
// sanitize() of markup (its security patch reads a variable out of scope).
marked.use({ renderer: { html: (html) => escapeHtml(html) }, headerIds: false, mangle: false });
const allowedMarkup = {
  P: [], BR: [], HR: [], EM: [], STRONG: [], DEL: [], CODE: [], PRE: [], BLOCKQUOTE: [], UL: [],
  OL: ["start"], LI: [], A: ["href", "title"], H1: [], H2: [], H3: [], H4: [], H5: [], H6: [],
  TABLE: [], THEAD: [], TBODY: [], TR: [], TH: ["align"], TD: ["align"],
};
function keepPlainMarkup(parent) {
  for (const child of [...parent.childNodes]) {
    if (child.nodeType === Node.TEXT_NODE) continue;
    const allowed = child.nodeType === Node.ELEMENT_NODE ? allowedMarkup[child.tagName] : undefined;
    if (!allowed) { child.remove(); continue; }
    for (const attribute of [...child.attributes]) {
      const safe = allowed.includes(attribute.name) &&
                   (attribute.name !== "href" || /^(?:https?:|#)/i.test(attribute.value.trim()));
      if (!safe) child.removeAttribute(attribute.name);
    }
    keepPlainMarkup(child);
  }
}
function markdown(text, className = "prose") {
  const node = element("div", { class: className });
  // (A template's content is inert: nothing in it loads or runs while it is checked.)
  const inert = document.createElement("template");
  inert.innerHTML = marked.parse(String(text || ""));
  keepPlainMarkup(inert.content);
  node.append(inert.content);
  return node;
}
// Markdown that is one line (a summary): its paragraph's content only.
function inlineMarkdown(text) {
  const node = markdown(text, "inline");
  const only = node.firstElementChild;
  if (node.childElementCount === 1 && only.tagName === "P") node.replaceChildren(...only.childNodes);
  return node;
}

function resolve(value) {
  let seen = 0;
  while (value && typeof value === "object" && typeof value.$ref === "string" && seen++ < 16) {
    const parts = value.$ref.replace(/^#\//, "").split("/");
    value = parts.reduce((node, key) => (node ? node[key.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined),
                         documentRoot);
  }
  return value;
}

// A schema with its references resolved (to a depth), for display.
function expand(schema, depth = 0) {
  schema = resolve(schema);
  if (!schema || typeof schema !== "object" || depth > 8) return schema;
  if (Array.isArray(schema)) return schema.map((item) => expand(item, depth + 1));
  const copy = {};
  for (const [key, value] of Object.entries(schema)) {
    copy[key] = typeof value === "object" ? expand(value, depth + 1) : value;
  }
  return copy;
}

// An example value for a schema: its own example, else one made from its properties.
function exampleOf(schema, depth = 0) {
  schema = resolve(schema);
  if (!schema || depth > 8) return null;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "object" || schema.properties) {
    const result = {};
    for (const [name, property] of Object.entries(schema.properties || {})) {
      result[name] = exampleOf(property, depth + 1);
    }
    return result;
  }
  if (type === "array") return [exampleOf(schema.items, depth + 1)];
  if (type === "integer" || type === "number") return schema.minimum ?? 1;
  if (type === "boolean") return true;
  if (type === "string") return schema.format === "uri" ? "https://receiver.example/hooks" : "text";
  return null;
}

function mediaExample(media) {
  if (!media) return null;
  if (media.example !== undefined) return media.example;
  if (media.examples) {
    const value = resolve(Object.values(media.examples)[0]);
    if (value && value.value !== undefined) return value.value;
  }
  return exampleOf(media.schema);
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

// Every operation of the document; a HEAD beside a GET of the same path is not an entry of its
// own but the GET's twin (`entry.twins`), shown on the GET's card as "GET, HEAD".
function operationsOf(paths) {
  const list = [];
  for (const [path, item] of Object.entries(paths || {})) {
    for (const method of methods) {
      if (!item[method] || (method === "head" && item.get)) continue;
      const twins = method === "get" && item.head ? [{ path, method: "head", item, operation: item.head }] : [];
      list.push({ path, method, item, operation: item[method], twins });
    }
  }
  return list;
}

function methodsText(entry) {
  return [entry.method, ...entry.twins.map((twin) => twin.method)].map((m) => m.toUpperCase()).join(", ");
}

function anchorOf(entry) {
  return "op-" + (entry.operation.operationId || (entry.method + entry.path).replace(/[^A-Za-z0-9]/g, "-"));
}

function parametersOf(entry) {
  return [...(entry.item.parameters || []), ...(entry.operation.parameters || [])].map(resolve);
}

function secured(operation) {
  return (operation.security ?? documentRoot.security ?? []).length > 0;
}

// The scope an operation needs: the role its security requirement names (OpenAPI 3.1 lets a
// bearer scheme's requirement list them), "a token" when none is named.
function scopeOf(entry) {
  const requirements = entry.operation.security ?? documentRoot.security ?? [];
  const roles = requirements.flatMap((requirement) => Object.values(requirement).flat());
  if (roles.length) return roles.join(" or ");
  return requirements.length ? "a token" : "no token";
}

// Headers that nearly every response carries (Date, the RateLimit fields...): listed once at
// the top instead of under each response.
function commonHeaders(entries) {
  const counts = new Map();
  let responses = 0;
  for (const entry of entries) {
    for (const raw of Object.values(entry.operation.responses || {})) {
      responses++;
      for (const [name, header] of Object.entries(resolve(raw)?.headers || {})) {
        const known = counts.get(name) || { count: 0, header: resolve(header) };
        known.count++;
        counts.set(name, known);
      }
    }
  }
  const common = new Map();
  for (const [name, known] of counts) if (known.count * 2 > responses) common.set(name, known.header);
  return common;
}

function renderParameters(parameters) {
  if (!parameters.length) return null;
  const body = element("tbody");
  for (const parameter of parameters) {
    body.append(element("tr", {},
      element("td", {}, element("code", { text: parameter.name }),
              parameter.required ? element("span", { class: "required", text: " required" }) : null),
      element("td", { text: parameter.in }),
      element("td", {}, element("code", { class: "schema", text: schemaLine(parameter.schema) })),
      element("td", {}, markdown(parameter.description || ""))));
  }
  return element("table", {},
    element("caption", { text: "Parameters" }),
    element("thead", {}, element("tr", {}, element("th", { text: "Name" }), element("th", { text: "In" }),
                                 element("th", { text: "Schema" }), element("th", { text: "Description" }))),
    body);
}

// A short form of a simple schema ("integer int64, 1 to 1000, default 100").
function schemaLine(schema) {
  const s = expand(schema) || {};
  const parts = [[].concat(s.type || "any").join(" | ") + (s.format ? " " + s.format : "")];
  if (s.enum) parts.push("one of " + s.enum.join(", "));
  if (s.minimum !== undefined || s.maximum !== undefined) parts.push((s.minimum ?? "…") + " to " + (s.maximum ?? "…"));
  if (s.maxLength !== undefined) parts.push("at most " + s.maxLength + " characters");
  if (s.pattern) parts.push("pattern " + s.pattern);
  if (s.default !== undefined) parts.push("default " + JSON.stringify(s.default));
  return parts.join(", ");
}

// A list of headers with their descriptions, those the document marks required marked; none of
// the names in `except` (the common headers, listed once).
function renderHeaders(headers, except = new Map()) {
  const own = Object.entries(headers || {}).filter(([name]) => !except.has(name));
  if (!own.length) return null;
  const list = element("dl", { class: "headers" });
  for (const [name, raw] of own) {
    const header = resolve(raw) || {};
    list.append(element("dt", {}, element("code", { text: name }),
                        header.required ? element("span", { class: "required", text: " required" }) : null),
                element("dd", {}, markdown(header.description || "")));
  }
  return list;
}

function renderResponses(responses, common) {
  const wrapper = element("div", { class: "responses" }, element("h4", { text: "Responses" }));
  for (const [status, raw] of Object.entries(responses || {})) {
    const response = resolve(raw) || {};
    const block = element("details", { class: "response" },
      element("summary", {}, element("span", { class: "status-code s" + status[0], text: status }), " ",
              inlineMarkdown(response.description || "")));
    block.append(renderHeaders(response.headers, common));
    for (const [type, media] of Object.entries(response.content || {})) {
      block.append(element("p", { class: "media", text: type }));
      const example = mediaExample(media);
      if (example !== null && example !== undefined) block.append(element("pre", { class: "example", text: pretty(example) }));
      if (media.schema) {
        block.append(element("details", { class: "schema" }, element("summary", { text: "Schema" }),
                             element("pre", { text: pretty(expand(media.schema)) })));
      }
    }
    wrapper.append(block);
  }
  return wrapper;
}

function urlFor(entry, values) {
  const path = entry.path.replace(/\{([^}]+)\}/g, (_, name) => encodeURIComponent(values.path[name] ?? ""));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values.query)) if (value !== "") query.append(name, value);
  const servers = entry.item.servers || entry.operation.servers;
  const base = servers && servers.length ? new URL(servers[0].url, pageUrl.origin).href.replace(/\/$/, "") : apiBase;
  return base + path + (query.toString() ? "?" + query : "");
}

function shellQuote(text) {
  return "'" + String(text).replace(/'/g, "'\\''") + "'";
}

// The curl command for a request. Its token is always $TOKEN, never the one pasted on the page
// (the input masks it; a preview beside it, or a copied command in a shell's history, must not
// show it).
function curlFor(method, url, headers, body) {
  const lines = ["curl -i -X " + method + " " + shellQuote(url)];
  for (const [name, value] of Object.entries(headers)) {
    lines.push("-H " + (name === "Authorization" ? "\"Authorization: Bearer $TOKEN\""
                                                  : shellQuote(name + ": " + value)));
  }
  if (body !== null && body !== undefined) lines.push("--data " + shellQuote(body));
  return lines.join(" \\\n  ");
}

// What an operation's form holds: path, query and header parameters, and the JSON body.
function requestOf(entry, fields, bodyInput, token) {
  const values = { path: {}, query: {} };
  const headers = {};
  for (const input of fields) {
    if (input.dataset.in === "header") {
      if (input.value !== "") headers[input.name] = input.value;
    } else {
      values[input.dataset.in][input.name] = input.value;
    }
  }
  if (secured(entry.operation)) headers.Authorization = "Bearer " + (token.value || "$TOKEN");
  let body = null;
  if (bodyInput) {
    headers["Content-Type"] = bodyInput.dataset.type;
    body = bodyInput.value;
  }
  return { method: entry.method.toUpperCase(), url: urlFor(entry, values), headers, body };
}

function renderTry(entry, parameters, token) {
  const id = anchorOf(entry);
  const form = element("form", { class: "try", "aria-label": "Try " + entry.method.toUpperCase() + " " + entry.path });
  form.append(element("h4", { text: "Try it" }));
  const fields = [];
  for (const parameter of parameters.filter((p) => ["path", "query", "header"].includes(p.in))) {
    const inputId = id + "-" + parameter.in + "-" + parameter.name;
    const example = parameter.example ?? exampleOf(parameter.schema);
    const input = element("input", { id: inputId, name: parameter.name, autocomplete: "off",
      value: parameter.in === "path" && example !== null ? example : "", "data-in": parameter.in });
    form.append(element("label", { for: inputId, text: parameter.name + " (" + parameter.in + ")" }), input);
    fields.push(input);
  }
  let bodyInput = null;
  const content = resolve(entry.operation.requestBody)?.content || {};
  const type = Object.keys(content).find((t) => t.includes("json"));
  if (type) {
    const bodyId = id + "-body";
    bodyInput = element("textarea", { id: bodyId, spellcheck: "false", "data-type": type });
    bodyInput.value = pretty(mediaExample(content[type]));
    form.append(element("label", { for: bodyId, text: "Body (" + type + ")" }), bodyInput);
  }
  const curl = element("pre", { class: "curl-example" });
  const showCurl = () => {
    const request = requestOf(entry, fields, bodyInput, token);
    curl.textContent = curlFor(request.method, request.url, request.headers, request.body);
  };
  for (const input of [...fields, bodyInput, token]) input?.addEventListener("input", showCurl);
  showCurl();
  form.append(element("button", { type: "submit", text: "Send" }), element("p", { class: "hint", text: "With curl:" }), curl);
  const result = element("div", { class: "result", "aria-live": "polite" });
  form.append(result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const request = requestOf(entry, fields, bodyInput, token);
    const headers = { ...request.headers };
    if (!token.value) delete headers.Authorization;
    result.replaceChildren(element("p", { text: "Sending…" }));
    try {
      const response = await fetch(request.url, { method: request.method, headers, body: request.body ?? undefined });
      const text = await response.text();
      const headerLines = [...response.headers.entries()].map(([name, value]) => name + ": " + value).join("\n");
      let shown = text;
      try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* not JSON: as is */ }
      result.replaceChildren(
        element("p", { class: "status", text: "Status " + response.status + " " + response.statusText }),
        element("pre", { class: "response-headers", text: headerLines }),
        element("pre", { class: "response-body", text: shown }),
        element("p", { text: "The same request with curl:" }),
        element("pre", { class: "curl", text: curlFor(request.method, request.url, request.headers, request.body) }));
    } catch (error) {
      result.replaceChildren(element("p", { role: "alert", text: "The request failed: " + error.message }));
    }
  });
  return form;
}

function renderOperation(entry, common, token) {
  const id = anchorOf(entry);
  const op = entry.operation;
  const parameters = parametersOf(entry);
  const section = element("details", { class: "operation", id, "data-method": entry.method, "data-path": entry.path,
                                       "data-methods": [entry.method, ...entry.twins.map((t) => t.method)].join(" ") },
    element("summary", {},
      element("span", { class: "method " + entry.method, text: methodsText(entry) }),
      element("span", { class: "path", text: entry.path }),
      element("span", { class: "scope", text: scopeOf(entry) }),
      element("span", { class: "one-line" }, inlineMarkdown(op.summary || ""))));
  const body = element("div", { class: "operation-body" });
  if (op.description) body.append(markdown(op.description));
  for (const twin of entry.twins) {
    body.append(element("p", { id: anchorOf(twin), class: "twin" },
      element("code", { text: twin.method.toUpperCase() + " " + twin.path }),
      " answers the same checks, status and headers, without a body (operation ",
      element("code", { text: twin.operation.operationId || "" }), ")."));
  }
  body.append(renderParameters(parameters));
  const requestBody = resolve(op.requestBody);
  for (const [type, media] of Object.entries(requestBody?.content || {})) {
    body.append(element("h4", { text: "Request body, " + type + (requestBody.required ? " (required)" : "") }));
    if (requestBody.description) body.append(markdown(requestBody.description));
    body.append(element("pre", { class: "example", text: pretty(mediaExample(media)) }),
                element("details", { class: "schema" }, element("summary", { text: "Schema" }),
                        element("pre", { text: pretty(expand(media.schema)) })));
  }
  body.append(renderResponses(op.responses, common), renderTry(entry, parameters, token));
  section.append(body);
  return section;
}

// The events: each webhook with its example body and what a receiver checks, and the change
// feed's two representations.
function renderEvents(doc, entries, common) {
  const list = document.getElementById("event-list");
  for (const [name, item] of Object.entries(doc.webhooks || {})) {
    for (const [method, operation] of Object.entries(item)) {
      const block = element("details", { class: "webhook", id: "event-" + name.replace(/[^A-Za-z0-9]/g, "-") },
        element("summary", {}, element("span", { class: "method " + method, text: method.toUpperCase() }),
                element("span", { class: "path", text: name }), element("span", { class: "one-line" }, inlineMarkdown(operation.summary || ""))));
      if (operation.description) block.append(markdown(operation.description));
      block.append(renderParameters((operation.parameters || []).map(resolve)));
      for (const [type, media] of Object.entries(resolve(operation.requestBody)?.content || {})) {
        block.append(element("h4", { text: "Example body, " + type }),
                     element("pre", { class: "example", text: pretty(mediaExample(media)) }),
                     element("details", { class: "schema" }, element("summary", { text: "Schema" }),
                             element("pre", { text: pretty(expand(media.schema)) })));
      }
      block.append(renderResponses(operation.responses, common));
      list.append(block);
    }
  }
  const feed = entries.find((entry) => entry.method === "get" && /\/events$/.test(entry.path));
  const representations = document.getElementById("feed-representations");
  for (const [type, media] of Object.entries(resolve(feed?.operation.responses?.["200"])?.content || {})) {
    representations.append(element("h4", {}, element("code", { text: type })),
                           element("pre", { class: "example", text: pretty(mediaExample(media)) }));
  }
  if (feed) representations.prepend(element("p", {}, "From ", element("a", { href: "#" + anchorOf(feed), text: "GET " + feed.path }),
                                            ", as the request's Accept header chooses:"));
}

// The table of contents: a section per tag, its operations under it.
function renderToc(groups) {
  const list = element("ul");
  list.append(element("li", {}, element("a", { href: "#intro", text: "Introduction" })));
  for (const group of groups) {
    const operations = element("ul");
    for (const entry of group.entries) {
      operations.append(element("li", {}, element("a", { href: "#" + anchorOf(entry) },
        element("span", { class: "method-text " + entry.method, text: methodsText(entry) }), " " + entry.path)));
    }
    list.append(element("li", {}, element("a", { href: "#tag-" + group.name, class: "tag-link", text: group.title }), operations));
  }
  list.append(element("li", {}, element("a", { href: "#events", text: "Events and webhooks" })),
              element("li", {}, element("a", { href: "#security", text: "Security schemes" })));
  return list;
}

function render(doc) {
  documentRoot = doc;
  const info = doc.info || {};
  document.title = (info.title || "API") + " " + (info.version || "");
  document.getElementById("title").textContent = info.title || "API";
  document.getElementById("version").textContent = info.version ? "Version " + info.version : "";
  // The introduction: its first paragraph, the rest folded.
  const intro = markdown(info.description || "");
  const first = intro.firstElementChild;
  const rest = element("details", { class: "more" }, element("summary", { text: "More about this API" }));
  while (first && first.nextSibling) rest.append(first.nextSibling);
  document.getElementById("summary").replaceChildren(intro, rest.childElementCount > 1 ? rest : "");
  const token = document.getElementById("token");
  document.getElementById("auth").addEventListener("submit", (event) => event.preventDefault());

  const entries = operationsOf(doc.paths);
  const common = commonHeaders(entries);
  document.getElementById("common-headers").replaceChildren(renderHeaders(Object.fromEntries(common)) ?? "");

  // Groups in the document's tag order; an untagged operation goes to a last group.
  const tags = [...(doc.tags || [])];
  const groups = tags.map((tag) => ({ name: tag.name, title: tag.name[0].toUpperCase() + tag.name.slice(1),
                                      description: tag.description, entries: [], preflights: [] }));
  const other = { name: "other", title: "Other", description: "", entries: [], preflights: [] };
  for (const entry of entries) {
    const group = groups.find((g) => g.name === (entry.operation.tags || [])[0]) || other;
    (entry.method === "options" ? group.preflights : group.entries).push(entry);
  }
  if (other.entries.length || other.preflights.length) groups.push(other);
  const main = document.getElementById("operations");
  main.replaceChildren();
  for (const group of groups) {
    const section = element("section", { class: "tag", id: "tag-" + group.name, "aria-labelledby": "tag-" + group.name + "-title" },
      element("h2", { id: "tag-" + group.name + "-title", text: group.title }));
    if (group.description) section.append(markdown(group.description));
    for (const entry of group.entries) section.append(renderOperation(entry, common, token));
    if (group.preflights.length) {
      const preflights = element("ul", { class: "preflights" });
      for (const entry of group.preflights) {
        preflights.append(element("li", {}, element("span", { class: "method-text options", text: "OPTIONS" }), " ",
          element("code", { text: entry.path }), ": answers a CORS preflight with --cors-origin"));
      }
      section.append(preflights);
    }
    main.append(section);
  }
  document.getElementById("toc-list").replaceChildren(renderToc(groups));
  renderEvents(doc, entries, common);

  const schemes = Object.entries(doc.components?.securitySchemes || {});
  const list = document.getElementById("security-list");
  for (const [name, scheme] of schemes) {
    list.append(element("h3", { text: name + " (" + [scheme.type, scheme.scheme].filter(Boolean).join(", ") + ")" }),
                markdown(scheme.description || ""));
  }
  for (const id of ["events", "security"]) document.getElementById(id).hidden = false;
  // The contents: open beside the text on a wide screen; folded on a phone (the page starts
  // folded, so a phone never shows them open), and folded again after following an entry.
  const fold = document.getElementById("toc");
  const phone = () => window.matchMedia("(max-width: 60rem)").matches;
  fold.open = !phone();
  fold.addEventListener("click", (event) => {
    const link = event.target.closest("a");
    if (!link) return;
    openTarget(link.getAttribute("href").slice(1));
    if (phone()) fold.open = false;
  });
  if (pageUrl.hash) openTarget(pageUrl.hash.slice(1));
}

// Opens the card (or section) an anchor is on: a HEAD twin's anchor is inside its GET's card.
function openTarget(id) {
  const target = document.getElementById(id);
  (target?.closest("details") || target)?.setAttribute("open", "");
}

fetch(apiBase + "/openapi.json")
  .then((response) => {
    if (!response.ok) throw new Error("GET openapi.json answered " + response.status);
    return response.json();
  })
  .then(render)
  .catch((error) => {
    const problem = document.getElementById("load-error");
    problem.textContent = "The OpenAPI document could not be loaded: " + error.message;
    problem.hidden = false;
  });
