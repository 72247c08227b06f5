{{ bench_customer_orders() }}
