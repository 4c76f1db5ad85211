// Replay on the board page: the buttons are plain links to ?ply=k (they work without
// JavaScript); with it, ← and → (and the buttons) fetch the page at that ply, swap
// the replay block in place and update the address with history.replaceState.
(function () {
  "use strict";
  var block = document.getElementById("replay");
  if (!block || !window.fetch || !window.DOMParser) { return; }
  var plies = parseInt(block.getAttribute("data-plies"), 10);
  var base = block.getAttribute("data-url");
  var target = parseInt(block.getAttribute("data-ply"), 10);
  var serial = 0;

  function urlFor(ply) { return base + "?ply=" + ply; }

  function show(ply) {
    ply = Math.max(0, Math.min(plies, ply));
    target = ply;
    var mine = ++serial;
    var url = urlFor(ply);
    fetch(url, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) { throw new Error(response.status); }
      return response.text();
    }).then(function (html) {
      if (mine !== serial) { return; }  // a later key press won
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.getElementById("replay");
      var current = document.getElementById("replay");
      if (!fresh || !current) { window.location.assign(url); return; }
      var wasOpen = document.getElementById("ascii") && document.getElementById("ascii").open;
      current.replaceWith(document.importNode(fresh, true));
      if (wasOpen) { document.getElementById("ascii").open = true; }
      document.title = doc.title;
      history.replaceState(null, "", url);
      block = document.getElementById("replay");
    }).catch(function () { window.location.assign(url); });
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) { return; }
    var tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
    if (event.key === "ArrowRight") { event.preventDefault(); show(target + 1); }
    else if (event.key === "ArrowLeft") { event.preventDefault(); show(target - 1); }
    else if (event.key === "Home") { event.preventDefault(); show(0); }
    else if (event.key === "End") { event.preventDefault(); show(plies); }
  });

  document.addEventListener("click", function (event) {
    var link = event.target && event.target.closest ? event.target.closest("#replay a[href]") : null;
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) { return; }
    var match = /[?&]ply=(\d+)/.exec(link.getAttribute("href"));
    var ply = match ? parseInt(match[1], 10) : plies;
    event.preventDefault();
    show(ply);
  });
}());
