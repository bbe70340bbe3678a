// Every page (bookext.theme_options): the drawers' buttons, the skipped sections' heights, and
// what Live Code says when it cannot start.
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

  // 3. Live Code (sphinx-thebe, launch_buttons.thebe in _config.yml). Its button loads Thebe from
  // unpkg.com, then asks mybinder.org for a kernel. Offline (or with unpkg.com blocked) the script
  // fails to load and sphinx-thebe says nothing: the button kept "Loading thebe from CDN..." for
  // ever. Here a failed load says what happened and what still works, and the button tries again;
  // a load still pending after LIVE_CODE_PATIENCE ms says it is waiting on the network.
  var LIVE_CODE_PATIENCE = 20000;
  var THEBE_SRC = /\/thebe@[^/]+\/lib\/index\.js$/;
  var liveCodeTimer = null;

  function liveCodeNote(text, state) {
    var button = document.querySelector(".thebe-launch-button");
    var note = document.getElementById("bookthebe-status");
    if (!note) {
      note = document.createElement("p");
      note.id = "bookthebe-status";
      note.className = "bookthebe-status";
      note.setAttribute("role", "status");
      var anchor = button || document.querySelector(".bd-article section h1");
      if (!anchor) return;
      anchor.insertAdjacentElement("afterend", note);
    }
    note.dataset.state = state;
    note.textContent = text;
    if (button && state === "failed") {
      button.textContent = "Live Code could not start: try again";
      button.onclick = function () {
        if (typeof window.initThebeSBT === "function") window.initThebeSBT();
        else if (typeof window.initThebe === "function") window.initThebe();
      };
    }
  }

  function watchLiveCode() {
    // A failed <script> fires "error" on itself only: caught here, in the capture phase.
    window.addEventListener(
      "error",
      function (event) {
        var el = event.target;
        if (!el || el.tagName !== "SCRIPT" || !THEBE_SRC.test(el.src || "")) return;
        clearTimeout(liveCodeTimer);
        var host = new URL(el.src).host;
        liveCodeNote(
          "Live Code needs an internet connection: it loads Thebe from " + host +
            " and runs the code on mybinder.org, and " + host + " could not be reached" +
            (navigator.onLine === false ? " (this browser is offline)" : "") +
            ". Everything else on this page, figures and sliders included, works without it. " +
            "To run the code, download the notebook (the download button at the top of the " +
            "page) and open it in Jupyter, or use the Binder or Colab button once online.",
          "failed"
        );
      },
      true
    );
    // Each click on a Live Code button (the launch menu's, or ours after a failure) starts the
    // patience timer; a Thebe that has loaded by then cancels it.
    document.addEventListener(
      "click",
      function (event) {
        var t = event.target.closest && event.target.closest(".btn-launch-thebe, .thebe-launch-button");
        if (!t || typeof window.thebelab !== "undefined") return;
        clearTimeout(liveCodeTimer);
        var patience = Number(window.bookLiveCodePatience) || LIVE_CODE_PATIENCE;
        var note = document.getElementById("bookthebe-status");
        if (note) {
          note.dataset.state = "loading";
          note.textContent = "Trying again to load Live Code (Thebe) from unpkg.com...";
        }
        liveCodeTimer = setTimeout(function () {
          if (typeof window.thebelab !== "undefined") return;
          liveCodeNote(
            "Live Code is still loading Thebe from unpkg.com after " + patience / 1000 +
              " s: the network is slow or blocks it. It keeps trying; everything else on this " +
              "page works without it.",
            "slow"
          );
        }, patience);
      },
      true
    );
  }

  function setup() {
    sizeSections();
    forward(".primary-toggle");
    forward(".secondary-toggle");
    if (document.querySelector('script[type="text/x-thebe-config"]')) watchLiveCode();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
