"""Runs in the sandbox and never ends: it forks a child and a daemonized grandchild (double
fork + setsid) that also never end, prints every pid, then sleeps forever."""
import os
import sys
import time

pids = [os.getpid()]
child = os.fork()
if child == 0:
    while True:
        time.sleep(1)
pids.append(child)
r, w = os.pipe()
mid = os.fork()
if mid == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        while True:
            time.sleep(1)
    os._exit(0)
os.waitpid(mid, 0)
os.close(w)
pids.append(int(os.read(r, 64)))
print("pids", *pids)
sys.stdout.flush()
while True:
    time.sleep(1)
