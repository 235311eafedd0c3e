// berth's dashboard page. Everything shown comes from the dashboard's own
// API, which reads one watch of the cluster; text is set with textContent
// only, never parsed as HTML.
"use strict";

const pageSize = 100;
let selected = null; // the ClusterQueue whose workloads are shown
const shown = { pending: pageSize, admitted: pageSize };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// quantity turns a Kubernetes quantity ("1500m", "2", "4Gi") into a number
// for the bars; the text shown is the quantity itself.
function quantity(q) {
  if (q === undefined || q === null) return 0;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(String(q));
  if (!m) return 0;
  const units = { "": 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
  return parseFloat(m[1]) * (units[m[2]] ?? 1);
}

function resourceRow(r) {
  const row = el("div", "res");
  row.dataset.resource = r.flavor + "/" + r.resource;
  row.append(el("span", "", r.flavor + "/" + r.resource));
  let text = r.used + " of " + r.nominal;
  if (quantity(r.borrowed) > 0) text += ", " + r.borrowed + " borrowed";
  const label = el("span", "", text);
  label.dataset.field = "usage";
  row.append(label);
  const bar = el("div", "bar");
  const nominal = quantity(r.nominal), used = quantity(r.used), borrowed = quantity(r.borrowed);
  const scale = Math.max(nominal, used, 1e-9);
  const u = el("div", "used");
  u.style.width = (100 * Math.min(used - borrowed, nominal) / scale) + "%";
  const b = el("div", "borrowed");
  b.style.left = u.style.width;
  b.style.width = (100 * borrowed / scale) + "%";
  bar.append(u, b);
  row.append(bar);
  return row;
}

function nodeView(n) {
  const box = el("div", "node " + (n.kind === "ClusterQueue" ? "cq" : "cohort"));
  box.dataset.node = n.kind + "/" + n.name;
  const head = el("div", "head");
  head.append(el("span", "name", n.name), el("span", "kind", n.kind));
  const counts = el("span", "counts");
  for (const [field, label] of [["pending", "pending"], ["reserving", "reserving"], ["admitted", "admitted"]]) {
    const c = el("span", "", (n[field] ?? 0) + " " + label);
    c.dataset.field = field;
    counts.append(c);
  }
  head.append(counts);
  if (n.inactive) {
    const i = el("span", "inactive", "inactive: " + n.inactive);
    i.dataset.field = "inactive";
    head.append(i);
  }
  box.append(head);
  for (const r of n.resources ?? []) box.append(resourceRow(r));
  for (const c of n.children ?? []) box.append(nodeView(c));
  if (n.kind === "ClusterQueue" && n.name === selected) box.classList.add("selected");
  return box;
}

function renderTree(tree) {
  const root = document.getElementById("tree");
  const nodes = tree.roots.map(nodeView);
  if (nodes.length === 0) nodes.push(el("p", "", "No ClusterQueue yet."));
  root.replaceChildren(...nodes);
}

function age(created) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(created)) / 1000));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  return Math.round(s / 3600) + "h";
}

async function loadQueue() {
  if (!selected) return;
  const cq = selected;
  for (const state of ["pending", "admitted"]) {
    const url = "api/workloads?" + new URLSearchParams({ clusterQueue: cq, state, limit: String(shown[state]) });
    const res = await fetch(url);
    if (!res.ok || cq !== selected) return;
    const page = await res.json();
    const body = document.querySelector("#" + state + " tbody");
    body.replaceChildren(...page.rows.map((r) => {
      const tr = el("tr");
      tr.dataset.workload = r.namespace + "/" + r.name;
      tr.append(el("td", "", String(r.position)), el("td", "", r.namespace + "/" + r.name), el("td", "", r.localQueue),
        el("td", "", String(r.priority)), el("td", "", age(r.created)), el("td", "", r.why));
      return tr;
    }));
    document.getElementById(state + "-total").textContent = "(" + page.total + ")";
    document.getElementById(state + "-more").hidden = page.total <= page.rows.length;
  }
}

function select(name) {
  selected = name;
  history.replaceState(null, "", "#cq=" + encodeURIComponent(name)); // a link to this view
  shown.pending = shown.admitted = pageSize;
  document.getElementById("queue-title").textContent = "ClusterQueue " + name;
  document.getElementById("queue").hidden = false;
  for (const n of document.querySelectorAll(".node.cq")) {
    n.classList.toggle("selected", n.dataset.node === "ClusterQueue/" + name);
  }
  loadQueue();
}

// One listener for the whole tree: it is drawn again on every change, and
// a click must not be lost to a node replaced under the pointer.
document.getElementById("tree").addEventListener("click", (e) => {
  const node = e.target.closest(".node");
  if (node && node.dataset.node.startsWith("ClusterQueue/")) select(node.dataset.node.slice("ClusterQueue/".length));
});

for (const state of ["pending", "admitted"]) {
  document.getElementById(state + "-more").addEventListener("click", () => {
    shown[state] = Math.min(shown[state] + pageSize, 500);
    loadQueue();
  });
}

if (location.hash.startsWith("#cq=")) select(decodeURIComponent(location.hash.slice(4)));

const live = document.getElementById("live");
const events = new EventSource("api/events");
events.addEventListener("tree", (e) => {
  live.dataset.state = "live";
  live.textContent = "live";
  renderTree(JSON.parse(e.data));
  loadQueue();
});
events.addEventListener("error", () => {
  live.dataset.state = "lost";
  live.textContent = "reconnecting…";
});
