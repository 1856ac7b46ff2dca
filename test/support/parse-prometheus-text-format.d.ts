// The parser ships no types: what test/metrics.test.ts reads of its result (the library's README describes the shape).
declare module 'parse-prometheus-text-format' {
  interface Sample {
    /** Absent on a summary's or histogram's folded samples, which carry `buckets`, `count` and `sum` instead. */
    value?: string
    labels?: Record<string, string>
  }
  interface Family {
    name: string
    help: string
    type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED'
    metrics: Sample[]
  }
  export default function parsePrometheusTextFormat(text: string): Family[]
}
