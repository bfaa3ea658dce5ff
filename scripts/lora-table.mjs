#!/usr/bin/env node
// Prints the LoRA learning table (markdown) from the runs scripts/lora-table.sh wrote:
// node scripts/lora-table.mjs OUT [SEEDS...]
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [out = 'runs/lora-table', ...rest] = process.argv.slice(2);
const seeds = rest.length ? rest.map(Number) : [1, 2, 3];
const read = (dir) => {
  const f = join(out, dir, 'summary.json');
  return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')) : null;
};
const pct = (x) => (x === null || x === undefined ? '–' : `${(100 * x).toFixed(1)}%`);
const pts = (x) => (x === null || x === undefined ? '–' : `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`);
const rows = [];
const gains = { full: [], 8: [], 16: [] };
for (const s of seeds) {
  const lab = read(`tiny-${s}`);
  const r = { seed: s, sft: lab?.sft.heldout_pass1 ?? null, full: lab?.rl.heldout_pass1 ?? null, fullMin: lab?.minutes ?? null };
  if (lab) gains.full.push(lab.rl.heldout_pass1 - lab.sft.heldout_pass1);
  for (const k of [8, 16]) {
    const l = read(`lora${k}-${s}`);
    r[`r${k}`] = l?.rl.heldout_pass1 ?? null;
    r[`r${k}sft`] = l?.sft.heldout_pass1 ?? null;
    r[`r${k}min`] = l?.minutes ?? null;
    if (l) gains[k].push(l.rl.heldout_pass1 - l.sft.heldout_pass1);
  }
  rows.push(r);
}
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const min = (x) => (x === null ? '–' : `${x.toFixed(1)}`);
console.log('| seed | SFT (imported) | full FT after RL | LoRA r8 after RL | LoRA r16 after RL | minutes full / r8 / r16 |');
console.log('|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.seed} | ${pct(r.sft)}${r.r8sft !== null && r.r8sft !== r.sft ? ` (${pct(r.r8sft)} as imported)` : ''} | ${pct(r.full)} (${pts(r.full !== null && r.sft !== null ? r.full - r.sft : null)}) | ${pct(r.r8)} (${pts(r.r8 !== null && r.r8sft !== null ? r.r8 - r.r8sft : null)}) | ${pct(r.r16)} (${pts(r.r16 !== null && r.r16sft !== null ? r.r16 - r.r16sft : null)}) | ${min(r.fullMin)} / ${min(r.r8min)} / ${min(r.r16min)} |`,
  );
const g = { full: mean(gains.full), 8: mean(gains[8]), 16: mean(gains[16]) };
// LoRA's mean gain against full fine-tuning's on the same seeds (those with both runs finished)
const matched = (k) => {
  const both = rows.filter((r) => r[`r${k}`] !== null && r.full !== null);
  const lg = mean(both.map((r) => r[`r${k}`] - r[`r${k}sft`]));
  const fg = mean(both.map((r) => r.full - r.sft));
  return both.length && fg ? `${((100 * lg) / fg).toFixed(0)}% of full on the same seeds` : '–';
};
const share = (k) => matched(k);
console.log(
  `| mean gain | | ${pts(g.full)} (n=${gains.full.length}) | ${pts(g[8])} (n=${gains[8].length}, ${share(8)}) | ${pts(g[16])} (n=${gains[16].length}, ${share(16)}) | |`,
);
