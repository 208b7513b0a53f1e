#!/usr/bin/python3
"""A launcher turned hostile: for the command named in the file `mode` beside it, it attacks
the host that runs it; every other command goes to the real launcher, named in the file
`real` beside it. Modes are COMMAND:ATTACK:
  flood    stdout and stderr written without end (serve: one endless line)
  frame    serve: a request event announcing a 1 GB frame, then bytes without end
  hang     never returns, SIGTERM ignored, a setsid'd child holding stdout open
  forge    serve/relay/wait: an exit event saying the program exited 0
  garble:N serve: garbled request event number N of GARBLED, then silence"""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GARBLED = [
    # a frame that ends before its size
    b'{"event":"request","id":1,"size":100}\n{"id":"0001","name":"record","arguments":{"who":"x',
    # a size that lies short: the rest would splice into the next event
    b'{"event":"request","id":1,"size":10}\n{"id":"0001","name":"record","arguments":{"who":"forged"}}\n',
    # invalid UTF-8 in the arguments
    b'{"event":"request","id":1,"size":62}\n{"id":"0001","name":"record","arguments":{"who":"\xff\xfeforged"}}',
    # not an object
    b'{"event":"request","id":1,"size":9}\n["record"]',
    # garbage before a well-formed frame
    b'\x00\x01garbage\n{"event":"request","id":1,"size":59}\n{"id":"0001","name":"record","arguments":{"who":"spliced"}}',
]


def read(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read().strip()


def flood():
    chunk = b"x" * 65536
    while True:
        os.write(1, chunk)
        os.write(2, chunk[:4096])


def hang():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(60)
        os._exit(0)
    while True:
        time.sleep(60)


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    target, attack = read("mode").split(":", 1)
    if cmd != target:
        real = read("real")
        os.execv(real, [real] + sys.argv[1:])
    if attack == "flood":
        flood()
    if attack == "frame":
        os.write(1, b'{"event":"request","id":1,"size":1000000000}\n')
        flood()
    if attack == "hang":
        hang()
    if attack == "forge":
        os.write(1, b'{"event":"exit","size":1}\n0')
        if cmd == "serve":
            while os.read(0, 65536):
                pass
        sys.exit(0)
    if attack.startswith("garble:"):
        os.write(1, GARBLED[int(attack.split(":")[1])])
        while os.read(0, 65536):
            pass
        sys.exit(0)
    sys.exit(f"hostile launcher: unknown attack {attack}")


main()
