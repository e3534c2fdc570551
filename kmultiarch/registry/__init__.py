"""Talking to registries, one module per concern (as go-containerregistry's remote/transport):

    endpoints    where a registry is served (mirror first), over which scheme; URLs safe to show
    challenge    the WWW-Authenticate header of a 401
    credentials  docker's and podman's credential search, credential helpers
    tokens       Bearer tokens, batched per registry, kept per endpoint
    retries      one request, retried with backoff; decoding: its body within a cap
    transport    the httpx client, TLS per registry; proxies: which proxy a URL goes through
    settings     the bounds of a run's traffic (plain data)
    client       RegistryClient: manifests, blobs and tag lists over all of the above

Only ``transport`` imports httpx at module level, and only when a run reaches the network.
"""
