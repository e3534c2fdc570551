"""Rook (rook/rook): CephCluster placement.all merged under each daemon's."""

from __future__ import annotations

from kmultiarch.core.catalogue.common import image_at
from kmultiarch.core.operators import Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Rook: placement.all with a bare nodeAffinity, merged under each daemon's; the Ceph
    # daemons run the ceph image.
    OperatorKind(
        "ceph.rook.io",
        "CephCluster",
        (
            Placement(
                _p("/spec/placement/all"),
                (image_at("/spec/cephVersion/image"),),
                creates=2,
                shape="node-affinity",
            ),
            *(
                Placement(
                    _p(f"/spec/placement/{daemon}"),
                    (image_at("/spec/cephVersion/image"),),
                    shape="node-affinity",
                    inherits=Inheritance(
                        _p("/spec/placement/all"),
                        (("nodeAffinity", "replace"), ("tolerations", "append")),
                    ),
                    cites=f"rook/rook pkg/apis/ceph.rook.io/v1/placement.go Get{getter}Placement: "
                    "p.All().Merge(p[daemon]); Merge: the daemon's nodeAffinity replaces all's "
                    "when set, its tolerations are appended to all's (mergeTolerations)",
                )
                for daemon, getter in (("mon", "Mon"), ("mgr", "Mgr"), ("osd", "OSD"))
            ),
            # A stretch cluster's arbiter mon takes placement.arbiter alone when it sets
            # anything (an empty one falls back to the mons'): one placement per field that
            # makes it non-empty, the first that holds is the one (the same path once).
            *(
                Placement(
                    _p("/spec/placement/arbiter"),
                    (image_at("/spec/cephVersion/image"),),
                    shape="node-affinity",
                    when=((_p(f"/spec/placement/arbiter/{field}"), ()),),
                    cites="rook/rook pkg/apis/ceph.rook.io/v1/placement.go "
                    "GetArbiterPlacement (p[arbiter], not merged with all); "
                    "pkg/operator/ceph/cluster/mon/mon.go getMonPlacement (used for the "
                    "arbiter zone's mon when not empty, else the mons' placement)",
                )
                for field in (
                    "nodeAffinity",
                    "tolerations",
                    "podAffinity",
                    "podAntiAffinity",
                    "topologySpreadConstraints",
                )
            ),
        ),
        cites="CephCluster.spec.placement.all.{nodeAffinity,tolerations}, spec.cephVersion.image",
        adds="the CSI and Rook images of the operator for the pods it runs beside the daemons",
    ),
)
