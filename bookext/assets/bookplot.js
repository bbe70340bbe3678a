// Draws the book's plotly figures from their embedded JSON and keeps them readable when the reader
// switches the theme between light and dark (pydata-sphinx-theme sets <html data-theme="...">).
(function () {
  "use strict";

  function themeColors() {
    var dark = document.documentElement.dataset.theme === "dark";
    return {
      font: dark ? "#e6e6e6" : "#222222",
      grid: dark ? "rgba(200,200,200,0.25)" : "rgba(128,128,128,0.3)",
      sliderBg: dark ? "#555555" : "#f0f0f0",
      sliderBorder: dark ? "#aaaaaa" : "#bec8d9",
    };
  }

  function themeUpdate(layout) {
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
      update["updatemenus[" + i + "].font.color"] = "#222222";
    });
    return update;
  }

  function applyTheme(div) {
    if (!div.layout) return;
    Plotly.relayout(div, themeUpdate(div.layout));
  }

  function draw(script) {
    var div = document.getElementById(script.dataset.target);
    if (!div || div.dataset.drawn) return;
    var fig = JSON.parse(script.textContent);
    var layout = fig.layout || {};
    // Let the figure fill the page's text column; keep the author's height.
    delete layout.width;
    layout.autosize = true;
    // Without an explicit height an autosized plot would shrink to its container's minimum.
    if (!layout.height) layout.height = 450;
    var config = { responsive: true, displaylogo: false, showLink: false };
    Plotly.newPlot(div, fig.data, layout, config).then(function () {
      if (fig.frames && fig.frames.length) Plotly.addFrames(div, fig.frames);
      applyTheme(div);
      div.dataset.drawn = "1";
    });
  }

  function drawAll() {
    document.querySelectorAll("script.bookplot-data").forEach(draw);
  }

  function onThemeChange() {
    document.querySelectorAll(".bookplot-graph").forEach(applyTheme);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
  new MutationObserver(onThemeChange).observe(document.documentElement, {
    attributes: true,
    attributeFilter: ["data-theme"],
  });
})();
