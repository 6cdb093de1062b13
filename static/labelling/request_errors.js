// A request htmx could not complete is shown, never swallowed: without this a server error
// (5xx: htmx swaps nothing) or an unreachable server left the page as it was, and an annotator
// could not tell that the key press had not been saved. The alert (#request-error in base.html)
// goes away after the next request that succeeds.
(function () {
  function alertBox() { return document.getElementById("request-error"); }

  function show(event, problem) {
    const box = alertBox();
    if (!box) return;
    const verb = (event.detail.requestConfig && event.detail.requestConfig.verb) || "get";
    const polls = /\bevery\b/.test(event.detail.elt.getAttribute("hx-trigger") || "");
    if (verb !== "get") {
      box.textContent = problem + " Your last action may not have been saved: try again (a label " +
        "already stored is refused as a double submission, never counted twice).";
    } else {
      box.textContent = problem + (polls ? " The page could not be refreshed; it will try again."
                                         : " The page could not be updated: try again.");
    }
    box.hidden = false;
  }

  document.addEventListener("htmx:responseError", (event) => {
    show(event, "The server answered with an error (HTTP " + event.detail.xhr.status + ").");
  });
  document.addEventListener("htmx:sendError", (event) => {
    show(event, "The server cannot be reached.");
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    const box = alertBox();
    if (box && event.detail.successful) box.hidden = true;
  });
})();
