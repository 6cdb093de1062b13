// The browser's half of an excluded bound (annotator/labelling/web/forms.py, bounds_attrs): HTML's
// min/max include the bound itself, so a number input marked data-low-open / data-high-open is
// refused at that value too, with the same range text the server's check (Param.validate) gives.
(function () {
  function check(input) {
    const value = input.valueAsNumber;
    const low = input.dataset.lowOpen, high = input.dataset.highOpen;
    const bad = !Number.isNaN(value) && ((low !== undefined && value === Number(low)) ||
                                         (high !== undefined && value === Number(high)));
    input.setCustomValidity(bad ? "must be " + input.dataset.range : "");
  }
  function all(root) {
    root.querySelectorAll("input[data-low-open], input[data-high-open]").forEach(check);
  }
  document.addEventListener("input", (event) => {
    if (event.target.matches && event.target.matches("input[data-low-open], input[data-high-open]")) {
      check(event.target);
    }
  });
  document.addEventListener("DOMContentLoaded", () => all(document));
  document.addEventListener("htmx:afterSwap", (event) => all(event.detail.target.parentNode || document));
})();
