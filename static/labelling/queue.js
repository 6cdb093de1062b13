// The instant queue (docs/architecture.md, "The instant queue").
//
// The page holds the panels of the next few items leased to the annotator (POST .../desk answers
// them). A label key (or a click on a label button) shows the next held panel at once and puts
// the label on a pending list; the list is sent in the background, in the order it was typed,
// several labels per request, and retried after a network or server error until it is stored.
// The pending list lives in localStorage: if the tab closes before it is sent, navigator.sendBeacon
// sends it on the way out, and the next load of the page sends it again (a label the server
// already holds with the same value counts as stored, so nothing is stored twice).
// Keys typed while no item is held yet wait in order and are applied one item each as items
// arrive; the state line says how many wait. A label the server refuses (item leased to someone
// else, already labelled, ...) is listed in #desk-refused, never dropped silently.
// Skip, undo and a change of an older label stay htmx requests: they wait until every pending
// label is stored, and the panel htmx swaps in then becomes the current item.
(function () {
  const desk = document.getElementById("desk");
  if (!desk) return;
  const url = desk.dataset.url;
  const storeKey = desk.dataset.store;
  const csrf = desk.querySelector("input[name=csrfmiddlewaretoken]").value;
  const stateLine = document.getElementById("desk-state");
  const refusedList = document.getElementById("desk-refused");

  let pending = load();          // [{item, value}] typed, not yet confirmed stored
  let held = [];                 // [{id, seq, html}] panels the page can show next
  const done = new Set(pending.map((p) => p.item));  // items labelled here (this page's life)
  let keysWaiting = [];          // label values typed while no item was on screen
  let inflight = false;
  let retryDelay = 250;
  let lastSaved = "";
  let idleHtml = "";
  let serverCanUndo = false;     // the user had a label to undo at the last answer

  function load() {
    try { return JSON.parse(localStorage.getItem(storeKey) || "[]"); } catch (e) { return []; }
  }
  function save() { localStorage.setItem(storeKey, JSON.stringify(pending)); }

  function panel() { return document.getElementById("queue-item"); }
  function currentItem() {
    const p = panel();
    return p && p.dataset.item && !p.dataset.labelled ? Number(p.dataset.item) : null;
  }

  function showState(problem) {
    const parts = [];
    if (lastSaved) parts.push("✓ saved " + lastSaved);
    if (pending.length) parts.push("sending " + pending.length + " label" + (pending.length > 1 ? "s" : "") + "…");
    if (keysWaiting.length) {
      parts.push(keysWaiting.length + " key" + (keysWaiting.length > 1 ? "s" : "") +
                 " typed ahead wait" + (keysWaiting.length > 1 ? "" : "s") + " for the next item");
    }
    if (problem) parts.push(problem);
    stateLine.textContent = parts.join(" · ");
    desk.dataset.pending = String(pending.length);
    desk.dataset.waiting = String(keysWaiting.length);
    desk.dataset.held = String(held.length);
  }

  // A held panel is parsed, and its image decoded, when it arrives: a key press then only swaps
  // a ready element in (the next paint shows it).
  function prepare(entry) {
    if (entry.node) return entry;
    const box = document.createElement("div");
    box.innerHTML = entry.html;
    entry.node = box.querySelector("#queue-item");
    const img = entry.node.querySelector("img");
    if (img && img.decode) img.decode().catch(() => {});
    return entry;
  }

  function swapIn(htmlOrNode) {
    const old = panel();
    let fresh = htmlOrNode;
    if (typeof htmlOrNode === "string") {
      const box = document.createElement("div");
      box.innerHTML = htmlOrNode;
      fresh = box.querySelector("#queue-item");
    }
    if (!serverCanUndo && !done.size) {  // nothing to undo yet: no undo button
      const undo = fresh.querySelector('.actions [data-key="u"]');
      if (undo) undo.closest("form").remove();
    }
    old.replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    fresh.dataset.ready = "1";
    // for tests and benchmarks (harness/desk_probe.py): which item is on screen now
    document.dispatchEvent(new CustomEvent("desk:shown", { detail: { item: fresh.dataset.item || "" } }));
    return fresh;
  }

  // Show the next held panel that is not labelled yet; else mark the current one as labelled
  // (keys typed now wait for the next item).
  function advance() {
    while (held.length && (done.has(held[0].id) || held[0].id === currentItem())) held.shift();
    if (held.length) {
      const next = prepare(held.shift());
      swapIn(next.node);
      desk.dataset.shown = String(next.id);
      return true;
    }
    const p = panel();
    if (p && p.dataset.item) {
      p.dataset.labelled = "1";
      p.classList.add("desk-waiting");
    }
    return false;
  }

  function apply(value) {
    const item = currentItem();
    if (item === null) {
      keysWaiting.push(value);
      showState();
      return;
    }
    pending.push({ item: item, value: value });
    done.add(item);
    save();
    advance();
    showState();
    send();
  }

  function drainWaiting() {
    while (keysWaiting.length && currentItem() !== null) apply(keysWaiting.shift());
  }

  function refuse(result) {
    const li = document.createElement("li");
    li.textContent = "Not saved: “" + result.value + "” (" + (result.error || "refused") + ")";
    refusedList.appendChild(li);
    refusedList.hidden = false;
  }

  function absorb(data, sent) {
    data.results.forEach((result) => {
      if (result.ok) lastSaved = "“" + result.value + "”";
      else refuse(result);
    });
    pending = pending.slice(sent.length);
    save();
    const ready = new Map(held.filter((h) => h.node).map((h) => [h.id, h.node]));
    held = data.items.filter((it) => !done.has(it.id) && it.id !== currentItem())
      .map((it) => prepare(ready.has(it.id) ? Object.assign(it, { node: ready.get(it.id) }) : it));
    idleHtml = data.idle_html;
    serverCanUndo = data.can_undo;
    const recent = document.getElementById("recent-labels");
    if (recent && data.recent_html && !recent.contains(document.activeElement)) {
      recent.outerHTML = data.recent_html;
      if (window.htmx) window.htmx.process(document.getElementById("recent-labels"));
    }
    if (currentItem() === null) {
      if (advance()) drainWaiting();
      else if (!pending.length && idleHtml && !data.items.length) {
        swapIn(idleHtml);
        if (keysWaiting.length) {
          refuse({ value: keysWaiting.join("”, “"), item: "", error: "no item left to label" });
          keysWaiting = [];
        }
      }
    }
    const progress = document.getElementById("waiting");
    if (progress) progress.textContent = String(data.progress.waiting);
  }

  function body(entries) {
    const form = new FormData();
    form.append("csrfmiddlewaretoken", csrf);
    form.append("labels", JSON.stringify(entries.map((p) => [p.item, p.value])));
    return form;
  }

  function send() {
    if (inflight) return;
    inflight = true;
    const sent = pending.slice(0, 50);
    fetch(url, { method: "POST", body: body(sent), credentials: "same-origin",
                 headers: { "X-CSRFToken": csrf } })
      .then((response) => {
        if (response.status >= 500 || response.status === 429) throw new Error("HTTP " + response.status);
        return response.json().then((data) => {
          if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
          return data;
        });
      })
      .then((data) => {
        inflight = false;
        retryDelay = 250;
        absorb(data, sent);
        showState();
        if (pending.length) send();
        else flushed();
      })
      .catch((error) => {
        inflight = false;
        showState("the server cannot be reached (" + error.message + "): retrying, your labels are kept");
        setTimeout(send, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 5000);
      });
  }

  // htmx actions (skip, undo, change) wait until every pending label is stored.
  let waiters = [];
  function flushed() {
    const now = waiters;
    waiters = [];
    now.forEach((go) => go());
  }
  document.addEventListener("htmx:confirm", (event) => {
    if (event.detail.verb === "get") {
      if (pending.length || inflight) event.preventDefault();  // a poll: the page is busy anyway
      return;
    }
    if (!pending.length && !inflight) return;
    event.preventDefault();
    waiters.push(() => event.detail.issueRequest());
    showState("waiting for the labels on their way before doing that");
  });
  // A panel htmx swapped in (after skip, undo, change, a poll) is the current item; the held
  // ones are asked for again.
  document.addEventListener("htmx:afterSwap", (event) => {
    const p = panel();
    if (p && event.detail.elt === p) {
      p.dataset.ready = "1";
      held = [];
      send();
    }
  });
  document.addEventListener("htmx:load", (event) => {
    const p = panel();
    if (p && event.detail.elt.contains(p)) p.dataset.ready = "1";
  });

  // The tab closes (or navigates away): send what is pending now; it also stays in localStorage
  // and is sent again on the next load.
  window.addEventListener("pagehide", () => {
    if (pending.length && navigator.sendBeacon) navigator.sendBeacon(url, body(pending.slice(0, 50)));
  });

  // Label buttons (click or Enter) are handled here, not by htmx: the next item shows at once.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!form.classList || !form.classList.contains("labels") || !form.closest("#queue-item")) return;
    event.preventDefault();
    event.stopPropagation();
    if (event.submitter && event.submitter.value !== undefined) apply(event.submitter.value);
  }, true);

  // h jumps into "My last labels" (the newest one's class list), Esc comes back to the item.
  document.addEventListener("keydown", (event) => {
    const recent = document.getElementById("recent-labels");
    if (event.key === "Escape" && recent && recent.contains(document.activeElement)) {
      event.preventDefault();
      document.activeElement.blur();
      const p = panel();
      if (p) { p.setAttribute("tabindex", "-1"); p.focus({ preventScroll: false }); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.target.closest("input, textarea, select")) return;
    if (event.key === "h" && recent) {
      const first = recent.querySelector("select");
      if (first) { event.preventDefault(); first.focus(); first.scrollIntoView({ block: "nearest" }); }
      return;
    }
    const key = event.key === "Backspace" ? "u" : event.key.toLowerCase();
    const p = panel();
    if (!p) return;
    const labelButton = p.querySelector('form.labels [data-key="' + CSS.escape(key) + '"]');
    if (labelButton) {
      event.preventDefault();
      apply(labelButton.value);
      return;
    }
    if (keysWaiting.length || !p.dataset.item) {
      // a class key while no item is on screen: it waits for the next item (buttons of the
      // last panel name the classes)
      const anyButton = document.querySelector('form.labels [data-key="' + CSS.escape(key) + '"]');
      if (anyButton) { event.preventDefault(); apply(anyButton.value); }
      return;
    }
    if (p.dataset.ready !== "1" || p.dataset.labelled) return;
    const button = p.querySelector('.actions [data-key="' + CSS.escape(key) + '"]');
    if (button) {
      event.preventDefault();
      button.click();
    }
  });

  // On load: labels left pending by a closed tab are sent again, and the held items fetched.
  const first = currentItem();
  if (first !== null && done.has(first)) advance();
  showState();
  send();
})();
