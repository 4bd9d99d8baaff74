"""Seconds from starting `bat run` to its first draw, and to its exit.

Usage: BAT_NATIVE_CACHE=$(mktemp -d) python3 scripts/python/first_draw.py \
    target/release/bat run MODEL --data DATA ...

Runs the command under a pseudo-terminal, so that bat draws its progress
bar (four times a second), and takes the first time the bar shows a
nonzero iteration count; prints that, the exit time and bat's notes.
"""
import os, pty, re, subprocess, sys, time, select

argv = sys.argv[1:]
t0 = time.monotonic()
master, slave = pty.openpty()
p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, close_fds=True)
os.close(slave)
buf = b""
first = None
pat = re.compile(rb"\] (\d+)/(\d+) iterations")
while True:
    r, _, _ = select.select([master], [], [], 0.05)
    if r:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
        if first is None:
            for m in pat.finditer(buf):
                if int(m.group(1)) > 0:
                    first = time.monotonic() - t0
                    break
    elif p.poll() is not None:
        break
p.wait()
end = time.monotonic() - t0
text = buf.decode(errors="replace")
notes = [l.strip() for l in re.split(r"[\r\n]", text) if "note" in l or "chains:" in l or "error" in l]
print(f"first_draw={first if first is None else round(first,2)} exit={end:.2f} rc={p.returncode} | " + " | ".join(notes[-3:]))
