"""The demo program: it runs inside the sandbox and knows nothing but a state's name. Every
fact comes from the host, one host-tool call at a time, in four stages:
state name -> state id -> store ids -> sales rows -> product names."""
import sys

from maf_host_tools import HostToolError, call

state = sys.argv[1] if len(sys.argv) > 1 else "Oregon"

try:
    state_id = call("state_id", name=state)                          # stage 1
except HostToolError as e:
    print(f"cannot look up {state}: {e}")
    sys.exit(1)
stores = call("stores_in_state", state_id=state_id)                  # stage 2
print(f"{state}: state id {state_id}, {len(stores)} stores {stores}")

totals = {}                                                          # stage 3
for store in stores:
    for row in call("sales_for_store", store_id=store):
        units, cents = totals.get(row["product_id"], (0, 0))
        totals[row["product_id"]] = (units + row["units"], cents + row["cents"])

names = {pid: call("product_name", product_id=pid) for pid in sorted(totals)}  # stage 4

try:                                                                 # a refusal, caught
    call("product_name", product_id=999)
except HostToolError as e:
    print(f"(the host refused an unknown product, as it should: {e})")

print()
print(f"{'product':<20} {'units':>6} {'revenue':>11}")
print(f"{'-' * 20} {'-' * 6} {'-' * 11}")
for pid, (units, cents) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
    print(f"{names[pid]:<20} {units:>6} {cents / 100:>11,.2f}")
all_units = sum(u for u, _ in totals.values())
all_cents = sum(c for _, c in totals.values())
print(f"{'-' * 20} {'-' * 6} {'-' * 11}")
print(f"{'total':<20} {all_units:>6} {all_cents / 100:>11,.2f}")
