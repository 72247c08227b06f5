{{ bench_pricing_summary() }}
