{{ bench_nation_segments() }}
