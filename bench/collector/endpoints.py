"""Benchmark endpoints: one process serving a fixed exposition on many loopback ports (asyncio).

`endpoints.py EXPOSITION BASE_PORT COUNT READY_FILE LIFETIME_S` listens on 127.0.0.1:BASE_PORT ..
BASE_PORT+COUNT-1, answers every GET with the exposition (HTTP/1.1, keep-alive, Content-Length),
writes READY_FILE once every port listens, and exits by itself after LIFETIME_S seconds. Loopback
only. Run with Debian's /usr/bin/python3.
"""
import asyncio
import os
import sys


class Endpoint(asyncio.Protocol):
    response = b""

    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        # Answer each complete request head; GET requests carry no body.
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buf = self.buf[:end], self.buf[end + 4:]
            self.transport.write(Endpoint.response)
            if b"connection: close" in head.lower():
                self.transport.close()
                return


async def main(exposition, base_port, count, ready_file, lifetime):
    with open(exposition, "rb") as f:
        body = f.read()
    Endpoint.response = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body)) + body
    loop = asyncio.get_running_loop()
    servers = [await loop.create_server(Endpoint, "127.0.0.1", base_port + i, backlog=64) for i in range(count)]
    with open(ready_file + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ready_file + ".tmp", ready_file)
    await asyncio.sleep(lifetime)
    for s in servers:
        s.close()


if __name__ == "__main__":
    exposition, base_port, count, ready_file, lifetime = sys.argv[1:6]
    asyncio.run(main(exposition, int(base_port), int(count), ready_file, float(lifetime)))
