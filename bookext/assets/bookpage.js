// Every page (bookext.theme_options): the drawers' buttons, and the skipped sections' heights.
//
// 1. The chapter list (☰) and the page contents buttons on every screen size.
// pydata-sphinx-theme 0.17 writes a ☰ of its own in the top navbar (class primary-toggle), which
// sphinx-book-theme hides, and sphinx-book-theme writes the visible ☰ and contents buttons in the
// article header with the same classes. Both themes' scripts bind document.querySelector(
// ".primary-toggle") / (".secondary-toggle"): the first, hidden button. So the visible buttons did
// nothing: below 992 px neither drawer opened, and on a desktop ☰ did not hide the chapter list
// (upstream: pydata/pydata-sphinx-theme#2451, executablebooks/sphinx-book-theme#988 and PR #991).
// Here a click on any other toggle is handed to the first one, which carries both themes' handlers
// (the dialog below 992 px, hiding the sidebar above).
(function () {
  "use strict";
  function forward(selector) {
    var all = document.querySelectorAll(selector);
    var first = all[0];
    for (var i = 1; i < all.length; i++) {
      all[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        first.click();
      });
    }
  }

  // 2. reading.css lets the browser skip sections far from the screen (content-visibility: auto),
  // counting each as its contain-intrinsic-size until first drawn. bookext/section_sizes.py
  // measured every section at a few text-column widths when the site was built
  // (data-sizes="width:height ..."); each gets the height at this column width, linearly between
  // the two nearest widths measured, so the page is as tall at load as once read and End lands at
  // the end. ("auto": once drawn, the browser keeps the real size.)
  function sizeAt(spec, width) {
    var pts = spec.split(" ").map(function (e) {
      var p = e.split(":");
      return [Number(p[0]), Number(p[1])];
    }).filter(function (p) {
      return p[0] > 0 && p[1] >= 0;
    });
    if (!pts.length) return null;
    if (width <= pts[0][0]) return pts[0][1];
    for (var i = 1; i < pts.length; i++) {
      if (width <= pts[i][0]) {
        var a = pts[i - 1], b = pts[i];
        return a[1] + ((b[1] - a[1]) * (width - a[0])) / (b[0] - a[0]);
      }
    }
    return pts[pts.length - 1][1];
  }
  function sizeSections() {
    var sections = document.querySelectorAll(".bd-article section section[data-sizes]");
    if (!sections.length) return;
    // One column width for the page (an outer section's, as measured): one layout read.
    var width = Math.round(sections[0].parentElement.getBoundingClientRect().width);
    for (var i = 0; i < sections.length; i++) {
      var h = sizeAt(sections[i].dataset.sizes, width);
      if (h !== null) sections[i].style.containIntrinsicSize = "auto " + Math.round(h) + "px";
    }
  }

  function setup() {
    sizeSections();
    forward(".primary-toggle");
    forward(".secondary-toggle");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
