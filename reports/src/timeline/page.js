"use strict";
(function () {
  const data = JSON.parse(document.getElementById("lanes").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const root = document.getElementById("timeline");
  const LABEL_W = 170, ROW_H = 18, AXIS_H = 26, GROUP_GAP = 8;
  // A little room after the end, so that a mark at the very end shows.
  const full = [0, Math.max(data.end, 1) * 1.02 + 1];
  let view = full.slice();
  let cursor = null;

  function el(name, attrs, text) {
    const node = document.createElementNS(NS, name);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fmt(t) {
    return UNIT === "us" ? (t / 1e6).toFixed(t < 1e7 ? 3 : 1) + " s" : "step " + Math.round(t);
  }
  // Non-overlapping tracks for spans that may overlap (a client's nodes).
  function tracks(spans) {
    const ends = [], out = [];
    for (const span of spans) {
      let i = ends.findIndex(end => end <= span.start);
      if (i < 0) { i = ends.length; ends.push(0); out.push([]); }
      ends[i] = Math.max(span.end, span.start + 1);
      out[i].push(span);
    }
    return out.length ? out : [[]];
  }
  // The rows of the drawing: one group per client, then the ensemble.
  const groups = [];
  for (const c of data.clients) {
    const rows = [
      { name: "faults", spans: [] },
      { name: "connection", spans: c.connection },
      { name: "role", spans: c.role },
    ];
    tracks(c.nodes).forEach((spans, i) => rows.push({ name: i ? "" : "nodes", spans }));
    groups.push({ id: "client-" + c.client, name: "client " + c.client, kind: "client", client: c.client, rows });
  }
  groups.push({
    id: "ensemble", name: "ensemble", kind: "ensemble",
    rows: [{ name: "faults", spans: [] }].concat(data.servers.map(s => ({ name: "server " + s.server, spans: s.roles }))),
  });

  function gotoRow(row) {
    const tr = document.getElementById("row-" + row);
    if (!tr) return;
    document.querySelectorAll("#rows tr.current").forEach(r => r.classList.remove("current"));
    tr.classList.remove("hidden");
    tr.classList.add("current");
    tr.scrollIntoView({ block: "center" });
  }
  function showMoment(at) {
    const width = Math.max((view[1] - view[0]), 1);
    view = [at - width / 2, at + width / 2];
    cursor = at;
    draw();
    root.scrollIntoView({ block: "nearest" });
  }

  function draw() {
    root.textContent = "";
    const width = Math.max(root.clientWidth || 1200, 600);
    const plot = width - LABEL_W - 8;
    const x = t => LABEL_W + (t - view[0]) / (view[1] - view[0]) * plot;
    const clip = t => Math.min(Math.max(x(t), LABEL_W), LABEL_W + plot);
    // Violation labels, stacked in rows above the axis so that none hides another.
    const labelled = [], rowEnds = [];
    for (const m of data.markers) {
      if (m.at < view[0] || m.at > view[1]) continue;
      const left = x(m.at) + 4, right = left + (m.property.length + 2) * 7;
      let row = rowEnds.findIndex(end => end < left);
      if (row < 0) { row = rowEnds.length; rowEnds.push(0); }
      rowEnds[row] = right;
      labelled.push({ m, row });
    }
    const top = rowEnds.length * 14;
    let height = top + AXIS_H;
    for (const g of groups) { g.top = height; height += g.rows.length * ROW_H + GROUP_GAP; }
    const svg = el("svg", { width, height, role: "img", "aria-label": "timeline" });
    const defs = el("defs", {});
    const clipPath = el("clipPath", { id: "plot" });
    clipPath.appendChild(el("rect", { x: LABEL_W, y: 0, width: plot, height }));
    defs.appendChild(clipPath);
    svg.appendChild(defs);
    // Axis.
    const axis = el("g", { class: "axis" });
    const span = view[1] - view[0];
    const raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) || raw;
    for (let t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      axis.appendChild(el("line", { x1: x(t), x2: x(t), y1: top + AXIS_H - 6, y2: height }));
      axis.appendChild(el("text", { x: x(t) + 2, y: top + AXIS_H - 10 }, fmt(t)));
    }
    svg.appendChild(axis);
    const plotted = el("g", { "clip-path": "url(#plot)" });
    // Lanes.
    for (const g of groups) {
      const lane = el("g", { class: "lane lane-" + g.kind, "data-lane": g.id });
      lane.appendChild(el("rect", { class: "band-" + g.kind, x: 0, y: g.top, width, height: g.rows.length * ROW_H }));
      lane.appendChild(el("text", { class: "lane-name", x: 4, y: g.top + 13 }, g.name));
      const spans = el("g", { "clip-path": "url(#plot)" });
      g.rows.forEach((row, i) => {
        const y = g.top + i * ROW_H;
        lane.appendChild(el("text", { class: "sublane-name", x: 80, y: y + 13 }, row.name));
        for (const s of row.spans) {
          if (s.end < view[0] || s.start > view[1]) continue;
          const x0 = clip(s.start), x1 = Math.max(clip(s.end), x0 + 2);
          const rect = el("rect", { class: "span " + s.class, x: x0, y: y + 2, width: x1 - x0, height: ROW_H - 4, "data-row": s.row });
          rect.appendChild(el("title", {}, s.label + " (" + fmt(s.start) + " to " + fmt(s.end) + ")"));
          rect.addEventListener("click", () => gotoRow(s.row));
          spans.appendChild(rect);
          if (x1 - x0 > s.label.length * 6.2 + 6) {
            const dark = s.class === "crashed" || s.class === "down" || s.class === "leading";
            spans.appendChild(el("text", { class: "span-label" + (dark ? " dark" : ""), x: x0 + 3, y: y + 13 }, s.label));
          }
        }
      });
      lane.appendChild(spans);
      svg.appendChild(lane);
    }
    // Faults over the lanes they hit.
    const ensemble = groups[groups.length - 1];
    for (const f of data.faults) {
      if (f.end < view[0] || f.start > view[1]) continue;
      const hit = f.clients.length ? groups.filter(g => f.clients.includes(g.client)) : [ensemble];
      for (const g of hit.length ? hit : [ensemble]) {
        const x0 = clip(f.start), x1 = Math.max(clip(f.end), x0 + 2);
        if (f.end > f.start) {
          plotted.appendChild(el("rect", { class: "fault-outline", x: x0, y: g.top + ROW_H - 2, width: x1 - x0, height: (g.rows.length - 1) * ROW_H }));
        }
        const rect = el("rect", { class: "fault-span " + f.class, x: x0, y: g.top + 2, width: x1 - x0, height: ROW_H - 4, "data-row": f.row });
        rect.appendChild(el("title", {}, f.label + " at " + fmt(f.start) + (f.end > f.start ? " to " + fmt(f.end) : "")));
        rect.addEventListener("click", () => gotoRow(f.row));
        plotted.appendChild(rect);
        const word = f.label.split(/[ :{(]/)[0];
        if (x1 - x0 > word.length * 6.2 + 6) {
          plotted.appendChild(el("text", { class: "span-label", x: x0 + 3, y: g.top + 13 }, word));
        }
      }
    }
    // Violations.
    for (const { m, row } of labelled) {
      const line = el("line", { class: "violation", x1: x(m.at), x2: x(m.at), y1: row * 14 + 2, y2: height, "data-property": m.property });
      line.appendChild(el("title", {}, m.property + ": " + m.detail + "\n" + m.explanation));
      line.addEventListener("click", () => {
        m.rows.forEach(r => document.getElementById("row-" + r)?.classList.remove("hidden"));
        if (m.rows.length) gotoRow(m.rows[m.rows.length - 1]);
      });
      plotted.appendChild(line);
      const label = el("text", { class: "violation-label", x: x(m.at) + 4, y: row * 14 + 11 }, "\u2716 " + m.property);
      if (x(m.at) + (m.property.length + 2) * 7 > width) {
        label.setAttribute("x", x(m.at) - 4);
        label.setAttribute("text-anchor", "end");
      }
      plotted.appendChild(label);
    }
    if (cursor !== null && cursor >= view[0] && cursor <= view[1]) {
      plotted.appendChild(el("line", { class: "cursor", x1: x(cursor), x2: x(cursor), y1: top + AXIS_H - 6, y2: height }));
    }
    svg.appendChild(plotted);
    root.appendChild(svg);
    document.getElementById("window").textContent = fmt(view[0]) + " to " + fmt(view[1]);
  }

  function zoom(factor, at) {
    const centre = at === undefined ? (view[0] + view[1]) / 2 : at;
    const width = Math.max((view[1] - view[0]) * factor, 10);
    const left = (centre - view[0]) / (view[1] - view[0]);
    view = [centre - width * left, centre + width * (1 - left)];
    draw();
  }
  root.addEventListener("wheel", event => {
    event.preventDefault();
    const box = root.getBoundingClientRect();
    const plot = box.width - LABEL_W - 8;
    const at = view[0] + (event.clientX - box.left - LABEL_W) / plot * (view[1] - view[0]);
    zoom(event.deltaY > 0 ? 1.25 : 0.8, at);
  }, { passive: false });
  let drag = null;
  root.addEventListener("mousedown", event => { drag = { x: event.clientX, view: view.slice() }; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", event => {
    if (!drag) return;
    const plot = root.clientWidth - LABEL_W - 8;
    const dt = (event.clientX - drag.x) / plot * (drag.view[1] - drag.view[0]);
    if (Math.abs(event.clientX - drag.x) < 2) return;
    view = [drag.view[0] - dt, drag.view[1] - dt];
    draw();
  });
  document.getElementById("zoom-in").addEventListener("click", () => zoom(0.5));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(2));
  document.getElementById("zoom-fit").addEventListener("click", () => { view = full.slice(); cursor = null; draw(); });
  window.addEventListener("resize", draw);

  // The legend.
  const legend = document.getElementById("legend");
  const swatches = [["connected", "#9ecae1"], ["suspended", "#fdae6b"], ["expired", "#bdbdbd"], ["crashed", "#525252"],
    ["holder / leader", "#31a354"], ["ephemeral node", "#bcbddc"], ["server leading", "#3182bd"], ["following", "#c6dbef"],
    ["looking", "#fee391"], ["fault", "#fdd0a2"], ["violation", "#d7191c"]];
  for (const [name, colour] of swatches) {
    const item = document.createElement("span");
    item.style.setProperty("--swatch", colour);
    item.textContent = name;
    legend.appendChild(item);
  }

  // The history table: filters, and each row's link to its moment.
  const rows = Array.from(document.querySelectorAll("#rows tbody tr"));
  const clientFilter = document.getElementById("filter-client");
  const kindFilter = document.getElementById("filter-kind");
  const values = attr => Array.from(new Set(rows.map(r => r.dataset[attr]).filter(v => v !== "")));
  for (const c of values("client").sort((a, b) => a - b)) clientFilter.appendChild(new Option("client " + c, c));
  for (const k of values("kind").sort()) kindFilter.appendChild(new Option(k, k));
  function filter() {
    let shown = 0;
    for (const r of rows) {
      const ok = (!clientFilter.value || r.dataset.client === clientFilter.value) &&
        (!kindFilter.value || r.dataset.kind === kindFilter.value);
      r.classList.toggle("hidden", !ok);
      if (ok) shown++;
    }
    document.getElementById("shown").textContent = shown + " of " + rows.length + " rows";
  }
  clientFilter.addEventListener("change", filter);
  kindFilter.addEventListener("change", filter);
  document.getElementById("rows").addEventListener("click", event => {
    const link = event.target.closest("a[data-goto]");
    if (!link) return;
    event.preventDefault();
    const tr = link.closest("tr");
    document.querySelectorAll("#rows tr.current").forEach(r => r.classList.remove("current"));
    tr.classList.add("current");
    showMoment(Number(tr.dataset.at));
  });
  filter();
  draw();
})();
