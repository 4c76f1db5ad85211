// Legal moves on the board page (issue 39): tapping (or clicking) a piece of the side
// to move frames the squares it can go to in the position shown (a capture's frame
// dashed, with a cross) and says them in words under the picture
// ("C d2 → e3 · e2 · ×c3"); tapping it again clears.  Read-only: it only draws.
// The moves come with the page, from the game's rules, as JSON in
// <script type="application/json" id="legal-data"> ({"d2": {"piece": "C d2",
// "to": ["e3", "e2"], "takes": ["c3"]}}); each square of the picture is a
// <rect data-square="e3">.  replay.js swaps the whole #replay block at each step, so
// everything is looked up again at each tap and set up again after each swap.
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var SQUARE = /^[a-z][0-9]{1,2}$/;
  var HINT = "Tap a piece of the side to move to see where it can go.";
  var selected = null;

  function parts() {
    var figure = document.getElementById("picture");
    var data = document.getElementById("legal-data");
    var svg = figure ? figure.querySelector("svg") : null;
    if (!svg || !data) { return null; }
    if (!data.legalMoves) {
      try { data.legalMoves = JSON.parse(data.textContent); } catch (e) { return null; }
    }
    return { svg: svg, moves: data.legalMoves, text: document.getElementById("legal") };
  }

  function squareRect(svg, name) {
    return SQUARE.test(name) ? svg.querySelector('rect[data-square="' + name + '"]') : null;
  }

  function make(tag, attributes, parent) {
    var element = document.createElementNS(SVGNS, tag);
    Object.keys(attributes).forEach(function (key) { element.setAttribute(key, String(attributes[key])); });
    parent.appendChild(element);
    return element;
  }

  // A frame just inside square ``name``: black under white, seen on every shade.
  function frame(svg, layer, name, kind) {
    var square = squareRect(svg, name);
    if (!square) { return; }
    var x = parseFloat(square.getAttribute("x")), y = parseFloat(square.getAttribute("y"));
    var w = parseFloat(square.getAttribute("width")), h = parseFloat(square.getAttribute("height"));
    var group = make("g", { "class": "legal-" + kind, "data-legal": name }, layer);
    var dashed = kind === "take" ? "6 4" : kind === "from" ? "3 3" : "none";
    make("rect", { x: x + 3, y: y + 3, width: w - 6, height: h - 6, fill: "none", stroke: "#000000", "stroke-width": 5,
                   "stroke-dasharray": dashed }, group);
    make("rect", { x: x + 3, y: y + 3, width: w - 6, height: h - 6, fill: "none", stroke: "#FFFFFF", "stroke-width": 2,
                   "stroke-dasharray": dashed }, group);
    if (kind === "take") {  // a cross in the corner: a capture told by its shape, not its colour
      var k = Math.min(w, h) * 0.12, cx = x + 6 + k, cy = y + 6 + k;
      make("path", { d: "M" + (cx - k) + " " + (cy - k) + "L" + (cx + k) + " " + (cy + k) + "M" + (cx - k) + " " + (cy + k) +
                     "L" + (cx + k) + " " + (cy - k), stroke: "#000000", "stroke-width": 3 }, group);
    }
  }

  function clear(found) {
    selected = null;
    var old = found.svg.querySelector("g.legal-marks");
    if (old) { old.parentNode.removeChild(old); }
    if (found.text) { found.text.textContent = HINT; }
  }

  function pieceName(svg, name) {
    var piece = svg.querySelector('g.piece[data-square="' + name + '"] title');
    return piece ? piece.textContent : name;
  }

  function select(found, name) {
    clear(found);
    var entry = Object.prototype.hasOwnProperty.call(found.moves, name) ? found.moves[name] : null;
    if (!entry) {
      if (found.text && found.svg.querySelector('g.piece[data-square="' + name + '"]')) {
        found.text.textContent = pieceName(found.svg, name) + " cannot move in this position. " + HINT;
      }
      return;
    }
    selected = name;
    var layer = make("g", { "class": "legal-marks", "pointer-events": "none" }, found.svg);
    frame(found.svg, layer, name, "from");
    entry.to.forEach(function (to) { frame(found.svg, layer, to, "to"); });
    entry.takes.forEach(function (to) { frame(found.svg, layer, to, "take"); });
    if (found.text) {
      var words = entry.to.concat(entry.takes.map(function (to) { return "×" + to; }));
      found.text.textContent = entry.piece + " → " + words.join(" · ") +
        (entry.takes.length ? " (× takes the piece there)" : "") + ". Tap it again to clear.";
    }
  }

  function toggle(name) {
    var found = parts();
    if (!found) { return; }
    if (name === null || name === selected) { clear(found); } else { select(found, name); }
  }

  // The square under a tap: the piece or square tapped, else by the point (a mark
  // drawn over a square, a height digit) against the squares' rectangles.
  function squareAt(svg, event) {
    var own = event.target.closest ? event.target.closest("[data-square]") : null;
    if (own && svg.contains(own)) { return own.getAttribute("data-square"); }
    var matrix = svg.getScreenCTM ? svg.getScreenCTM() : null;
    if (!matrix || !svg.createSVGPoint) { return null; }
    var point = svg.createSVGPoint();
    point.x = event.clientX;
    point.y = event.clientY;
    point = point.matrixTransform(matrix.inverse());
    var squares = svg.querySelectorAll("rect[data-square]");
    for (var i = 0; i < squares.length; i++) {
      var r = squares[i];
      var x = parseFloat(r.getAttribute("x")), y = parseFloat(r.getAttribute("y"));
      if (point.x >= x && point.y >= y && point.x < x + parseFloat(r.getAttribute("width")) &&
          point.y < y + parseFloat(r.getAttribute("height"))) {
        return r.getAttribute("data-square");
      }
    }
    return null;
  }

  // After the page loads and after each replay step: the hint, and the pieces that
  // can move made reachable by Tab (Enter or Space shows their moves).
  function setUp() {
    selected = null;
    var found = parts();
    if (!found) { return; }
    if (found.text) { found.text.textContent = HINT; found.text.hidden = false; }
    Object.keys(found.moves).forEach(function (name) {
      var piece = SQUARE.test(name) ? found.svg.querySelector('g.piece[data-square="' + name + '"]') : null;
      if (piece) { piece.setAttribute("tabindex", "0"); piece.setAttribute("aria-label", found.moves[name].piece); }
    });
  }

  document.addEventListener("click", function (event) {
    var svg = event.target && event.target.closest ? event.target.closest("#picture svg") : null;
    if (!svg || event.button !== 0) { return; }
    toggle(squareAt(svg, event));
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.key === "Escape") { toggle(null); return; }
    if ((event.key === "Enter" || event.key === " ") && target && target.closest && target.closest("#picture svg g.piece")) {
      event.preventDefault();
      toggle(target.closest("g.piece").getAttribute("data-square"));
    }
  });

  var main = document.getElementById("main");
  if (main && window.MutationObserver) {
    new MutationObserver(function () { setUp(); }).observe(main, { childList: true });
  }
  setUp();
}());
