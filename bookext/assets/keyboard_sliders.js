// Keyboard and screen-reader access to the book's plotly sliders and play buttons.
//
// plotly.js draws its sliders and buttons in SVG: a mouse works them, a keyboard cannot reach them.
// For every figure with layout.sliders this adds, under the plot, one focusable control per slider
// that follows the WAI-ARIA slider pattern (role="slider", aria-valuemin/max/now, aria-valuetext =
// the step's label): Left/Down and Right/Up move one step, PageDown/PageUp a tenth of the steps,
// Home and End go to the first and last step. A move runs the slider step's own method and args
// (Plotly.update, restyle, relayout or animate), exactly what a click on plotly's slider runs, and
// sets the slider's `active` index so plotly's own slider shows the same step. Moves of plotly's
// slider (mouse, play button) update the control in turn. Buttons of layout.updatemenus (play,
// pause) become real <button>s.
//
// The controls are made when the page is parsed, from the figure's small data-keys summary (step
// and button labels, written by bookext/plotly_mime.py), not from its whole JSON, so no figure's
// data is parsed before the page is ready; a step's or button's method and args are read from the
// drawn figure (div.layout) when it runs.
(function () {
  "use strict";

  var SYMBOLS = { "\u25B6": "Play", "\u275A\u275A": "Pause", "\u25A0": "Stop" };

  function clean(text) {
    return String(text == null ? "" : text)
      .replace(/<br\s*\/?>/gi, " ")
      .replace(/<[^>]+>/g, "")
      .trim();
  }

  function copy(value) {
    return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
  }

  // Run one slider step or button: the same call plotly's own component makes.
  function run(div, method, args, sliderIndex, stepIndex) {
    args = copy(args) || [];
    var active = {};
    if (sliderIndex !== null) active["sliders[" + sliderIndex + "].active"] = stepIndex;
    switch (method) {
      case "animate":
        return Promise.resolve(Plotly.animate(div, args[0], args[1])).then(function () {
          return sliderIndex !== null ? Plotly.relayout(div, active) : null;
        });
      case "restyle":
        return Plotly.restyle(div, args[0] || {}, args[1]).then(function () {
          return sliderIndex !== null ? Plotly.relayout(div, active) : null;
        });
      case "relayout":
        return Plotly.relayout(div, Object.assign({}, args[0] || {}, active));
      case "update":
        return Plotly.update(div, args[0] || {}, Object.assign({}, args[1] || {}, active), args[2]);
      default: // "skip" or no method: only the slider moves
        return sliderIndex !== null ? Plotly.relayout(div, active) : Promise.resolve();
    }
  }

  function whenDrawn(div, then) {
    if (div.dataset.drawn) return then();
    div.addEventListener(
      "bookplot:drawn",
      function () {
        then();
      },
      { once: true }
    );
    // Bring it near the viewport so the lazy drawing starts.
    div.scrollIntoView({ block: "nearest" });
  }

  // Slider s's steps, or menu m's buttons, as the drawn figure has them (methods and args).
  function liveSteps(div, s) {
    var sliders = (div.layout && div.layout.sliders) || [];
    return (sliders[s] && sliders[s].steps) || [];
  }
  function liveButton(div, m, b) {
    var menus = (div.layout && div.layout.updatemenus) || [];
    return ((menus[m] && menus[m].buttons) || [])[b] || {};
  }

  function makeSlider(div, figureLabel, slider, s, nSliders) {
    var labels = slider.labels || [];
    var nSteps = labels.length;
    var prefix = clean(slider.prefix);
    var name = prefix.replace(/[\s=:]+$/, "") || "step";
    var control = document.createElement("div");
    control.className = "bookplot-keyslider";
    control.id = div.id + "-keyslider-" + s;
    control.tabIndex = 0;
    control.setAttribute("role", "slider");
    control.setAttribute("aria-controls", div.id);
    control.setAttribute("aria-valuemin", "0");
    control.setAttribute("aria-valuemax", String(nSteps - 1));
    control.setAttribute("aria-orientation", "horizontal");
    control.setAttribute(
      "aria-label",
      name + (nSliders > 1 ? " (slider " + (s + 1) + " of " + nSliders + ")" : "") +
        " \u2013 " + figureLabel
    );
    var track = document.createElement("span");
    track.className = "bookplot-keyslider-track";
    track.setAttribute("aria-hidden", "true");
    var thumb = document.createElement("span");
    thumb.className = "bookplot-keyslider-thumb";
    track.appendChild(thumb);
    var text = document.createElement("span");
    text.className = "bookplot-keyslider-text";
    text.setAttribute("aria-hidden", "true");
    var hint = document.createElement("span");
    hint.className = "bookplot-keyslider-hint";
    hint.setAttribute("aria-hidden", "true");
    hint.textContent = "\u2190 \u2192 Home End";
    control.appendChild(text);
    control.appendChild(track);
    control.appendChild(hint);

    var current = Math.min(Math.max(slider.active || 0, 0), nSteps - 1);
    var queue = Promise.resolve();

    function show(k) {
      current = k;
      var label = clean(labels[k] !== undefined && labels[k] !== null ? labels[k] : k);
      control.setAttribute("aria-valuenow", String(k));
      control.setAttribute("aria-valuetext", prefix ? prefix + " " + label : label);
      text.textContent = (prefix ? prefix + " " : "") + label;
      var frac = nSteps > 1 ? k / (nSteps - 1) : 0;
      thumb.style.left = (frac * 100).toFixed(2) + "%";
    }

    function go(k) {
      k = Math.min(Math.max(k, 0), nSteps - 1);
      if (k === current && div.dataset.drawn) return;
      show(k);
      whenDrawn(div, function () {
        queue = queue.then(function () {
          var step = liveSteps(div, s)[k] || {};
          return run(div, step.method, step.args, s, k);
        });
      });
    }

    control.addEventListener("keydown", function (event) {
      var big = Math.max(1, Math.round(nSteps / 10));
      var target = {
        ArrowRight: current + 1,
        ArrowUp: current + 1,
        ArrowLeft: current - 1,
        ArrowDown: current - 1,
        PageUp: current + big,
        PageDown: current - big,
        Home: 0,
        End: nSteps - 1,
      }[event.key];
      if (target === undefined) return;
      event.preventDefault();
      go(target);
    });
    // A click on the track also moves it (for pointer users of this control).
    track.addEventListener("click", function (event) {
      var box = track.getBoundingClientRect();
      go(Math.round(((event.clientX - box.left) / box.width) * (nSteps - 1)));
    });

    // Follow plotly's own slider (mouse drags, the play button's animation).
    function follow() {
      var sliders = (div.layout && div.layout.sliders) || [];
      var active = sliders[s] ? sliders[s].active || 0 : current;
      if (active !== current) show(active);
    }
    function attach() {
      div.on("plotly_sliderchange", function (event) {
        if (event && event.slider && event.slider._index === s) show(event.step._index);
        else follow();
      });
      div.on("plotly_animatingframe", function (event) {
        var name = event && event.name;
        var steps = liveSteps(div, s);
        for (var k = 0; k < steps.length; k++) {
          var args = steps[k].args || [];
          if (steps[k].method === "animate" && args[0] && String(args[0][0]) === String(name)) {
            show(k);
            break;
          }
        }
      });
      div.on("plotly_relayout", follow);
      div.on("plotly_update", follow);
    }
    if (div.dataset.drawn) attach();
    else div.addEventListener("bookplot:drawn", attach, { once: true });
    show(current);
    return control;
  }

  function makeButtons(div, menu) {
    var group = document.createElement("div");
    group.className = "bookplot-keybuttons";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", "Animation controls");
    (menu.labels || []).forEach(function (buttonLabel, b) {
      var el = document.createElement("button");
      el.type = "button";
      el.className = "bookplot-keybutton";
      var label = clean(buttonLabel);
      el.textContent = SYMBOLS[label] || label || "Button " + (b + 1);
      el.addEventListener("click", function () {
        whenDrawn(div, function () {
          var button = liveButton(div, menu.index, b);
          run(div, button.method, button.args, null, null);
        });
      });
      group.appendChild(el);
    });
    group.dataset.menu = String(menu.index);
    return group;
  }

  function setup(div) {
    if (div.dataset.keyboard) return;
    if (!div.dataset.keys) return;
    var keys = JSON.parse(div.dataset.keys);
    var sliders = keys.sliders || [];
    var menus = keys.menus || [];
    if (!sliders.length && !menus.length) return;
    div.dataset.keyboard = "1";
    var bar = document.createElement("div");
    bar.className = "bookplot-keys";
    var label = div.getAttribute("aria-label") || "figure";
    if (label.length > 80) label = label.slice(0, 77) + "\u2026";
    menus.forEach(function (menu) {
      bar.appendChild(makeButtons(div, menu));
    });
    sliders.forEach(function (slider, s) {
      bar.appendChild(makeSlider(div, label, slider, s, sliders.length));
    });
    div.insertAdjacentElement("afterend", bar);
  }

  function start() {
    document.querySelectorAll(".bookplot-graph").forEach(setup);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
