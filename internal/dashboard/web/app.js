// berth's dashboard page. Everything shown comes from the dashboard's own
// API, which reads one watch of the cluster; text is set with textContent
// only, never parsed as HTML.
"use strict";

const pageSize = 100;
let selected = null; // the ClusterQueue whose workloads are shown
let workload = null; // the workload whose page is shown, "namespace/name"
let actions = false; // berth dashboard --allow-actions
const shown = { pending: pageSize, admitted: pageSize };

// coalesce runs fn one call at a time: calls that come while it runs make
// one more run after it, so a burst of changes cannot pile up requests.
function coalesce(fn) {
  let running = false, again = false;
  return async function run() {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await fn();
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      run();
    }
  };
}

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
  if (actions && n.kind === "ClusterQueue") {
    const verb = n.stopPolicy ? "resume" : "stop";
    const b = el("button", "act", verb);
    Object.assign(b.dataset, { verb, kind: "ClusterQueue", name: n.name });
    head.append(b);
  }
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

let lastTree = null;

function renderTree(tree) {
  lastTree = tree;
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

const loadQueue = coalesce(async () => {
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
});

// The URL keeps what is shown (#cq=NAME&wl=NAMESPACE/NAME): a link to this
// view.
function keepInURL() {
  const p = new URLSearchParams();
  if (selected) p.set("cq", selected);
  if (workload) p.set("wl", workload);
  history.replaceState(null, "", "#" + p.toString());
}

function fillTable(id, rows, cells) {
  document.querySelector("#" + id + " tbody").replaceChildren(...rows.map((r) => {
    const tr = el("tr");
    tr.append(...cells(r).map((c) => el("td", "", c)));
    return tr;
  }));
}

function when(t) {
  return t && !t.startsWith("0001-") ? new Date(t).toLocaleTimeString() + " (" + age(t) + " ago)" : "";
}

const loadWorkload = coalesce(async () => {
  if (!workload) return;
  const key = workload;
  const [namespace, name] = key.split("/");
  const res = await fetch("api/workload?" + new URLSearchParams({ namespace, name }));
  if (key !== workload) return;
  const box = document.getElementById("workload");
  box.hidden = false;
  document.getElementById("workload-title").textContent = "Workload " + key;
  if (!res.ok) {
    document.getElementById("workload-summary").textContent = res.status === 404 ? "It is gone." : await res.text();
    return;
  }
  const d = await res.json();
  const summary = [d.owner ? "made for " + d.owner : "made by hand", "LocalQueue " + d.localQueue,
    "priority " + d.priority, "created " + age(d.created) + " ago"];
  if (!d.active) summary.push("stopped (spec.active is false)");
  document.getElementById("workload-actions").hidden = !actions;
  document.getElementById("workload-summary").textContent = summary.join(" · ");
  document.getElementById("workload-why").textContent = d.why;
  fillTable("workload-timeline", d.timeline, (s) => [when(s.time), s.condition, s.status, s.reason ?? "", s.message ?? ""]);
  fillTable("workload-podsets", d.podSets, (p) => [p.name, String(p.count), p.requests, p.admitted ? String(p.admitted) : "",
    p.flavors ?? "", (p.domains ?? []).join("; ")]);
  fillTable("workload-pods", d.pods, (p) => [p.name, p.phase, p.ready ? "yes" : "no", p.node ?? "", p.note ?? ""]);
  document.getElementById("workload-morepods").textContent = d.morePods ? "(and " + d.morePods + " more)" : "";
  fillTable("workload-events", d.events, (e) => [when(e.time), e.object, e.type, e.reason,
    e.message + (e.count > 1 ? " (×" + e.count + ")" : "")]);
});

function openWorkload(key) {
  workload = key;
  keepInURL();
  loadWorkload();
}

// act asks the dashboard to make a change as the user whose token is in
// the header: the API server, not the dashboard, decides whether they may.
let sent = 0;

async function act(action) {
  const result = document.getElementById("action-result");
  result.dataset.sent = String(++sent); // how many asked for, so far
  const token = document.getElementById("token").value.trim();
  if (!token) {
    result.dataset.state = "refused";
    result.textContent = "Paste your Kubernetes token first: changes are made as you.";
    return;
  }
  const res = await fetch("api/actions", { method: "POST", body: JSON.stringify(action),
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + token } });
  result.dataset.state = res.ok ? "done" : "refused";
  result.textContent = res.ok ? (await res.json()).message : (await res.text()).trim();
}

document.getElementById("token").addEventListener("input", (e) => sessionStorage.setItem("token", e.target.value));

document.getElementById("workload-actions").addEventListener("click", (e) => {
  const button = e.target.closest("button[data-verb]");
  if (!button || !workload) return;
  const [namespace, name] = workload.split("/");
  act({ verb: button.dataset.verb, kind: "Workload", namespace, name }).then(loadWorkload);
});

document.getElementById("workload-close").addEventListener("click", () => {
  workload = null;
  document.getElementById("workload").hidden = true;
  keepInURL();
});

// A workload's row opens its page; the lists are drawn again on every
// change, so one listener serves them all.
document.getElementById("queue").addEventListener("click", (e) => {
  const row = e.target.closest("tr[data-workload]");
  if (row) openWorkload(row.dataset.workload);
});

function select(name) {
  selected = name;
  keepInURL();
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
  const button = e.target.closest("button[data-verb]");
  if (button) {
    act({ verb: button.dataset.verb, kind: button.dataset.kind, name: button.dataset.name });
    return;
  }
  const node = e.target.closest(".node");
  if (node && node.dataset.node.startsWith("ClusterQueue/")) select(node.dataset.node.slice("ClusterQueue/".length));
});

for (const state of ["pending", "admitted"]) {
  document.getElementById(state + "-more").addEventListener("click", () => {
    shown[state] = Math.min(shown[state] + pageSize, 500);
    loadQueue();
  });
}

// Its pods and events change without a change to any queue or workload,
// so an open workload page also asks again every few seconds; the server
// reads them from the API server at most once in two seconds for every
// page that asks.
setInterval(loadWorkload, 3000);

{
  const shownAtStart = new URLSearchParams(location.hash.slice(1));
  workload = shownAtStart.get("wl");
  if (shownAtStart.get("cq")) select(shownAtStart.get("cq"));
  loadWorkload();
}

fetch("api/config").then((r) => r.json()).then((c) => {
  actions = c.actions;
  document.getElementById("actions").hidden = !actions;
  document.getElementById("token").value = sessionStorage.getItem("token") ?? "";
  if (lastTree) renderTree(lastTree); // with its buttons
});

const live = document.getElementById("live");
const events = new EventSource("api/events");
events.addEventListener("tree", (e) => {
  live.dataset.state = "live";
  live.textContent = "live";
  const tree = JSON.parse(e.data);
  renderTree(tree);
  // The selected queue's lists are asked for again only when it, or one
  // of its workloads, changed.
  if ((tree.changed ?? []).includes(selected)) loadQueue();
  loadWorkload();
});
// (Re)connected: whatever changed meanwhile is not named in an event.
events.addEventListener("open", () => loadQueue());
events.addEventListener("error", () => {
  live.dataset.state = "lost";
  live.textContent = "reconnecting…";
});
