"""Runs in the sandbox: calls the `slow` tool from a thread through the generated shim and,
while the call is with the host, kills its own process with SIGKILL. The answer comes when
nothing is left to take it."""
import os
import signal
import threading
import time

from maf_host_tools import call

print("calling", flush=True)
threading.Thread(target=lambda: call("slow", x=1), daemon=True).start()
time.sleep(0.5)
os.kill(os.getpid(), signal.SIGKILL)
