"""Scripts a browser test or benchmark adds to the queue page (Playwright ``add_init_script``,
which runs before the page's own scripts and outside its Content-Security-Policy) to watch the
instant queue (static/labelling/queue.js) from inside the page.

* :func:`delay_fetch`: every ``fetch`` the page makes answers ``ms`` later (a slow network or
  server on the queue's requests; page loads and beacons are not delayed).
* :data:`RECORD_PANELS`: ``window.__shown`` lists the item ids the panel showed, in order (the
  ``desk:shown`` events queue.js sends), and ``window.__lat`` the milliseconds from each keydown
  to the next panel painted (two animation frames after it was swapped in, its image decoded);
  ``window.__swap`` the same to the panel in the document (before it is painted);
  ``window.__dry`` counts the keys pressed while the page held no next item.
"""

from __future__ import annotations


def delay_fetch(ms: int) -> str:
    """An init script that adds ``ms`` milliseconds before every ``fetch`` of the page."""
    return f"""(() => {{
  const real = window.fetch.bind(window);
  window.fetch = (...args) => new Promise((ok) => setTimeout(ok, {int(ms)})).then(() => real(...args));
}})();"""


#: Break the ways a label leaves the page: every fetch fails, sendBeacon does nothing.
OFFLINE = """(() => {
  window.fetch = () => Promise.reject(new TypeError('offline (test)'));
  navigator.sendBeacon = () => false;
})();"""

RECORD_PANELS = """(() => {
  window.__shown = []; window.__lat = []; window.__swap = []; window.__t0 = []; window.__dry = 0;
  document.addEventListener('keydown', () => {
    window.__t0.push(performance.now());
    const d = document.getElementById('desk');
    if (d && d.dataset.held === '0') window.__dry += 1;  // no next item in the page yet
  }, true);
  const shown = (item) => {
    if (!item) return;
    window.__shown.push(item);
    const t0 = window.__t0.shift();
    if (t0 === undefined) return;
    window.__swap.push(performance.now() - t0);
    const img = document.querySelector('#queue-item img');
    const done = () => requestAnimationFrame(() => requestAnimationFrame(() => {
      window.__lat.push(performance.now() - t0);
    }));
    if (img && !img.complete) img.addEventListener('load', done, {once: true}); else done();
  };
  // queue.js announces each panel it swaps in; htmx swaps (skip, undo) are seen after the swap
  document.addEventListener('desk:shown', (e) => shown(e.detail.item));
  document.addEventListener('htmx:afterSwap', () => {
    const p = document.getElementById('queue-item');
    if (p) shown(p.dataset.item);
  });
  document.addEventListener('DOMContentLoaded', () => {
    const p = document.getElementById('queue-item');
    if (p && p.dataset.item) window.__shown.push(p.dataset.item);
  });
})();"""
