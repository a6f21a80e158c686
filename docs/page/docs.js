// plantstore's API page. Renders the OpenAPI document this server serves (every operation with
// its parameters, request body, responses with schemas and examples; the webhooks; the security
// schemes) and lets a person call each operation ("Try it"). No Debian package ships Swagger UI,
// Redoc or Scalar, so this small page is written here; it reads everything from the document,
// so it needs no change when the document changes. The token lives in a variable of this page
// only: never in storage, never sent anywhere but this API.
"use strict";

const pageUrl = new URL(window.location.href);
// The page is {base}/docs: the API's paths are under {base}.
const apiBase = pageUrl.origin + pageUrl.pathname.replace(/\/docs\/?$/, "");
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
    const first = Object.values(media.examples)[0];
    const value = resolve(first);
    if (value && value.value !== undefined) return value.value;
  }
  return exampleOf(media.schema);
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function operationsOf(paths) {
  const methods = ["get", "post", "put", "patch", "delete", "options", "head"];
  const list = [];
  for (const [path, item] of Object.entries(paths || {})) {
    for (const method of methods) {
      if (item[method]) list.push({ path, method, item, operation: item[method] });
    }
  }
  return list;
}

function anchorOf(entry) {
  return "op-" + (entry.operation.operationId || (entry.method + entry.path).replace(/[^A-Za-z0-9]/g, "-"));
}

function renderParameters(parameters) {
  if (!parameters.length) return null;
  const table = element("table", {},
    element("caption", { class: "hint", text: "Parameters" }),
    element("thead", {}, element("tr", {}, element("th", { text: "Name" }), element("th", { text: "In" }),
                                 element("th", { text: "Schema" }), element("th", { text: "Description" }))));
  const body = element("tbody");
  for (const parameter of parameters) {
    body.append(element("tr", {},
      element("td", { text: parameter.name + (parameter.required ? " (required)" : "") }),
      element("td", { text: parameter.in }),
      element("td", {}, element("code", { text: JSON.stringify(expand(parameter.schema)) })),
      element("td", { text: parameter.description || "" })));
  }
  table.append(body);
  return table;
}

function renderResponses(responses) {
  const wrapper = element("div", {}, element("h3", { text: "Responses" }));
  for (const [status, raw] of Object.entries(responses || {})) {
    const response = resolve(raw) || {};
    const block = element("details", { class: "response" },
      element("summary", { text: status + " " + (response.description || "") }));
    const headers = Object.entries(response.headers || {});
    if (headers.length) {
      block.append(element("p", { text: "Headers: " + headers.map(([name, header]) =>
        name + (resolve(header)?.required ? " (always)" : "")).join(", ") }));
    }
    for (const [type, media] of Object.entries(response.content || {})) {
      block.append(element("p", { text: "Content: " + type }));
      if (media.schema) block.append(element("pre", { text: "Schema: " + pretty(expand(media.schema)) }));
      const example = mediaExample(media);
      if (example !== null && example !== undefined) block.append(element("pre", { text: "Example: " + pretty(example) }));
    }
    wrapper.append(block);
  }
  return wrapper;
}

function urlFor(entry, values) {
  let path = entry.path.replace(/\{([^}]+)\}/g, (_, name) => encodeURIComponent(values.path[name] ?? ""));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values.query)) if (value !== "") query.append(name, value);
  const servers = entry.item.servers || entry.operation.servers;
  const base = servers && servers.length ? new URL(servers[0].url, pageUrl.origin).href.replace(/\/$/, "") : apiBase;
  return base + path + (query.toString() ? "?" + query : "");
}

function shellQuote(text) {
  return "'" + String(text).replace(/'/g, "'\\''") + "'";
}

function renderTry(entry, parameters, token) {
  const id = anchorOf(entry);
  const form = element("form", { class: "try", "aria-label": "Try " + entry.method.toUpperCase() + " " + entry.path });
  form.append(element("h3", { text: "Try it" }));
  const inputs = [];
  for (const parameter of parameters.filter((p) => p.in === "path" || p.in === "query")) {
    const inputId = id + "-" + parameter.in + "-" + parameter.name;
    const example = parameter.example ?? exampleOf(parameter.schema);
    const input = element("input", { id: inputId, name: parameter.name,
      value: parameter.in === "path" && example !== null ? example : "", "data-in": parameter.in });
    form.append(element("label", { for: inputId, text: parameter.name + " (" + parameter.in + ")" }), input);
    inputs.push(input);
  }
  let bodyInput = null;
  const requestBody = resolve(entry.operation.requestBody);
  if (requestBody && requestBody.content && requestBody.content["application/json"]) {
    const bodyId = id + "-body";
    bodyInput = element("textarea", { id: bodyId, spellcheck: "false" });
    bodyInput.value = pretty(mediaExample(requestBody.content["application/json"]));
    form.append(element("label", { for: bodyId, text: "Body (application/json)" }), bodyInput);
  }
  form.append(element("button", { type: "submit", text: "Send" }));
  const result = element("div", { class: "result", "aria-live": "polite" });
  form.append(result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = { path: {}, query: {} };
    for (const input of inputs) values[input.dataset.in][input.name] = input.value;
    const url = urlFor(entry, values);
    const headers = {};
    const secured = entry.operation.security === undefined ? (documentRoot.security || []).length > 0
                                                           : entry.operation.security.length > 0;
    if (secured && token.value) headers.Authorization = "Bearer " + token.value;
    const init = { method: entry.method.toUpperCase(), headers };
    if (bodyInput) {
      headers["Content-Type"] = "application/json";
      init.body = bodyInput.value;
    }
    const curl = ["curl -i -X " + init.method, shellQuote(url)];
    if (headers.Authorization) curl.push("-H 'Authorization: Bearer $TOKEN'");
    if (bodyInput) curl.push("-H 'Content-Type: application/json'", "--data " + shellQuote(init.body));
    result.replaceChildren(element("p", { text: "Sending…" }));
    try {
      const response = await fetch(url, init);
      const text = await response.text();
      const headerLines = [...response.headers.entries()].map(([name, value]) => name + ": " + value).join("\n");
      let shown = text;
      try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* not JSON: as is */ }
      result.replaceChildren(
        element("p", { class: "status", text: "Status " + response.status + " " + response.statusText }),
        element("pre", { class: "response-headers", text: headerLines }),
        element("pre", { class: "response-body", text: shown }),
        element("p", { text: "The same request with curl:" }),
        element("pre", { class: "curl", text: curl.join(" \\\n  ") }));
    } catch (error) {
      result.replaceChildren(element("p", { role: "alert", text: "The request failed: " + error.message }));
    }
  });
  return form;
}

function render(doc) {
  documentRoot = doc;
  const info = doc.info || {};
  document.title = (info.title || "API") + " " + (info.version || "");
  document.getElementById("title").textContent = info.title || "API";
  document.getElementById("summary").textContent = (info.version ? "Version " + info.version + ". " : "") + (info.description || "");
  const token = document.getElementById("token");
  document.getElementById("auth").addEventListener("submit", (event) => event.preventDefault());
  const entries = operationsOf(doc.paths);
  const toc = element("ul");
  const main = document.getElementById("operations");
  main.replaceChildren(element("h2", { text: "Operations (" + entries.length + ")" }));
  for (const entry of entries) {
    const id = anchorOf(entry);
    const op = entry.operation;
    toc.append(element("li", {}, element("a", { href: "#" + id, text: entry.method.toUpperCase() + " " + entry.path })));
    const parameters = [...(entry.item.parameters || []), ...(op.parameters || [])].map(resolve);
    const section = element("details", { class: "operation", id, "data-method": entry.method, "data-path": entry.path },
      element("summary", {},
        element("span", { class: "method " + entry.method, text: entry.method.toUpperCase() }),
        element("span", { class: "path", text: entry.path }),
        element("span", { text: op.summary || "" })));
    const body = element("div", { class: "operation-body" });
    if (op.description) body.append(element("p", { text: op.description }));
    const security = op.security ?? doc.security ?? [];
    body.append(element("p", { class: "hint", text: security.length
      ? "Needs: " + security.map((s) => Object.keys(s).join(" + ")).join(" or ")
      : "No credentials needed." }));
    body.append(renderParameters(parameters));
    const requestBody = resolve(op.requestBody);
    if (requestBody && requestBody.content) {
      body.append(element("h3", { text: "Request body" + (requestBody.required ? " (required)" : "") }));
      for (const [type, media] of Object.entries(requestBody.content)) {
        body.append(element("p", { text: type }), element("pre", { text: "Schema: " + pretty(expand(media.schema)) }));
        body.append(element("pre", { text: "Example: " + pretty(mediaExample(media)) }));
      }
    }
    body.append(renderResponses(op.responses));
    body.append(renderTry(entry, parameters, token));
    section.append(body);
    main.append(section);
  }
  document.getElementById("toc").replaceChildren(toc);

  const webhooks = Object.entries(doc.webhooks || {});
  if (webhooks.length) {
    const list = document.getElementById("webhook-list");
    for (const [name, item] of webhooks) {
      for (const [method, operation] of Object.entries(item)) {
        const requestBody = resolve(operation.requestBody);
        const block = element("details", { class: "webhook" },
          element("summary", {}, element("span", { class: "method " + method, text: method.toUpperCase() }),
                  element("span", { class: "path", text: name }), element("span", { text: operation.summary || "" })));
        if (operation.description) block.append(element("p", { text: operation.description }));
        for (const [type, media] of Object.entries(requestBody?.content || {})) {
          block.append(element("p", { text: "Body: " + type }), element("pre", { text: pretty(expand(media.schema)) }));
        }
        block.append(renderResponses(operation.responses));
        list.append(block);
      }
    }
    document.getElementById("webhooks").hidden = false;
  }
  const schemes = Object.entries(doc.components?.securitySchemes || {});
  if (schemes.length) {
    const list = document.getElementById("security-list");
    for (const [name, scheme] of schemes) {
      list.append(element("h3", { text: name + " (" + [scheme.type, scheme.scheme].filter(Boolean).join(", ") + ")" }),
                  element("p", { text: scheme.description || "" }));
    }
    document.getElementById("security").hidden = false;
  }
  if (pageUrl.hash) document.getElementById(pageUrl.hash.slice(1))?.setAttribute("open", "");
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
