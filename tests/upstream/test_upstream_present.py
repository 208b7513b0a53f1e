"""Says, as a skip, why the upstream tests did not run, where they cannot."""
import pytest

from conftest import WHY_NOT


def test_upstream_code_is_there():
    if WHY_NOT:
        pytest.skip(WHY_NOT)
