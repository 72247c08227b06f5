{{ bench_status_revenue(ref('nation_revenue')) }}
