// The play page (issue 39 part 2): tap a piece, its targets light up, tap one,
// confirm.  Without this script the same form is radio buttons and a
// confirmation page; with it, the confirm button plays the move at once.
(function () {
  "use strict";
  var form = document.getElementById("moves");
  if (!form) { return; }
  var go = document.getElementById("go");
  var confirm = document.getElementById("confirm");
  var how = document.getElementById("how");
  var groups = form.querySelectorAll("fieldset.group");
  form.classList.add("tap");
  go.disabled = true;
  go.textContent = "Choose a piece, then where it goes";
  if (how) { how.textContent = "Tap a piece, then where it goes, then confirm; \u00d7 marks a capture."; }

  function choose(group) {
    groups.forEach(function (g) {
      var chosen = g === group;
      g.classList.toggle("chosen", chosen);
      var legend = g.querySelector("legend.piece");
      if (legend) { legend.setAttribute("aria-expanded", chosen ? "true" : "false"); }
      if (!chosen) {
        g.querySelectorAll("input[type=radio]").forEach(function (r) { r.checked = false; });
        g.querySelectorAll("label.target").forEach(function (l) { l.classList.remove("picked"); });
      }
    });
    go.disabled = true;
    confirm.value = "0";
    go.textContent = "Tap where it goes";
  }

  groups.forEach(function (group) {
    var legend = group.querySelector("legend.piece");
    if (legend) {
      legend.setAttribute("role", "button");
      legend.setAttribute("tabindex", "0");
      legend.setAttribute("aria-expanded", "false");
      legend.addEventListener("click", function () { choose(group); });
      legend.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); choose(group); }
      });
    }
    group.querySelectorAll("input[type=radio]").forEach(function (radio) {
      radio.addEventListener("change", function () {
        group.querySelectorAll("label.target").forEach(function (l) { l.classList.remove("picked"); });
        radio.parentNode.classList.add("picked");
        confirm.value = "1";
        go.disabled = false;
        go.textContent = "Confirm: play " + radio.value;
      });
    });
  });
  if (groups.length === 1) { choose(groups[0]); }
  form.addEventListener("submit", function () { go.disabled = true; });
})();
