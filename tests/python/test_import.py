import rdmalab


def test_core_loads():
    assert rdmalab._core is not None
