{{ bench_nation_revenue() }}
