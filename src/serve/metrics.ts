/**
 * Prometheus metrics in the text exposition format (version 0.0.4), written by hand: counters
 * and a histogram kept here, gauges read at scrape time. About as long as wiring prom-client,
 * and no dependency. Every name is `coderl_serve_*`; label values are escaped (\\, \", \n).
 */

type Labels = Record<string, string>;

const escape = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

const num = (v: number): string => (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v));

function header(name: string, help: string, type: 'counter' | 'gauge' | 'histogram'): string[] {
  return [`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} ${type}`];
}

export class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(labels);
    const e = this.values.get(key) ?? { labels, value: 0 };
    e.value += by;
    this.values.set(key, e);
  }

  get(labels: Labels = {}): number {
    return this.values.get(labelText(labels))?.value ?? 0;
  }

  render(): string[] {
    return [
      ...header(this.name, this.help, 'counter'),
      ...[...this.values.values()].map((e) => `${this.name}${labelText(e.labels)} ${num(e.value)}`),
    ];
  }
}

export class Histogram {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** upper bounds, increasing; +Inf is added */
    readonly buckets: readonly number[],
  ) {}

  observe(labels: Labels, value: number): void {
    const key = labelText(labels);
    const s = this.series.get(key) ?? { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
    this.buckets.forEach((b, i) => {
      if (value <= b) s.counts[i]!++;
    });
    s.sum += value;
    s.count++;
    this.series.set(key, s);
  }

  render(): string[] {
    const lines = header(this.name, this.help, 'histogram');
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: num(b) })} ${s.counts[i]}`));
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.count}`);
      lines.push(`${this.name}_sum${labelText(s.labels)} ${num(s.sum)}`, `${this.name}_count${labelText(s.labels)} ${s.count}`);
    }
    return lines;
  }
}

export interface GaugeFamily {
  name: string;
  help: string;
  samples: { labels?: Labels; value: number }[];
}

export function renderGauge(g: GaugeFamily): string[] {
  return [...header(g.name, g.help, 'gauge'), ...g.samples.map((s) => `${g.name}${labelText(s.labels ?? {})} ${num(s.value)}`)];
}

/** The server's counters and histogram; gauges come from `render`'s argument. */
export class ServeMetrics {
  readonly requests = new Counter('coderl_serve_requests_total', 'HTTP requests answered, by endpoint and status code.');
  readonly verdicts = new Counter('coderl_serve_verdicts_total', 'Programs run, by pool (score, program) and verdict.');
  readonly latency = new Histogram(
    'coderl_serve_request_duration_seconds',
    'Time from a request to its answer, by endpoint.',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  );

  /** Records one answered request. */
  answered(endpoint: string, code: number, seconds: number): void {
    this.requests.inc({ endpoint, code: String(code) });
    this.latency.observe({ endpoint }, seconds);
  }

  render(gauges: readonly GaugeFamily[]): string {
    return [...this.requests.render(), ...this.latency.render(), ...this.verdicts.render(), ...gauges.flatMap(renderGauge), ''].join('\n');
  }
}
