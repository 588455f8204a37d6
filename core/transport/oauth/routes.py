"""The front's routes, for `build_app` to serve beside the MCP endpoint."""

from __future__ import annotations

import secrets
import time

from stratus.auth.front_config import (
    AUTHORIZATION_SERVER_METADATA,
    AUTHORIZE_PATH,
    CALLBACK_PATH,
    CONSENT_PATH,
    JWKS_PATH,
    OPENID_CONFIGURATION,
    REGISTER_PATH,
    REVOKE_PATH,
    TOKEN_PATH,
    FrontConfig,
)
from stratus.auth.front_key import signing_key
from stratus.net.addresses import AddressGuard, parse_allowed_networks
from stratus.protocol.request_state import StateSealer
from stratus.settings import Settings
from stratus.stores.base import Stores
from stratus.transport.oauth.authorization import Authorization
from stratus.transport.oauth.callback import Callback
from stratus.transport.oauth.clients import ClientDocuments, ClientRegistry, Registration
from stratus.transport.oauth.discovery import PublicDocument, authorization_server_metadata
from stratus.transport.oauth.records import FrontRecords
from stratus.transport.oauth.source_caps import SIGN_INS_PER_REGISTRATION, SourceCap
from stratus.transport.oauth.tokens import Tokens
from stratus.transport.oauth.upstream import OpenIdProvider
from stratus.types import ASGIApp

METADATA_MAX_AGE_SECONDS = 3600


def front_routes(settings: Settings, stores: Stores) -> dict[str, ASGIApp]:
    front = FrontConfig.from_settings(settings)
    records = FrontRecords(stores.cache)
    guard = AddressGuard(parse_allowed_networks(",".join(settings.gateway_allowed_networks)))
    trusted = settings.trust_request_context_header
    per_hour = front.registrations_per_hour * SIGN_INS_PER_REGISTRATION
    cap = SourceCap("sign-in", stores.rate_limits, per_hour, trust_context_header=trusted)
    clients = ClientRegistry(records, front.registration_seconds, ClientDocuments(records, guard, cap))
    upstream = OpenIdProvider(front)
    key = signing_key(settings.secret_key)
    # Without a configured key (the in-memory store, one process) a random one seals the consent forms.
    seed = settings.secret_key.encode() if settings.secret_key else secrets.token_bytes(32)
    sealer = StateSealer(b"stratus authorization front: consent forms v1|" + seed, clock=time.time)
    authorization = Authorization(front, clients, records, upstream, sealer=sealer, cap=cap)
    tokens = Tokens(front, clients, records, key)
    metadata = PublicDocument(authorization_server_metadata(front), METADATA_MAX_AGE_SECONDS)
    return {
        AUTHORIZATION_SERVER_METADATA: metadata,
        OPENID_CONFIGURATION: metadata,
        JWKS_PATH: PublicDocument(key.jwks(), METADATA_MAX_AGE_SECONDS),
        REGISTER_PATH: Registration(
            clients,
            stores.rate_limits,
            front.registrations_per_hour,
            trust_context_header=trusted,
        ),
        AUTHORIZE_PATH: authorization.authorize,
        CONSENT_PATH: authorization.consent,
        CALLBACK_PATH: Callback(front, records, upstream),
        TOKEN_PATH: tokens.token,
        REVOKE_PATH: tokens.revoke,
    }
