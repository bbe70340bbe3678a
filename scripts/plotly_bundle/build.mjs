// Build plotly-book-<version>.min.js: plotly.js (the exact version in package-lock.json) with only
// the trace types that entry.js registers, minified, exposing window.Plotly like plotly's dist files.
// Run (README.md): npm ci && npm run build    -> ../../bookext/vendor/plotly.js-book/
// or: node build.mjs <folder>                 -> <folder>/ (e.g. to compare with the vendored file)
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const plotlyDir = path.join(here, 'node_modules', 'plotly.js');
const version = JSON.parse(readFileSync(path.join(plotlyDir, 'package.json'), 'utf8')).version;
const outDir = process.argv[2] || path.join(here, '..', '..', 'bookext', 'vendor', 'plotly.js-book');
const outFile = path.join(outDir, `plotly-book-${version}.min.js`);
// The trace types entry.js registers (scatter is in plotly.js's core), named in the banner.
const entrySource = readFileSync(path.join(here, 'entry.js'), 'utf8');
const traces = ['scatter'].concat(
    [...entrySource.matchAll(/require\('plotly\.js\/lib\/([a-z0-9]+)'\)/g)]
        .map((m) => m[1])
        .filter((name) => name !== 'core'),
);

// Like plotly's own dist build: the attribute descriptions (documentation strings for the schema,
// unused when drawing) are dropped from plotly.js's sources before bundling.
const stripMeta = {
    name: 'strip-attribute-meta',
    setup(b) {
        b.onLoad({ filter: /[\\/]plotly\.js[\\/]src[\\/].*\.js$/ }, (args) => {
            const src = readFileSync(args.path, 'utf8');
            const out = src
                .replace(/\s*description:\s*\[[\s\S]*?\]\.join\(\s*'[^']*'\s*\),?/g, '')
                .replace(/\s*description:\s*'(?:[^'\\\n]|\\.)*',?(?=\s*[\n}])/g, '')
                .replace(/\s*hrName:\s*'[^'\n]*',?(?=\s*[\n}])/g, '');
            return { contents: out, loader: 'js' };
        });
    },
};

// plotly.js's registry imports maplibre-gl's stylesheet for map subplots only; the book has none,
// so that import is an empty module (any other stylesheet import is an error).
const noMapCss = {
    name: 'no-maplibre-css',
    setup(b) {
        b.onResolve({ filter: /\.css$/ }, (args) => {
            if (args.path !== 'maplibre-gl/dist/maplibre-gl.css') {
                throw new Error(`unexpected stylesheet import: ${args.path}`);
            }
            return { path: args.path, namespace: 'empty-css' };
        });
        b.onLoad({ filter: /.*/, namespace: 'empty-css' }, () => ({ contents: '', loader: 'js' }));
    },
};

const banner = `/**
* plotly.js (book: ${traces.join(', ')} - minified) v${version}
* Copyright 2012-2026, Plotly, Inc.
* All rights reserved.
* Licensed under the MIT license
*/
(function(root, factory) {
  if (typeof module === "object" && module.exports) {
    module.exports = factory();
  } else {
    root.moduleName = factory();
  }
}(typeof self !== "undefined" ? self : this, () => {`;
const footer = `window.Plotly = Plotly;
return Plotly;
}));`;

mkdirSync(outDir, { recursive: true });
await build({
    entryPoints: [path.join(here, 'entry.js')],
    outfile: outFile,
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    sourcemap: false,
    legalComments: 'eof',
    plugins: [stripMeta, noMapCss],
    define: { global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false' },
    target: 'es2016',
    banner: { js: banner },
    footer: { js: footer },
    logLevel: 'warning',
});
copyFileSync(path.join(plotlyDir, 'LICENSE'), path.join(outDir, 'LICENSE'));
const data = readFileSync(outFile);
console.log(`${path.relative(process.cwd(), outFile)}: ${data.length} bytes, sha256 ${createHash('sha256').update(data).digest('hex')}`);
