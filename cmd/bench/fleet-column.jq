# One column of docs/performance.md's "Fleet mode (database server)" table
# from a cmd/bench JSON report: jq -r -f cmd/bench/fleet-column.jq bench-results.json
# Each line is one row of the table, its values at each -c concurrency
# (c=1 / 32 / 64 with the defaults; 1 / 16 / 64 before 2026-11-27).
def chat(t): [.summary[] | select(.target == t and .scenario == "chat")];
def check(n): [.checks[] | select(.name == n) | .value];
def r(x; d): if x == null then "-" else (x * d | round / d | tostring) end;
def trip(xs; d): xs | map(r(.; d)) | join(" / ");
(.database.engine == "sqlite") as $sqlite |
"engine: \(.database.engine), \(.started)",
"throughput ratio: \(trip(check("throughput vs proxy"); 100))",
"gateway CPU ratio: \(trip(check("CPU per request vs proxy"); 100))",
"gateway CPU µs/req: \(trip(chat("gateway") | map(.cpu_us_per_req); 1))",
"DB CPU µs/req: \(trip(chat("gateway") | map(.db_cpu_us_per_req); 1))",
# On SQLite the database works inside the gateway's process: its CPU is
# the gateway's own.
"gateway+DB CPU µs/req: \(trip(chat("gateway") | map(if $sqlite then .cpu_us_per_req else .gateway_db_cpu_us_per_req end); 1))",
"gateway+DB CPU ratio: \(trip(check(if $sqlite then "CPU per request vs proxy" else "gateway+DB CPU per request vs proxy" end); 100))",
"round trips/req: \(trip(chat("gateway") | map(.db_round_trips_per_req); 100))",
"gateway-plan throughput ratio: \(trip(check("plan-billed throughput vs proxy"); 100))",
"gateway-plan round trips/req: \(trip(chat("gateway-plan") | map(.db_round_trips_per_req); 100))",
"gateway-limits throughput ratio: \(trip(check("rate-limited throughput vs proxy"); 100))",
"gateway-limits round trips/req: \(trip(chat("gateway-limits") | map(.db_round_trips_per_req); 100))"
