// The report's interactive parts: the items that moved most, and the item table (sort, filter, search,
// one item's step results in a dialog). Only the rows in view are in the DOM, so 10,000 items stay fast.
"use strict";
// The item table's JSON, gzipped in base64 by the report's writer.
async function unpackItems() {
  const binary = atob(document.getElementById("report-items").textContent.trim());
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

(async function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const scorers = data.scorers;
  const ROW_H = 31; // .trow height + its border, px
  // Control and bidi characters written as escapes (U+202E as \u202e), by the rule the CLI uses
  // (flows/report/text.py's `visible`, handed over as data): a user's text never reorders or hides what is drawn.
  const rule = data.visible, invisible = new RegExp(rule.pattern, "gu");
  const hex = (c, n) => c.codePointAt(0).toString(16).padStart(n, "0");
  const shown = (text, keep) => text.replace(invisible, (c) => (keep.includes(c) ? c : rule.named[c] || (c.codePointAt(0) < 0x100 ? "\\x" + hex(c, 2) : "\\u" + hex(c, 4))));
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, k === "title" ? shown(String(v), "") : v);
    }
    const keep = tag === "pre" ? rule.multiline : ""; // a <pre> shows the lines of a text; elsewhere "\n" is written
    for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : shown(String(c), keep));
    return node;
  };
  const fmt = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(3));
  const signed = (v) => (v === null || v === undefined ? "–" : (v > 0 ? "+" : "") + Number(v).toFixed(3));

  // Input and output as text: a string as is, chat messages as "role: content" lines, anything else as JSON.
  function asText(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "string") return v;
    const messages = Array.isArray(v) ? v : [v];
    if (messages.every((m) => m && typeof m === "object" && "content" in m)) {
      return messages.map((m) => (m.role ? m.role + ": " : "") + (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n");
    }
    return JSON.stringify(v, null, 1);
  }

  // A judge scorer's step results: its per-statement (claim, opinion, passage...) judgements as a table when
  // the analyze step holds a list of objects (answer relevancy's results, the verdicts of faithfulness,
  // hallucination, bias, toxicity, context precision...), with the preprocess step's list of strings of the
  // same length (the statements or claims judged) as the first column; whatever else the steps hold as JSON.
  const plainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const cellText = (v) => (v === null || v === undefined ? "–" : typeof v === "string" ? v : JSON.stringify(v));
  function judgements(steps) {
    const analyze = steps.analyze, pre = steps.preprocess;
    if (!plainObject(analyze)) return null;
    const listKey = Object.keys(analyze).find((k) => Array.isArray(analyze[k]) && analyze[k].length && analyze[k].every(plainObject));
    if (listKey === undefined) return null;
    const list = analyze[listKey];
    let preKey = plainObject(pre) ? Object.keys(pre).find((k) => Array.isArray(pre[k]) && pre[k].length === list.length && pre[k].every((s) => typeof s === "string")) : undefined;
    const keys = [];
    for (const o of list) for (const k of Object.keys(o)) if (!keys.includes(k)) keys.push(k);
    // The statements judged, paired by position, unless the judgements name their own (answer similarity's
    // matches carry their outputUnit and groundTruthUnit: its outputUnits are not one per match).
    if (preKey !== undefined && keys.includes(preKey.replace(/s$/, ""))) preKey = undefined;
    const head = el("tr", {}, preKey !== undefined ? el("th", {}, preKey.replace(/s$/, "")) : null, ...keys.map((k) => el("th", {}, k)));
    const body = list.map((o, i) => el("tr", {}, preKey !== undefined ? el("td", {}, pre[preKey][i]) : null, ...keys.map((k) => el("td", {}, cellText(o[k])))));
    const rest = {};
    for (const [name, result] of Object.entries(steps)) {
      const used = name === "analyze" ? listKey : name === "preprocess" ? preKey : undefined;
      const left = plainObject(result) && used !== undefined ? Object.fromEntries(Object.entries(result).filter(([k]) => k !== used)) : result;
      if (!plainObject(left) || Object.keys(left).length) rest[name] = left;
    }
    return { table: el("table", { class: "steps" }, el("thead", {}, head), el("tbody", {}, ...body)), rest };
  }

  function stepsView(steps) {
    steps = Object.fromEntries(Object.entries(steps || {}).filter(([, v]) => v !== null && v !== undefined));
    if (!Object.keys(steps).length) return el("p", { class: "note" }, "no step results");
    const judged = judgements(steps);
    const box = el("div", {}, judged ? judged.table : null);
    for (const [name, result] of Object.entries(judged ? judged.rest : steps)) box.append(el("div", { class: "muted" }, name), el("pre", {}, JSON.stringify(result, null, 2)));
    return box;
  }

  // ---- the items that moved most ----
  const moved = document.getElementById("moved");
  if (moved) {
    moved.replaceChildren();
    for (const group of data.moved) {
      moved.append(el("h4", {}, el("code", {}, group.scorer), " ", el("span", { class: "muted" }, group.direction)));
      if (!group.items.length) moved.append(el("p", { class: "note" }, "No item's score changed."));
      for (const m of group.items) {
        const side = (label, score, output, reason, steps) => el("div", {},
          el("h5", {}, label, " score ", fmt(score)), el("pre", {}, asText(output)),
          reason ? el("div", {}, el("span", { class: "muted" }, "reason: "), reason) : null, stepsView(steps));
        moved.append(el("details", { class: "moved-item", "data-scorer": group.scorer },
          el("summary", {}, el("span", { class: "tag " + m.moved }, m.moved), " ", el("code", {}, m.item_id), " ", signed(m.delta), " (", fmt(m.score_a), " → ", fmt(m.score_b), ")"),
          el("div", { class: "input" }, el("span", { class: "muted" }, "input"), el("pre", {}, asText(m.input))),
          el("div", { class: "sides" }, side("baseline", m.score_a, m.output_a, m.reason_a, m.steps_a), side("this run", m.score_b, m.output_b, m.reason_b, m.steps_b))));
      }
    }
  }

  // ---- the item table ----
  const items = (await unpackItems()).map((row, index) => {
    const [id, input, output, truth, cells] = row;
    const inputText = asText(input), outputText = asText(output);
    const reasons = cells.map((c) => (c ? (c[2] || "") + " " + (c[3] || "") : "")).join(" ");
    return { index, id, input, output, truth, cells, inputText, outputText,
             haystack: (id + "\n" + inputText + "\n" + outputText + "\n" + reasons).toLowerCase() };
  });
  const columns = [{ key: "id", label: "item" }, { key: "input", label: "input" }, { key: "output", label: "output" }]
    .concat(scorers.map((s, k) => ({ key: k, label: s, about: data.measures[s] })));
  const table = document.getElementById("table");
  table.style.setProperty("--cols", "minmax(7rem, 1fr) 3fr 3fr" + " minmax(8.5rem, 1fr)".repeat(scorers.length));
  const sort = { key: null, dir: 1 };
  let view = items;

  const head = document.getElementById("thead");
  const headRow = el("div", { class: "trow", role: "row" });
  for (const c of columns) {
    headRow.append(el("div", { role: "columnheader" }, el("button", { type: "button", "data-key": String(c.key), title: "sort by " + c.label + (c.about ? ": " + c.about : ""),
      onclick: () => { sort.dir = sort.key === c.key ? -sort.dir : 1; sort.key = c.key; update(); } }, c.label)));
  }
  head.append(headRow);

  const viewport = document.getElementById("viewport"), spacer = document.getElementById("spacer"), rows = document.getElementById("rows");
  const search = document.getElementById("search"), status = document.getElementById("status"), count = document.getElementById("count");
  const statusOf = document.getElementById("status-scorer");

  function compare(a, b) {
    const k = sort.key;
    if (k === "id" || k === "input" || k === "output") {
      const x = k === "id" ? a.id : k === "input" ? a.inputText : a.outputText;
      const y = k === "id" ? b.id : k === "input" ? b.inputText : b.outputText;
      return sort.dir * x.localeCompare(y, undefined, { numeric: true });
    }
    const x = a.cells[k] && a.cells[k][1], y = b.cells[k] && b.cells[k][1];
    const xn = x === null || x === undefined, yn = y === null || y === undefined;
    if (xn || yn) return xn === yn ? a.index - b.index : xn ? 1 : -1; // unscored cells last, either way
    return sort.dir * (x - y) || a.index - b.index;
  }

  function update() {
    const q = search.value.trim().toLowerCase(), st = status.value, of = statusOf.value;
    // the status of the scorer chosen, or of any scorer's cell
    const hasStatus = (it) => (of === "" ? it.cells.some((c) => c && c[0] === st) : it.cells[Number(of)] && it.cells[Number(of)][0] === st);
    view = items.filter((it) => (!q || it.haystack.includes(q)) && (!st || hasStatus(it)));
    if (sort.key !== null) view.sort(compare);
    for (const b of head.querySelectorAll("button")) {
      const on = b.dataset.key === String(sort.key);
      if (on) b.setAttribute("aria-sort", sort.dir > 0 ? "ascending" : "descending"); else b.removeAttribute("aria-sort");
    }
    count.textContent = view.length === items.length ? `${items.length} items` : `${view.length} of ${items.length} items`;
    spacer.style.height = view.length * ROW_H + "px";
    viewport.style.height = Math.max(4, Math.min(view.length, 20)) * ROW_H + 2 + "px";
    viewport.scrollTop = 0;
    draw();
  }

  function cellView(c) {
    if (!c) return el("div", { class: "cell-score muted" }, "–");
    const [st, score] = c;
    const why = c[3] || c[2]; // an error's message, a skipped cell's reason
    return el("div", { class: "cell-score", title: st + (why ? ": " + why : "") }, st === "scored" ? fmt(score) : el("span", { class: "tag " + st }, st));
  }

  function draw() {
    const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_H) - 5);
    const last = Math.min(view.length, first + Math.ceil(viewport.clientHeight / ROW_H) + 10);
    rows.style.transform = `translateY(${first * ROW_H}px)`;
    const out = [];
    for (let i = first; i < last; i++) {
      const it = view[i];
      out.push(el("div", { class: "trow", role: "row", "data-item": it.id, onclick: () => openItem(it) },
        el("div", { role: "cell", title: it.id }, it.id), el("div", { role: "cell" }, it.inputText.slice(0, 300)),
        el("div", { role: "cell" }, it.outputText.slice(0, 300)), ...it.cells.map(cellView)));
    }
    rows.replaceChildren(...out);
  }

  const dialog = document.getElementById("detail"), detail = document.getElementById("detail-body");
  function openItem(it) {
    const parts = [el("h3", {}, "item ", el("code", {}, it.id)),
      el("div", { class: "muted" }, "input"), el("pre", {}, asText(it.input)),
      el("div", { class: "muted" }, "output"), el("pre", {}, asText(it.output))];
    if (it.truth !== null && it.truth !== undefined) parts.push(el("div", { class: "muted" }, "ground truth"), el("pre", {}, asText(it.truth)));
    scorers.forEach((s, k) => {
      const c = it.cells[k];
      parts.push(el("h4", {}, el("code", {}, s), " ", c ? el("span", { class: "tag " + c[0] }, c[0]) : "no cell", c && c[0] === "scored" ? " " + fmt(c[1]) : ""));
      if (!c) return;
      if (c[2]) parts.push(el("div", {}, el("span", { class: "muted" }, "reason: "), c[2]));
      if (c[3]) parts.push(el("div", {}, el("span", { class: "muted" }, "error: "), c[3]));
      parts.push(stepsView(c[4]));
    });
    detail.replaceChildren(...parts);
    dialog.showModal();
  }

  let pending = 0;
  viewport.addEventListener("scroll", () => { if (!pending) pending = requestAnimationFrame(() => { pending = 0; draw(); }); });
  let typing = 0;
  search.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(update, 120); });
  status.addEventListener("change", update);
  statusOf.addEventListener("change", update);
  update();
})().catch((error) => {
  document.getElementById("count").textContent = "the item table could not be read: " + error;
  throw error;
});
