#!/usr/bin/env python3
"""Scrapes a preempt /metrics endpoint every 0.5 s while slow clients hold connections.

Usage: metrics_slow_clients.py PORT N SECONDS
Opens N silent connections and N that send `GET /metrics HTTP/1.1` and then trickle a byte a
second (reconnecting when the server closes them), scrapes for SECONDS, and prints the status
codes and the scrape latency (docs/FLEET.md)."""
import socket, time, sys, threading
addr=("127.0.0.1", int(sys.argv[1])); n=int(sys.argv[2]); dur=float(sys.argv[3])
held=[]
def silent():
    s=socket.create_connection(addr); held.append(s)
def trickle():
    s=socket.create_connection(addr); s.sendall(b"GET /metrics HTTP/1.1\r\n"); held.append(s)
for i in range(n): silent(); trickle()
stop=time.time()+dur; codes={}; lat=[]
def keep():
    # reconnect the closed ones and trickle a byte a second
    while time.time()<stop:
        for i,s in enumerate(list(held)):
            try: s.sendall(b"X")
            except OSError:
                try: held[i]=socket.create_connection(addr); held[i].sendall(b"GET /metrics HTTP/1.1\r\n")
                except OSError: pass
        time.sleep(1)
threading.Thread(target=keep,daemon=True).start()
while time.time()<stop:
    t=time.time()
    try:
        s=socket.create_connection(addr,timeout=10); s.sendall(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        r=b""
        while True:
            d=s.recv(65536)
            if not d: break
            r+=d
        c=r[9:12].decode() if r else "closed"
    except OSError as e: c=type(e).__name__
    lat.append(time.time()-t); codes[c]=codes.get(c,0)+1
    time.sleep(0.5)
lat.sort()
print("clients", 2*n, "scrapes", sum(codes.values()), codes, "p50 %.1f ms max %.1f ms"%(lat[len(lat)//2]*1e3, lat[-1]*1e3))
