"""A logging TCP proxy for the PostgreSQL wire protocol (v3).

Usage: wire_trace.py LISTEN_PORT TARGET_PORT OUT_FILE

Listens on 127.0.0.1:LISTEN_PORT, forwards every connection to
127.0.0.1:TARGET_PORT unchanged, and writes one line per protocol message to
OUT_FILE: `#<connection> F|B <message> <decoded fields>` (F = frontend/client,
B = backend/server). It shows what a client really sends (Parse/Bind/Describe/
Execute/Sync/Flush, parameter and result format codes, max_rows) and what the
reference server answers (RowDescription fields, ParameterDescription, ...).
Runs until killed.
"""

import asyncio
import struct
import sys

MAX_ROWS_SHOWN = 8
MAX_VALUE_CHARS = 48

SPECIAL_REQUESTS = {80877103: "SSLRequest", 80877104: "GSSENCRequest", 80877102: "CancelRequest"}
ENCRYPTION_REQUESTS = (80877103, 80877104)  # answered by one byte, 'S'/'G' or 'N'

FRONTEND = {
    b"Q": "Query", b"P": "Parse", b"B": "Bind", b"D": "Describe", b"E": "Execute", b"S": "Sync",
    b"H": "Flush", b"C": "Close", b"X": "Terminate", b"d": "CopyData", b"c": "CopyDone",
    b"f": "CopyFail", b"p": "PasswordMessage", b"F": "FunctionCall",
}
BACKEND = {
    b"R": "Authentication", b"S": "ParameterStatus", b"K": "BackendKeyData", b"Z": "ReadyForQuery",
    b"T": "RowDescription", b"D": "DataRow", b"C": "CommandComplete", b"1": "ParseComplete",
    b"2": "BindComplete", b"3": "CloseComplete", b"t": "ParameterDescription", b"n": "NoData",
    b"s": "PortalSuspended", b"I": "EmptyQueryResponse", b"E": "ErrorResponse", b"N": "NoticeResponse",
    b"G": "CopyInResponse", b"H": "CopyOutResponse", b"W": "CopyBothResponse", b"d": "CopyData",
    b"c": "CopyDone", b"A": "NotificationResponse", b"v": "NegotiateProtocolVersion",
}


class Reader:
    def __init__(self, body):
        self.body = body
        self.pos = 0

    def cstring(self):
        end = self.body.index(b"\0", self.pos)
        value = self.body[self.pos:end].decode("utf-8", "replace")
        self.pos = end + 1
        return value

    def unpack(self, fmt):
        values = struct.unpack_from("!" + fmt, self.body, self.pos)
        self.pos += struct.calcsize("!" + fmt)
        return values if len(values) > 1 else values[0]

    def int16_list(self):
        return [self.unpack("h") for _ in range(self.unpack("h"))]

    def value(self):
        length = self.unpack("i")
        if length < 0:
            return "NULL"
        raw = self.body[self.pos:self.pos + length]
        self.pos += length
        return show_value(raw)


def show_value(raw):
    try:
        text = raw.decode("utf-8")
        if text.isprintable():
            shown = repr(text)
        else:
            shown = "x" + raw.hex()
    except UnicodeDecodeError:
        shown = "x" + raw.hex()
    return shown if len(shown) <= MAX_VALUE_CHARS else shown[:MAX_VALUE_CHARS] + "..."


def describe_frontend(kind, body):
    r = Reader(body)
    if kind == b"Q":
        return r.cstring()
    if kind == b"P":
        name, query = r.cstring(), r.cstring()
        oids = [r.unpack("I") for _ in range(r.unpack("h"))]
        return f"stmt={name!r} param_oids={oids} {query}"
    if kind == b"B":
        portal, stmt = r.cstring(), r.cstring()
        param_formats = r.int16_list()
        params = [r.value() for _ in range(r.unpack("h"))]
        result_formats = r.int16_list()
        return (f"portal={portal!r} stmt={stmt!r} param_formats={param_formats} "
                f"params=[{', '.join(params)}] result_formats={result_formats}")
    if kind in (b"D", b"C"):
        target = "statement" if body[:1] == b"S" else "portal"
        return f"{target} {Reader(body[1:]).cstring()!r}"
    if kind == b"E":
        return f"portal={r.cstring()!r} max_rows={r.unpack('i')}"
    if kind == b"d":
        return show_value(body)
    return ""


def describe_backend(kind, body):
    r = Reader(body)
    if kind == b"R":
        return f"code={r.unpack('i')}"
    if kind == b"S":
        return f"{r.cstring()}={r.cstring()}"
    if kind == b"Z":
        return body.decode()
    if kind == b"T":
        fields = []
        for _ in range(r.unpack("h")):
            name = r.cstring()
            table_oid, attnum, type_oid, typlen, typmod, fmt = r.unpack("IhIhih")
            fields.append(f"({name} table={table_oid} att={attnum} type={type_oid} len={typlen} "
                          f"typmod={typmod} fmt={fmt})")
        return " ".join(fields)
    if kind == b"D":
        return "[" + ", ".join(r.value() for _ in range(r.unpack("h"))) + "]"
    if kind == b"C":
        return r.cstring()
    if kind == b"t":
        return str([r.unpack("I") for _ in range(r.unpack("h"))])
    if kind in (b"E", b"N"):
        fields = []
        while body[r.pos:r.pos + 1] not in (b"\0", b""):
            code = chr(body[r.pos])
            r.pos += 1
            fields.append(f"{code}={r.cstring()}")
        return " ".join(f for f in fields if f[0] in "SCMDHP")
    if kind in (b"G", b"H", b"W"):
        return f"format={r.unpack('b')} column_formats={r.int16_list()}"
    return ""


class Connection:
    def __init__(self, number, out):
        self.number = number
        self.out = out
        self.single_byte_answers = 0
        self.rows_in_result = 0

    def log(self, side, text):
        self.out.write(f"#{self.number} {side} {text}".rstrip() + "\n")
        self.out.flush()

    def log_backend(self, kind, body):
        if kind == b"D":
            self.rows_in_result += 1
            if self.rows_in_result > MAX_ROWS_SHOWN:
                return
        elif self.rows_in_result > MAX_ROWS_SHOWN:
            self.log("B", f"... {self.rows_in_result - MAX_ROWS_SHOWN} more DataRow")
            self.rows_in_result = 0
        else:
            self.rows_in_result = 0
        self.log("B", f"{BACKEND.get(kind, kind)} {describe_backend(kind, body)}")

    async def client_to_server(self, reader, writer):
        started = False
        while True:
            if not started:
                header = await reader.readexactly(8)
                length, code = struct.unpack("!ii", header)
                rest = await reader.readexactly(length - 8)
                if code in ENCRYPTION_REQUESTS:
                    self.single_byte_answers += 1
                writer.write(header + rest)
                if code in SPECIAL_REQUESTS:
                    self.log("F", SPECIAL_REQUESTS[code])
                    continue
                params = rest.rstrip(b"\0").split(b"\0")
                pairs = dict(zip(params[::2], params[1::2]))
                shown = " ".join(f"{k.decode()}={v.decode()}" for k, v in pairs.items())
                self.log("F", f"StartupMessage protocol={code >> 16}.{code & 0xFFFF} {shown}")
                started = True
                continue
            kind = await reader.readexactly(1)
            length = struct.unpack("!i", await reader.readexactly(4))[0]
            body = await reader.readexactly(length - 4)
            writer.write(kind + struct.pack("!i", length) + body)
            self.log("F", f"{FRONTEND.get(kind, kind)} {describe_frontend(kind, body)}")

    async def server_to_client(self, reader, writer):
        while True:
            kind = await reader.readexactly(1)
            if self.single_byte_answers:
                writer.write(kind)
                self.single_byte_answers -= 1
                self.log("B", f"answer to encryption request: {kind.decode()}")
                continue
            length = struct.unpack("!i", await reader.readexactly(4))[0]
            body = await reader.readexactly(length - 4)
            writer.write(kind + struct.pack("!i", length) + body)
            self.log_backend(kind, body)


async def pump(direction, writer):
    try:
        await direction
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def serve(listen_port, target_port, out):
    counter = [0]

    async def handle(client_reader, client_writer):
        counter[0] += 1
        conn = Connection(counter[0], out)
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(
            pump(conn.client_to_server(client_reader, server_writer), server_writer),
            pump(conn.server_to_client(server_reader, client_writer), client_writer),
        )
        conn.log("-", "connection closed")

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


if __name__ == "__main__":
    with open(sys.argv[3], "w", encoding="utf-8") as out_file:
        serve(int(sys.argv[1]), int(sys.argv[2]), out_file)
