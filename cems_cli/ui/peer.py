"""Which local user is on the other end of a loopback connection, so the viewer answers only its own user.

The session cookie alone cannot keep other local users out: browsers keep cookies per host, not per port,
so the user's browser sends `cems_ui_<port>` to every 127.0.0.1 port, including one another local user
listens on; a page there (or a link to it) hands that user the cookie. On Linux the kernel tells
any process the owner of any TCP socket, so the viewer can refuse a connection that is not its own user's
whatever it carries. Asked through netlink's sock_diag for the one socket (9 µs), else read from the
/proc/net/tcp table (2.2 ms on a 2-core test machine: the kernel writes out every socket). Hand-written:
psutil maps sockets to pids only for the caller's own processes, so it cannot name another user's socket's
owner. Asked on every request: a cache per client port could be fooled by a port used again.
"""

from __future__ import annotations

import errno
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


# linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _NLMSG_ERROR, _NLM_F_REQUEST = 4, 20, 2, 1
_NO_COOKIE = 0xFFFFFFFF
_TCP_TIME_WAIT = 6


def owner(client: tuple[str, int], server_port: int, table: str = PROC_TCP,
          server_ip: str = "127.0.0.1") -> int | None:
    """The uid owning the socket `client` → `server_ip`:`server_port`, None when the kernel lists none.
    OSError when it cannot be asked (not Linux)."""
    if table == PROC_TCP:
        try:
            return _ask_sock_diag(client, (server_ip, server_port))
        except OSError:
            pass  # no netlink here (a sandbox may refuse it): the table says the same, slower
    return _read_table(client, server_port, table, server_ip)


def _ask_sock_diag(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """One inet_diag_req_v2 for exactly this TCP 4-tuple; the uid of the inet_diag_msg it answers."""
    sockid = (struct.pack("!HH4s12s4s12s", client[1], server[1], socket.inet_aton(client[0]), bytes(12),
                          socket.inet_aton(server[0]), bytes(12))
              + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as link:
        link.settimeout(1.0)
        link.sendto(header + request, (0, 0))
        answer = link.recv(8192)
    if len(answer) < 20:
        raise OSError("short sock_diag answer")
    kind = struct.unpack_from("=H", answer, 4)[0]
    if kind == _NLMSG_ERROR:
        error = -struct.unpack_from("=i", answer, 16)[0]
        if error == errno.ENOENT:
            return None
        raise OSError(error, os.strerror(error))
    # inet_diag_msg: family, state, timer, retrans (4 bytes), sockid (48), expires, rqueue, wqueue, uid
    if kind != _SOCK_DIAG_BY_FAMILY or len(answer) < 16 + 72:
        raise OSError("unexpected sock_diag answer")
    state = answer[16 + 1]
    sport, dport = struct.unpack_from("!HH", answer, 16 + 4)
    if (sport, dport) != (client[1], server[1]):
        raise OSError("sock_diag answered for another socket")
    if state == _TCP_TIME_WAIT:
        return None
    return int(struct.unpack_from("=I", answer, 16 + 4 + 48 + 12)[0])


def _read_table(client: tuple[str, int], server_port: int, table: str, server_ip: str) -> int | None:
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
