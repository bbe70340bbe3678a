// Draws the book's plotly figures from their embedded JSON and keeps them readable when the reader
// switches the theme between light and dark (pydata-sphinx-theme sets <html data-theme="...">).
//
// A figure is drawn when it comes near the viewport (IntersectionObserver), not all at load: the
// first screen is ready sooner and a long chapter does not draw figures nobody has scrolled to yet.
// Its height is reserved in the HTML (style="height: ...px"), so drawing never moves the text.
// Each drawn figure gets data-drawn="1" and fires a "bookplot:drawn" event on its div.
//
// plotly.js (1 MB, about half a second of the main thread to compile and run) is not a script of
// the page: this loads it, from the URL in this script's data-plotly attribute (relative to this
// script), once DOMContentLoaded has fired: the text and math of the first screen never wait for it.
(function () {
  "use strict";

  var me = document.currentScript;
  var plotlyUrl = me && me.dataset.plotly ? new URL(me.dataset.plotly, me.src).href : null;
  var plotlyReady = null;

  // A promise of window.Plotly, loading plotly.js once.
  function loadPlotly() {
    if (plotlyReady) return plotlyReady;
    plotlyReady = new Promise(function (resolve, reject) {
      if (window.Plotly || !plotlyUrl) {
        resolve(window.Plotly);
        return;
      }
      var s = document.createElement("script");
      s.src = plotlyUrl;
      s.async = true;
      s.onload = function () {
        resolve(window.Plotly);
      };
      s.onerror = function () {
        reject(new Error("bookplot: could not load " + plotlyUrl));
      };
      document.head.appendChild(s);
    });
    return plotlyReady;
  }

  // Start drawing when a figure is within about one screen of the viewport.
  var MARGIN = "100% 0px 100% 0px";

  function themeColors() {
    var dark = document.documentElement.dataset.theme === "dark";
    return {
      font: dark ? "#e6e6e6" : "#222222",
      grid: dark ? "rgba(200,200,200,0.25)" : "rgba(128,128,128,0.3)",
      sliderBg: dark ? "#555555" : "#f0f0f0",
      sliderBorder: dark ? "#aaaaaa" : "#bec8d9",
      // Figure buttons and menus (layout.updatemenus): plotly fills them with paper_bgcolor, which
      // the book leaves transparent, so without these their dark text sat on the dark page.
      // Text on menuBg, and on the active button's fill (bookplot.css): >= 7:1 in both themes.
      menuFont: dark ? "#f0f0f0" : "#222222",
      menuBg: dark ? "#333333" : "#f4f4f4",
      menuBorder: dark ? "#aaaaaa" : "#8a8a8a",
    };
  }

  // Which of a figure's menus the author coloured (bgcolor set in the figure's JSON): those keep
  // their own colours in both themes (ch8's light play buttons read on either page).
  function ownMenus(layout) {
    return (layout.updatemenus || []).map(function (m) {
      return Boolean(m && m.bgcolor);
    });
  }

  function themeUpdate(layout, own) {
    var c = themeColors();
    var update = { "font.color": c.font };
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        update[key + ".gridcolor"] = c.grid;
        update[key + ".zerolinecolor"] = c.grid;
        update[key + ".linecolor"] = c.grid;
      }
    });
    (layout.sliders || []).forEach(function (_, i) {
      update["sliders[" + i + "].font.color"] = c.font;
      update["sliders[" + i + "].bgcolor"] = c.sliderBg;
      update["sliders[" + i + "].bordercolor"] = c.sliderBorder;
      update["sliders[" + i + "].currentvalue.font.color"] = c.font;
    });
    (layout.updatemenus || []).forEach(function (_, i) {
      var m = "updatemenus[" + i + "].";
      if (own && own[i]) {
        update[m + "font.color"] = "#222222";
        return;
      }
      update[m + "font.color"] = c.menuFont;
      update[m + "bgcolor"] = c.menuBg;
      update[m + "bordercolor"] = c.menuBorder;
    });
    return update;
  }

  // Apply a relayout-style update ("a.b[2].c": value) to a layout object before the first draw,
  // so each figure is drawn once, already in the page's colours.
  function setPath(obj, path, value) {
    var keys = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    var o = obj;
    for (var i = 0; i < keys.length - 1; i++) {
      if (o[keys[i]] === null || typeof o[keys[i]] !== "object") o[keys[i]] = {};
      o = o[keys[i]];
    }
    o[keys[keys.length - 1]] = value;
  }

  // The margins plotly's automargin settles on, measured when the site was built (bookext
  // plotly_mime: data-margins="width:l,r,t,b ...", one entry per column width measured). Given the
  // same column width, starting from them lets plotly draw the figure once: without them it draws
  // it, finds that the tick labels and titles push the margins out, and draws it all again. At any
  // other width the author's margins stay and automargin works as usual; it only ever widens them.
  function presetMargins(div, layout) {
    if (!div.dataset.margins || window.bookplotMeasuring) return;
    var width = String(div.clientWidth);
    div.dataset.margins.split(" ").forEach(function (entry) {
      var parts = entry.split(":");
      if (parts[0] !== width) return;
      var m = parts[1].split(",").map(Number);
      layout.margin = Object.assign({}, layout.margin, { l: m[0], r: m[1], t: m[2], b: m[3] });
    });
  }

  // Side-by-side panels on a narrow column (a phone): bookext/narrow.py computed at build time how
  // the figure looks with its panels stacked (data-narrow: the column width below which it
  // applies, the stacked height, and relayout-style updates of the layout and of traces); start()
  // reserved that height, and this applies the updates before the first draw.
  // The text column's width, read once on the page's outermost section (never skipped, so this
  // forces no layout of skipped sections): every figure fills that column.
  function columnWidth() {
    var section = document.querySelector(".bd-article section");
    return section ? section.clientWidth : document.documentElement.clientWidth;
  }

  function reserveStacked(div, width) {
    if (!div.dataset.narrow) return;
    var plan = JSON.parse(div.dataset.narrow);
    if (!(width > 0 && width < plan.below)) return;
    div.dataset.stacked = "1";
    div.style.height = plan.height + "px";
  }

  function stackPanels(div, fig, layout) {
    if (!div.dataset.stacked) return;
    var plan = JSON.parse(div.dataset.narrow);
    Object.keys(plan.layout).forEach(function (key) {
      setPath(layout, key, plan.layout[key]);
    });
    Object.keys(plan.data || {}).forEach(function (t) {
      var trace = (fig.data || [])[Number(t)];
      if (!trace) return;
      Object.keys(plan.data[t]).forEach(function (key) {
        setPath(trace, key, plan.data[t][key]);
      });
    });
  }

  // On a narrow column (a phone) plotly does not wrap text: a long title, axis title or note ran
  // past the figure's edge. Each is broken into lines at spaces to fit the width it has (an
  // average glyph is ~0.55 em), and titles a slider or button sets later are broken alike.
  var GLYPH_EM = 0.55;

  function wrapText(text, chars) {
    if (typeof text !== "string" || chars < 8) return text;
    return text.split(/<br\s*\/?>/i).map(function (line) {
      if (line.replace(/<[^>]*>/g, "").length <= chars) return line;
      var out = [], cur = "";
      line.split(" ").forEach(function (word) {
        var plain = (cur + " " + word).replace(/<[^>]*>/g, "").trim();
        if (cur && plain.length > chars) {
          out.push(cur);
          cur = word;
        } else {
          cur = cur ? cur + " " + word : word;
        }
      });
      if (cur) out.push(cur);
      return out.join("<br>");
    }).join("<br>");
  }

  function titleText(t) {
    return typeof t === "string" ? t : t && t.text;
  }

  function fitTexts(div, fig, layout) {
    var width = div.clientWidth || columnWidth();
    var narrow = 560;
    if (div.dataset.narrow) narrow = JSON.parse(div.dataset.narrow).below;
    if (!(width > 0 && width < narrow)) return;
    div.dataset.fitted = "1";
    var base = (layout.font && layout.font.size) || 12;
    var chars = function (px, size) {
      return Math.floor(px / ((size || base) * GLYPH_EM));
    };
    var margin = layout.margin || {};
    var plotW = width - (margin.l === undefined ? 80 : margin.l) - (margin.r === undefined ? 80 : margin.r);
    var plotH = (layout.height || 450) - (margin.t === undefined ? 100 : margin.t) -
      (margin.b === undefined ? 80 : margin.b);
    var titleSize = (layout.title && layout.title.font && layout.title.font.size) || base * 1.4;
    function fitTitle(obj, key, px, size) {
      var t = obj[key];
      if (typeof t === "string") obj[key] = { text: wrapText(t, chars(px, size)) };
      else if (t && typeof t.text === "string") t.text = wrapText(t.text, chars(px, size));
    }
    if (titleText(layout.title)) {
      fitTitle(layout, "title", width - 20, titleSize);
      // A title of several lines grows down from the top of the figure, and the plot makes room.
      Object.assign(layout.title, { automargin: true, yref: "paper", y: 1, yanchor: "bottom" });
      // Clear of the subplot titles and notes that sit on the plot area's top edge.
      var onTop = (layout.annotations || []).some(function (a) {
        return a && a.yref === "paper" && a.y >= 0.99;
      });
      if (onTop) layout.title.pad = Object.assign({}, layout.title.pad, { b: 34 });
    }
    // A legend beside the plot leaves it a sliver of a phone's width: it goes below the plot,
    // its entries side by side, each name broken to fit.
    var legend = layout.legend || {};
    if (layout.showlegend !== false && legend.orientation !== "h") {
      layout.legend = Object.assign({}, legend, {
        orientation: "h", x: 0, xanchor: "left", y: -0.3, yanchor: "top",
      });
    }
    (fig.data || []).forEach(function (trace) {
      if (typeof trace.name === "string") trace.name = wrapText(trace.name, chars(width - 60));
    });
    Object.keys(layout).forEach(function (key) {
      var axis = layout[key];
      if (!axis || typeof axis !== "object" || !titleText(axis.title)) return;
      var size = (axis.title.font && axis.title.font.size) || base;
      axis.automargin = true;
      var d = axis.domain || [0, 1];
      if (/^xaxis\d*$/.test(key)) {
        fitTitle(axis, "title", Math.max(plotW * (d[1] - d[0]), 120), size);
      } else if (/^yaxis\d*$/.test(key)) {
        fitTitle(axis, "title", Math.max(plotH * (d[1] - d[0]), 100), size);
      }
    });
    (layout.annotations || []).forEach(function (a) {
      if (!a || typeof a.text !== "string") return;
      var size = (a.font && a.font.size) || base;
      a.text = wrapText(a.text, chars(width - 30, size));
    });
    // Titles that slider steps and buttons set ("title.text", or "title" as a string or object).
    var controls = [];
    (layout.sliders || []).forEach(function (sl) {
      controls = controls.concat(sl.steps || []);
    });
    (layout.updatemenus || []).forEach(function (m) {
      controls = controls.concat(m.buttons || []);
    });
    controls.forEach(function (c) {
      (c.args || []).forEach(function (arg) {
        if (!arg || typeof arg !== "object" || Array.isArray(arg)) return;
        if (typeof arg["title.text"] === "string") {
          arg["title.text"] = wrapText(arg["title.text"], chars(width - 20, titleSize));
        }
        if (arg.title !== undefined && titleText(arg.title)) fitTitle(arg, "title", width - 20, titleSize);
      });
    });
    (fig.frames || []).forEach(function (f) {
      if (f.layout && titleText(f.layout.title)) fitTitle(f.layout, "title", width - 20, titleSize);
    });
  }

  // After the first draw on a narrow column: any title, axis title or note still wider than the
  // figure (the plot area is narrower than estimated: a legend or colour bar beside it) is broken
  // again to the width it was found to need, in one relayout; twice at most.
  function textPath(el) {
    var g = el.closest("g.annotation");
    if (g) return "annotations[" + g.getAttribute("data-index") + "].text";
    if (el.closest("g.g-gtitle")) return "title.text";
    var m = /^([xy])(\d*)title$/.exec(el.getAttribute("class") || "");
    return m ? m[1] + "axis" + m[2] + ".title.text" : null;
  }

  function getPath(obj, path) {
    var keys = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    for (var i = 0; i < keys.length && obj; i++) obj = obj[keys[i]];
    return obj;
  }

  function refitTexts(div, tries) {
    if (!div.dataset.fitted || tries <= 0) return null;
    var box = div.getBoundingClientRect();
    var update = {};
    div.querySelectorAll("g.g-gtitle text, g.annotation text, text[class$='title']").forEach(function (el) {
      var path = textPath(el);
      var text = path && getPath(div.layout, path);
      if (typeof text !== "string") return;
      var r = el.getBoundingClientRect();
      var vertical = /^y\d*title$/.test(el.getAttribute("class") || "");
      var size = vertical ? r.height : r.width;
      // A y title fits its plot area's height; other texts fit the figure's width.
      var plotH = div._fullLayout && div._fullLayout._size ? div._fullLayout._size.h : box.height;
      var room = vertical ? plotH : box.width - 12;
      var over = vertical ? size > room + 2
        : (r.left < box.left - 1 || r.right > box.right + 1);
      if (!over || size <= 0) return;
      var longest = Math.max.apply(null, text.split(/<br\s*\/?>/i).map(function (l) {
        return l.replace(/<[^>]*>/g, "").length;
      }));
      var chars = Math.floor((longest * Math.min(room, size)) / size * 0.9);
      var plain = text.replace(/<br\s*\/?>/gi, " ");
      var wrapped = wrapText(plain, Math.max(chars, 8));
      if (wrapped === text) return;
      update[path] = wrapped;
      if (vertical) update[path.replace(".title.text", ".automargin")] = true;
    });
    if (!Object.keys(update).length) return null;
    return Plotly.relayout(div, update).then(function () {
      return refitTexts(div, tries - 1);
    });
  }

  // A figure's menus (layout.updatemenus) side by side can collide: ch12's row of buttons at the
  // left and its dropdown at the right of one line overlap in a ~690 px column. Each menu that
  // overlaps an earlier one moves to a line of its own above it (the top margin grows by that
  // line), so every button stays readable and clickable. Boxes from plotly's own layout (_dims).
  function menuBox(m) {
    var d = m && m._dims;
    if (!d || m.visible === false) return null;
    var dropdown = m.type !== "buttons";
    var w = dropdown ? d.width1 : d.totalWidth;
    var h = dropdown ? d.height1 : d.totalHeight;
    return { l: d.lx, t: d.ly, r: d.lx + w, b: d.ly + h, h: h };
  }

  function overlapping(a, b) {
    return a.l < b.r - 1 && b.l < a.r - 1 && a.t < b.b - 1 && b.t < a.b - 1;
  }

  function separateMenus(div, tries) {
    var fl = div._fullLayout;
    var menus = (fl && fl.updatemenus) || [];
    var boxes = menus.map(menuBox);
    for (var j = 1; j < boxes.length; j++) {
      for (var i = 0; i < j; i++) {
        if (!boxes[i] || !boxes[j] || !overlapping(boxes[i], boxes[j])) continue;
        if (tries <= 0) return null;
        var gap = 6;
        var grow = Math.ceil(boxes[j].h + gap);
        return Plotly.relayout(div, { "margin.t": fl.margin.t + grow }).then(function () {
          var z = div._fullLayout._size;
          var top = menuBox(div._fullLayout.updatemenus[i]).t;
          var update = {};
          update["updatemenus[" + j + "].yanchor"] = "bottom";
          update["updatemenus[" + j + "].y"] = 1 - (top - gap - z.t) / z.h;
          return Plotly.relayout(div, update);
        }).then(function () {
          return separateMenus(div, tries - 1);
        });
      }
    }
    return null;
  }

  function applyTheme(div) {
    if (!div.layout || !div.dataset.drawn) return;
    Plotly.relayout(div, themeUpdate(div.layout, div.bookplotOwnMenus));
  }

  function draw(div) {
    if (div.dataset.drawn || div.dataset.drawing) return;
    var script = document.querySelector('script.bookplot-data[data-target="' + div.id + '"]');
    if (!script) return;
    div.dataset.drawing = "1";
    var fig = JSON.parse(script.textContent);
    var layout = fig.layout || {};
    // Let the figure fill the page's text column; keep the author's height.
    delete layout.width;
    layout.autosize = true;
    // Without an explicit height an autosized plot would shrink to its container's minimum.
    if (!layout.height) layout.height = 450;
    presetMargins(div, layout);
    stackPanels(div, fig, layout);
    fitTexts(div, fig, layout);
    // plotly's default for a linear axis, ticklabeloverflow "hide past div", measures every tick
    // label's box (a forced layout each) to hide labels that would stick out of the figure; with
    // automargin none ever does here (checked on every chapter at 800, 1280 and 1920 px), so the
    // figure is the same and the measuring, a third of a figure's drawing time, is skipped.
    Object.keys(layout).forEach(function (key) {
      var axis = layout[key];
      if (/^[xy]axis\d*$/.test(key) && axis && !axis.ticklabeloverflow) {
        axis.ticklabeloverflow = "allow";
      }
    });
    (fig.data || []).forEach(function (trace) {
      if (trace.type === "heatmap" || trace.type === "contour") {
        trace.colorbar = Object.assign({ ticklabeloverflow: "allow" }, trace.colorbar);
      }
    });
    div.bookplotOwnMenus = ownMenus(layout);
    var update = themeUpdate(layout, div.bookplotOwnMenus);
    Object.keys(update).forEach(function (key) {
      setPath(layout, key, update[key]);
    });
    var config = { responsive: true, displaylogo: false, showLink: false };
    // On a touch screen (no hover) plotly's tool bar covers the figure's titles after a tap, and
    // its zoom/pan tools fight the page's scrolling: no tool bar there.
    if (window.matchMedia && window.matchMedia("(hover: none)").matches) {
      config.displayModeBar = false;
    }
    var drawnTheme = document.documentElement.dataset.theme;
    loadPlotly().then(function () {
      return Plotly.newPlot(div, fig.data, layout, config);
    }).then(function () {
      return fig.frames && fig.frames.length ? Plotly.addFrames(div, fig.frames) : null;
    }).then(function () {
      // Not while the build measures margins: those are the margins before the extra line, which
      // this then adds once (so a measured figure is not moved up twice).
      var menus = (layout.updatemenus || []).length;
      return menus > 1 && !window.bookplotMeasuring ? separateMenus(div, 3) : null;
    }).then(function () {
      return refitTexts(div, 2);
    }).then(function () {
      delete div.dataset.drawing;
      div.dataset.drawn = "1";
      // The reader may have switched light/dark while the figure was being drawn.
      if (document.documentElement.dataset.theme !== drawnTheme) applyTheme(div);
      div.dispatchEvent(new CustomEvent("bookplot:drawn", { bubbles: true }));
    }, function (err) {
      // Not left marked "drawing" for ever: the next check may try once more.
      delete div.dataset.drawing;
      div.dataset.failed = String(Number(div.dataset.failed || 0) + 1);
      console.error("bookplot: figure " + div.id + " failed to draw", err);
    });
  }

  // The sections of the page that reading.css lets the browser skip (content-visibility: auto)
  // around a figure, outermost first.
  function skippableSections(div) {
    var chain = [];
    for (var s = div.parentElement; s; s = s.parentElement) {
      if (s.tagName === "SECTION") chain.unshift(s);
    }
    // The outermost section (the page's h1) is never skipped (reading.css: section section).
    return chain.slice(1);
  }

  // A second way to draw, besides the IntersectionObserver: it can miss a figure (seen when
  // skipped sections above change height as they render), so on scroll and resize (at most one
  // check per animation frame), after each draw and once after load, any undrawn figure within
  // about one screen of the viewport is drawn. Only boxes whose layout is already known are
  // read (the outermost skippable section of a figure, whose skipped content is not laid out; the
  // figure itself only once all its sections render), in a requestAnimationFrame callback.
  // Not free: the read forces a layout before the frame's own (0.05-0.3 s over a fast scroll
  // through ch8, ch9 or ch11, bench page loads). Measured alternative: checking only once the
  // scroll pauses saves that, but the figure's own observer reports it a frame or two later than
  // this check sees it, and in the bench's fast scroll the first figures were then drawn
  // 0.3-0.4 s after they came into view (ch1, ch9) instead of before; so it runs every frame.
  function watchUndrawn(divs, near) {
    var pending = divs.slice();
    var queued = false;
    function within(rect, h) {
      return rect.bottom > -h && rect.top < 2 * h && (rect.width > 0 || rect.height > 0);
    }
    function check() {
      queued = false;
      var h = window.innerHeight || document.documentElement.clientHeight;
      pending = pending.filter(function (div) {
        if (div.dataset.drawn || Number(div.dataset.failed || 0) > 1) return false;
        if (div.dataset.drawing) return true;
        var chain = skippableSections(div);
        for (var i = 0; i < chain.length; i++) {
          var s = chain[i];
          if (s.classList.contains("bookplot-near")) continue;
          if (!within(s.getBoundingClientRect(), h)) return true;
          // Near the screen: let it render; its figure's box is read in a later frame.
          near(s);
          schedule();
          return true;
        }
        if (within(div.getBoundingClientRect(), h)) draw(div);
        return true;
      });
      if (!pending.length) {
        window.removeEventListener("scroll", schedule);
        window.removeEventListener("resize", schedule);
        document.removeEventListener("bookplot:drawn", schedule);
      }
    }
    function schedule() {
      if (queued || !pending.length) return;
      queued = true;
      requestAnimationFrame(check);
    }
    window.addEventListener("scroll", schedule, { passive: true });
    window.addEventListener("resize", schedule, { passive: true });
    document.addEventListener("bookplot:drawn", schedule);
    if (document.readyState === "complete") schedule();
    else window.addEventListener("load", schedule, { once: true });
  }

  function start() {
    var divs = Array.prototype.slice.call(document.querySelectorAll(".bookplot-graph"));
    if (!divs.length) return;
    // Before anything is drawn or measured: stacked figures reserve their stacked height.
    var width = columnWidth();
    divs.forEach(function (div) {
      reserveStacked(div, width);
    });
    // Start loading plotly.js once DOMContentLoaded has fired, not here: this runs among the
    // page's deferred scripts, and requested now its download and compile competed with them and
    // DOMContentLoaded came 35-75 ms later on ch8, ch9 and ch11 (bench A/B, 2 cores, medians of
    // 15), with no figure drawn any later.
    if (document.readyState === "complete") loadPlotly();
    else document.addEventListener("DOMContentLoaded", loadPlotly, { once: true });
    window.addEventListener("load", loadPlotly, { once: true }); // if DOMContentLoaded had passed
    if (!("IntersectionObserver" in window)) {
      divs.forEach(draw);
      return;
    }
    var observer = new IntersectionObserver(
      function (entries) {
        entries.forEach(function (entry) {
          if (entry.isIntersecting) {
            observer.unobserve(entry.target);
            draw(entry.target);
          }
        });
      },
      { rootMargin: MARGIN }
    );
    divs.forEach(function (div) {
      observer.observe(div);
    });
    // reading.css lets the browser skip sections far from the screen (content-visibility: auto);
    // a figure inside a skipped section is not observed, so its sections are rendered one screen
    // before they arrive and the figure's own observer then sees it.
    var sections = [];
    divs.forEach(function (div) {
      for (var s = div.parentElement; s; s = s.parentElement) {
        if (s.tagName === "SECTION" && sections.indexOf(s) < 0) sections.push(s);
      }
    });
    var nearObserver = new IntersectionObserver(
      function (entries) {
        entries.forEach(function (entry) {
          if (entry.isIntersecting) near(entry.target);
        });
      },
      { rootMargin: MARGIN }
    );
    function near(s) {
      nearObserver.unobserve(s);
      s.classList.add("bookplot-near");
    }
    sections.forEach(function (s) {
      nearObserver.observe(s);
    });
    watchUndrawn(divs, near);
    // Printing shows every figure.
    window.addEventListener("beforeprint", function () {
      divs.forEach(draw);
    });
  }

  function onThemeChange() {
    document.querySelectorAll(".bookplot-graph").forEach(applyTheme);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  new MutationObserver(onThemeChange).observe(document.documentElement, {
    attributes: true,
    attributeFilter: ["data-theme"],
  });
})();
