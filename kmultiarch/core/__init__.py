"""The pure domain: stdlib only, no file, network or environment access."""
