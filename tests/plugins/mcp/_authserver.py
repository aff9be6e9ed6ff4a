"""A whole OAuth authorization server for the gateway's interop test, built on the MCP SDK's
own authorization-server routes (metadata, dynamic client registration, authorize with
PKCE, token): the user is logged in as ``subject`` without a page, and access tokens are
JWTs for the ``resource`` the client asked for, signed with a key served at ``/jwks``."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from typing import Any

import jwt
import jwt.algorithms
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class _Provider:
    def __init__(self, server: AuthServer) -> None:
        self.server = server
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=self.server.subject,
        )
        self.server.resources.append(params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        now = int(time.time())
        claims = {
            "iss": self.server.url,
            "aud": authorization_code.resource,
            "sub": authorization_code.subject,
            "azp": client.client_id,
            "scope": " ".join(authorization_code.scopes),
            "groups": self.server.groups,
            "iat": now,
            "exp": now + 300,
        }
        token = jwt.encode(claims, self.server.key, algorithm="RS256", headers={"kid": "as1"})
        return OAuthToken(
            access_token=token,
            token_type="Bearer",
            expires_in=300,
            scope=" ".join(authorization_code.scopes),
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(self, *args: Any) -> OAuthToken:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token: Any) -> None:
        return None


class AuthServer:
    """``url`` is the issuer (``/jwks`` under it); ``resources`` the resource indicators
    clients asked for."""

    def __init__(self, subject: str = "alice", groups: tuple[str, ...] = ()) -> None:
        import uvicorn
        from pydantic import AnyHttpUrl
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        self.subject = subject
        self.groups = list(groups)
        self.resources: list[str | None] = []
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        self.url = base + "/"  # the issuer as its metadata spells it (as Auth0's end in /)
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)

        async def jwks(request: Any) -> JSONResponse:
            return JSONResponse({"keys": [{**public, "kid": "as1", "use": "sig"}]})

        routes = create_auth_routes(
            _Provider(self),
            AnyHttpUrl(base),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp:tools"], default_scopes=["mcp:tools"]
            ),
        )
        app = Starlette(routes=[*routes, Route("/jwks", jwks)])
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
