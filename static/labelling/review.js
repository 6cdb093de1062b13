// Keyboard shortcuts of the review queue: a key clicks the button of the current panel that carries it
// (data-key). Backspace means undo. One request at a time: keys pressed while htmx is busy are
// ignored, so a held key cannot submit the same decision twice.
// A panel takes keys once htmx has processed it (htmx:load marks it data-ready), a few ms after
// it appears: a click on a form htmx has not processed yet would post the whole page instead.
// A key pressed in that window comes before anyone could look at the item, so it is ignored.
(function () {
  let busy = false;
  document.addEventListener("htmx:beforeRequest", () => { busy = true; });
  document.addEventListener("htmx:afterRequest", () => { busy = false; });
  document.addEventListener("htmx:load", (event) => {
    const panel = document.getElementById("queue-item");
    if (panel && event.detail.elt.contains(panel)) panel.dataset.ready = "1";
  });
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.target.closest("input, textarea, select")) return;
    const key = event.key === "Backspace" ? "u" : event.key.toLowerCase();
    const panel = document.getElementById("queue-item");
    if (!panel || busy || panel.dataset.ready !== "1") return;
    const button = panel.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (button) {
      event.preventDefault();
      button.click();
    }
  });
})();
