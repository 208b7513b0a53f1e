#!/usr/bin/env python3
"""A tools server for the integration tests (host side, newline-delimited JSON on
stdin/stdout). argv[1] is the mode:
  ok                 echo returns its arguments, add returns a + b, fail refuses
  die-after N        answers N calls, then exits 3 without answering
  garbage-after N    answers N calls, then prints a line that is not JSON
  wrong-id-after N   answers N calls, then answers with the wrong id
  long-line-after N  answers N calls, then prints one endless line (no newline)
  hang-after N       answers N calls, then never answers
  both-after N       answers N calls, then answers with both value and refusal"""
import json
import sys
import time


def answer(call):
    name, args = call["name"], call["arguments"]
    if name == "echo":
        return {"id": call["id"], "value": args}
    if name == "add":
        return {"id": call["id"], "value": args["a"] + args["b"]}
    return {"id": call["id"], "refusal": f"the tool {name} refuses, politely"}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    after = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    served = 0
    out = sys.stdout
    for line in sys.stdin:
        call = json.loads(line)
        if mode != "ok" and served >= after:
            if mode == "die-after":
                sys.exit(3)
            if mode == "garbage-after":
                out.write("this is not json\n")
            elif mode == "wrong-id-after":
                out.write(json.dumps({"id": call["id"] + 100, "value": 1}) + "\n")
            elif mode == "long-line-after":
                chunk = "x" * 65536
                try:
                    while True:
                        out.write(chunk)
                        out.flush()
                except (BrokenPipeError, OSError):
                    return
            elif mode == "hang-after":
                time.sleep(3600)
            elif mode == "both-after":
                out.write(json.dumps({"id": call["id"], "value": 1, "refusal": "x"}) + "\n")
            out.flush()
            served += 1
            continue
        out.write(json.dumps(answer(call)) + "\n")
        out.flush()
        served += 1


if __name__ == "__main__":
    main()
