"""The KRM function: a ResourceList in, a ResourceList with results out."""
