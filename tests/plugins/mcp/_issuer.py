"""A small OAuth authorization server for the gateway's tests: OpenID metadata and a JWKS on
127.0.0.1, tokens signed with keys generated for the run. It can misbehave on request:
hang, answer with a huge or a broken key set, rotate its keys."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from typing import Any

import jwt
import jwt.algorithms
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa


def _public_jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    jwk = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "use": "sig"}


class Issuer:
    """``url`` is the issuer; ``mode`` is what ``/jwks`` does: ``ok``, ``hang``, ``huge``,
    ``broken`` (not JSON), ``empty`` (no keys), ``error`` (a 500), ``zstd`` and
    ``gzip-bomb`` (512 MiB of zeros as they decompress); ``fetches`` counts
    the key-set requests."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[Any, str]] = {
            "rsa1": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
            "ec1": (ec.generate_private_key(ec.SECP256R1()), "ES256"),
            "ed1": (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
        }
        self.published = set(self.keys)
        self.mode = "ok"
        self.fetches = 0
        self.stop = threading.Event()
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    self._json(issuer.discovery())
                elif self.path == "/jwks":
                    issuer.fetches += 1
                    issuer.serve_keys(self)
                else:
                    self.send_error(404)

            def _json(self, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.handler = Handler
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

    def discovery(self) -> dict[str, Any]:
        return {"issuer": self.url, "jwks_uri": self.url + "/jwks"}

    def jwks(self) -> dict[str, Any]:
        return {
            "keys": [
                _public_jwk(key, kid, alg)
                for kid, (key, alg) in self.keys.items()
                if kid in self.published
            ]
        }

    def serve_keys(self, handler: Any) -> None:
        if self.mode == "hang":
            self.stop.wait(60)
            return
        if self.mode == "error":
            handler.send_error(500)
            return
        if self.mode in ("zstd", "gzip-bomb"):  # 512 MiB as it decompresses, #40.3
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Encoding", self.mode.removesuffix("-bomb"))
            bomb = _bomb(self.mode)
            handler.send_header("Content-Length", str(len(bomb)))
            handler.end_headers()
            with contextlib.suppress(OSError):
                handler.wfile.write(bomb)
            return
        body = {
            "ok": lambda: json.dumps(self.jwks()).encode(),
            "huge": lambda: json.dumps({"keys": [], "pad": "x" * (2 << 20)}).encode(),
            "broken": lambda: b"{not json",
            "empty": lambda: b'{"keys": []}',
            "private": lambda: json.dumps({"keys": [self._private("rsa1")]}).encode(),
        }[self.mode]()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if self.mode != "huge":  # a huge one does not say so in advance
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        with contextlib.suppress(OSError):  # the reader gave up at its limit
            handler.wfile.write(body)

    def _private(self, kid: str) -> dict[str, Any]:
        key, alg = self.keys[kid]
        jwk = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key))
        return {**jwk, "kid": kid}

    def public_pem(self, kid: str) -> bytes:
        return (
            self.keys[kid][0]
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def token(
        self,
        audience: str,
        *,
        kid: str = "rsa1",
        subject: str | None = "alice",
        lifetime: float = 300,
        headers: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A token for ``audience`` signed with ``kid``; ``claims`` override or add (None:
        leave the claim out)."""
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.url,
            "aud": audience,
            "sub": subject,
            "iat": now,
            "nbf": now,
            "exp": now + int(lifetime),
            "scope": "mcp:tools",
            **claims,
        }
        body = {k: v for k, v in body.items() if v is not None}
        key, alg = self.keys[kid]
        return jwt.encode(body, key, algorithm=alg, headers={"kid": kid, **(headers or {})})


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None) -> str:
    """A token made by hand, as an attacker would: ``secret`` None leaves the signature
    empty (``alg: none``), else it is HMAC-SHA256 with ``secret`` (for instance the
    issuer's public key, the classic confusion)."""
    import hashlib
    import hmac

    signing = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    if secret is None:
        return signing + "."
    return signing + "." + _b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


def _bomb(mode: str) -> bytes:
    zeros = bytes(1 << 20)
    if mode == "zstd":
        import zstandard

        z = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join([*(z.compress(zeros) for _ in range(512)), z.flush()])
    import zlib

    g = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(g.compress(zeros) for _ in range(512)), g.flush()])
