"""The labelling page `evalduck label` serves (flows/local/label_server.py): one cell at a time, labelled from the
keyboard, each label sent to the server at once. Text from the run is set as text (``textContent``), never as
markup; the page loads nothing but its own server's API, which wants the token of its address."""

from __future__ import annotations

__all__ = ("PAGE",)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>evalduck label</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem 1.5rem; color: #1d2330; }
h1 { font-size: 1.2rem; margin: 0 0 .2rem; } .muted { color: #5b6475; } code { font-size: .9em; }
.cell dt { font-weight: 600; margin-top: .8rem; } .cell dd { margin: .2rem 0 0; white-space: pre-wrap; }
.scale { display: flex; gap: .5rem; flex-wrap: wrap; margin: 1rem 0; }
.scale button { font: inherit; padding: .35rem .8rem; border: 1px solid #9aa3b5; border-radius: 4px; background: #fff; }
.scale button.chosen { background: #1d4ed8; color: #fff; border-color: #1d4ed8; }
.bar { display: flex; justify-content: space-between; align-items: baseline; border-bottom: 1px solid #d8dce5; }
kbd { border: 1px solid #9aa3b5; border-radius: 3px; padding: 0 .3rem; font-size: .85em; }
</style></head>
<body>
<div class="bar"><h1>Label <code id="scorer"></code> of run <code id="run"></code></h1>
<span id="progress" class="muted" aria-live="polite"></span></div>
<p class="muted">Keys: <kbd>1</kbd>..<kbd id="lastkey">5</kbd> label the cell (the scale below) and go on;
<kbd>&rarr;</kbd> or <kbd>s</kbd> skip; <kbd>&larr;</kbd> or <kbd>b</kbd> back; <kbd>x</kbd> clear its label.
Each label is stored at once.</p>
<div class="scale" id="scale"></div>
<dl class="cell"><dt>item</dt><dd id="item"></dd><dt>input</dt><dd id="input"></dd>
<dt>output</dt><dd id="output"></dd><dt>ground truth</dt><dd id="truth"></dd>
<dt>judge's score and reason</dt><dd id="judge"></dd><dt>your label</dt><dd id="label"></dd></dl>
<p id="status" class="muted" role="status"></p>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
let data = null, at = 0;
const $ = (id) => document.getElementById(id);
const text = (v) => v === null || v === undefined ? "\\u2013" : (typeof v === "string" ? v : JSON.stringify(v, null, 1));
function show() {
  const cells = data.cells, done = cells.filter((c) => c.label !== null).length;
  $("progress").textContent = `labelled ${done} of ${cells.length}` + (cells.length ? ` \\u00b7 cell ${at + 1}` : "");
  if (!cells.length) { $("item").textContent = "no scored cell to label"; return; }
  const c = cells[at];
  $("item").textContent = c.item_id; $("input").textContent = text(c.input); $("output").textContent = text(c.output);
  $("truth").textContent = text(c.ground_truth);
  $("judge").textContent = `${c.score.toFixed(3)} \\u2014 ${text(c.reason)}`;
  $("label").textContent = c.label === null ? "none yet" : String(c.label);
  document.querySelectorAll(".scale button").forEach((b) => b.classList.toggle("chosen", Number(b.dataset.value) === c.label));
}
async function send(value) {
  const c = data.cells[at];
  const r = await fetch(`/api/label?token=${encodeURIComponent(token)}`, {method: "POST",
    headers: {"content-type": "application/json"}, body: JSON.stringify({item_id: c.item_id, value})});
  if (!r.ok) { $("status").textContent = `not stored: ${r.status} ${await r.text()}`; return false; }
  c.label = value; $("status").textContent = value === null ? `label of ${c.item_id} cleared` : `stored ${value} for ${c.item_id}`;
  return true;
}
function move(step) { at = Math.max(0, Math.min(data.cells.length - 1, at + step)); show(); }
// Keys act one after another, in the order typed: a key pressed while a label is being stored waits for it, so a
// quick "label, skip, label" labels the cells it was typed on.
let pending = Promise.resolve();
async function act(key) {
  const n = Number(key);
  if (Number.isInteger(n) && n >= 1 && n <= data.scale.length) { if (await send(data.scale[n - 1])) move(1); }
  else if (key === "ArrowRight" || key === "s") move(1);
  else if (key === "ArrowLeft" || key === "b") move(-1);
  else if (key === "x") { if (await send(null)) show(); }
}
document.addEventListener("keydown", (e) => {
  if (!data || !data.cells.length || e.ctrlKey || e.metaKey || e.altKey) return;
  if (!/^[1-9]$/.test(e.key) && !["ArrowRight", "ArrowLeft", "s", "b", "x"].includes(e.key)) return;
  e.preventDefault();
  pending = pending.then(() => act(e.key));
});
(async () => {
  const r = await fetch(`/api/cells?token=${encodeURIComponent(token)}`);
  if (!r.ok) { $("status").textContent = `cannot load the cells: ${r.status} ${await r.text()}`; return; }
  data = await r.json();
  $("scorer").textContent = data.scorer; $("run").textContent = data.run; $("lastkey").textContent = data.scale.length;
  data.scale.forEach((v, i) => { const b = document.createElement("button"); b.dataset.value = v;
    b.textContent = `${i + 1}: ${v}`; b.onclick = async () => { if (await send(v)) move(1); }; $("scale").append(b); });
  const first = data.cells.findIndex((c) => c.label === null);
  at = first < 0 ? 0 : first; show();
})();
</script></body></html>
"""
