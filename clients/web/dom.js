// Small DOM helpers, the only module that touches `document` directly. They use the plain
// properties every DOM has (textContent, className, hidden, onclick, value) and reach for
// setAttribute only when it exists, so the page also runs in the node test harnesses'
// stub DOM (tests/service/test_web_client_features.py). Text from other players is always
// set with textContent, never innerHTML; innerHTML is used only for the tile and card
// pictures (tiles.js), built from names checked against the notation.

export const $ = (id) => document.getElementById(id);

export function show(id, on) {
  const e = typeof id === "string" ? $(id) : id;
  if (e) e.hidden = !on;
}

// An element: el("button", {cls: "x", text: "Go", title: "...", onclick, data: {k: v}}, [children])
export function el(tag, props = {}, children = []) {
  const e = document.createElement(tag);
  if (props.cls) e.className = props.cls;
  if (props.text !== undefined) e.textContent = props.text;
  if (props.title) e.title = props.title;
  if (props.onclick) e.onclick = props.onclick;
  if (props.disabled) e.disabled = true;
  if (props.html !== undefined) e.innerHTML = props.html;   // trusted pictures only
  for (const [k, v] of Object.entries(props.data || {})) attr(e, `data-${k}`, v);
  for (const [k, v] of Object.entries(props.attrs || {})) attr(e, k, v);
  for (const c of children) if (c) e.appendChild(c);
  return e;
}

export function attr(e, name, value) {
  if (e && e.setAttribute) e.setAttribute(name, String(value));
}

export function fill(list, items, tag) {
  list.replaceChildren(...items.map((text) => el(tag, {text})));
}

export function cell(text) { return el("td", {text}); }
export function span(text, cls) { return el("span", {text, cls}); }
export function button(label, onclick, cls) { return el("button", {text: label, onclick, cls}); }

// The node harnesses' stub DOM has no querySelectorAll on elements: nothing to do there.
export function all(selector) {
  return document.querySelectorAll ? [...document.querySelectorAll(selector)] : [];
}

export function storage() {
  try { return globalThis.localStorage || null; } catch { return null; }
}
