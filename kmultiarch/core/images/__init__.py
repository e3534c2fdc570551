"""Images as data: references (``reference``), platforms (``platform``), digests (``digest``), OCI
manifests and indexes (``oci``), the grammar every registry answer meets (``answers``) and the
newer tags an upgrade may pick (``upgrades``). Pure. It imports nothing else of the core: every
other package may import it.
"""
