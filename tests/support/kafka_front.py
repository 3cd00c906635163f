"""A front for a plaintext Kafka-protocol broker, as a managed Kafka service looks to a client:
TLS, and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) that really checks the password. A test
double for tests/kafka_security.rs; no Kafka broker that speaks TLS or SASL installs here.

The broker (noida-db) advertises the address it listens on, so a front on another port would be
bypassed after the first metadata answer. The test therefore runs the broker in a network
namespace of its own on 127.0.0.1:PORT, bridges it out through a unix socket (`bridge`, run in
that namespace), and runs the front on the same 127.0.0.1:PORT outside it (`front`): the address
the broker advertises is the front's.

usage:
  kafka_front.py bridge SOCKET PORT                       (inside the namespace)
  kafka_front.py front PORT SOCKET [--tls CERT KEY] [--sasl USER PASSWORD]
The front prints one line per login: `login MECHANISM ok|failed REASON`.
"""
import asyncio
import hmac
import os
import ssl
import struct
import sys

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 34, 33, 58


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def read_frame(reader):
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def frame(body):
    return struct.pack(">i", len(body)) + body


def kafka_string(text):
    data = text.encode()
    return struct.pack(">h", len(data)) + data


class Login:
    """One connection's SASL exchange against one user."""

    def __init__(self, user, password):
        from scramp import ScramMechanism

        self.user, self.password = user, password
        self.scram = {name: ScramMechanism(name) for name in ("SCRAM-SHA-256", "SCRAM-SHA-512")}
        self.mechanisms = ["PLAIN", *self.scram]
        self.mechanism = None
        self.server = None

    def handshake(self, mechanism):
        if mechanism not in self.mechanisms:
            return UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        if mechanism in self.scram:
            scram = self.scram[mechanism]
            info = scram.make_auth_info(self.password, iteration_count=4096)
            self.server = scram.make_server(lambda user: info if user == self.user else None)
        return 0

    def step(self, data):
        """(done, ok, reply, reason) for one SaslAuthenticate payload."""
        from scramp import ScramException

        try:
            if self.mechanism == "PLAIN":
                _, user, password = data.decode().split("\0")
                ok = user == self.user and hmac.compare_digest(password, self.password)
                return True, ok, b"", None if ok else "invalid user name or password"
            if self.server.stage is None:
                self.server.set_client_first(data.decode())
                return False, None, self.server.get_server_first().encode(), None
            self.server.set_client_final(data.decode())
            return True, True, self.server.get_server_final().encode(), None
        except (ScramException, ValueError, TypeError) as e:
            return True, False, b"", f"{type(e).__name__}: {e}"


async def serve_front(client_reader, client_writer, socket_path, user, password):
    broker_reader, broker_writer = await asyncio.open_unix_connection(socket_path)
    if user is None:
        await asyncio.gather(pipe(client_reader, broker_writer), pipe(broker_reader, client_writer))
        return
    login = Login(user, password)
    try:
        while True:
            request = await read_frame(client_reader)
            api_key, version, correlation = struct.unpack(">hhi", request[:8])
            (client_id_len,) = struct.unpack(">h", request[8:10])
            body = request[10 + max(client_id_len, 0):]
            if api_key == API_VERSIONS:
                broker_writer.write(frame(request))
                await broker_writer.drain()
                client_writer.write(frame(await read_frame(broker_reader)))
            elif api_key == SASL_HANDSHAKE:
                (size,) = struct.unpack(">h", body[:2])
                error = login.handshake(body[2:2 + size].decode())
                mechanisms = b"".join(kafka_string(m) for m in login.mechanisms)
                client_writer.write(
                    frame(struct.pack(">ihi", correlation, error, len(login.mechanisms)) + mechanisms)
                )
            elif api_key == SASL_AUTHENTICATE and login.mechanism:
                (size,) = struct.unpack(">i", body[:4])
                done, ok, reply, reason = login.step(body[4:4 + size])
                failed = ok is False
                answer = struct.pack(">ih", correlation, SASL_AUTHENTICATION_FAILED if failed else 0)
                answer += kafka_string(reason) if failed else struct.pack(">h", -1)
                answer += struct.pack(">i", len(reply)) + reply
                if version >= 1:
                    answer += struct.pack(">q", 0)
                client_writer.write(frame(answer))
                await client_writer.drain()
                if done:
                    print(f"login {login.mechanism} {'ok' if ok else 'failed'} {reason or ''}", flush=True)
                if failed:
                    break
                if ok:
                    await asyncio.gather(
                        pipe(client_reader, broker_writer), pipe(broker_reader, client_writer)
                    )
                    return
            else:
                # Anything else before a login is refused by closing, as a broker does.
                break
            await client_writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    client_writer.close()
    broker_writer.close()


async def bridge(socket_path, port):
    async def handle(reader, writer):
        broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(reader, broker_writer), pipe(broker_reader, writer))

    if os.path.exists(socket_path):
        os.unlink(socket_path)
    server = await asyncio.start_unix_server(handle, socket_path)
    async with server:
        await server.serve_forever()


async def front(port, socket_path, args):
    context = None
    user = password = None
    while args:
        if args[0] == "--tls":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(args[1], args[2])
            args = args[3:]
        elif args[0] == "--sasl":
            user, password = args[1], args[2]
            args = args[3:]
        else:
            sys.exit(f"unknown argument {args[0]}")
    server = await asyncio.start_server(
        lambda r, w: serve_front(r, w, socket_path, user, password), "127.0.0.1", port, ssl=context
    )
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "bridge":
        asyncio.run(bridge(sys.argv[2], int(sys.argv[3])))
    elif mode == "front":
        asyncio.run(front(int(sys.argv[2]), sys.argv[3], sys.argv[4:]))
    else:
        sys.exit(__doc__)
