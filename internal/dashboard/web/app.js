// berth's dashboard page. Everything shown comes from the dashboard's own
// API, which reads one watch of the cluster; text is set with textContent
// only, never parsed as HTML.
"use strict";

// Lists are virtual: each is a scroll box of fixed-height rows, and only
// the rows in view (and a margin around them) are asked for and drawn, so a
// queue of tens of thousands costs the page what forty rows cost.
let rowHeight = 22; // px, as style.css asks; measured once rows are drawn
const margin = 20; // rows drawn above and below those in view
let selected = null; // the ClusterQueue whose workloads are shown
let workload = null; // the workload whose page is shown, "namespace/name"
let topology = null; // the flavor whose topology is shown
let worker = null; // the worker cluster whose workloads are shown
let localQueue = ""; // the one LocalQueue whose workloads are listed, "" for all
let actions = false; // berth dashboard --allow-actions

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

// nodeView draws a cohort's or ClusterQueue's own box, without the nodes
// below it (drawTree puts those in).
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
  if (n.budget) {
    const b = el("span", "budget", "budget: " + n.budget);
    b.dataset.field = "budget";
    head.append(b);
  }
  // Its LocalQueues' budgets, when the viewer may list LocalQueues.
  for (const lq of Object.keys(n.localQueueBudgets ?? {}).sort()) {
    const b = el("span", "budget", "LocalQueue " + lq + " budget: " + n.localQueueBudgets[lq]);
    Object.assign(b.dataset, { field: "localqueue-budget", localqueue: lq });
    head.append(b);
  }
  box.append(head);
  for (const r of n.resources ?? []) box.append(resourceRow(r));
  if (n.kind === "ClusterQueue" && n.name === selected) box.classList.add("selected");
  return box;
}

let lastTree = null;
// drawn keeps each node's box and what it was drawn from: a change draws
// again only the nodes that changed, so a thousand queues cost what the
// few that moved cost, and the page keeps up with the events.
let drawn = new Map();

function drawTree(container, nodes, seen) {
  const boxes = nodes.map((n) => {
    const key = n.kind + "/" + n.name;
    seen.add(key);
    const { children, ...own } = n;
    const sig = JSON.stringify(own);
    let d = drawn.get(key);
    if (!d || d.sig !== sig) {
      const kids = d ? d.kids : el("div", "kids");
      d = { sig, box: nodeView(n), kids };
      d.box.append(kids);
      drawn.set(key, d);
    }
    drawTree(d.kids, children ?? [], seen);
    return d.box;
  });
  const now = container.children;
  if (now.length !== boxes.length || boxes.some((b, i) => now[i] !== b)) container.replaceChildren(...boxes);
}

// stats says how the page keeps up with the events (the scale benchmark
// reads it as window.berthStats): trees received, trees drawn and the time
// spent drawing them.
const stats = { events: 0, renders: 0, renderMs: 0, renderMaxMs: 0 };
window.berthStats = stats;

function renderTree(tree) {
  const start = performance.now();
  try {
    drawWholeTree(tree);
  } finally {
    const took = performance.now() - start;
    stats.renders++;
    stats.renderMs += took;
    stats.renderMaxMs = Math.max(stats.renderMaxMs, took);
  }
}

function drawWholeTree(tree) {
  lastTree = tree;
  const root = document.getElementById("tree");
  if (tree.roots.length === 0) {
    drawn.clear();
    root.replaceChildren(el("p", "", "No ClusterQueue yet."));
    return;
  }
  const seen = new Set();
  drawTree(root, tree.roots, seen);
  for (const key of drawn.keys()) {
    if (!seen.has(key)) drawn.delete(key);
  }
}

// Events that come while the page is busy drawing are not drawn one by
// one: the newest tree is drawn once the page is free. A posted message,
// not a timer, says when: browsers hold timers back (to a second and
// more) in pages they deem in the background, a message they do not.
let nextTree = null;
const drawNext = new MessageChannel();
drawNext.port1.onmessage = () => {
  const t = nextTree;
  nextTree = null;
  renderTree(t);
};
function treeArrived(tree) {
  const scheduled = nextTree !== null;
  nextTree = tree;
  if (!scheduled) drawNext.port2.postMessage(null);
}

function age(created) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(created)) / 1000));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  return Math.round(s / 3600) + "h";
}

function pad(height) {
  const tr = el("tr", "pad");
  const td = el("td");
  td.colSpan = 6;
  td.style.height = height + "px";
  tr.append(td);
  return tr;
}

// loadList asks for the rows of one list that are in view and draws them
// between two pads that keep the scroll box as tall as the whole list.
async function loadList(state) {
  const cq = selected;
  const box = document.getElementById(state + "-box");
  const first = Math.max(0, Math.floor(box.scrollTop / rowHeight) - margin);
  const count = Math.ceil(box.clientHeight / rowHeight) + 2 * margin;
  const lq = localQueue;
  const url = "api/workloads?" + new URLSearchParams({ clusterQueue: cq, state, offset: String(first), limit: String(count), localQueue: lq });
  const res = await fetch(url);
  if (!res.ok || cq !== selected || lq !== localQueue) return;
  const page = await res.json();
  offerLocalQueues(page.localQueues);
  const rows = page.rows.map((r) => {
    const tr = el("tr");
    tr.dataset.workload = r.namespace + "/" + r.name;
    tr.dataset.position = String(r.position);
    for (const text of [String(r.position), r.namespace + "/" + r.name, r.localQueue, String(r.priority), age(r.created), r.why]) {
      const td = el("td", "", text);
      td.title = text;
      tr.append(td);
    }
    return tr;
  });
  const after = Math.max(0, page.total - first - rows.length);
  document.querySelector("#" + state + " tbody").replaceChildren(pad(first * rowHeight), ...rows, pad(after * rowHeight));
  // What the browser made of the rows' height is what the pads and the
  // scroll position must count in.
  const measured = rows.length > 0 ? rows[0].getBoundingClientRect().height : 0;
  if (measured > 0 && Math.abs(measured - rowHeight) > 0.01) {
    rowHeight = measured;
    lists[state]();
  }
  document.getElementById(state + "-total").textContent = "(" + page.total + ")";
}

// offerLocalQueues keeps the LocalQueue filter's choices those of the
// queue shown.
function offerLocalQueues(names) {
  const filter = document.getElementById("lq-filter");
  const want = ["", ...names];
  if (localQueue && !want.includes(localQueue)) want.push(localQueue);
  if ([...filter.options].map((o) => o.value).join("\n") === want.join("\n")) return;
  filter.replaceChildren(...want.map((v) => {
    const o = el("option", "", v || "all");
    o.value = v;
    return o;
  }));
  filter.value = localQueue;
}

document.getElementById("lq-filter").addEventListener("change", (e) => {
  localQueue = e.target.value;
  keepInURL();
  for (const state of ["pending", "admitted"]) document.getElementById(state + "-box").scrollTop = 0;
  loadQueue();
});

const lists = {
  pending: coalesce(() => loadList("pending")),
  admitted: coalesce(() => loadList("admitted")),
};

function loadQueue() {
  if (!selected) return;
  lists.pending();
  lists.admitted();
}

// charts are the selected queue's uPlot charts, by container id; drawn
// again from scratch when the queue or its series change, else given the
// new data.
const charts = {};
const colors = ["#4a7bd9", "#e3a33b", "#3aa87a", "#b3261e", "#7a4ad9", "#6b7385"];

function drawChart(id, labels, data) {
  const box = document.getElementById(id);
  const key = selected + "|" + labels.join("|");
  box.dataset.samples = String(data[0].length);
  box.dataset.total = String(data.slice(1).flat().reduce((a, v) => a + (v ?? 0), 0));
  if (charts[id] && charts[id].key === key) {
    charts[id].plot.setData(data);
    return;
  }
  if (charts[id]) charts[id].plot.destroy();
  const opts = {
    title: box.dataset.title, width: Math.max(box.clientWidth, 280), height: 150,
    series: [{}, ...labels.map((label, i) => ({ label, stroke: colors[i % colors.length], width: 1.5, spanGaps: false }))],
    scales: { x: { time: true } }, legend: { live: false },
  };
  charts[id] = { key, plot: new uPlot(opts, data, box) };
}

// loadCharts draws the selected ClusterQueue's last hour, as the dashboard
// sampled it.
const loadCharts = coalesce(async () => {
  if (!selected) return;
  const cq = selected;
  const res = await fetch("api/history?" + new URLSearchParams({ clusterQueue: cq }));
  if (cq !== selected) return;
  const note = document.getElementById("charts-note");
  if (!res.ok) {
    note.textContent = "(no sample yet)";
    return;
  }
  const h = await res.json();
  note.textContent = "(sampled every " + h.step + " s since the dashboard started)";
  drawChart("chart-admissions", ["admitted"], [h.at, h.admissions]);
  drawChart("chart-workloads", ["pending", "admitted"], [h.at, h.pending, h.admitted]);
  const keys = Object.keys(h.usage).sort();
  drawChart("chart-usage", keys, [h.at, ...keys.map((k) => h.usage[k])]);
});

// The URL keeps what is shown (#cq=NAME&wl=NAMESPACE/NAME): a link to this
// view.
function keepInURL() {
  const p = new URLSearchParams();
  if (selected) p.set("cq", selected);
  if (workload) p.set("wl", workload);
  if (topology) p.set("topo", topology);
  if (worker) p.set("worker", worker);
  if (localQueue) p.set("lq", localQueue);
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

// roomRow is one resource of a domain or node: a bar of what is taken,
// and what placement may still give.
function roomRow(r) {
  const row = el("div", "res");
  row.dataset.resource = r.resource;
  row.append(el("span", "", r.resource));
  const label = el("span", "", r.free + " free of " + r.allocatable);
  label.dataset.field = "free";
  row.append(label);
  const bar = el("div", "bar");
  const alloc = quantity(r.allocatable), free = quantity(r.free);
  const u = el("div", "used");
  u.style.width = (100 * Math.min(Math.max(alloc - free, 0), alloc) / Math.max(alloc, 1e-9)) + "%";
  bar.append(u);
  row.append(bar);
  return row;
}

function domainView(d) {
  const box = el("div", "domain");
  box.dataset.domain = d.name;
  const head = el("div", "head");
  head.append(el("span", "name", d.name), el("span", "kind", d.level));
  box.append(head);
  for (const r of d.room ?? []) box.append(roomRow(r));
  if ((d.gangs ?? []).length > 0) {
    const gangs = el("div", "gangs");
    for (const g of d.gangs) {
      const chip = el("span", "gang", g.workload + " ×" + g.pods);
      chip.title = "ClusterQueue " + g.clusterQueue + ": " + g.pods + " pods here";
      chip.dataset.workload = g.workload;
      gangs.append(chip);
    }
    box.append(gangs);
  }
  for (const c of d.domains ?? []) box.append(domainView(c));
  // A host level names its node already; other lowest levels list theirs.
  const nodes = (d.nodes ?? []).filter((n) => n.name !== d.name);
  if (nodes.length > 0) box.append(el("div", "hosts", "nodes: " + nodes.map((n) => n.name).join(", ")));
  return box;
}

const loadTopology = coalesce(async () => {
  if (!topology) return;
  const flavor = topology;
  const res = await fetch("api/topology?" + new URLSearchParams({ flavor }));
  if (flavor !== topology) return;
  document.getElementById("topology").hidden = false;
  document.getElementById("topology-title").textContent = "Topology of ResourceFlavor " + flavor;
  const domains = document.getElementById("topology-domains");
  if (!res.ok) {
    document.getElementById("topology-summary").textContent = (await res.text()).trim();
    domains.replaceChildren();
    return;
  }
  const v = await res.json();
  const summary = ["Topology " + v.topology, "levels " + v.levels.join(" › ")];
  if ((v.left ?? []).length > 0) summary.push("left out: " + v.left.join(", "));
  document.getElementById("topology-summary").textContent = summary.join(" · ");
  const boxes = v.domains.map(domainView);
  if (boxes.length === 0) boxes.push(el("p", "", "No node of this flavor is in the topology."));
  domains.replaceChildren(...boxes);
});

function openTopology(flavor) {
  topology = flavor;
  keepInURL();
  loadTopology();
}

const loadTopologies = coalesce(async () => {
  const res = await fetch("api/topologies");
  if (!res.ok) return;
  const list = await res.json();
  const items = list.map((t) => {
    const li = el("li");
    const a = el("a", "", t.flavor);
    a.dataset.flavor = t.flavor;
    li.append(a, el("span", "kind", " (Topology " + t.topology + ")"));
    return li;
  });
  if (items.length === 0) items.push(el("li", "kind", "No ResourceFlavor names a Topology."));
  document.getElementById("topologies").replaceChildren(...items);
});

document.getElementById("topologies").addEventListener("click", (e) => {
  const a = e.target.closest("a[data-flavor]");
  if (a) openTopology(a.dataset.flavor);
});

document.getElementById("topology-domains").addEventListener("click", (e) => {
  const chip = e.target.closest(".gang[data-workload]");
  if (chip) openWorkload(chip.dataset.workload);
});

document.getElementById("topology-close").addEventListener("click", () => {
  topology = null;
  document.getElementById("topology").hidden = true;
  keepInURL();
});

// What if: a trace replayed against two plans by the dashboard (POST
// api/whatif), shown as `berth whatif` prints it, each figure "A → B".
function waitText(s) {
  if (s >= 7200) return (s / 3600).toFixed(1) + " h";
  if (s >= 120) return (s / 60).toFixed(1) + " min";
  return (s < 10 ? s.toFixed(1) : String(Math.round(s))) + " s";
}

function both(a, b, f) {
  return f(a) + " → " + f(b);
}

// drawWhatIfPanel draws one panel of the replay's chart: the plans' lines
// over the hours of the trace, on the x values of all of them (a plan's
// line has a gap where it has no point, such as a step with no arrival).
function drawWhatIfPanel(box, panel) {
  const xs = [...new Set(panel.series.flatMap((s) => (s.Points ?? []).map((p) => p.X)))].sort((a, b) => a - b);
  const data = [xs, ...panel.series.map((s) => {
    const at = new Map((s.Points ?? []).map((p) => [p.X, p.Y]));
    return xs.map((x) => at.get(x) ?? null);
  })];
  const div = el("div", "chart");
  box.append(div);
  new uPlot({
    title: panel.Title, width: Math.max(box.clientWidth / 2 - 16, 280), height: 150,
    series: [{ label: "hours" }, ...panel.series.map((s, i) => ({ label: s.Name, stroke: colors[i % colors.length], width: 1.5, spanGaps: true }))],
    scales: { x: { time: false } }, axes: [{ label: "hours since the trace's start" }, {}], legend: { live: false },
  }, data, div);
}

async function replayWhatIf() {
  const status = document.getElementById("whatif-status");
  const result = document.getElementById("whatif-result");
  const file = (id) => document.getElementById(id).files[0];
  const trace = file("whatif-trace"), a = file("whatif-a"), b = file("whatif-b");
  const history = document.getElementById("whatif-history").checked;
  status.dataset.state = "refused";
  if (!trace && !history) {
    status.textContent = "Choose a trace, or this cluster's history, first.";
    return;
  }
  if (trace && history) {
    status.textContent = "Either a trace or this cluster's history, not both.";
    return;
  }
  if (!b) {
    status.textContent = "Choose plan B, the configuration to compare with.";
    return;
  }
  const plan = async (f) => (f ? { name: f.name, yaml: await f.text() } : { thisCluster: true });
  const source = history ? "this cluster's history" : trace.name;
  const request = { plans: [await plan(a), await plan(b)], fairSharing: document.getElementById("whatif-fair").checked };
  if (history) request.history = true;
  else Object.assign(request, { trace: await trace.text(), traceName: trace.name });
  status.dataset.state = "running";
  status.textContent = "Replaying " + source + "…";
  document.getElementById("whatif-run").disabled = true;
  let res;
  try {
    res = await fetch("api/whatif", { method: "POST", body: JSON.stringify(request), headers: { "Content-Type": "application/json" } });
  } catch (err) {
    status.dataset.state = "refused";
    status.textContent = "The dashboard did not answer: " + err;
    return;
  } finally {
    document.getElementById("whatif-run").disabled = false;
  }
  if (!res.ok) {
    status.dataset.state = "refused";
    status.textContent = (await res.text()).trim();
    result.hidden = true;
    return;
  }
  const v = await res.json();
  const c = v.comparison;
  status.dataset.state = "done";
  const left = Object.entries(v.left ?? {}).map(([why, n]) => n + " " + why).join("; ");
  status.textContent = "Replayed " + v.workloads + " workloads of " + source + (left ? " (left out: " + left + ")" : "") + ". A: " + c.A + ", " + c.preemptionsA + " preemptions. B: " + c.B + ", " +
    c.preemptionsB + " preemptions. " + (100 * c.orderAgreement).toFixed(1) + " % of pairs admitted in the same order.";
  fillTable("whatif-groups", c.groups, (g) => [g.by, g.name,
    both(g.a, g.b, (s) => s.admitted + " of " + s.workloads), both(g.a, g.b, (s) => waitText(s.meanWait)),
    both(g.a, g.b, (s) => waitText(s.p50Wait)), both(g.a, g.b, (s) => waitText(s.p95Wait)),
    both(g.a, g.b, (s) => waitText(s.maxWait)), both(g.a, g.b, (s) => String(s.preempted))]);
  const use = (u, f) => (u ? f(u) : "none");
  fillTable("whatif-quota", c.quota ?? [], (q) => [q.clusterQueue, q.flavor + "/" + q.resource,
    both(q.a, q.b, (u) => use(u, (x) => String(x.nominal))), both(q.a, q.b, (u) => use(u, (x) => x.used.toFixed(2))),
    both(q.a, q.b, (u) => use(u, (x) => x.borrowed.toFixed(2)))]);
  fillTable("whatif-changed", c.changed ?? [], (ch) => [ch.key,
    (ch.admittedA ? waitText(ch.waitA) : "not admitted") + " → " + (ch.admittedB ? waitText(ch.waitB) : "not admitted")]);
  result.hidden = false;
  const charts = document.getElementById("whatif-charts");
  charts.replaceChildren();
  for (const p of v.chart.Panels ?? []) drawWhatIfPanel(charts, { Title: p.Title, series: p.Series ?? [] });
}

document.getElementById("whatif-form").addEventListener("submit", (e) => {
  e.preventDefault();
  replayWhatIf();
});
document.getElementById("whatif-open").addEventListener("click", () => {
  document.getElementById("whatif").hidden = false;
});
document.getElementById("whatif-close").addEventListener("click", () => {
  document.getElementById("whatif").hidden = true;
});

function workerState(w) {
  if (w.active) return "reachable";
  return (w.reason ?? "") + (w.message ? ": " + w.message : "");
}

// loadWorkers draws the worker clusters and, when one is open, its page.
const loadWorkers = coalesce(async () => {
  const res = await fetch("api/workers");
  if (!res.ok) return;
  const list = await res.json();
  document.getElementById("workers-pane").hidden = list.length === 0;
  document.querySelector("#workers tbody").replaceChildren(...list.map((w) => {
    const tr = el("tr");
    tr.dataset.worker = w.name;
    const state = el("td", "", workerState(w));
    state.dataset.state = w.active ? "live" : "lost";
    tr.append(el("td", "", w.name), state, el("td", "", String(w.running)));
    return tr;
  }));
  if (!worker) return;
  const name = worker;
  const one = await fetch("api/workers?" + new URLSearchParams({ name }));
  if (name !== worker) return;
  document.getElementById("worker").hidden = false;
  document.getElementById("worker-title").textContent = "Worker cluster " + name;
  if (!one.ok) {
    document.getElementById("worker-summary").textContent = (await one.text()).trim();
    fillTable("worker-workloads", [], () => []);
    return;
  }
  const [w] = await one.json();
  const summary = [workerState(w) + (w.since && !w.since.startsWith("0001-") ? " since " + when(w.since) : ""),
    w.running + " running", "MultiClusterConfigs: " + ((w.configs ?? []).join(", ") || "none")];
  document.getElementById("worker-summary").textContent = summary.join(" · ");
  document.querySelector("#worker-workloads tbody").replaceChildren(...(w.workloads ?? []).map((r) => {
    const tr = el("tr");
    tr.dataset.workload = r.workload;
    tr.append(el("td", "", r.workload), el("td", "", r.clusterQueue));
    return tr;
  }));
});

document.getElementById("workers").addEventListener("click", (e) => {
  const row = e.target.closest("tr[data-worker]");
  if (!row) return;
  worker = row.dataset.worker;
  keepInURL();
  loadWorkers();
});

document.getElementById("worker-workloads").addEventListener("click", (e) => {
  const row = e.target.closest("tr[data-workload]");
  if (row) openWorkload(row.dataset.workload);
});

document.getElementById("worker-close").addEventListener("click", () => {
  worker = null;
  document.getElementById("worker").hidden = true;
  keepInURL();
});

// loadVClusters draws the virtual clusters synced into this cluster.
const loadVClusters = coalesce(async () => {
  const res = await fetch("api/vclusters");
  if (!res.ok) return;
  const list = await res.json();
  document.getElementById("vclusters-pane").hidden = list.length === 0;
  fillTable("vclusters", list, (v) => [v.name, v.hostNamespace, (v.queues ?? []).join(", ") || "none",
    Object.entries(v.pods).map(([phase, n]) => n + " " + phase).join(", ") || "none",
    v.pending + " pending, " + v.admitted + " admitted"]);
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

function select(name, lq = "") {
  localQueue = lq;
  document.getElementById("lq-filter").value = lq;
  selected = name;
  keepInURL();
  for (const state of ["pending", "admitted"]) document.getElementById(state + "-box").scrollTop = 0;
  document.getElementById("queue-title").textContent = "ClusterQueue " + name;
  document.getElementById("queue").hidden = false;
  for (const n of document.querySelectorAll(".node.cq")) {
    n.classList.toggle("selected", n.dataset.node === "ClusterQueue/" + name);
  }
  loadQueue();
  loadCharts();
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
  document.getElementById(state + "-box").addEventListener("scroll", () => lists[state](), { passive: true });
}

// Pods, events and nodes change without a change to any queue or
// workload, so an open workload or topology page, and the virtual
// clusters, also ask again every few seconds; the server reads them from the API server at most once in two
// seconds for every page that asks.
setInterval(loadWorkload, 3000);
setInterval(loadTopology, 3000);
setInterval(loadVClusters, 3000);
setInterval(loadCharts, 5000); // the history changes once a sample, every 15 s

{
  const shownAtStart = new URLSearchParams(location.hash.slice(1));
  workload = shownAtStart.get("wl");
  topology = shownAtStart.get("topo");
  worker = shownAtStart.get("worker");
  if (shownAtStart.get("cq")) select(shownAtStart.get("cq"), shownAtStart.get("lq") ?? "");
  loadWorkload();
  loadTopology();
  loadTopologies();
  loadWorkers();
  loadVClusters();
}

fetch("api/config").then((r) => r.json()).then((c) => {
  actions = c.actions;
  document.getElementById("actions").hidden = !actions;
  document.getElementById("token").value = sessionStorage.getItem("token") ?? "";
  if (lastTree && actions) {
    drawn = new Map(); // every node again, with its buttons
    renderTree(lastTree);
  }
});

const live = document.getElementById("live");
const events = new EventSource("api/events");
events.addEventListener("tree", (e) => {
  live.dataset.state = "live";
  live.textContent = "live";
  stats.events++;
  const tree = JSON.parse(e.data);
  treeArrived(tree);
  // The selected queue's lists are asked for again only when it, or one
  // of its workloads, changed.
  if ((tree.changed ?? []).includes(selected)) loadQueue();
  loadWorkload();
  loadTopology();
  loadTopologies(); // flavors are not watched: a new one shows with the next change
  loadWorkers();
  loadVClusters();
});
// (Re)connected: whatever changed meanwhile is not named in an event.
events.addEventListener("open", () => loadQueue());
events.addEventListener("error", () => {
  live.dataset.state = "lost";
  live.textContent = "reconnecting…";
});
