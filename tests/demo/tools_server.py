#!/usr/bin/env python3
"""The demo's tools server: holds the data (data.json) on the host and answers maf-host's
tool calls over newline-delimited JSON on stdin/stdout, one call at a time:

    in:  {"id": N, "name": "state_id", "arguments": {"name": "Oregon"}}
    out: {"id": N, "value": 41}   or   {"id": N, "refusal": "no state named 'Oregon'"}

Usage: tools_server.py [DATA.json]
"""
import json
import os
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Refusal(Exception):
    pass


def want(args, key, kind):
    if key not in args:
        raise Refusal(f"missing argument '{key}'")
    v = args[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise Refusal(f"argument '{key}' must be an integer")
    if kind is str and not isinstance(v, str):
        raise Refusal(f"argument '{key}' must be a string")
    return v


def make_tools(data):
    def state_id(args):
        name = want(args, "name", str)
        for s in data["states"]:
            if s["name"].lower() == name.strip().lower():
                return s["id"]
        raise Refusal(f"no state named '{name}'")

    def stores_in_state(args):
        sid = want(args, "state_id", int)
        return [s["id"] for s in data["stores"] if s["state_id"] == sid]

    def sales_for_store(args):
        store = want(args, "store_id", int)
        if not any(s["id"] == store for s in data["stores"]):
            raise Refusal(f"no store {store}")
        return [{"product_id": r["product_id"], "units": r["units"], "cents": r["cents"]}
                for r in data["sales"] if r["store_id"] == store]

    def product_name(args):
        pid = want(args, "product_id", int)
        for p in data["products"]:
            if p["id"] == pid:
                return p["name"]
        raise Refusal(f"no product {pid}")

    return {f.__name__: f for f in (state_id, stores_in_state, sales_for_store, product_name)}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = load(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "data.json"))
    tools = make_tools(data)
    for line in sys.stdin:
        call = json.loads(line)
        reply = {"id": call.get("id")}
        fn = tools.get(call.get("name"))
        try:
            if fn is None:
                raise Refusal(f"unknown tool '{call.get('name')}'")
            args = call.get("arguments")
            if not isinstance(args, dict):
                raise Refusal("arguments must be an object")
            reply["value"] = fn(args)
        except Refusal as e:
            reply["refusal"] = str(e)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
