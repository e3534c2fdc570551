"""Rook (rook/rook): CephCluster placement.all merged under each daemon's."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at
from kmultiarch.core.operators.model import Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

#: An external cluster (spec.external.enable) runs no Ceph daemon: with spec.cephVersion.image,
#: only a job detecting the image's version, placed as the mons are; without, no pod at all.
_EXTERNAL = ((_p("/spec/external/enable"), ("true",)),)
_EXTERNAL_WITH_IMAGE = (*_EXTERNAL, (_p("/spec/cephVersion/image"), ()))
_EXTERNAL_CITE = (
    "rook/rook pkg/operator/ceph/cluster/cluster_external.go configureExternalCephCluster "
    "(no daemon; detectAndValidateCephVersion only when spec.cephVersion.image is set), "
    "pkg/operator/ceph/cluster/version.go detectCephVersion (the job takes "
    "GetMonPlacement(spec.placement))"
)

ENTRIES: tuple[OperatorKind, ...] = (
    # Rook: placement.all with a bare nodeAffinity, merged under each daemon's; the Ceph
    # daemons run the ceph image.
    OperatorKind(
        "ceph.rook.io",
        "CephCluster",
        (
            # A local cluster's daemons; an external one's version-detection job (the mons'
            # placement), only when it names a Ceph image.
            *(
                Placement(
                    _p("/spec/placement/all"),
                    (image_at("/spec/cephVersion/image"),),
                    creates=2,
                    shape="node-affinity",
                    when=when,
                    unless=unless,
                    cites=_EXTERNAL_CITE,
                )
                for when, unless in (((), _EXTERNAL), (_EXTERNAL_WITH_IMAGE, ()))
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
                    when=when,
                    unless=unless,
                    cites=f"rook/rook pkg/apis/ceph.rook.io/v1/placement.go Get{getter}Placement: "
                    "p.All().Merge(p[daemon]); Merge: the daemon's nodeAffinity replaces all's "
                    "when set, its tolerations are appended to all's (mergeTolerations)"
                    + "; "
                    + _EXTERNAL_CITE,
                )
                for daemon, getter, external in (
                    ("mon", "Mon", True),
                    ("mgr", "Mgr", False),
                    ("osd", "OSD", False),
                )
                for when, unless in (
                    (((), _EXTERNAL), (_EXTERNAL_WITH_IMAGE, ()))
                    if external
                    else (((), _EXTERNAL),)
                )
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
                    unless=_EXTERNAL,
                    cites="rook/rook pkg/apis/ceph.rook.io/v1/placement.go "
                    "GetArbiterPlacement (p[arbiter], not merged with all); "
                    "pkg/operator/ceph/cluster/mon/mon.go getMonPlacement (used for the "
                    "arbiter zone's mon when not empty, else the mons' placement); "
                    + _EXTERNAL_CITE,
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
