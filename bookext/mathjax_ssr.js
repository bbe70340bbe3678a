// Build-time math for the website: MathJax 3 (TeX input, SVG output) running in Node.js.
//
//   node mathjax_ssr.js <mathjax folder>
//
// <mathjax folder> is the MathJax 3 distribution the site already served (sphinx-mathjax-offline's
// static/mathjax, with node-main.js and the liteDOM adaptor). Protocol: one JSON object per line.
// The first line written is {"ready": true, "version": ..., "css": ...}; then for every request
// line {"id": n, "tex": "...", "display": true|false} one answer line {"id": n, "html": "..."}
// (a <mjx-container> holding the SVG and, for screen readers, the formula's MathML) or
// {"id": n, "error": "..."}. TeX errors come back inside the SVG as an <merror> node; the Sphinx
// side turns them into build warnings.
"use strict";

const path = require("path");
const readline = require("readline");

const dir = path.resolve(process.argv[2] || ".");
const MathJaxLib = require(path.join(dir, "node-main.js"));

MathJaxLib.init({
  loader: {
    paths: { mathjax: dir },
    load: ["input/tex", "output/svg", "adaptors/liteDOM", "a11y/assistive-mml"],
  },
  // Every glyph as its own path; offline_math.share_glyphs then defines each outline once per page.
  svg: { fontCache: "none" },
  startup: { typeset: false },
})
  .then((MathJax) => {
    const adaptor = MathJax.startup.adaptor;
    const css = adaptor.textContent(MathJax.svgStylesheet());
    const write = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
    write({ ready: true, version: MathJax.version, css: css });
    // Requests are answered strictly in order (one at a time), so the caller can stream them.
    let queue = Promise.resolve();
    const rl = readline.createInterface({ input: process.stdin, terminal: false });
    rl.on("line", (line) => {
      if (!line.trim()) return;
      queue = queue.then(async () => {
        let req;
        try {
          req = JSON.parse(line);
          const node = await MathJax.tex2svgPromise(req.tex, { display: !!req.display });
          write({ id: req.id, html: adaptor.outerHTML(node) });
        } catch (err) {
          write({ id: req ? req.id : null, error: String((err && err.message) || err) });
        }
      });
    });
    rl.on("close", () => queue.then(() => process.exit(0)));
  })
  .catch((err) => {
    process.stderr.write("MathJax failed to start: " + String((err && err.stack) || err) + "\n");
    process.exit(1);
  });
