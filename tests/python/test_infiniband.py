"""InfiniBand's link layer from Python: the builder's keys mirror the TOML, the per-port
credit stalls reach the ports table, and bad input names its field."""

import pytest

import rdmalab
from rdmalab import Scenario


def incast(**fabric):
    return (Scenario.star(5, rate="FDR4x", delay="100ns")
            .incast(senders=[1, 2, 3, 4], receiver=0, size=200_000)
            .with_fabric(cc="none", link_layer="infiniband", **fabric))


def test_credits_stall_senders_instead_of_pausing_them():
    res = rdmalab.run(incast(ib_vl_buffer=8192))
    ports = res.ports
    assert ports["pause_sent"].sum() == 0 and ports["drops"].sum() == 0
    assert ports["credit_stall_ps"].sum() > 0
    assert "link_layer = \"infiniband\"" in incast().to_toml()


def test_an_mtu_infiniband_does_not_allow_names_the_field():
    with pytest.raises(Exception, match=r"fabric\.mtu"):
        rdmalab.run(incast(mtu=1000))
