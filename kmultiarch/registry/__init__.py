"""Talking to registries: endpoints, credentials, the token handshake and the HTTP client."""
