"""Runs in the sandbox: calls TOOL (argv[1]) through the generated shim from a thread, and
ends the process with os._exit after argv[2] seconds (default 0.3), without waiting for the
answer: the call is in flight when the program ends."""
import os
import sys
import threading
import time

from maf_host_tools import call

threading.Thread(target=lambda: call(sys.argv[1]), daemon=True).start()
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.3)
print("exiting", flush=True)
os._exit(0)
