// The new-project form follows its item type: the featurizer list offers only that type's
// featurizers (the other groups are hidden and a choice of another type is reset to "the item
// type's default"), and the options field's placeholder shows that type's default options.
(function () {
  const kind = document.getElementById("item_kind");
  const featurizer = document.getElementById("featurizer_name");
  const options = document.getElementById("featurizer");
  if (!kind || !featurizer) return;
  function follow() {
    const wanted = kind.value + " items";
    featurizer.querySelectorAll("optgroup").forEach((group) => {
      const mine = group.label === wanted;
      group.hidden = !mine;
      group.disabled = !mine;
    });
    const chosen = featurizer.selectedOptions[0];
    if (chosen && chosen.parentElement.tagName === "OPTGROUP" && chosen.parentElement.disabled) featurizer.value = "";
    if (options && options.dataset.placeholders) {
      const placeholders = JSON.parse(options.dataset.placeholders);
      if (placeholders[kind.value]) options.placeholder = placeholders[kind.value];
    }
  }
  kind.addEventListener("change", follow);
  follow();
})();
