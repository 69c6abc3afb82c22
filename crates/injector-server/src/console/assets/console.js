// The console's script: fetches its own JSON endpoints, builds elements with textContent (never
// HTML from data) and draws the charts on canvas. No library, nothing fetched from elsewhere.
"use strict";

const token = document.querySelector('meta[name="console-token"]').content;
const $ = (id) => document.getElementById(id);
const pages = ["state", "admissions", "figures", "config", "paste"];
let timer = null;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fillDl(dl, rows) {
  dl.replaceChildren();
  for (const [k, v, id] of rows) {
    dl.append(el("dt", k));
    const dd = el("dd", v === null || v === undefined || v === "" ? "—" : v);
    if (id) dd.id = id;
    dl.append(dd);
  }
}

async function getJson(path) {
  const resp = await fetch(path, { headers: { Accept: "application/json", "X-Console-Token": token } });
  return resp.json();
}

function time(ms) { return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z"); }
function unix(s) { return s ? time(s * 1000) : null; }

function showDiff(pre, text) {
  pre.replaceChildren();
  for (const line of (text || "").split("\n")) {
    let cls = "";
    if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
    else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", line + "\n", cls));
  }
  if (!text) pre.replaceChildren();
}

async function loadState() {
  const s = await getJson("/api/state");
  const badge = $("ready-badge");
  badge.textContent = s.ready ? "ready" : "not ready";
  badge.className = "badge " + (s.ready ? "badge-ok" : "badge-bad");
  fillDl($("state-readiness"), [
    ["ready", s.ready ? "yes" : "no", "state-ready"],
    ["why", (s.why || []).join("; ") || (s.ready ? "configuration and certificate loaded, listening" : "")],
    ["listening", String(s.listening)], ["draining", String(s.draining)],
    ["ring", s.console ? s.console.ringCapacity + " admissions kept, " + s.console.droppedEntries + " dropped" : ""],
  ]);
  const c = s.configuration || {};
  fillDl($("state-config"), [
    ["generation", c.generation, "state-generation"], ["loaded at", c.loadedAt],
    ["last reload error", c.lastReloadError || "none", "state-reload-error"],
  ]);
  const cert = s.servingCertificate || {};
  fillDl($("state-cert"), [
    ["subject", cert.subject], ["names", (cert.names || []).join(", ")], ["serial", cert.serial],
    ["expires", cert.notAfter ? cert.notAfter + " (" + cert.daysLeft + " days left)" : null],
    ["SHA-256", cert.sha256, "state-fingerprint"],
    ["CA SHA-256", cert.caSha256 || "not known to this process (certificate files: compare with their issuer)", "state-ca-fingerprint"],
    ["last reload error", cert.lastReloadError || "none"],
  ]);
  if (s.cluster) $("state-cluster").textContent = JSON.stringify(s.cluster, null, 2);
}

function filterQuery() {
  const q = new URLSearchParams();
  if ($("filter-namespace").value) q.set("namespace", $("filter-namespace").value.trim());
  if ($("filter-decision").value) q.set("decision", $("filter-decision").value);
  if ($("filter-text").value) q.set("q", $("filter-text").value.trim());
  return q.toString();
}

async function loadAdmissions() {
  const data = await getJson("/api/admissions?" + filterQuery());
  const body = $("admissions-table").querySelector("tbody");
  body.replaceChildren();
  for (const a of data.admissions) {
    const tr = el("tr");
    tr.dataset.id = a.id;
    tr.dataset.decision = a.decision;
    tr.dataset.pod = a.pod;
    tr.append(el("td", time(a.atMs)), el("td", a.namespace), el("td", a.pod, "pod"),
      el("td", a.owner ? a.owner.kind + "/" + a.owner.name : ""),
      el("td", a.decision, "decision decision-" + a.decision), el("td", a.reason),
      el("td", (a.durationUs / 1000).toFixed(2)), el("td", a.cached ? "yes" : ""));
    tr.addEventListener("click", () => explainAdmission(a.id));
    body.append(tr);
  }
  $("admissions-count").textContent = data.admissions.length + " shown";
}

async function explainAdmission(id) {
  const box = $("explanation");
  box.classList.remove("hidden");
  $("explanation-title").textContent = "Explanation of admission " + id;
  $("explanation-report").textContent = "explaining…";
  const data = await getJson("/api/admissions/" + id);
  if (data.error) { $("explanation-report").textContent = data.error; return; }
  const a = data.admission;
  const head = a.namespace + "/" + a.pod + ": " + a.decision + " (" + a.reason + ")\n\n";
  $("explanation-report").textContent = head + (data.explanation ? data.explanation.report : data.explanationError);
}

function chart(canvas, series, opts) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 34;
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px sans-serif";
  let max = 0, n = 0;
  for (const s of series) { n = Math.max(n, s.values.length); for (const v of s.values) if (v !== null) max = Math.max(max, v); }
  max = max > 0 ? max * 1.15 : 1;
  ctx.strokeStyle = "#d9dde5"; ctx.fillStyle = "#667085";
  for (let i = 0; i <= 4; i++) {
    const y = pad / 2 + (h - pad) * i / 4;
    ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w - 4, y); ctx.stroke();
    ctx.fillText((max * (4 - i) / 4).toFixed(max < 10 ? 2 : 0), 2, y + 4);
  }
  const x = (i) => pad + (w - pad - 6) * (n <= 1 ? 1 : i / (n - 1));
  const y = (v) => pad / 2 + (h - pad) * (1 - v / max);
  let lx = pad + 6;
  for (const s of series) {
    ctx.strokeStyle = s.color; ctx.lineWidth = 2; ctx.beginPath();
    let started = false;
    s.values.forEach((v, i) => {
      if (v === null) { started = false; return; }
      if (!started) { ctx.moveTo(x(i), y(v)); started = true; } else ctx.lineTo(x(i), y(v));
    });
    ctx.stroke(); ctx.lineWidth = 1;
    ctx.fillStyle = s.color;
    s.values.forEach((v, i) => { if (v !== null) { ctx.beginPath(); ctx.arc(x(i), y(v), 2.5, 0, 2 * Math.PI); ctx.fill(); } });
    ctx.fillStyle = s.color; ctx.fillText(s.name, lx, h - 4); lx += ctx.measureText(s.name).width + 18;
  }
  if (n === 0) { ctx.fillStyle = "#667085"; ctx.fillText(opts.empty, w / 2 - 60, h / 2); }
}

async function loadFigures() {
  const data = await getJson("/api/figures");
  $("figures-every").textContent = data.sampleEverySeconds;
  const p = data.points;
  const pick = (k) => p.map((q) => q[k]);
  const empty = "waiting for samples…";
  chart($("chart-admissions"), [{ name: "admissions/s", color: "#2e5aac", values: pick("admissions") },
    { name: "injected/s", color: "#16794c", values: pick("injected") }], { empty });
  chart($("chart-outcomes"), [{ name: "skipped/s", color: "#667085", values: pick("skipped") },
    { name: "denied/s", color: "#b42318", values: pick("denied") },
    { name: "failed/s", color: "#b54708", values: pick("failed") }], { empty });
  chart($("chart-latency"), [{ name: "p50 ms", color: "#2e5aac", values: pick("p50Ms") },
    { name: "p99 ms", color: "#b54708", values: pick("p99Ms") }], { empty });
  const last = p[p.length - 1];
  $("figures-latest").textContent = last ? "latest: " + last.admissions.toFixed(1) + " admissions/s, p50 " +
    (last.p50Ms === null ? "—" : last.p50Ms.toFixed(2)) + " ms, p99 " + (last.p99Ms === null ? "—" : last.p99Ms.toFixed(2)) + " ms" : "";
}

async function loadConfig() {
  const data = await getJson("/api/config");
  const h = data.history || {};
  const acc = h.lastAccepted, rej = h.lastRejected;
  fillDl($("config-accepted"), acc ? [["at", unix(acc.at)], ["generation", acc.generation]] : [["", "none yet"]]);
  showDiff($("config-accepted-diff"), acc ? acc.diff : "");
  fillDl($("config-rejected"), rej ? [["at", unix(rej.at)], ["result", "rejected; the configuration in service was kept"]] : [["", "none since start"]]);
  $("config-rejected-error").textContent = rej ? rej.error : "";
  showDiff($("config-rejected-diff"), rej ? rej.diff : "");
  const box = $("config-in-service");
  box.replaceChildren();
  const files = h.inService || [];
  if (files.length === 0) box.append(el("p", "No files given: the embedded configuration is in service.", "hint"));
  for (const f of files) { box.append(el("h3", f.name + " — " + f.path)); box.append(el("pre", f.contents)); }
  const d = data.inService;
  if (d) {
    box.append(el("h3", "As compiled: policy, templates, values and mesh config"));
    box.append(el("pre", JSON.stringify(d, null, 2)));
  }
}

async function submitPaste(event) {
  event.preventDefault();
  $("paste-error").classList.add("hidden");
  const resp = await fetch("/api/explain", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Console-Token": token },
    body: JSON.stringify({ manifest: $("paste-manifest").value, namespace: $("paste-namespace").value, namespaceLabels: $("paste-labels").value }),
  });
  const data = await resp.json();
  if (!resp.ok) {
    $("paste-result").classList.add("hidden");
    $("paste-error").textContent = "HTTP " + resp.status + ": " + data.error;
    $("paste-error").classList.remove("hidden");
    return;
  }
  $("paste-decision").textContent = data.decision + (data.error ? ": " + data.error : "");
  const reasons = $("paste-reasons");
  reasons.replaceChildren(...(data.reasons || []).map((r) => el("li", r)));
  $("paste-patch").textContent = JSON.stringify(data.patch || [], null, 2);
  showDiff($("paste-diff"), data.diff);
  $("paste-report").textContent = data.report;
  $("paste-result").classList.remove("hidden");
}

const loaders = { state: loadState, admissions: loadAdmissions, figures: loadFigures, config: loadConfig, paste: null };

function show() {
  const page = pages.includes(location.hash.slice(1)) ? location.hash.slice(1) : "state";
  for (const p of pages) $("page-" + p).classList.toggle("active", p === page);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === page);
  clearInterval(timer);
  loadState();
  const load = loaders[page];
  if (load) { load(); timer = setInterval(load, 2000); }
}

window.addEventListener("hashchange", show);
document.addEventListener("DOMContentLoaded", () => {
  $("paste-form").addEventListener("submit", submitPaste);
  for (const id of ["filter-namespace", "filter-decision", "filter-text"]) $(id).addEventListener("input", loadAdmissions);
  $("admissions-filter").addEventListener("submit", (e) => { e.preventDefault(); loadAdmissions(); });
  show();
});
