// SPDX-License-Identifier: MIT
//
// The bench_router measurement for find-my-way (the router of Fastify), so
// that bench/router_compare.sh can put the two side by side: the same routes
// file ("METHOD pattern  # path"), the same lookups in the same shuffled
// order, the same pass length and count, the same table.  find-my-way writes
// a catch-all as a bare "*" (its value is params["*"]); everything else in
// bench/github_routes.txt reads the same in both routers.
//
//   node bench/fmw_router.js [ROUTES_FILE]
//
// find-my-way is loaded from NODE_PATH or node_modules (the compare script
// installs a pinned version under build/fmw).  Timing uses
// process.hrtime.bigint(); results go to a sink so the loop is not dead.
'use strict';

const fs = require('fs');
const path = require('path');
const FindMyWay = require('find-my-way');

const PASSES = 9;
const PASS_NS = 20e6;

const file = process.argv[2] || path.join(__dirname, 'github_routes.txt');
const router = FindMyWay();
const lookups = [];
let lineno = 0;
for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
  lineno++;
  const hash = raw.indexOf('#');
  const words = (hash < 0 ? raw : raw.slice(0, hash)).trim().split(/\s+/);
  if (words[0] === '') continue;
  const target = hash < 0 ? '' : raw.slice(hash + 1).trim().split(/\s+/)[0];
  if (words.length !== 2 || !target.startsWith('/')) {
    console.error(`${file}:${lineno}: expected "METHOD pattern  # path"`);
    process.exit(1);
  }
  const id = lookups.length;
  const pattern = words[1].replace(/\/\*[A-Za-z0-9_]+$/, '/*');
  const methods = words[0].split(',');
  router.on(methods, pattern, () => {}, { id });
  lookups.push({ method: methods[0], path: target, id });
}

// The xorshift shuffle of bench/support/timing.c, so that both benchmarks
// look the paths up in one order.
function shuffle(a) {
  const M = (1n << 64n) - 1n;
  let x = 0x9E3779B97F4A7C15n;
  for (let i = a.length; i > 1; i--) {
    x ^= (x << 13n) & M;
    x ^= x >> 7n;
    x ^= (x << 17n) & M;
    const j = Number(x % BigInt(i));
    const t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

for (const lk of lookups) {
  const r = router.find(lk.method, lk.path);
  if (r === null || r.store.id !== lk.id) {
    console.error(`fmw_router: ${lk.method} ${lk.path} does not reach its route`);
    process.exit(1);
  }
}
shuffle(lookups);
const methods = lookups.map((l) => l.method);
const paths = lookups.map((l) => l.path);

let sink = 0;
function pass(iters) {
  const n = paths.length;
  let acc = 0;
  const t0 = process.hrtime.bigint();
  for (let it = 0; it < iters; it++) {
    for (let i = 0; i < n; i++) {
      const r = router.find(methods[i], paths[i]);
      acc += r.store.id;
    }
  }
  const t1 = process.hrtime.bigint();
  sink += acc;
  return Number(t1 - t0);
}

// Let the JIT compile the lookup path first (half a second of lookups),
// then size the passes as bench_router does.
for (let spent = 0; spent < 5e8; ) spent += pass(16);
let iters = 1;
let one;
for (;; iters *= 2) {
  one = pass(iters);
  if (one >= PASS_NS / 10) break;
}
iters = Math.floor((iters * PASS_NS) / one) + 1;
pass(iters);
const ns = [];
for (let p = 0; p < PASSES; p++) ns.push(pass(iters) / (iters * paths.length));
ns.sort((a, b) => a - b);
console.log(`find-my-way ${require('find-my-way/package.json').version} fmw_router: ${file}`);
console.log(`${paths.length} routes; ${PASSES} timed passes after a warm-up (sink ${sink % 10})`);
console.log('');
console.log('case                                     lookups/pass   best ns median ns');
console.log(
  `${('whole set (' + paths.length + ' method+path)').padEnd(40)} ${String(iters * paths.length).padStart(12)}` +
    ` ${ns[0].toFixed(1).padStart(9)} ${ns[(PASSES - 1) / 2].toFixed(1).padStart(9)}`
);
