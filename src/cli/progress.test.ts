import { describe, expect, test } from 'vitest';
import { formatDuration, ProgressRenderer, type ProgressOptions } from './progress';

function fake(o: Partial<ProgressOptions> & { isTTY: boolean }) {
  const writes: string[] = [];
  let t = 0;
  const r = new ProgressRenderer({ write: (s) => void writes.push(s), now: () => t, ...o });
  return { r, writes, tick: (ms: number) => void (t += ms), text: () => writes.join('') };
}

/** the pipeline's shape: setup, 450 SFT steps 1/3 s apart, a quick sft-eval, done */
function pipeline(f: ReturnType<typeof fake>): void {
  f.r.update({ phase: 'setup', progress: 0, message: 'tasks and tokenizer' });
  f.tick(2000);
  f.r.update({ phase: 'setup', progress: 1, message: '60 train, 8 val tasks' });
  for (let step = 1; step <= 450; step++) {
    f.tick(333);
    f.r.update({ phase: 'sft', progress: step / 450, message: `step ${step} loss ${(3 - step / 200).toFixed(3)}` });
  }
  f.r.update({ phase: 'sft-eval', progress: 0, message: 'evaluating the early-stopped SFT checkpoint' });
  f.tick(1500);
  f.r.update({ phase: 'sft-eval', progress: 1, message: 'SFT held-out pass@1 0.125' });
  f.r.update({ phase: 'done', progress: 1, message: 'the run is finished' });
  f.r.end();
}

describe('ProgressRenderer on a terminal', () => {
  test('redraws each phase in place with \\r and leaves it as a finished line', () => {
    const f = fake({ isTTY: true, columns: 120 });
    pipeline(f);
    expect(f.writes.length).toBeGreaterThan(450);
    for (const w of f.writes) expect(w.startsWith('\r')).toBe(true);
    // one newline per phase, each ending a phase's line
    const lines = f
      .text()
      .split('\n')
      .map((l) => l.slice(l.lastIndexOf('\r') + 1).trimEnd());
    expect(lines).toHaveLength(5);
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toMatch(/^setup {6}\[#{20}\] 100% {2}43%\/s {2}in 0:02 {2}60 train, 8 val tasks$/);
    expect(lines[1]).toMatch(/^sft {8}\[#{20}\] 100% {2}.*%\/s {2}in 2:30 {2}step 450 loss 0\.750$/);
    expect(lines[2]).toMatch(/^sft-eval {3}\[#{20}\] 100% {2}.* SFT held-out pass@1 0\.125$/);
    expect(lines[3]).toMatch(/^done .* the run is finished$/);
  });

  test('shows counts, rate and time left mid-phase; a shorter redraw blanks the longer one', () => {
    const f = fake({ isTTY: true, columns: 100 });
    f.r.update({
      phase: 'scoring',
      done: 0,
      total: 450,
      unit: 'programs',
      message: 'starting: a long message, longer than the next line will be',
    });
    f.tick(10_000);
    f.r.update({ phase: 'scoring', done: 45, total: 450, unit: 'programs', message: 'short' });
    const last = f.writes.at(-1)!;
    expect(last).toMatch(/^\rscoring {4}\[##-{18}\] {2}10% {2}45\/450 programs {2}4\.5 programs\/s {2}1:30 left {2}short +$/);
    expect(last.length).toBe(f.writes[0]!.length);
  });

  test('no time left before 2% of the phase or 1 s; a resumed phase counts from where it began', () => {
    const f = fake({ isTTY: true });
    f.r.update({ phase: 'sft', progress: 0, message: 'a' });
    f.tick(5000);
    f.r.update({ phase: 'sft', progress: 0.01, message: 'a' });
    expect(f.writes.at(-1)).not.toMatch(/left/);
    f.r.end();
    f.r.update({ phase: 'sft', progress: 0.5, message: 'resumes' });
    f.tick(500);
    f.r.update({ phase: 'sft', progress: 0.6, message: 'b' });
    expect(f.writes.at(-1)).not.toMatch(/left/);
    f.tick(500);
    f.r.update({ phase: 'sft', progress: 0.75, message: 'b' });
    // 25% of the phase in 1 s since it resumed: 25% left takes 1 s more
    expect(f.writes.at(-1)).toMatch(/ 75% {2}25%\/s {2}0:01 left {2}b/);
  });

  test('cuts lines to the terminal width so a redraw never wraps', () => {
    const f = fake({ isTTY: true, columns: 40 });
    f.r.update({ phase: 'rm-samples', progress: 0.3, message: 'sampling the SFT policy for the reward model' });
    f.r.end();
    for (const w of f.writes) for (const l of w.split('\n')) expect(l.replace('\r', '').length).toBeLessThan(40);
    expect(f.writes[0]).toBe('\rrm-samples [######--------------]  30%');
    // the bar narrows (to half) before the figures are cut
    const g = fake({ isTTY: true, columns: 72 });
    g.r.update({ phase: 'scoring', done: 0, total: 164, unit: 'programs' });
    g.tick(2000);
    g.r.update({ phase: 'scoring', done: 82, total: 164, unit: 'programs', message: '80 passed' });
    expect(g.writes.at(-1)).toBe('\rscoring    [#####-----]  50%  82/164 programs  41 programs/s  0:02 left');
  });
});

describe('ProgressRenderer piped', () => {
  test('450 steps take a bounded number of plain lines, with every phase change and its last message', () => {
    const f = fake({ isTTY: false });
    pipeline(f);
    const lines = f.text().split('\n').slice(0, -1);
    expect(f.text()).not.toMatch(/\r/);
    expect(lines.length).toBeLessThanOrEqual(20);
    const sft = lines.filter((l) => l.startsWith('[sft] '));
    expect(sft.length).toBeGreaterThanOrEqual(2);
    expect(sft.length).toBeLessThanOrEqual(13);
    expect(sft[0]).toBe('[sft] step 1 loss 2.995 (0%)');
    expect(sft.at(-1)).toMatch(/^\[sft\] step 450 loss 0\.750 \(100%, .*%\/s, in 2:30\)$/);
    expect(sft.slice(1, -1).every((l) => / left\)$/.test(l))).toBe(true);
    for (const phase of ['setup', 'sft', 'sft-eval', 'done']) expect(lines.some((l) => l.startsWith(`[${phase}] `))).toBe(true);
    expect(lines).toContainEqual(expect.stringMatching(/^\[setup\] 60 train, 8 val tasks \(100%/));
    expect(lines).toContainEqual(expect.stringMatching(/^\[sft-eval\] SFT held-out pass@1 0\.125 \(100%/));
    expect(lines.at(-1)).toBe('[done] the run is finished (100%)');
  });

  test('at most one line per 10% of the phase and per 10 s', () => {
    const f = fake({ isTTY: false });
    // fast: 450 steps in 4.5 s prints the first and the last only
    for (let step = 0; step <= 450; step++) {
      f.r.update({ phase: 'sft', progress: step / 450, message: `step ${step}` });
      f.tick(10);
    }
    f.r.end();
    expect(f.writes).toHaveLength(2);
    // slow: 10 s a step still prints at most one line per 10% of the phase
    const g = fake({ isTTY: false });
    for (let step = 0; step <= 450; step++) {
      g.r.update({ phase: 'sft', progress: step / 450, message: `step ${step}` });
      g.tick(10_000);
    }
    g.r.end();
    expect(g.writes.length).toBeLessThanOrEqual(12);
    expect(g.writes.at(-1)).toMatch(/^\[sft\] step 450 \(100%/);
  });

  test('repeated events and end() twice print nothing more', () => {
    const f = fake({ isTTY: false });
    f.r.update({ phase: 'eval', progress: 0, message: 'evaluating' });
    f.r.update({ phase: 'eval', progress: 0, message: 'evaluating' });
    f.r.end();
    f.r.end();
    expect(f.writes).toEqual(['[eval] evaluating (0%)\n']);
  });
});

test('time left reads m:ss, or h:mm:ss from an hour', () => {
  expect(formatDuration(0)).toBe('0:00');
  expect(formatDuration(80_000)).toBe('1:20');
  expect(formatDuration(59_600)).toBe('1:00');
  expect(formatDuration(3_725_000)).toBe('1:02:05');
});
