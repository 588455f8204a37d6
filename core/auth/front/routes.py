"""The front's routes, for `build_app` to serve beside the MCP endpoint."""

from __future__ import annotations

from stratus.auth.front import front_config as config
from stratus.auth.front.authorization import Authorization
from stratus.auth.front.callback import Callback
from stratus.auth.front.client_documents import ClientDocuments
from stratus.auth.front.clients import ClientRegistry
from stratus.auth.front.discovery import PublicDocument, authorization_server_metadata
from stratus.auth.front.front_config import FrontConfig
from stratus.auth.front.front_records import FrontRecords
from stratus.auth.front.registration import Registration
from stratus.auth.front.signing import signing_key
from stratus.auth.front.tokens import Tokens
from stratus.auth.front.upstream import OpenIdProvider
from stratus.net.addresses import AddressGuard, parse_allowed_networks
from stratus.settings import Settings
from stratus.stores.base import Stores
from stratus.types import ASGIApp

METADATA_MAX_AGE_SECONDS = 3600


def front_routes(settings: Settings, stores: Stores) -> dict[str, ASGIApp]:
    front = FrontConfig.from_settings(settings)
    records = FrontRecords(stores.cache)
    guard = AddressGuard(parse_allowed_networks(",".join(settings.gateway_allowed_networks)))
    clients = ClientRegistry(records, front.registration_seconds, ClientDocuments(records, guard))
    upstream = OpenIdProvider(front)
    key = signing_key(settings.secret_key)
    authorization = Authorization(front, clients, records, upstream)
    tokens = Tokens(front, clients, records, key)
    metadata = PublicDocument(authorization_server_metadata(front), METADATA_MAX_AGE_SECONDS)
    return {
        config.AUTHORIZATION_SERVER_METADATA: metadata,
        config.OPENID_CONFIGURATION: metadata,
        config.JWKS_PATH: PublicDocument(key.jwks(), METADATA_MAX_AGE_SECONDS),
        config.REGISTER_PATH: Registration(clients, stores.rate_limits, front.registrations_per_hour),
        config.AUTHORIZE_PATH: authorization.authorize,
        config.CONSENT_PATH: authorization.consent,
        config.CALLBACK_PATH: Callback(front, records, upstream),
        config.TOKEN_PATH: tokens.token,
        config.REVOKE_PATH: tokens.revoke,
    }
