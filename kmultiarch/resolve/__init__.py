"""Images -> platforms: the cache, the resolver (overrides -> lock -> cache -> remote) and
remote lookups."""
