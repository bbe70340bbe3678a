'use strict';

// The plotly.js the book ships: plotly.js's own core (scatter, and every component: annotations,
// shapes, sliders, updatemenus, legend, colorbar, error bars, hover, modebar, ...) plus the trace
// types the chapters draw. bookext/plotly_mime.py BUNDLE_TRACES lists the same types (plus
// scatter); tests/test_bookext.py checks the two agree.
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/heatmap'),
]);

module.exports = Plotly;
