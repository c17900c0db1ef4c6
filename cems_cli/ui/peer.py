"""Which local user is on the other end of a loopback connection, so the viewer answers only its own user.

The session cookie alone cannot keep other local users out: browsers keep cookies per host, not per port,
so the user's browser sends `cems_ui_<port>` to every 127.0.0.1 port, including one another local user
listens on; a page there (or a link to it) hands that user the cookie. On Linux the kernel lists every
TCP socket with its owner's uid in /proc/net/tcp, so the viewer can refuse a connection that is not its
own user's whatever it carries. Hand-written: psutil maps sockets to pids only for the caller's own
processes, so it cannot name another user's socket's owner. Read on every request (a connection cache
could be fooled by a reused client port): 2.2 ms on a 2-core test machine, most of it the kernel
writing the table; netlink's sock_diag would ask for the one socket, if this ever shows.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct

PROC_TCP = "/proc/net/tcp"


def _hex_address(ip: str, port: int) -> str:
    """How /proc/net/tcp spells an IPv4 address and port: the address as a host-order number in hex."""
    (number,) = struct.unpack("=I", socket.inet_aton(ip))
    return f"{number:08X}:{port:04X}"


_TIME_WAIT = "06"  # a closed connection's leftover: listed under uid 0, and its 4-tuple may be in use again


def owner(client: tuple[str, int], server_port: int, table: str = PROC_TCP,
          server_ip: str = "127.0.0.1") -> int | None:
    """The uid owning the socket `client` → `server_ip`:`server_port`, None when the table lists none.
    OSError when there is no table to read (not Linux)."""
    local, remote = _hex_address(*client), _hex_address(server_ip, server_port)
    with open(table, encoding="ascii", errors="replace") as rows:
        next(rows, None)  # the header
        for row in rows:
            fields = row.split()
            if len(fields) > 7 and fields[1] == local and fields[2] == remote and fields[3] != _TIME_WAIT:
                return int(fields[7])
    return None


def foreign(client: tuple[str, int] | None, server_port: int, table: str = PROC_TCP,
            server_ip: str = "127.0.0.1") -> bool:
    """Whether this connection is known not to be this process's user's: listed under another uid, or not
    listed at all (a peer that sent its request and reset the connection before it was looked up must not
    get it run). False where there is no table (not Linux) or no IPv4 peer (an in-process test client)."""
    if client is None:
        return False
    try:
        if ipaddress.ip_address(client[0]).version != 4:
            return False
    except ValueError:
        return False
    try:
        uid = owner(client, server_port, table, server_ip)
    except OSError:
        return False  # no table to read (not Linux): nothing to tell by
    return uid != os.geteuid()
